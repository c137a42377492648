//! What a frame holds: one record, as compact JSON (`r` names the record; `at` comes first so a
//! reader can find a record's time without parsing the rest) — or, for a keyframe, that JSON
//! compressed (`frame::plain`), whose time is its segment head's.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One record of the log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "r")]
pub enum Record {
    /// The first record of every segment: when it starts, the recorder session writing it, and
    /// whether the session starts here (`fresh`) or a segment was full (a compaction).
    #[serde(rename = "head")]
    Head {
        at: DateTime<Utc>,
        session: String,
        fresh: bool,
        /// What the session records: `-A`, or the namespace.
        scope: String,
    },
    /// The full projected state at `at`; the second record of every segment.
    #[serde(rename = "key")]
    Keyframe { at: DateTime<Utc>, objects: Vec<Object> },
    /// An object as the watch saw it (added, or replaced whole).
    #[serde(rename = "put")]
    Put {
        at: DateTime<Utc>,
        kind: String,
        obj: Value,
    },
    /// An object changed: a JSON merge patch (RFC 7386) of its previous recorded state.
    #[serde(rename = "patch")]
    Patch {
        at: DateTime<Utc>,
        kind: String,
        ns: String,
        name: String,
        patch: Value,
    },
    /// An object went away.
    #[serde(rename = "del")]
    Delete {
        at: DateTime<Utc>,
        kind: String,
        ns: String,
        name: String,
    },
    /// One of this machine's audit entries (a write this tool made or refused).
    #[serde(rename = "audit")]
    Audit { at: DateTime<Utc>, entry: Value },
    /// Still recording, nothing changed: the recording is complete up to `at`.
    #[serde(rename = "beat")]
    Beat { at: DateTime<Utc> },
    /// The session ended cleanly at `at`.
    #[serde(rename = "stop")]
    Stop { at: DateTime<Utc> },
}

/// One object of a keyframe.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Object {
    pub kind: String,
    pub obj: Value,
}

impl Record {
    pub fn at(&self) -> DateTime<Utc> {
        match self {
            Record::Head { at, .. }
            | Record::Keyframe { at, .. }
            | Record::Put { at, .. }
            | Record::Patch { at, .. }
            | Record::Delete { at, .. }
            | Record::Audit { at, .. }
            | Record::Beat { at }
            | Record::Stop { at } => *at,
        }
    }
}

/// A record's time from its payload's first bytes, without parsing the rest (`{"r":"…","at":"…"`).
pub(crate) fn at_of(payload: &[u8]) -> Option<DateTime<Utc>> {
    let head = &payload[..payload.len().min(96)];
    let text = std::str::from_utf8(head).ok().or_else(|| {
        // a cut inside a multi-byte character past the time: the prefix before it
        (1..4).find_map(|k| std::str::from_utf8(&head[..head.len().saturating_sub(k)]).ok())
    })?;
    let (_, rest) = text.split_once("\"at\":\"")?;
    let (at, _) = rest.split_once('"')?;
    DateTime::parse_from_rfc3339(at).ok().map(|t| t.with_timezone(&Utc))
}

/// The key an object is recorded under.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Key {
    pub kind: String,
    pub ns: String,
    pub name: String,
}

impl Key {
    pub fn of(kind: &str, obj: &Value) -> Key {
        Key {
            kind: kind.to_string(),
            ns: namzu_domain::object::namespace(obj).to_string(),
            name: namzu_domain::object::name(obj).to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_records_time_is_read_from_its_first_bytes() {
        let at = DateTime::parse_from_rfc3339("2026-05-01T10:00:00.250Z")
            .unwrap()
            .with_timezone(&Utc);
        let rec = Record::Put {
            at,
            kind: "Pod".into(),
            obj: serde_json::json!({"metadata": {"name": "ü".repeat(80)}}),
        };
        let bytes = serde_json::to_vec(&rec).unwrap();
        assert_eq!(at_of(&bytes), Some(at));
        assert_eq!(serde_json::from_slice::<Record>(&bytes).unwrap(), rec);
    }
}
