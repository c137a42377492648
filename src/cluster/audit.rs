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

/// Open for appending, private to the user: the log holds what was sent where. Only a regular
/// file: a symlink is not followed (it could send the log anywhere, /dev/full included) and a
/// FIFO or device is refused without blocking; a log others can read is made private (0600).
fn open_append(path: &Path) -> std::io::Result<std::fs::File> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        let mut builder = std::fs::DirBuilder::new();
        builder.recursive(true);
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        builder.create(dir)?;
    }
    let not_regular = || std::io::Error::other("not a regular file (a symlink, FIFO or device is not followed)");
    match std::fs::symlink_metadata(path) {
        Ok(m) if !m.file_type().is_file() => return Err(not_regular()),
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    let mut options = std::fs::OpenOptions::new();
    options.create(true).append(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
        // a FIFO put there after the look above must not block the open
        options.custom_flags(NONBLOCK);
    }
    let file = options.open(path)?;
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

/// O_NONBLOCK: 0o4000 on Linux (x86, Arm, RISC-V), 0x0004 on the BSDs and macOS.
#[cfg(target_os = "linux")]
const NONBLOCK: i32 = 0o4000;
#[cfg(all(unix, not(target_os = "linux")))]
const NONBLOCK: i32 = 0x0004;

impl AuditLog {
    /// Whether an entry can be appended: checked before a write is sent, so a write is never
    /// sent that the log cannot record.
    pub fn ready(&self) -> Result<(), String> {
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
    pub fn intend(&self, mut entry: Value, now: DateTime<Utc>) -> Result<(), String> {
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

    /// One line appended in one write call, so concurrent writers never interleave within a line.
    fn append(&self, entry: &Value) -> Result<(), String> {
        let Some(path) = &self.path else { return Ok(()) };
        open_append(path)
            .and_then(|mut f| f.write_all(format!("{entry}\n").as_bytes()))
            .map_err(|e| format!("cannot append to the audit log {}: {e}", path.display()))
    }

    /// Append one entry, stamped with `now`. A log that fails after [`AuditLog::ready`] said
    /// yes is reported on stderr: the write it records has happened and cannot be undone (its
    /// intent, appended before it was sent, stays in the log as an outcome unknown).
    pub fn record(&self, mut entry: Value, now: DateTime<Utc>) -> Value {
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
    pub fn failure(&self) -> Option<String> {
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
        let Some(path) = &self.path else {
            return Ok(AuditRead::default());
        };
        let bytes = match std::fs::read(path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(AuditRead::default()),
            Err(e) => return Err(e),
        };
        let mut read = AuditRead::default();
        for line in bytes
            .split(|b| *b == b'\n')
            .filter(|l| !l.iter().all(u8::is_ascii_whitespace))
        {
            match serde_json::from_slice::<Value>(line) {
                Ok(entry) if is_entry(&entry) => read.entries.push(entry),
                _ => read.skipped += 1,
            }
        }
        Ok(read)
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
