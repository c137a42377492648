//! What a write came to, once: the one reading of a write's `Outcome` and its wait's `Waited`
//! that every front-end's word, colour and exit code follow. Whether it succeeded is decided here
//! ([`Verdict::succeeded`]) and nowhere else: `ops::write::Report` carries it, `present/outcome.rs`
//! words it, the CLI maps a failure to its exit-code number, the TUI to a green or red note.

use super::wait::Waited;
use super::write::Outcome;

/// A write's result, its wait's included.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Applied,
    Unchanged,
    /// `--take-over` found the mode already there: nothing was taken over.
    TakeOverNotPerformed,
    AlreadyGone,
    DryRun,
    /// It landed; the wait's deadline passed before the transition was seen.
    TimedOut,
    /// It landed; another Sandbox (or claim) stood under the name while the wait read it.
    Replaced,
    /// It landed; the wait could not follow it (the Sandbox deleted, a read failed).
    WaitFailed,
    Refused,
    NotApplied,
    Conflict,
    NotFound,
    ClaimOwned,
    ReadOnly,
    Error,
}

impl Verdict {
    /// The one match over what a write and its wait can come to.
    pub(crate) fn of(outcome: &Outcome, waited: Option<&Waited>, take_over: bool) -> Verdict {
        let landed = matches!(outcome, Outcome::Applied { .. } | Outcome::Unchanged { .. });
        match (outcome, waited) {
            (Outcome::Unchanged { .. }, _) if take_over => Verdict::TakeOverNotPerformed,
            (_, Some(Waited::TimedOut { .. })) if landed => Verdict::TimedOut,
            (_, Some(Waited::Replaced { .. })) if landed => Verdict::Replaced,
            (_, Some(Waited::Failed(_) | Waited::Deleted)) if landed => Verdict::WaitFailed,
            (Outcome::Applied { .. }, _) => Verdict::Applied,
            (Outcome::Unchanged { .. }, _) => Verdict::Unchanged,
            (Outcome::AlreadyGone, _) => Verdict::AlreadyGone,
            (Outcome::DryRun { .. }, _) => Verdict::DryRun,
            (Outcome::Refused { .. } | Outcome::RefreshRefused(_), _) => Verdict::Refused,
            (Outcome::NotApplied { .. } | Outcome::Raced { .. }, _) => Verdict::NotApplied,
            (Outcome::Conflict { .. }, _) => Verdict::Conflict,
            (Outcome::NotFound, _) => Verdict::NotFound,
            (Outcome::ClaimOwned { .. }, _) => Verdict::ClaimOwned,
            (Outcome::ReadOnly, _) => Verdict::ReadOnly,
            (Outcome::Failed(_), _) => Verdict::Error,
        }
    }

    /// Done as asked: the write (and its wait, where there was one) went through, or there was
    /// nothing to do.
    pub fn succeeded(self) -> bool {
        matches!(
            self,
            Verdict::Applied | Verdict::Unchanged | Verdict::AlreadyGone | Verdict::DryRun
        )
    }

    /// The result as `-o json` and the audit name it.
    pub(crate) fn word(self) -> &'static str {
        match self {
            Verdict::Applied | Verdict::WaitFailed => "applied",
            Verdict::Unchanged => "unchanged",
            Verdict::TakeOverNotPerformed => "take-over-not-performed",
            Verdict::AlreadyGone => "already-gone",
            Verdict::DryRun => "dry-run",
            Verdict::TimedOut => "timed-out",
            Verdict::Replaced => "replaced",
            Verdict::Refused => "refused",
            Verdict::NotApplied => "not-applied",
            Verdict::Conflict => "conflict",
            Verdict::NotFound => "not-found",
            Verdict::ClaimOwned => "claim-owned",
            Verdict::ReadOnly => "read-only",
            Verdict::Error => "error",
        }
    }
}
