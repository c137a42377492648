//! Which workspaces a view shows and in what order: filters (including the retention rule of
//! docs/interop.md §2) and sort keys, shared by `list`, the write verbs' selections and the TUI.

use super::diagnosis::DiagnosisKind;
use super::drift::DriftState;
use super::patch::Mode;
use super::state::State;
use super::timefmt;
use super::workspace::Workspace;
use chrono::{DateTime, Duration, Utc};
use std::cmp::Ordering;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortKey {
    Name,
    Age,
    ModeChanged,
    Epoch,
    State,
    Drift,
    /// The TUI's own sorts (not `--sort-by`): any column, and the problems worst first.
    Mode,
    Template,
    Context,
    Namespace,
    Diagnosis,
}

impl SortKey {
    pub const ALL: [(&'static str, SortKey); 7] = [
        ("name", SortKey::Name),
        ("age", SortKey::Age),
        ("mode-changed", SortKey::ModeChanged),
        ("epoch", SortKey::Epoch),
        ("state", SortKey::State),
        ("drift", SortKey::Drift),
        // the problems worst first, as the TUI's `p` sort
        ("diagnosis", SortKey::Diagnosis),
    ];
    pub(crate) fn parse(text: &str) -> Option<SortKey> {
        SortKey::ALL.iter().find(|(n, _)| *n == text).map(|(_, k)| *k)
    }

    /// The paths kubectl's `--sort-by` takes, into the `-o json` schema or the Sandbox, with or
    /// without braces: `.createdAt`, `{.metadata.creationTimestamp}`, `.drift.state`, ….
    pub(crate) const PATHS: [(&'static str, SortKey); 12] = [
        (".id", SortKey::Name),
        (".sandboxName", SortKey::Name),
        (".metadata.name", SortKey::Name),
        (".createdAt", SortKey::Age),
        (".metadata.creationTimestamp", SortKey::Age),
        (".operatingModeChangedAt", SortKey::ModeChanged),
        (".holderEpoch.value", SortKey::Epoch),
        (".holderEpoch", SortKey::Epoch),
        (".state", SortKey::State),
        (".drift.state", SortKey::Drift),
        (".diagnosis.kind", SortKey::Diagnosis),
        (".diagnosis", SortKey::Diagnosis),
    ];

    /// A key name or one of [`SortKey::PATHS`].
    pub fn parse_any(text: &str) -> Option<SortKey> {
        let path = text.trim();
        let path = path.strip_prefix('{').and_then(|p| p.strip_suffix('}')).unwrap_or(path);
        SortKey::parse(path).or_else(|| SortKey::PATHS.iter().find(|(p, _)| *p == path).map(|(_, k)| *k))
    }
}

fn name_order(a: &Workspace, b: &Workspace) -> Ordering {
    (&a.context, &a.namespace, &a.id).cmp(&(&b.context, &b.namespace, &b.id))
}

/// `None` sorts last whatever the direction of the rest.
fn some_first<T: Ord>(a: Option<T>, b: Option<T>) -> Ordering {
    match (a, b) {
        (Some(x), Some(y)) => x.cmp(&y),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => Ordering::Equal,
    }
}

/// Compare by `key`, ties broken by context, namespace and id. Timestamps sort oldest first, as
/// `kubectl --sort-by=.metadata.creationTimestamp` does; absent values last.
pub fn compare(a: &Workspace, b: &Workspace, key: SortKey) -> Ordering {
    let time = |s: &Option<String>| s.as_deref().and_then(timefmt::parse);
    let primary = match key {
        SortKey::Name => Ordering::Equal,
        SortKey::Age => some_first(time(&a.created_at), time(&b.created_at)),
        SortKey::ModeChanged => some_first(time(&a.changed_at), time(&b.changed_at)),
        SortKey::Epoch => some_first(a.epoch.epoch, b.epoch.epoch),
        SortKey::State => a.state.cmp(&b.state),
        SortKey::Drift => a.drift.state.cmp(&b.drift.state),
        SortKey::Mode => a.mode.as_str().cmp(b.mode.as_str()),
        SortKey::Template => some_first(a.template.as_deref(), b.template.as_deref()),
        SortKey::Context => a.context.cmp(&b.context),
        SortKey::Namespace => a.namespace.cmp(&b.namespace),
        SortKey::Diagnosis => severity(a).cmp(&severity(b)),
    };
    primary.then_with(|| name_order(a, b))
}

/// How bad a row is, worst lowest: a diagnosis by what it costs the user (a crash loop first),
/// then an unreadable epoch, then drift, then nothing wrong.
pub fn severity(w: &Workspace) -> u8 {
    match w.diagnosis.as_ref() {
        Some(d) => match d.kind {
            DiagnosisKind::CrashLoop => 0,
            DiagnosisKind::ImagePull => 1,
            DiagnosisKind::Unschedulable => 2,
            DiagnosisKind::ControllerError | DiagnosisKind::PodStateUnknown => 3,
            DiagnosisKind::PodTerminated => 4,
            DiagnosisKind::DiskMissing => 5,
            DiagnosisKind::StuckTerminating => 6,
            // held in deletion, or expired and not reaped: stuck as a terminating pod is
            DiagnosisKind::StuckDeleting => 7,
            DiagnosisKind::Expired if d.reason == "NotReaped" => 8,
            DiagnosisKind::SuspendUnconfirmed => 9,
            DiagnosisKind::NoLivePod => 10,
            DiagnosisKind::ForeignPod => 11,
            DiagnosisKind::ForeignDisk => 12,
            DiagnosisKind::ForeignEgressPolicy => 13,
            DiagnosisKind::UnreadableEpoch => 14,
            DiagnosisKind::ControllerReason => 15,
            DiagnosisKind::DiskPending => 16,
            DiagnosisKind::StaleStatus => 17,
            // expired and retained by policy: kept on purpose, costs nothing but its disks
            DiagnosisKind::Expired => 18,
        },
        None if w.epoch.annotation.is_some() && w.epoch.epoch.is_none() => 20,
        None => match w.drift.state {
            DriftState::NoTemplate => 21,
            DriftState::Drifted => 22,
            DriftState::Unreadable => 23,
            _ => 30,
        },
    }
}

pub fn sort(workspaces: &mut [Workspace], key: SortKey, reverse: bool) {
    workspaces.sort_by(|a, b| {
        let o = compare(a, b, key);
        if reverse { o.reverse() } else { o }
    });
}

/// A problem row: a diagnosis, an unreadable holder epoch, or drift from its template.
pub fn is_problem(w: &Workspace) -> bool {
    w.diagnosis.is_some()
        || (w.epoch.annotation.is_some() && w.epoch.epoch.is_none())
        || matches!(w.drift.state, DriftState::Drifted | DriftState::NoTemplate)
}

/// Every condition given must hold; an empty list does not filter.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Filter {
    pub states: Vec<State>,
    pub drifts: Vec<DriftState>,
    pub diagnoses: Vec<DiagnosisKind>,
    /// The retention rule: mode Suspended AND changed-at older than this; no changed-at never matches.
    pub suspended_for: Option<Duration>,
    /// State Running for longer than this: since the mode-changed-at stamp, else since creation.
    pub running_for: Option<Duration>,
    /// The mode-changed-at stamp earlier than this instant; no stamp never matches.
    pub mode_changed_before: Option<DateTime<Utc>>,
    /// Only the problem rows (`--problems`, the TUI's `p`): [`is_problem`].
    pub problems: bool,
}

impl Filter {
    pub fn matches(&self, w: &Workspace, now: DateTime<Utc>) -> bool {
        (self.states.is_empty() || self.states.contains(&w.state))
            && (self.drifts.is_empty() || self.drifts.contains(&w.drift.state))
            && (self.diagnoses.is_empty() || w.diagnosis.as_ref().is_some_and(|d| self.diagnoses.contains(&d.kind)))
            && (!self.problems || is_problem(w))
            && self.suspended_for.is_none_or(|d| {
                w.mode == Mode::Suspended
                    && w.changed_at
                        .as_deref()
                        .and_then(timefmt::parse)
                        .is_some_and(|t| now - t > d)
            })
            && self
                .running_for
                .is_none_or(|d| running_for(w, now).is_some_and(|r| r > d))
            && self.mode_changed_before.is_none_or(|before| {
                w.changed_at
                    .as_deref()
                    .and_then(timefmt::parse)
                    .is_some_and(|t| t < before)
            })
    }
}

/// How long a Running workspace has been running: since its mode-changed-at stamp, else since
/// its creation; `None` when it is not Running or neither time is known.
pub(crate) fn running_for(w: &Workspace, now: DateTime<Utc>) -> Option<Duration> {
    if w.state != State::Running {
        return None;
    }
    let since = w
        .changed_at
        .as_deref()
        .or(w.created_at.as_deref())
        .and_then(timefmt::parse)?;
    Some(now - since)
}

/// An instant as `--mode-changed-before` takes it: RFC 3339 (`2026-11-01T09:00:00Z`) or a UTC
/// date (`2026-11-01`, its midnight).
pub fn parse_instant(text: &str) -> Result<DateTime<Utc>, String> {
    let t = text.trim();
    if let Ok(at) = DateTime::parse_from_rfc3339(t) {
        return Ok(at.with_timezone(&Utc));
    }
    chrono::NaiveDate::parse_from_str(t, "%Y-%m-%d")
        .ok()
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .map(|d| d.and_utc())
        .ok_or_else(|| format!("invalid time {text:?}: use RFC 3339 (2026-11-01T09:00:00Z) or a date (2026-11-01)"))
}

/// The longest duration a flag takes: a century, far beyond any age, far inside every clock's range.
pub(crate) const MAX_DURATION_DAYS: i64 = 36_525;

fn max_duration() -> Duration {
    Duration::days(MAX_DURATION_DAYS)
}

/// An instant as `--at` and the TUI's `:at` take it: RFC 3339 (`2026-05-01T10:00:00Z`), or back
/// from `now` (`-2h`, `-30m`, `-1d12h`). An instant after `now` is refused.
pub fn parse_moment(text: &str, now: DateTime<Utc>) -> Result<DateTime<Utc>, String> {
    let text = text.trim();
    let instant = if let Some(back) = text.strip_prefix('-') {
        now - parse_duration(back)?
    } else {
        DateTime::parse_from_rfc3339(text)
            .map(|t| t.with_timezone(&Utc))
            .map_err(|e| {
                format!("{text:?}: not an RFC 3339 time (2026-05-01T10:00:00Z) or one relative to now (-2h, -30m): {e}")
            })?
    };
    if instant > now {
        return Err(format!("{text}: that is in the future"));
    }
    Ok(instant)
}

/// `30d`, `12h`, `90m`, `45s`, `2w`, and sums such as `1d12h`, up to a century.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let bad = || format!("invalid duration {text:?}: use a number and a unit (s, m, h, d, w), e.g. 30d or 1d12h");
    let too_long =
        || format!("invalid duration {text:?}: longer than the {MAX_DURATION_DAYS} days a duration may span");
    let mut total = Duration::zero();
    let mut digits = String::new();
    for c in text.trim().chars() {
        if c.is_ascii_digit() {
            digits.push(c);
            continue;
        }
        if digits.is_empty() {
            return Err(bad());
        }
        let n: i64 = digits.parse().map_err(|_| too_long())?;
        digits.clear();
        let part = match c {
            's' => Duration::try_seconds(n),
            'm' => Duration::try_minutes(n),
            'h' => Duration::try_hours(n),
            'd' => Duration::try_days(n),
            'w' => Duration::try_weeks(n),
            _ => return Err(bad()),
        };
        total = part
            .and_then(|p| total.checked_add(&p))
            .filter(|t| *t <= max_duration())
            .ok_or_else(too_long)?;
    }
    if !digits.is_empty() || text.trim().is_empty() {
        return Err(bad());
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sort_paths_and_instants() {
        assert_eq!(SortKey::parse_any("{.metadata.creationTimestamp}"), Some(SortKey::Age));
        assert_eq!(SortKey::parse_any(".drift.state"), Some(SortKey::Drift));
        assert_eq!(SortKey::parse_any("age"), Some(SortKey::Age));
        assert_eq!(SortKey::parse_any(".nope"), None);
        assert!(parse_instant("2026-11-01").is_ok());
        assert!(parse_instant("2026-11-01T09:00:00Z").is_ok());
        assert!(parse_instant("yesterday").is_err());
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("30d"), Ok(Duration::days(30)));
        assert_eq!(parse_duration("1d12h"), Ok(Duration::hours(36)));
        assert_eq!(parse_duration("2w"), Ok(Duration::days(14)));
        for bad in ["", "30", "d", "3x", "-1d"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
        // out of any clock's range: a usage error, never chrono's panic
        for huge in [
            "99999999999w",
            "9999999999999h",
            "99999999999999999999s",
            "36526d",
            "36525d1s",
        ] {
            let e = parse_duration(huge).unwrap_err();
            assert!(e.contains("longer than"), "{huge}: {e}");
        }
        assert_eq!(parse_duration("36525d"), Ok(Duration::days(MAX_DURATION_DAYS)));
    }
}
