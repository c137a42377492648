//! Choosing workspaces: the filters `list` takes (and the write verbs share).

use namzu_domain::diagnosis::DiagnosisKind;
use namzu_domain::drift::DriftState;
use namzu_domain::select::{Filter, parse_duration, parse_instant};
use namzu_domain::state::State;

fn one_of<T: Copy>(text: &str, parse: impl Fn(&str) -> Option<T>, all: &[&str], what: &str) -> Result<T, String> {
    parse(text).ok_or_else(|| format!("unknown {what} {text:?}; one of: {}", all.join(", ")))
}

fn parse_state(text: &str) -> Result<State, String> {
    let all: Vec<&str> = State::ALL.iter().map(|s| s.as_str()).collect();
    one_of(text, State::parse, &all, "state")
}

fn parse_drift(text: &str) -> Result<DriftState, String> {
    let all: Vec<&str> = DriftState::ALL.iter().map(|s| s.as_str()).collect();
    one_of(text, DriftState::parse, &all, "drift")
}

/// A diagnosis, `any` (or `*`: every one), or a prefix ending in `*` (`stuck-*`).
fn parse_kind(text: &str) -> Result<Vec<DiagnosisKind>, String> {
    let all: Vec<&str> = DiagnosisKind::ALL.iter().map(|s| s.as_str()).collect();
    let pattern = if text == "any" { "*" } else { text };
    if let Some(prefix) = pattern.strip_suffix('*') {
        let matched: Vec<DiagnosisKind> = DiagnosisKind::ALL
            .iter()
            .copied()
            .filter(|k| k.as_str().starts_with(prefix))
            .collect();
        if matched.is_empty() {
            return Err(format!(
                "no diagnosis starts with {prefix:?}; one of: {}",
                all.join(", ")
            ));
        }
        return Ok(matched);
    }
    one_of(text, DiagnosisKind::parse, &all, "diagnosis").map(|k| vec![k])
}

/// A label selector: one or more comma-separated requirements, none empty. An empty `-l ""` (an
/// unset shell variable) is refused: it would otherwise select everything, past the `--all` guard.
fn parse_selector(text: &str) -> Result<String, String> {
    if text.trim().is_empty() {
        return Err("an empty label selector selects every workspace: name the labels, or pass --all".into());
    }
    if text.split(',').any(|r| r.trim().is_empty()) {
        return Err(format!(
            "invalid label selector {text:?}: an empty requirement between commas"
        ));
    }
    Ok(text.to_string())
}

#[derive(Debug, Clone, Default, clap::Args)]
pub struct SelectionArgs {
    /// Only these states (comma-separated): Running, Starting, Suspending, Suspended, Failed, Expired, Deleting, Error.
    #[arg(long, value_delimiter = ',', value_parser = parse_state)]
    pub state: Vec<State>,
    /// Only these drift values: current, drifted, unknown, no-template, unreadable.
    #[arg(long, value_delimiter = ',', value_parser = parse_drift)]
    pub drift: Vec<DriftState>,
    /// Only these diagnoses, e.g. unschedulable,image-pull; `any` (or `*`) for every one, or a
    /// prefix ending in `*` (`stuck-*`).
    #[arg(long, value_delimiter = ',', value_parser = parse_kind)]
    pub diagnosis: Vec<Vec<DiagnosisKind>>,
    /// Only the problem rows, as the TUI's `p`: a diagnosis, an unreadable holder epoch, or drift.
    #[arg(long)]
    pub problems: bool,
    /// Sandbox label selector, e.g. team=ml,tier!=dev.
    #[arg(short = 'l', long, value_parser = parse_selector)]
    pub selector: Option<String>,
    /// Suspended, and mode-changed-at older than this (e.g. 30d); workspaces without the annotation never match.
    #[arg(long, value_parser = parse_duration)]
    pub suspended_for: Option<chrono::Duration>,
    /// Running for longer than this (e.g. 12h): since the mode-changed-at stamp, else since creation.
    #[arg(long, value_parser = parse_duration)]
    pub running_for: Option<chrono::Duration>,
    /// mode-changed-at earlier than this time (RFC 3339, or a date: 2026-11-01); workspaces without the annotation never match.
    #[arg(long, value_parser = parse_instant, value_name = "TIME")]
    pub mode_changed_before: Option<chrono::DateTime<chrono::Utc>>,
}

impl SelectionArgs {
    pub(crate) fn filter(&self) -> Filter {
        Filter {
            states: self.state.clone(),
            drifts: self.drift.clone(),
            diagnoses: self.diagnosis.iter().flatten().copied().collect(),
            problems: self.problems,
            suspended_for: self.suspended_for,
            running_for: self.running_for,
            mode_changed_before: self.mode_changed_before,
        }
    }
}
