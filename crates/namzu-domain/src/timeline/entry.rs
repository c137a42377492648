//! What a timeline is made of and its lines: the reads it takes, each entry and its source, and
//! the times read off objects and events (the timeline and its parts, `modes` and `waterfall`,
//! all build on these).

use crate::object::{name, str_at};
use crate::timefmt;
use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::Value;

/// The claim annotation agent-sandbox stamps with the moment a client first asked for it.
pub(crate) const FIRST_REQUESTED_AT: &str = "agents.x-k8s.io/client-first-requested-at";

/// Where an entry comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    /// An object's own metadata or status (created, a condition's transition, a container's start).
    Status,
    /// The namzu annotations (the last mode change, its holder epoch).
    Annotation,
    /// The Sandbox's `metadata.managedFields`: a manager's write the annotations do not record
    /// (the mode set without a stamp, a holder epoch raised after it).
    Managed,
    /// A Kubernetes Event.
    Event,
    /// A Kubernetes Event the cluster no longer keeps (Events live an hour), from the flight
    /// recorder's recording (its object carries `namzuRecorded: true`).
    Recorded,
    /// This machine's audit log.
    Audit,
}

impl Source {
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Status => "status",
            Source::Annotation => "annotation",
            Source::Managed => "managed",
            Source::Event => "event",
            Source::Recorded => "recorded",
            Source::Audit => "audit",
        }
    }
}

/// One line of the history.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Entry {
    #[serde(serialize_with = "rfc3339")]
    pub time: DateTime<Utc>,
    pub source: Source,
    /// `Sandbox namzu-ws-a`, `Pod namzu-ws-a`, `PersistentVolumeClaim data-namzu-ws-a`, …
    pub object: String,
    /// A Warning event, a failed write, a container that terminated with an error.
    pub warning: bool,
    /// The reason (an event's, a condition's) where there is one.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub reason: String,
    pub text: String,
}

pub(super) fn rfc3339<S: serde::Serializer>(t: &DateTime<Utc>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&timefmt::js_iso(*t))
}

/// What the timeline is made of, as the API served it.
pub struct Inputs<'a> {
    pub sandbox: &'a Value,
    pub pod: Option<&'a Value>,
    pub claim: Option<&'a Value>,
    pub pvcs: &'a [Value],
    /// Events of either API, of any of the objects above (duplicates across the APIs are dropped).
    pub events: &'a [Value],
    /// The audit log's entries for this workspace.
    pub audit: &'a [Value],
}

pub(super) fn time(text: Option<&str>) -> Option<DateTime<Utc>> {
    timefmt::parse(text?)
}

pub(super) fn object_words(kind: &str, obj: &Value) -> String {
    format!("{} {}", short_kind(kind), name(obj))
}

/// Kinds as a narrow column names them.
pub(super) fn short_kind(kind: &str) -> &str {
    match kind {
        "PersistentVolumeClaim" => "PVC",
        other => other,
    }
}

/// When an event last happened, in whichever field its writer (or API) used.
pub(crate) fn event_time(e: &Value) -> Option<DateTime<Utc>> {
    [
        &["lastTimestamp"][..],
        &["series", "lastObservedTime"],
        &["deprecatedLastTimestamp"],
        &["eventTime"],
        &["firstTimestamp"],
        &["deprecatedFirstTimestamp"],
        &["metadata", "creationTimestamp"],
    ]
    .iter()
    .find_map(|path| time(str_at(e, path)))
}

/// When an event first happened (its first timestamp, else its only one).
pub(super) fn first_time(e: &Value) -> Option<DateTime<Utc>> {
    ["firstTimestamp", "deprecatedFirstTimestamp", "eventTime"]
        .iter()
        .find_map(|k| time(e.get(*k).and_then(Value::as_str)))
        .or_else(|| event_time(e))
}
