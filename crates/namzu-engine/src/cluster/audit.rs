//! The audit log: one JSON line per write attempt (and per refusal), appended under the user's
//! state directory. Written only by the write path.

use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::Value;
use std::io::Write;
use std::path::{Path, PathBuf};

/// `$KUBECTL_NAMZU_AUDIT_LOG`, else `$XDG_STATE_HOME/kubectl-namzu/audit.jsonl`, else
/// `~/.local/state/kubectl-namzu/audit.jsonl`.
pub fn default_path() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("KUBECTL_NAMZU_AUDIT_LOG").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p));
    }
    let state = std::env::var_os("XDG_STATE_HOME")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/state")))?;
    Some(state.join("kubectl-namzu").join("audit.jsonl"))
}

#[derive(Debug, Clone, Default)]
pub struct AuditLog {
    /// `None` with `--no-audit`: writes go unrecorded, by the user's explicit choice.
    pub path: Option<PathBuf>,
    /// This session's entries too, for a UI that shows what was sent.
    pub session: Option<std::sync::Arc<std::sync::Mutex<Vec<Value>>>>,
    /// Why the last append failed, if one did: a bulk write stops there, the TUI says so.
    /// (`true`: it was the record of a write already sent, which the log now lacks; `false`: an
    /// intent, whose write was then not sent.)
    pub failure: std::sync::Arc<std::sync::Mutex<Option<(String, bool)>>>,
}

/// The audit log as read back: the entries, and how many lines were not entries (torn by a crash,
/// not UTF-8, not JSON, or JSON that is not one of ours).
#[derive(Debug, Default)]
pub struct AuditRead {
    pub entries: Vec<Value>,
    pub skipped: usize,
}

/// Open for appending (and reading its last byte), private to the user: the log holds what was
/// sent where. One open per append, and only of a regular file: a symlink is not followed
/// (`O_NOFOLLOW`: it could send the log anywhere, /dev/full included, and no look before the open
/// leaves a window to swap one in) and a FIFO or device is refused without blocking
/// (`O_NONBLOCK`); a log others can read is made private (0600).
fn open_append(path: &Path) -> std::io::Result<std::fs::File> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        let mut builder = std::fs::DirBuilder::new();
        builder.recursive(true);
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        builder.create(dir)?;
    }
    let not_regular =
        || std::io::Error::other("not a regular file (a symlink is not followed, a FIFO or device not written)");
    let mut options = std::fs::OpenOptions::new();
    options.read(true).create(true).append(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
        options.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
    }
    let file = match options.open(path) {
        // O_NOFOLLOW's answer for a symlink (ELOOP; EMLINK on the BSDs)
        #[cfg(unix)]
        Err(e) if matches!(e.raw_os_error(), Some(libc::ELOOP | libc::EMLINK)) => return Err(not_regular()),
        opened => opened?,
    };
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(not_regular());
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        if meta.permissions().mode() & 0o077 != 0 {
            file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
        }
    }
    Ok(file)
}

/// Append one line in one write call, so concurrent writers never interleave within a line. A
/// log whose last line is torn (it does not end in `\n`: a crash or a full disk mid-line) gets
/// a `\n` first, so the torn line stays one line the reader skips and this one is read whole.
fn append_line(mut file: &std::fs::File, line: &str) -> std::io::Result<()> {
    use std::io::{Read, Seek, SeekFrom};
    let len = file.metadata()?.len();
    let mut bytes = Vec::with_capacity(line.len() + 2);
    if len > 0 {
        let mut last = [0u8; 1];
        file.seek(SeekFrom::Start(len - 1))?;
        file.read_exact(&mut last)?;
        if last[0] != b'\n' {
            bytes.push(b'\n');
        }
    }
    bytes.extend_from_slice(line.as_bytes());
    bytes.push(b'\n');
    // O_APPEND: every write goes to the end, wherever the read above left the offset
    file.write_all(&bytes)
}

/// The blocks the log is read in from its end ([`AuditLog::read_newest`]).
const BLOCK: u64 = 64 << 10;

/// The longest line the log is read back with (1 MiB; an entry is a few hundred bytes): a longer
/// one is counted as not an entry, never held.
const MAX_LINE: usize = 1 << 20;

/// The newest entries of the log ([`AuditLog::read_newest`]), oldest first.
#[derive(Debug, Default)]
pub struct Newest {
    pub entries: Vec<Value>,
    /// Lines read that were not entries (torn, not UTF-8, not JSON of this tool, too long).
    pub skipped: usize,
    /// Whether an older entry would have been kept too: more than asked for are in the log.
    pub more: bool,
}

impl AuditLog {
    /// Whether an entry can be appended: checked before a write is sent, so a write is never
    /// sent that the log cannot record.
    pub(crate) fn ready(&self) -> Result<(), String> {
        let Some(path) = &self.path else { return Ok(()) };
        open_append(path).map(|_| ()).map_err(|e| {
            // out of file descriptors is this process's trouble, not the log's: no --no-audit hint
            if matches!(e.raw_os_error(), Some(23 | 24)) {
                return format!(
                    "cannot record writes in the audit log {}: {e}; nothing sent (the process is out of file descriptors: raise `ulimit -n` or lower --parallel)",
                    path.display()
                );
            }
            format!(
                "cannot record writes in the audit log {}: {e}; nothing sent (fix the path, set --audit-log, or pass --no-audit to write unrecorded)",
                path.display()
            )
        })
    }

    /// Append the intent of a send, stamped with `now`, before it is sent (write-ahead): `Err`
    /// says why it could not be, and then the send must not happen. Not part of the session's
    /// list (the outcome entry that follows is).
    pub(crate) fn intend(&self, mut entry: Value, now: DateTime<Utc>) -> Result<(), String> {
        entry["time"] = Value::String(now.to_rfc3339_opts(SecondsFormat::Millis, true));
        entry["outcome"] = Value::String(INTENT.into());
        match self.append(&entry) {
            Err(why) => {
                let mut failure = self.failure.lock().unwrap_or_else(|p| p.into_inner());
                // (a record lost earlier stays the one to report)
                if failure.is_none() {
                    *failure = Some((why.clone(), false));
                }
                Err(why)
            }
            ok => ok,
        }
    }

    /// One line appended in one write call (one open of the log).
    fn append(&self, entry: &Value) -> Result<(), String> {
        let Some(path) = &self.path else { return Ok(()) };
        open_append(path)
            .and_then(|f| append_line(&f, &entry.to_string()))
            .map_err(|e| format!("cannot append to the audit log {}: {e}", path.display()))
    }

    /// Append one entry, stamped with `now`. A log that fails after [`AuditLog::ready`] said
    /// yes is reported on stderr: the write it records has happened and cannot be undone (its
    /// intent, appended before it was sent, stays in the log as an outcome unknown).
    pub(crate) fn record(&self, mut entry: Value, now: DateTime<Utc>) -> Value {
        entry["time"] = Value::String(now.to_rfc3339_opts(SecondsFormat::Millis, true));
        if let Err(why) = self.append(&entry) {
            if self.session.is_none() {
                crate::errln!("warning: {why}");
            }
            *self.failure.lock().unwrap_or_else(|p| p.into_inner()) = Some((why, true));
        }
        if let Some(session) = &self.session {
            session.lock().unwrap_or_else(|p| p.into_inner()).push(entry.clone());
        }
        entry
    }

    /// Why the last append failed, if one did.
    pub(crate) fn failure(&self) -> Option<String> {
        self.failure
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
            .map(|f| f.0.clone())
    }

    /// Why the record of a write already sent could not be appended, if that happened: the
    /// write happened and the log lacks its outcome (its intent is there).
    pub fn lost(&self) -> Option<String> {
        self.failure
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
            .filter(|f| f.1)
            .map(|f| f.0.clone())
    }

    /// Every entry, oldest first; lines that are not entries are counted, not fatal.
    pub fn read(&self) -> std::io::Result<AuditRead> {
        let newest = self.read_newest(usize::MAX, |_| true)?;
        Ok(AuditRead {
            entries: newest.entries,
            skipped: newest.skipped,
        })
    }
}

impl AuditLog {
    /// The newest `n` entries `keep` keeps (it sees each entry newest first and may mark it),
    /// oldest first, read from the end of the log in blocks of 64 KiB: however long the log,
    /// what is held is those entries and one block. Reading stops at the entry after the `n`-th
    /// kept, which only says there are more ([`Newest::more`]).
    pub fn read_newest(&self, n: usize, mut keep: impl FnMut(&mut Value) -> bool) -> std::io::Result<Newest> {
        use std::io::{Read, Seek, SeekFrom};
        let mut out = Newest::default();
        let Some(path) = &self.path else { return Ok(out) };
        let mut options = std::fs::OpenOptions::new();
        options.read(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            // a FIFO put there must not hang the read
            options.custom_flags(libc::O_NONBLOCK);
        }
        let mut file = match options.open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
            Err(e) => return Err(e),
        };
        let meta = file.metadata()?;
        if !meta.is_file() {
            return Err(std::io::Error::other("not a regular file"));
        }
        // one line: false once enough are kept and one more was found
        let mut line = |bytes: &[u8], out: &mut Newest| -> bool {
            if bytes.iter().all(u8::is_ascii_whitespace) {
                return true;
            }
            match serde_json::from_slice::<Value>(bytes) {
                Ok(mut entry) if is_entry(&entry) => {
                    if keep(&mut entry) {
                        if out.entries.len() == n {
                            out.more = true;
                            return false;
                        }
                        out.entries.push(entry);
                    }
                }
                _ => out.skipped += 1,
            }
            true
        };
        let mut pos = meta.len();
        // the end of the line being read: the bytes after `pos` up to the next line's start
        let mut tail: Vec<u8> = Vec::new();
        // the line being read is longer than MAX_LINE: its bytes are dropped until its start
        let mut overlong = false;
        'read: while pos > 0 {
            let start = pos.saturating_sub(BLOCK);
            let mut block = vec![0u8; usize::try_from(pos - start).unwrap_or(0)];
            file.seek(SeekFrom::Start(start))?;
            file.read_exact(&mut block)?;
            pos = start;
            block.extend_from_slice(&tail);
            tail = block;
            while let Some(at) = tail.iter().rposition(|b| *b == b'\n') {
                let whole = tail.split_off(at + 1);
                tail.truncate(at);
                if std::mem::take(&mut overlong) {
                    out.skipped += 1;
                } else if !line(&whole, &mut out) {
                    break 'read;
                }
            }
            if tail.len() > MAX_LINE {
                tail.clear();
                overlong = true;
            }
        }
        if pos == 0 && !out.more {
            if overlong {
                out.skipped += 1;
            } else {
                line(&tail, &mut out);
            }
        }
        out.entries.reverse();
        Ok(out)
    }
}

/// The outcome of an entry appended before its request is sent: the outcome entry of the same
/// `write` follows it, unless the process ended in between (then the outcome is unknown).
pub const INTENT: &str = "intent";

/// One of ours: an object naming its verb, outcome and time as strings.
fn is_entry(v: &Value) -> bool {
    ["verb", "outcome", "time"]
        .iter()
        .all(|k| v.get(k).is_some_and(Value::is_string))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(n: usize) -> Value {
        serde_json::json!({"verb": "suspend", "outcome": "applied", "time": "2026-09-01T12:00:00.000Z",
            "write": format!("w{n}"), "workspace": format!("ws{n}")})
    }

    fn log_of(text: &[u8]) -> (tempfile::TempDir, AuditLog) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        std::fs::write(&path, text).unwrap();
        let log = AuditLog {
            path: Some(path),
            ..Default::default()
        };
        (dir, log)
    }

    fn writes(entries: &[Value]) -> Vec<String> {
        entries
            .iter()
            .map(|e| e["write"].as_str().unwrap().to_string())
            .collect()
    }

    #[test]
    fn read_newest_reads_across_blocks_from_the_end() {
        // lines crossing many 64 KiB blocks, an overlong line, a torn last line
        let mut text = Vec::new();
        for n in 0..3000 {
            text.extend(format!("{}\n", entry(n)).bytes());
            if n == 1500 {
                text.extend(vec![b'x'; 3 * MAX_LINE]);
                text.push(b'\n');
            }
        }
        text.extend(b"{\"verb\":\"resume\",\"outc");
        let (_dir, log) = log_of(&text);
        let newest = log.read_newest(3, |_| true).unwrap();
        assert_eq!(writes(&newest.entries), ["w2997", "w2998", "w2999"]);
        assert!(newest.more);
        assert_eq!(newest.skipped, 1, "the torn line");
        let all = log.read().unwrap();
        assert_eq!(all.entries.len(), 3000);
        assert_eq!(
            writes(&all.entries),
            (0..3000).map(|n| format!("w{n}")).collect::<Vec<_>>()
        );
        assert_eq!(all.skipped, 2, "the overlong line and the torn one");
        // a filter: the newest kept, the older ones only said to exist
        let even = log
            .read_newest(2, |e| e["write"].as_str().is_some_and(|w| w.ends_with('0')))
            .unwrap();
        assert_eq!(writes(&even.entries), ["w2980", "w2990"]);
        assert!(even.more);
        let first = log.read_newest(5, |e| e["write"] == "w0").unwrap();
        assert_eq!(writes(&first.entries), ["w0"]);
        assert!(!first.more);
    }

    #[test]
    fn an_append_after_a_torn_line_starts_on_a_line_of_its_own() {
        let (_dir, log) = log_of(b"{\"verb\":\"resume\",\"outc");
        log.append(&entry(1)).unwrap();
        log.append(&entry(2)).unwrap();
        let read = log.read().unwrap();
        assert_eq!(writes(&read.entries), ["w1", "w2"]);
        assert_eq!(read.skipped, 1);
        let (_dir, empty) = log_of(b"");
        empty.append(&entry(1)).unwrap();
        let text = std::fs::read_to_string(empty.path.as_ref().unwrap()).unwrap();
        assert_eq!(text, format!("{}\n", entry(1)), "no newline before the first line");
    }
}
