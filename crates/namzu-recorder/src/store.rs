//! The store of one context: `<root>/<context>/`, a `lock` file and numbered segment files
//! (`00000001.seg`, …), each the magic, a head record, a keyframe and the changes after it. A
//! segment no longer written is sealed: the same bytes zlib-compressed into `00000001.segz`
//! (written aside, then renamed over, then the `.seg` removed; a reader that finds both reads the
//! sealed one).
//! Only the recorder holding the context's advisory lock (`File::lock`, flock(2) on Unix) appends;
//! a reader needs no lock (it reads whole frames only, and stops at a torn one).

use crate::frame::{self, End, MAGIC};
use crate::record::Record;
use chrono::{DateTime, Utc};
use std::fs::{File, OpenOptions};
use std::io::{self, BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// One context's recording.
#[derive(Debug, Clone)]
pub struct Store {
    pub dir: PathBuf,
}

/// A segment file.
#[derive(Debug, Clone)]
pub struct Segment {
    pub seq: u64,
    pub path: PathBuf,
    /// Its size on disk (compressed, when sealed).
    pub bytes: u64,
    /// No longer written: compressed (`.segz`).
    pub sealed: bool,
}

/// A sealed segment's file name ends so.
const SEALED: &str = ".segz";

/// A segment's head record.
#[derive(Debug, Clone)]
pub struct Head {
    pub segment: Segment,
    pub at: DateTime<Utc>,
    pub session: String,
    pub fresh: bool,
    pub scope: String,
}

/// Every character a directory name may carry (a context name can hold `/` or `:`).
fn file_part(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Why the store could not be locked for writing.
#[derive(Debug)]
pub enum LockError {
    /// Another recorder holds it.
    Busy,
    Io(io::Error),
}

impl std::fmt::Display for LockError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LockError::Busy => f.write_str("another recorder is recording this context into this store"),
            LockError::Io(e) => write!(f, "{e}"),
        }
    }
}

impl Store {
    /// The store of `context` under `root` (created when first written).
    pub fn open(root: &Path, context: &str) -> Store {
        Store {
            dir: root.join(file_part(context)),
        }
    }

    fn lock_file(&self) -> io::Result<File> {
        std::fs::create_dir_all(&self.dir)?;
        OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .read(true)
            .open(self.dir.join("lock"))
    }

    /// The writer's lock: `wait` blocks until the recorder holding it ends (a standby recorder
    /// takes over then); without it a held lock is [`LockError::Busy`].
    pub fn lock(&self, wait: bool) -> Result<File, LockError> {
        let file = self.lock_file().map_err(LockError::Io)?;
        if wait {
            file.lock().map_err(LockError::Io)?;
            return Ok(file);
        }
        match file.try_lock() {
            Ok(()) => Ok(file),
            Err(std::fs::TryLockError::WouldBlock) => Err(LockError::Busy),
            Err(std::fs::TryLockError::Error(e)) => Err(LockError::Io(e)),
        }
    }

    /// A recorder is writing this store now (its lock is held).
    pub fn recording_now(&self) -> bool {
        let Ok(file) = OpenOptions::new().read(true).write(true).open(self.dir.join("lock")) else {
            return false;
        };
        match file.try_lock() {
            Ok(()) => {
                let _ = file.unlock();
                false
            }
            Err(std::fs::TryLockError::WouldBlock) => true,
            Err(std::fs::TryLockError::Error(_)) => false,
        }
    }

    /// The segments, oldest first (none when nothing was recorded).
    pub fn segments(&self) -> io::Result<Vec<Segment>> {
        let entries = match std::fs::read_dir(&self.dir) {
            Ok(e) => e,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        let mut out: Vec<Segment> = Vec::new();
        for entry in entries {
            let entry = entry?;
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            let (stem, sealed) = match name.strip_suffix(SEALED) {
                Some(stem) => (stem, true),
                None => match name.strip_suffix(".seg") {
                    Some(stem) => (stem, false),
                    None => continue,
                },
            };
            let Ok(seq) = stem.parse() else { continue };
            let bytes = entry.metadata().map(|m| m.len()).unwrap_or(0);
            out.push(Segment {
                seq,
                path: entry.path(),
                bytes,
                sealed,
            });
        }
        // a segment being sealed shows twice for a moment: the sealed file is whole
        out.sort_by_key(|s| (s.seq, !s.sealed));
        out.dedup_by_key(|s| s.seq);
        Ok(out)
    }

    pub(crate) fn segment_path(&self, seq: u64) -> PathBuf {
        self.dir.join(format!("{seq:08}.seg"))
    }

    /// The heads of the segments that have one (a segment torn before its keyframe is left out),
    /// oldest first. A segment removed meanwhile (retention) is skipped.
    pub fn heads(&self) -> io::Result<Vec<Head>> {
        let mut out = Vec::new();
        for segment in self.segments()? {
            let mut first: Option<Record> = None;
            // the head only: a keyframe torn after it is found by the replay, which then starts
            // from the segment before
            let read = read_segment(&segment.path, |payload| {
                first = serde_json::from_slice(payload).ok();
                false
            });
            match read {
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => return Err(e),
            }
            if let Some(Record::Head {
                at,
                session,
                fresh,
                scope,
            }) = &first
            {
                out.push(Head {
                    segment,
                    at: *at,
                    session: session.clone(),
                    fresh: *fresh,
                    scope: scope.clone(),
                });
            }
        }
        Ok(out)
    }
}

/// Read a segment's frames (after its magic), each payload handed to `each` (`false` stops).
/// A file that does not start with the magic holds no frames.
pub(crate) fn read_segment(path: &Path, each: impl FnMut(&[u8]) -> bool) -> io::Result<End> {
    let (path, file) = match File::open(path) {
        Ok(file) => (path.to_path_buf(), file),
        // sealed between the listing and this read: the same bytes, compressed
        Err(e) if e.kind() == io::ErrorKind::NotFound && path.extension().is_some_and(|x| x == "seg") => {
            let sealed = path.with_extension("segz");
            let file = File::open(&sealed)?;
            (sealed, file)
        }
        Err(e) => return Err(e),
    };
    if path.to_str().is_some_and(|p| p.ends_with(SEALED)) {
        let inflated = flate2::read::ZlibDecoder::new(BufReader::with_capacity(1 << 16, file));
        return frames(BufReader::with_capacity(1 << 16, inflated), each);
    }
    frames(BufReader::with_capacity(1 << 16, file), each)
}

/// The frames after the magic of a segment read from `r`.
fn frames(mut r: impl Read, each: impl FnMut(&[u8]) -> bool) -> io::Result<End> {
    let mut magic = [0u8; 8];
    if r.read_exact(&mut magic).is_err() || &magic != MAGIC {
        return Ok(End::Torn { valid: 0 });
    }
    frame::read_all(r, MAGIC.len() as u64, each)
}

/// Seal a segment no longer written: its bytes compressed into `.segz` beside it (written under
/// a temporary name, synced, renamed), then the `.seg` removed. What it saves on disk.
pub(crate) fn seal(path: &Path) -> io::Result<u64> {
    let sealed = path.with_extension("segz");
    let aside = path.with_extension("segz.tmp");
    let written = (|| {
        let mut input = BufReader::with_capacity(1 << 16, File::open(path)?);
        let out = File::create(&aside)?;
        let mut z = flate2::write::ZlibEncoder::new(std::io::BufWriter::new(out), flate2::Compression::default());
        io::copy(&mut input, &mut z)?;
        let out = z.finish()?.into_inner().map_err(|e| e.into_error())?;
        out.sync_all()?;
        Ok::<u64, io::Error>(out.metadata()?.len())
    })();
    let bytes = match written {
        Ok(bytes) => bytes,
        Err(e) => {
            // the segment stays as it was, readable
            let _ = std::fs::remove_file(&aside);
            return Err(e);
        }
    };
    let before = std::fs::metadata(path)?.len();
    std::fs::rename(&aside, &sealed)?;
    std::fs::remove_file(path)?;
    Ok(before.saturating_sub(bytes))
}

/// Cut a torn tail off `path` (a recorder killed mid-write): the file ends at its last whole
/// frame again. How many bytes were cut.
pub(crate) fn repair(path: &Path) -> io::Result<u64> {
    let end = read_segment(path, |_| true)?;
    let len = std::fs::metadata(path)?.len();
    match end {
        End::Torn { valid } if valid < len => {
            let file = OpenOptions::new().write(true).open(path)?;
            // a segment whose very magic is torn is kept as an empty, magic-less file: readers skip it
            file.set_len(valid)?;
            let mut f = file;
            f.seek(SeekFrom::End(0))?;
            Ok(len - valid)
        }
        _ => Ok(0),
    }
}
