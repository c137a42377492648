//! The one writer of a context's store (it holds the store's lock): a session starts a new
//! segment with a keyframe of everything it was handed, then appends each change as it comes.
//! A segment whose changes outgrow its keyframe (or the per-segment cap) is compacted: a new
//! segment starts with a keyframe of the state then, so a replay reads at most about twice a
//! keyframe. Retention and the size cap drop whole segments, oldest first, never the current one.

use crate::frame::{self, MAGIC};
use crate::patch;
use crate::record::{Key, Record};
use crate::store::{self, Store};
use chrono::{DateTime, Duration, Utc};
use serde_json::Value;
use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};

/// The rules file's `recording:` bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Segments whose last record is older than this many days are dropped.
    pub retention_days: u32,
    /// The store's size cap in MB (10^6 bytes): the oldest segments go first.
    pub max_mb: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            retention_days: 7,
            max_mb: 500,
        }
    }
}

impl Limits {
    fn cap_bytes(&self) -> u64 {
        self.max_mb.saturating_mul(1_000_000)
    }

    /// The size past which a segment ends once it holds changes enough (`maybe_compact`): an
    /// eighth of the cap (so dropping one frees little), at least 1 MB.
    fn segment_bytes(&self) -> u64 {
        (self.cap_bytes() / 8).max(1_000_000)
    }
}

/// A recording session.
pub struct Writer {
    store: Store,
    /// Held for the writer's life: no other recorder appends meanwhile.
    _lock: File,
    limits: Limits,
    session: String,
    scope: String,
    file: File,
    seq: u64,
    /// This segment's bytes, and its head and keyframe's.
    bytes: u64,
    key_bytes: u64,
    /// The keyframe's JSON before compression: what a replay of this segment parses.
    key_plain: u64,
    /// Each object as last recorded, as compact JSON: what a change is diffed against, held in a
    /// fraction of the memory a `Value` tree takes (a TUI records what it shows all day).
    state: BTreeMap<Key, Packed>,
    last_at: DateTime<Utc>,
    /// Bytes cut off a torn tail when the store was opened.
    pub repaired: u64,
}

impl Writer {
    /// Start a session at `at` holding `lock` (from [`Store::lock`]): a torn tail left by a
    /// killed recorder is cut, a new segment starts with `state` (objects as [`pack`] holds them)
    /// as its keyframe, and retention is applied.
    pub fn begin(
        store: &Store,
        lock: File,
        limits: Limits,
        session: &str,
        scope: &str,
        at: DateTime<Utc>,
        state: BTreeMap<Key, Packed>,
    ) -> io::Result<Writer> {
        let segments = store.segments()?;
        let mut repaired = 0;
        if let Some(last) = segments.last().filter(|s| !s.sealed) {
            repaired = store::repair(&last.path)?;
            // the session before ended (or was killed): its last segment is written no more
            store::seal(&last.path)?;
        }
        let seq = segments.last().map_or(1, |s| s.seq + 1);
        let mut w = Writer {
            store: store.clone(),
            _lock: lock,
            limits,
            session: session.to_string(),
            scope: scope.to_string(),
            file: new_segment(store, seq)?,
            seq,
            bytes: MAGIC.len() as u64,
            key_bytes: 0,
            key_plain: 0,
            state,
            last_at: at,
            repaired,
        };
        w.keyframe(at, true)?;
        w.retain(at)?;
        Ok(w)
    }

    fn append(&mut self, record: &Record) -> io::Result<()> {
        let payload = serde_json::to_vec(record).map_err(io::Error::other)?;
        self.write_payload(&payload, record.at())
    }

    fn write_payload(&mut self, payload: &[u8], at: DateTime<Utc>) -> io::Result<()> {
        let framed = frame::encode(payload);
        self.file.write_all(&framed)?;
        self.bytes += framed.len() as u64;
        self.last_at = self.last_at.max(at);
        Ok(())
    }

    fn keyframe(&mut self, at: DateTime<Utc>, fresh: bool) -> io::Result<()> {
        let head = Record::Head {
            at,
            session: self.session.clone(),
            fresh,
            scope: self.scope.clone(),
        };
        self.append(&head)?;
        // the keyframe's objects spliced in as they are held (compact JSON), never parsed back,
        // streamed into its compressed payload: about a twentieth of its JSON (tens of MB for a large
        // fleet) is what is held and written, and what stays on disk until the segment is sealed
        let mut open = serde_json::to_vec(&Record::Keyframe {
            at,
            objects: Vec::new(),
        })
        .map_err(io::Error::other)?;
        let tail = open.split_off(open.len() - 2);
        debug_assert_eq!(tail, b"]}");
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        z.write_all(&open)?;
        for (i, (k, v)) in self.state.iter().enumerate() {
            if i > 0 {
                z.write_all(b",")?;
            }
            z.write_all(b"{\"kind\":")?;
            z.write_all(&serde_json::to_vec(&k.kind).map_err(io::Error::other)?)?;
            z.write_all(b",\"obj\":")?;
            z.write_all(v.as_bytes())?;
            z.write_all(b"}")?;
        }
        z.write_all(&tail)?;
        self.key_plain = z.total_in();
        let compressed = z.finish()?;
        self.write_payload(&compressed, at)?;
        self.file.sync_data()?;
        self.key_bytes = self.bytes;
        Ok(())
    }

    /// `obj` of `kind` as a watch saw it at `at`; nothing is written when it is what the
    /// recording already holds (a re-list).
    pub fn put(&mut self, at: DateTime<Utc>, kind: &str, obj: Value) -> io::Result<()> {
        let key = Key::of(kind, &obj);
        let packed = pack(&obj)?;
        self.record_put(at, key, packed, Some(obj))
    }

    /// [`Writer::put`] of an object as [`pack`] holds it: the text is kept as it is, shared
    /// with whoever else holds it (the live inventory), and parsed only when it changed.
    pub fn put_packed(&mut self, at: DateTime<Utc>, key: Key, packed: Packed) -> io::Result<()> {
        self.record_put(at, key, packed, None)
    }

    fn record_put(&mut self, at: DateTime<Utc>, key: Key, packed: Packed, obj: Option<Value>) -> io::Result<()> {
        let prev = match self.state.get_mut(&key) {
            // the newer text is kept: after a re-list it is the one the inventory holds too
            Some(prev) if **prev == *packed => {
                *prev = packed;
                return Ok(());
            }
            Some(prev) => Some(unpack(prev)?),
            None => None,
        };
        let obj = match obj {
            Some(obj) => obj,
            None => unpack(&packed)?,
        };
        let record = match prev {
            // the same object, its keys in another order
            Some(prev) if prev == obj => {
                self.state.insert(key, packed);
                return Ok(());
            }
            Some(prev) => match patch::diff(&prev, &obj) {
                Some(patch) => Record::Patch {
                    at,
                    kind: key.kind.clone(),
                    ns: key.ns.clone(),
                    name: key.name.clone(),
                    patch,
                },
                None => Record::Put {
                    at,
                    kind: key.kind.clone(),
                    obj,
                },
            },
            None => Record::Put {
                at,
                kind: key.kind.clone(),
                obj,
            },
        };
        self.append(&record)?;
        self.state.insert(key, packed);
        self.maybe_compact(at)
    }

    /// The object went away.
    pub fn delete(&mut self, at: DateTime<Utc>, key: &Key) -> io::Result<()> {
        if self.state.remove(key).is_none() {
            return Ok(());
        }
        self.append(&Record::Delete {
            at,
            kind: key.kind.clone(),
            ns: key.ns.clone(),
            name: key.name.clone(),
        })?;
        self.maybe_compact(at)
    }

    /// A kind's objects in `namespace` (every namespace with `None`) are exactly `keys` now (a
    /// list or a streaming list's end): the others went away.
    pub fn only(
        &mut self,
        at: DateTime<Utc>,
        kind: &str,
        namespace: Option<&str>,
        keep: &dyn Fn(&Key) -> bool,
    ) -> io::Result<()> {
        let gone: Vec<Key> = self
            .state
            .keys()
            .filter(|k| k.kind == kind && namespace.is_none_or(|ns| k.ns == ns) && !keep(k))
            .cloned()
            .collect();
        for key in gone {
            self.delete(at, &key)?;
        }
        Ok(())
    }

    /// One of this machine's audit entries.
    pub fn audit(&mut self, at: DateTime<Utc>, entry: Value) -> io::Result<()> {
        self.append(&Record::Audit { at, entry })
    }

    /// Nothing changed up to `at`; retention is applied.
    pub fn beat(&mut self, at: DateTime<Utc>) -> io::Result<()> {
        self.append(&Record::Beat { at })?;
        self.file.sync_data()?;
        self.retain(at)
    }

    /// End the session cleanly: its last segment is written no more, so it is closed and sealed
    /// (the lock is held until it is), as a compaction seals the segment before.
    pub fn stop(mut self, at: DateTime<Utc>) -> io::Result<()> {
        self.append(&Record::Stop { at })?;
        self.file.sync_data()?;
        let Writer {
            file,
            store,
            seq,
            _lock,
            ..
        } = self;
        drop(file);
        store::seal(&store.segment_path(seq))?;
        drop(_lock);
        Ok(())
    }

    /// When the last record was written.
    pub fn last_at(&self) -> DateTime<Utc> {
        self.last_at
    }

    /// A segment ends once its changes outgrow its keyframe (a replay then reads at most about
    /// twice what it needs), or once it is over the size a segment may have with at least a
    /// quarter of its keyframe in changes: never on its keyframe's size alone, which at 10,000
    /// workspaces could pass that size and start a segment, keyframe and all, at every change.
    fn maybe_compact(&mut self, at: DateTime<Utc>) -> io::Result<()> {
        // changes are plain on disk, the keyframe compressed: they are weighed against what a
        // replay parses of it, the segment's size against what it takes on disk
        let changes = self.bytes - self.key_bytes;
        let outgrown = changes > self.key_plain.max(1_000_000);
        let oversize = self.bytes > self.limits.segment_bytes() && changes > (self.key_plain / 4).max(1_000_000);
        if !outgrown && !oversize {
            return Ok(());
        }
        self.file.sync_data()?;
        let done = self.store.segment_path(self.seq);
        self.seq += 1;
        self.file = new_segment(&self.store, self.seq)?;
        self.bytes = MAGIC.len() as u64;
        // the keyframe holds every change written so far, some stamped later than `at`
        self.keyframe(self.last_at.max(at), false)?;
        store::seal(&done)?;
        self.retain(at)
    }

    /// Drop whole old segments: those ended more than the retention ago, then the oldest while
    /// the store is over its cap. The current segment is never dropped.
    fn retain(&mut self, now: DateTime<Utc>) -> io::Result<()> {
        let heads = self.store.heads()?;
        let horizon = now - Duration::days(i64::from(self.limits.retention_days));
        let mut total: u64 = heads.iter().map(|h| h.segment.bytes).sum();
        for (i, head) in heads.iter().enumerate() {
            if head.segment.seq >= self.seq {
                break;
            }
            // a segment ends where the next begins
            let ended = heads.get(i + 1).map_or(now, |next| next.at);
            if ended < horizon || total > self.limits.cap_bytes() {
                match std::fs::remove_file(&head.segment.path) {
                    Ok(()) => total = total.saturating_sub(head.segment.bytes),
                    Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                    Err(e) => return Err(e),
                }
            }
        }
        Ok(())
    }
}

/// An object as the writer holds it: its compact JSON text (a fraction of a `Value` tree's
/// memory), shared where another holder has the same text.
pub type Packed = std::sync::Arc<str>;

/// `obj` as the writer holds it.
pub fn pack(obj: &Value) -> io::Result<Packed> {
    Ok(serde_json::to_string(obj).map_err(io::Error::other)?.into())
}

fn unpack(packed: &str) -> io::Result<Value> {
    serde_json::from_str(packed).map_err(io::Error::other)
}

fn new_segment(store: &Store, seq: u64) -> io::Result<File> {
    let mut file = OpenOptions::new()
        .create_new(true)
        .append(true)
        .open(store.segment_path(seq))?;
    file.write_all(MAGIC)?;
    Ok(file)
}
