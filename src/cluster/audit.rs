//! The audit log: one JSON line per write attempt (and per refusal), appended under the user's
//! state directory. Written only by the write path.

use chrono::{SecondsFormat, Utc};
use serde_json::Value;
use std::io::Write;
use std::path::PathBuf;

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
    pub path: Option<PathBuf>,
    /// This session's entries too, for a UI that shows what was sent.
    pub session: Option<std::sync::Arc<std::sync::Mutex<Vec<Value>>>>,
}

impl AuditLog {
    /// Append one entry, stamped with the time. A log that cannot be written is reported on
    /// stderr once per entry and never stops the write it records.
    pub fn record(&self, mut entry: Value) -> Value {
        entry["time"] = Value::String(Utc::now().to_rfc3339_opts(SecondsFormat::Millis, true));
        if let Some(path) = &self.path {
            let appended = path
                .parent()
                .map_or(Ok(()), std::fs::create_dir_all)
                .and_then(|_| std::fs::OpenOptions::new().create(true).append(true).open(path))
                .and_then(|mut f| writeln!(f, "{entry}"));
            if let Err(e) = appended
                && self.session.is_none()
            {
                eprintln!("warning: cannot append to the audit log {}: {e}", path.display());
            }
        }
        if let Some(session) = &self.session {
            session.lock().unwrap_or_else(|p| p.into_inner()).push(entry.clone());
        }
        entry
    }

    /// Every entry, oldest first; unreadable lines are skipped.
    pub fn read(&self) -> std::io::Result<Vec<Value>> {
        let Some(path) = &self.path else { return Ok(Vec::new()) };
        match std::fs::read_to_string(path) {
            Ok(text) => Ok(text.lines().filter_map(|l| serde_json::from_str(l).ok()).collect()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
            Err(e) => Err(e),
        }
    }
}
