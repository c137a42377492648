//! Text pieces of the detail view and `drift`: times with ages, overlays, field changes.

use chrono::{DateTime, Utc};
use namzu_domain::age::age;
use namzu_domain::diff::Change;
use namzu_domain::drift::Overlays;
use namzu_domain::timefmt;
use serde_json::Value;

/// `2026-11-29T08:00:00Z (2h ago)`, or the raw text marked unreadable.
pub(crate) fn when(ts: Option<&str>, now: DateTime<Utc>) -> String {
    match ts {
        None => "-".into(),
        Some(raw) => match timefmt::parse(raw) {
            Some(t) => format!("{raw} ({} ago)", age(t, now)),
            None => format!("!{raw} (unreadable)"),
        },
    }
}

/// The overlays a hash was computed with, in words.
pub fn overlays(o: &Overlays) -> String {
    let mut parts = vec![format!("template label {}", o.template_name)];
    if let Some(rc) = &o.runtime_class_name {
        parts.push(format!("runtimeClassName {rc}"));
    }
    if let Some(p) = &o.profile {
        parts.push(format!("egress profile {}={p}", o.profile_key()));
    }
    if let Some(p) = &o.per_sandbox_label {
        parts.push(format!(
            "per-sandbox label {}={} {}",
            p.key,
            p.value,
            if p.hashed {
                "counted in the hash"
            } else {
                "left out of the hash"
            }
        ));
    }
    parts.join(", ")
}

/// A changed value as compact JSON, fit for a terminal: what `-o json` escapes, escaped, and
/// any other character that would act on the terminal (a bidirectional mark) shown as `\u{..}`.
fn short(v: &Option<Value>) -> String {
    match v {
        None => "(absent)".into(),
        Some(v) => {
            let s = crate::console::printable(&super::yaml::compact_json(v));
            if s.chars().count() > 80 {
                format!("{}…", s.chars().take(79).collect::<String>())
            } else {
                s
            }
        }
    }
}

/// `path: old → new`, one per line, indented.
pub fn changes(list: &[Change], indent: &str) -> String {
    list.iter()
        .map(|c| {
            format!(
                "{indent}{}: {} → {}\n",
                crate::console::printable(&c.path),
                short(&c.old),
                short(&c.new)
            )
        })
        .collect()
}
