//! The sim's clock: the crate's [`Clock`] — real time for the demo, a manual clock that tests
//! advance (no sleeping) and hand to the tool under test, so both read the same instant.

use chrono::{DateTime, SecondsFormat, Utc};

pub(crate) use namzu_clock::Clock;

/// Kubernetes' RFC 3339 form, whole seconds.
pub fn k8s_time(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}
