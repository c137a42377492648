//! A history's mode changes, each with what was true at its time (`timeline`'s part from the
//! annotations, the audit log's request bodies and managedFields).

use super::super::annotations::{CHANGED_AT, HOLDER_EPOCH};
use super::super::object::{annotation, at, str_at};
use super::super::patch::Mode;
use super::super::writers::{self, Writer};
use super::entry::{Entry, Source, object_words, time};
use chrono::{DateTime, Utc};
use serde_json::Value;

/// How far apart a stamp (the writer's clock, milliseconds) and a managedFields time (the API
/// server's clock, seconds) may be and still be one write.
pub const STAMP_SKEW_SECONDS: i64 = 5;

/// What one of this machine's writes set, read back from its audit entry's request body.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Written {
    pub time: Option<DateTime<Utc>>,
    /// The mode it set (`add /spec/operatingMode`), if it set one.
    pub mode: Option<String>,
    /// The holder epoch it wrote.
    pub epoch: Option<String>,
    /// The stored epoch it replaced (the value its `test` carried).
    pub replaced: Option<String>,
    /// The mode-changed-at stamp it wrote, as written.
    pub stamp: Option<String>,
    /// It landed (`applied`).
    pub applied: bool,
}

impl Written {
    /// What an audit entry's JSON Patch set; `None` for an entry without one.
    pub(crate) fn of(entry: &Value) -> Option<Written> {
        let ops = at(entry, &["request", "body"])?.as_array()?;
        let pointer = |key: &str| super::super::patch::annotation_pointer(key);
        let value = |op: &str, path: &str| {
            ops.iter()
                .find(|o| str_at(o, &["op"]) == Some(op) && str_at(o, &["path"]) == Some(path))
                .and_then(|o| o.get("value"))
                .and_then(Value::as_str)
                .map(str::to_string)
        };
        let (epoch_path, stamp_path) = (pointer(HOLDER_EPOCH), pointer(CHANGED_AT));
        // a whole-map add (no annotations before) carries both in one value
        let map = |key: &str| {
            ops.iter()
                .find(|o| str_at(o, &["op"]) == Some("add") && str_at(o, &["path"]) == Some("/metadata/annotations"))
                .and_then(|o| str_at(o, &["value", key]))
                .map(str::to_string)
        };
        Some(Written {
            time: time(entry.get("time").and_then(Value::as_str)),
            mode: value("add", "/spec/operatingMode"),
            epoch: value("add", &epoch_path).or_else(|| map(HOLDER_EPOCH)),
            replaced: value("test", &epoch_path),
            stamp: value("add", &stamp_path).or_else(|| map(CHANGED_AT)),
            applied: entry.get("outcome").and_then(Value::as_str) == Some("applied"),
        })
    }

    /// A take-over: a holder epoch written with no mode change.
    pub(crate) fn is_take_over(&self) -> bool {
        self.epoch.is_some() && self.stamp.is_none() && self.mode.is_none()
    }
}

/// Whether the field `w` names was last written at or before `t` (`Some(true)`: today's value
/// held then), after it (`Some(false)`), or the managedFields do not say (`None`).
fn held_at(w: Option<&Writer>, t: DateTime<Utc>) -> Option<bool> {
    let written = w?.time?;
    Some(written <= t + chrono::Duration::seconds(STAMP_SKEW_SECONDS))
}

/// Whether the mode was written after the stamp at `stamp` by a manager that did not write the
/// stamp (a manager's time is its latest write of any field: the one that stamps a mode change
/// with the mode, as this tool and @namzu/sandbox do, wrote the mode with its stamp).
pub fn mode_unstamped(sandbox: &Value, stamp: DateTime<Utc>) -> bool {
    let Some(mode) = writers::of_mode(sandbox) else {
        return false;
    };
    let stamper = writers::of_annotation(sandbox, CHANGED_AT).map(|w| w.manager);
    held_at(Some(&mode), stamp) == Some(false) && stamper.as_deref() != Some(mode.manager.as_str())
}

/// The words of the stamped mode change: the mode and holder epoch then (each when known) and
/// who stamped it.
fn stamped_text(mode: Option<&str>, epoch_then: Option<&str>, ours: bool, stamp_w: Option<&Writer>) -> String {
    let by = if ours {
        "stamped by this machine's write".to_string()
    } else {
        // the owner of the stamp wrote the stamp there is (a write of it moves it)
        match stamp_w {
            Some(w) => format!("stamped by {}", w.who()),
            None => "its writer not recorded".to_string(),
        }
    };
    let epoch = match epoch_then {
        Some("none") => "no holder epoch".to_string(),
        Some(e) => format!("holder epoch {e}"),
        None => "holder epoch unknown".to_string(),
    };
    let known = mode.is_some() && epoch_then.is_some();
    format!(
        "mode changed to {} ({epoch}; {by}{})",
        mode.unwrap_or("unknown"),
        if known {
            ""
        } else {
            "; written again since: what it was then is not recorded"
        }
    )
}

/// The mode changes of the Sandbox, each with what was true at its time: the stamp the
/// annotations record with the mode and epoch it set — from this machine's write of that very
/// stamp, else from managedFields when nothing wrote the field since (else "unknown", never
/// today's value) — and the writes the stamp does not record: the mode set by a manager after it,
/// a holder epoch raised after it (a take-over). This machine's own take-overs are said by their
/// audit entries.
pub(super) fn mode_entries(out: &mut Vec<Entry>, sandbox: &Value, audit: &[Value]) {
    let object = object_words("Sandbox", sandbox);
    let today_mode = Mode::of_sandbox(sandbox).as_str();
    let today_epoch = annotation(sandbox, HOLDER_EPOCH);
    let mode_w = writers::of_mode(sandbox);
    let epoch_w = writers::of_annotation(sandbox, HOLDER_EPOCH);
    let stamp_w = writers::of_annotation(sandbox, CHANGED_AT);
    let writes: Vec<Written> = audit.iter().filter_map(Written::of).filter(|w| w.applied).collect();
    let stamp_raw = annotation(sandbox, CHANGED_AT);
    let stamp = time(stamp_raw);
    // what the holder epoch was at the stamp, when known
    let mut epoch_then: Option<String> = None;
    if let Some(t) = stamp {
        let ours = writes
            .iter()
            .find(|w| w.stamp.is_some() && w.stamp.as_deref() == stamp_raw);
        let mode = ours
            .and_then(|w| w.mode.clone())
            .or_else(|| (!mode_unstamped(sandbox, t) && mode_w.is_some()).then(|| today_mode.to_string()));
        epoch_then = ours.and_then(|w| w.epoch.clone()).or_else(|| match today_epoch {
            Some(e) => (held_at(epoch_w.as_ref(), t) == Some(true)).then(|| e.to_string()),
            // no epoch today, and nothing written since the stamp: none then either
            None => writers::latest_write(sandbox)
                .is_some_and(|l| l <= t + chrono::Duration::seconds(STAMP_SKEW_SECONDS))
                .then(|| "none".to_string()),
        });
        out.push(Entry {
            time: t,
            source: Source::Annotation,
            object: object.clone(),
            warning: false,
            reason: String::new(),
            text: stamped_text(mode.as_deref(), epoch_then.as_deref(), ours.is_some(), stamp_w.as_ref()),
        });
    }
    let created = time(str_at(sandbox, &["metadata", "creationTimestamp"]));
    let after = |w: &Writer, since: Option<DateTime<Utc>>| {
        w.time
            .filter(|t| since.is_none_or(|s| *t > s + chrono::Duration::seconds(STAMP_SKEW_SECONDS)))
    };
    // the mode set after the stamp (or, without one, after the Sandbox was made) by a manager
    // that did not stamp it
    if let Some(w) = &mode_w
        && let Some(t) = after(w, stamp.or(created))
        && stamp.is_none_or(|s| mode_unstamped(sandbox, s))
    {
        out.push(Entry {
            time: t,
            source: Source::Managed,
            object: object.clone(),
            warning: false,
            reason: String::new(),
            text: format!(
                "mode {today_mode}, set by {} without a mode-changed-at stamp (that manager's latest write)",
                w.who()
            ),
        });
    }
    // a holder epoch raised after the stamp: a take-over (this machine's is its audit entry)
    if let Some(w) = &epoch_w
        && let Some(t) = after(w, stamp.or(created))
        && let Some(e) = today_epoch
    {
        let ours = writes.iter().any(|x| {
            x.is_take_over()
                && x.epoch.as_deref() == Some(e)
                && x.time
                    .is_some_and(|xt| (xt - t).num_seconds().abs() <= STAMP_SKEW_SECONDS)
        });
        if !ours {
            let from = epoch_then
                .as_deref()
                .filter(|e| *e != "none")
                .map_or_else(String::new, |f| format!(" from {f}"));
            out.push(Entry {
                time: t,
                source: Source::Managed,
                object,
                warning: false,
                reason: String::new(),
                text: format!(
                    "holder epoch raised{from} to {e} by {} with no mode change (a take-over)",
                    w.who()
                ),
            });
        }
    }
}
