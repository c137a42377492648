//! Wall-clock time, injectable. The tool reads "now" only through a [`Clock`]: the system clock
//! in use, a manual clock that tests (and the simulated cluster) set and advance, so no test and
//! no snapshot depends on the day it runs. A leaf module: it imports nothing from the crate.

use chrono::{DateTime, Duration, Utc};
use std::sync::{Arc, Mutex};

/// The environment variable that pins the binary's clock to one instant (RFC 3339), for tests
/// and reproducible output. Every age, filter and stamp then uses that instant — and so no write
/// is sent under it except to the simulated cluster (`cluster/write.rs`): a stamp of a pinned
/// instant in a real cluster would mislead every later age and retention selection.
pub const NOW_ENV: &str = "KUBECTL_NAMZU_NOW";

#[derive(Debug, Clone, Default)]
pub enum Clock {
    #[default]
    System,
    /// A clock that moves only when told; clones share it.
    Manual(Arc<Mutex<DateTime<Utc>>>),
    /// One instant, from `$KUBECTL_NAMZU_NOW`: it never moves.
    Pinned(DateTime<Utc>),
    /// `$KUBECTL_NAMZU_NOW=@FILE`: the instant written in FILE, read at each use — a pinned clock
    /// that a test moves (the simulated cluster's manual clock, written there), for a process
    /// that runs while the test changes the cluster (`record`). Unreadable: the Unix epoch.
    File(Arc<std::path::PathBuf>),
}

impl Clock {
    pub fn manual(start: DateTime<Utc>) -> Clock {
        Clock::Manual(Arc::new(Mutex::new(start)))
    }

    /// The system clock, or one pinned at `$KUBECTL_NAMZU_NOW` when that is set.
    pub fn from_env() -> Result<Clock, String> {
        match std::env::var(NOW_ENV) {
            Ok(text) if text.trim().starts_with('@') => Ok(Clock::File(Arc::new(text.trim()[1..].into()))),
            Ok(text) if !text.trim().is_empty() => DateTime::parse_from_rfc3339(text.trim())
                .map(|t| Clock::Pinned(t.with_timezone(&Utc)))
                .map_err(|e| format!("{NOW_ENV}={text:?} is not an RFC 3339 time: {e}")),
            _ => Ok(Clock::System),
        }
    }

    pub fn now(&self) -> DateTime<Utc> {
        match self {
            // the one place the wall clock is read (clippy.toml)
            #[allow(clippy::disallowed_methods)]
            Clock::System => Utc::now(),
            Clock::Manual(t) => *t.lock().unwrap_or_else(|p| p.into_inner()),
            Clock::Pinned(t) => *t,
            Clock::File(path) => std::fs::read_to_string(path.as_ref())
                .ok()
                .and_then(|text| DateTime::parse_from_rfc3339(text.trim()).ok())
                .map_or(DateTime::UNIX_EPOCH, |t| t.with_timezone(&Utc)),
        }
    }

    /// Pinned by `$KUBECTL_NAMZU_NOW`: a test hook, under which writes reach only the sim.
    pub fn pinned(&self) -> bool {
        matches!(self, Clock::Pinned(_) | Clock::File(_))
    }

    /// Move a manual clock forward; the system and a pinned clock cannot be moved.
    pub fn advance(&self, by: Duration) {
        if let Clock::Manual(t) = self {
            *t.lock().unwrap_or_else(|p| p.into_inner()) += by;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clones_share_one_time() {
        let start = DateTime::parse_from_rfc3339("2031-03-15T10:00:00Z")
            .unwrap()
            .with_timezone(&Utc);
        let a = Clock::manual(start);
        let b = a.clone();
        a.advance(Duration::seconds(5));
        assert_eq!(b.now(), start + Duration::seconds(5));
    }
}
