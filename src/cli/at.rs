//! `--at TIME`: a read answered from the flight recorder (issue 43) at an RFC 3339 instant or
//! one relative to now (`-2h`, `-30m`, `-1d12h`).

use super::exit::Failure;
use super::globals::Globals;
use chrono::{DateTime, Utc};
use namzu_engine::ops::inventory::{At, Source};

/// The instant `text` names (`domain::select::parse_moment`); `now` is what a relative one
/// counts back from.
pub(crate) fn parse(text: &str, now: DateTime<Utc>) -> Result<DateTime<Utc>, Failure> {
    namzu_domain::select::parse_moment(text, now).map_err(|e| Failure::usage(format!("--at {e}")))
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
    let root = globals.recording_root()?;
    Ok((Source::At(At { root, instant }), instant))
}
