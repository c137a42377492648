//! The sim's clock: real time for the demo, a manual clock that tests advance (no sleeping).

use chrono::{DateTime, Duration, SecondsFormat, Utc};
use std::sync::Mutex;

#[derive(Debug)]
pub enum Clock {
    Real,
    Manual(Mutex<DateTime<Utc>>),
}

impl Clock {
    pub fn manual(start: DateTime<Utc>) -> Clock {
        Clock::Manual(Mutex::new(start))
    }

    pub fn now(&self) -> DateTime<Utc> {
        match self {
            Clock::Real => Utc::now(),
            Clock::Manual(t) => *t.lock().expect("clock lock"),
        }
    }

    /// Move a manual clock forward; a real clock cannot be moved.
    pub fn advance(&self, by: Duration) {
        if let Clock::Manual(t) = self {
            *t.lock().expect("clock lock") += by;
        }
    }
}

/// Kubernetes' RFC 3339 form, whole seconds.
pub fn k8s_time(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}
