//! `--at TIME`: a read answered from the flight recorder (issue 43) at an RFC 3339 instant or
//! one relative to now (`-2h`, `-30m`, `-1d12h`).

use super::exit::Failure;
use super::globals::Globals;
use chrono::{DateTime, Utc};
use namzu_engine::ops::inventory::{At, Source};

/// The instant `text` names; `now` is what a relative one counts back from.
pub(crate) fn parse(text: &str, now: DateTime<Utc>) -> Result<DateTime<Utc>, Failure> {
    let text = text.trim();
    if let Some(back) = text.strip_prefix('-') {
        let d = namzu_domain::select::parse_duration(back).map_err(|e| Failure::usage(format!("--at: {e}")))?;
        return Ok(now - d);
    }
    DateTime::parse_from_rfc3339(text)
        .map(|t| t.with_timezone(&Utc))
        .map_err(|e| {
            Failure::usage(format!(
                "--at {text:?}: not an RFC 3339 time (2026-05-01T10:00:00Z) or one relative to now (-2h, -30m): {e}"
            ))
        })
}

/// Where a read comes from, and the instant it answers for: the recording at `--at`, else the
/// cluster now. An instant after now is refused.
pub(crate) fn source(
    globals: &Globals,
    at: Option<&str>,
    now: DateTime<Utc>,
) -> Result<(Source, DateTime<Utc>), Failure> {
    let Some(text) = at else {
        return Ok((Source::Live, now));
    };
    let instant = parse(text, now)?;
    if instant > now {
        return Err(Failure::usage(format!("--at {text}: that is in the future")));
    }
    let root = globals.recording_root()?;
    Ok((Source::At(At { root, instant }), instant))
}
