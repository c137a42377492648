//! Tombstones: before `leaks --delete` sends a DELETE, the object as it was read is kept in the
//! tool's state directory, with when, by whom and its audit entry's write id, so that
//! `kubectl namzu restore` can re-create it. One file per delete, written whole before the
//! request leaves and removed again when nothing was deleted.
//!
//! Where: `tombstones/` beside the audit log (`$KUBECTL_NAMZU_AUDIT_LOG`'s directory, else
//! `$XDG_STATE_HOME/kubectl-namzu/`), else under the default state directory with `--no-audit`.

use serde_json::Value;
use std::path::{Path, PathBuf};

/// The directory tombstones are kept in, next to the audit log at `audit` (if any).
pub fn dir(audit: Option<&Path>) -> Option<PathBuf> {
    let log = audit.map(Path::to_path_buf).or_else(super::audit::default_path)?;
    Some(log.parent().unwrap_or(Path::new(".")).join("tombstones"))
}

/// Every character of a name a file name may carry (Kubernetes names are DNS names already:
/// anything else is replaced, so no name reaches another directory).
fn file_part(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Keep `stone` (its `kind`, `namespace`, `name` and `deletedAt` name the file) in `dir`: a new
/// file, never one planted at the path, readable by its owner only. The file's path.
pub(crate) fn write(dir: &Path, stone: &Value) -> Result<PathBuf, String> {
    let field = |k: &str| stone.get(k).and_then(Value::as_str).unwrap_or("-");
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let file = dir.join(format!(
        "{}_{}_{}_{}_{}.json",
        file_part(&field("deletedAt").replace(':', "")),
        file_part(&field("kind").to_lowercase()),
        file_part(field("namespace")),
        file_part(field("name")),
        file_part(field("write")),
    ));
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let text = serde_json::to_string_pretty(stone).map_err(|e| e.to_string())?;
    let mut f = options
        .open(&file)
        .map_err(|e| format!("cannot write the tombstone {}: {e}", file.display()))?;
    std::io::Write::write_all(&mut f, text.as_bytes())
        .and_then(|()| f.sync_all())
        .map_err(|e| format!("cannot write the tombstone {}: {e}", file.display()))?;
    Ok(file)
}

/// Every tombstone in `dir`, oldest first (by the time in its file name); unreadable files are
/// skipped.
pub fn list(dir: &Path) -> Vec<(PathBuf, Value)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<(PathBuf, Value)> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .filter_map(|p| {
            // a tombstone is small: a huge file at the path is not one
            let meta = std::fs::symlink_metadata(&p).ok()?;
            if !meta.is_file() || meta.len() > 16 << 20 {
                return None;
            }
            let v: Value = serde_json::from_str(&std::fs::read_to_string(&p).ok()?).ok()?;
            Some((p, v))
        })
        .collect();
    out.sort_by(|a, b| a.0.file_name().cmp(&b.0.file_name()));
    out
}

/// The newest tombstone of `kind`/`name` in `namespace` (and `context`, when given).
pub fn newest(dir: &Path, context: Option<&str>, kind: &str, namespace: &str, name: &str) -> Option<(PathBuf, Value)> {
    let field = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
    list(dir).into_iter().rev().find(|(_, v)| {
        field(v, "kind").is_some_and(|k| k.eq_ignore_ascii_case(kind))
            && field(v, "namespace").as_deref() == Some(namespace)
            && field(v, "name").as_deref() == Some(name)
            && context.is_none_or(|c| field(v, "context").as_deref() == Some(c))
    })
}
