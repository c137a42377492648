//! The sentences said about a write and about a wait, from typed outcomes: the CLI's line per
//! workspace and the TUI's row note and confirmation are the same words.

use crate::cluster::wait::Waited;
use crate::cluster::write::Outcome;
use crate::domain::epoch::Reading;
use crate::domain::fence::{Change, Verb};
use crate::domain::identity::{Closure, Identity, MismatchKind};

/// Said with every resume of a workspace with per-sandbox egress (docs/interop.md §13.5).
pub const ADMISSION_FENCE_NOTE: &str = "note: this workspace has per-sandbox egress: the library re-verifies the host's admission fence before every resume, and this tool cannot (it is host configuration); resume only where that fence is known to be in place";

/// An identity in words: `Sandbox uid U, claims disk=C, pod uid P`.
pub fn identity(id: &Identity) -> String {
    let claims: Vec<String> = id
        .volume_claim_uids
        .iter()
        .map(|(entry, uid)| format!("{entry}={uid}"))
        .collect();
    format!(
        "Sandbox uid {}, claims {}, pod uid {}",
        id.sandbox_uid.as_deref().unwrap_or("-"),
        if claims.is_empty() {
            "-".to_string()
        } else {
            claims.join(",")
        },
        id.pod_uid.as_deref().unwrap_or("-")
    )
}

/// What `reconcile` found under a retained identity, in one line.
pub fn closure(namespace: &str, sandbox_name: &str, c: &Closure) -> String {
    match c {
        Closure::Live(id) => format!(
            "live: {sandbox_name} is the retained workspace, Running ({})",
            identity(id)
        ),
        Closure::Suspended(id) => format!(
            "suspended: {sandbox_name} is the retained workspace, Suspended; its disk is intact ({})",
            identity(id)
        ),
        Closure::Absent => format!("absent: no Sandbox {sandbox_name} in namespace {namespace}"),
        Closure::Replaced(id, m) => {
            let (expected, actual) = (m.expected.as_deref().unwrap_or("-"), m.actual.as_deref().unwrap_or("-"));
            let claim = m.claim.as_deref().unwrap_or("?");
            let why = match m.kind {
                MismatchKind::SandboxUid => format!("the Sandbox is uid {actual}, not the retained {expected}"),
                MismatchKind::VolumeClaimUid => {
                    format!("volume claim {claim} is uid {actual}, not the retained {expected}")
                }
                MismatchKind::VolumeClaimOwner => format!(
                    "volume claim {claim} (uid {actual}) is owned by another object than the Sandbox (uid {expected})"
                ),
            };
            format!(
                "replaced ({}): {why}; the retained workspace is gone and a stranger stands under {sandbox_name} ({})",
                m.kind.as_str(),
                identity(id)
            )
        }
    }
}

/// What a write came to, for one workspace. `take_over`: the user asked for `--take-over`
/// (finding the mode already there then means the take-over was not performed).
pub fn outcome(verb: Verb, namespace: &str, outcome: &Outcome, take_over: bool) -> String {
    match outcome {
        Outcome::Applied {
            change: Change::StampOnly,
            epoch,
            ..
        } => format!("holder epoch stamped, mode unchanged ({})", epoch.describe()),
        Outcome::Applied { epoch, .. } => format!("{} ({})", verb.past(), epoch.describe()),
        Outcome::Unchanged { mode, object } => {
            let already = format!("already {}: nothing sent", mode.as_str().to_lowercase());
            if take_over {
                let stored = Reading::of(object).annotation.unwrap_or_else(|| "0".into());
                format!("{already}; the take-over was NOT performed (holder epoch {stored} stays)")
            } else {
                already
            }
        }
        Outcome::AlreadyGone => "already gone".into(),
        Outcome::DryRun { request, epoch, .. } => format!(
            "dry run ({}): would send {} {} ({})\n{}",
            epoch.describe(),
            request.method,
            request.path,
            request.content_type,
            serde_json::to_string_pretty(&request.body).expect("JSON")
        ),
        Outcome::Refused { message } => format!("refused: {message}"),
        Outcome::NotApplied { message, .. } => format!("not applied: {message}"),
        Outcome::Conflict { message } => format!("changed concurrently: {message}"),
        Outcome::NotFound => format!("not found in namespace {namespace}"),
        Outcome::ClaimOwned { claim } => format!(
            "refused: SandboxClaim {claim} owns this Sandbox, so deleting it only makes the claim recreate it; delete the claim instead: kubectl delete sandboxclaims.extensions.agents.x-k8s.io {claim} -n {namespace}"
        ),
        Outcome::ReadOnly => "read-only mode: nothing sent".into(),
        Outcome::Failed(e) => e.to_string(),
    }
}

/// The first line of [`outcome`]: what fits a table cell or a status line.
pub fn outcome_line(verb: Verb, namespace: &str, o: &Outcome, take_over: bool) -> String {
    let text = outcome(verb, namespace, o, take_over);
    text.lines().next().unwrap_or_default().to_string()
}

/// What a wait for the transition came to.
pub fn waited(w: &Waited) -> String {
    match w {
        Waited::Confirmed => "confirmed".into(),
        Waited::Failed(m) => format!("waiting failed: {m}"),
        Waited::TimedOut {
            waiting_for,
            state,
            diagnosis,
        } => format!(
            "unconfirmed: still waiting for {waiting_for} (state {}{})",
            state.map_or("?", |s| s.as_str()),
            diagnosis
                .as_ref()
                .map_or(String::new(), |d| format!(", {}: {}", d.kind.as_str(), d.message))
        ),
    }
}

/// A bulk write's progress: `suspend: 120/1000 done, 2 failed, 85/s, about 10s left`.
pub fn progress(verb: Verb, done: usize, total: usize, failed: usize, elapsed: std::time::Duration) -> String {
    let rate = done as f64 / elapsed.as_secs_f64().max(0.001);
    let left = (total - done.min(total)) as f64 / rate.max(0.001);
    let failed = if failed > 0 {
        format!(", {failed} failed")
    } else {
        String::new()
    };
    format!(
        "{}: {done}/{total} done{failed}, {rate:.0}/s, about {}s left",
        verb.as_str(),
        left.ceil() as u64
    )
}

/// The one word for a result, in `-o json` and the summary table.
pub fn result_word(o: &Outcome, waited: Option<&Waited>, take_over: bool) -> &'static str {
    match (o, waited) {
        (Outcome::Applied { .. } | Outcome::Unchanged { .. }, Some(Waited::TimedOut { .. })) => "timed-out",
        (Outcome::Applied { .. }, _) => "applied",
        (Outcome::Unchanged { .. }, _) if take_over => "take-over-not-performed",
        (Outcome::Unchanged { .. }, _) => "unchanged",
        (Outcome::AlreadyGone, _) => "already-gone",
        (Outcome::DryRun { .. }, _) => "dry-run",
        (Outcome::Refused { .. }, _) => "refused",
        (Outcome::NotApplied { .. }, _) => "not-applied",
        (Outcome::Conflict { .. }, _) => "conflict",
        (Outcome::NotFound, _) => "not-found",
        (Outcome::ClaimOwned { .. }, _) => "claim-owned",
        (Outcome::ReadOnly, _) => "read-only",
        (Outcome::Failed(_), _) => "error",
    }
}

/// Whether an outcome counts as done (the TUI's green note, the CLI's exit 0 before any wait).
pub fn succeeded(o: &Outcome, take_over: bool) -> bool {
    match o {
        Outcome::Applied { .. } | Outcome::AlreadyGone | Outcome::DryRun { .. } => true,
        Outcome::Unchanged { .. } => !take_over,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::patch::Mode;
    use serde_json::json;

    #[test]
    fn one_sentence_per_outcome() {
        let unchanged = Outcome::Unchanged {
            mode: Mode::Suspended,
            object: json!({"metadata": {"annotations": {"sandbox.namzu.ai/holder-epoch": "3"}}}),
        };
        assert_eq!(
            outcome(Verb::Suspend, "ns", &unchanged, false),
            "already suspended: nothing sent"
        );
        assert_eq!(
            outcome(Verb::Suspend, "ns", &unchanged, true),
            "already suspended: nothing sent; the take-over was NOT performed (holder epoch 3 stays)"
        );
        assert_eq!(
            outcome(Verb::Resume, "ns", &Outcome::NotFound, false),
            "not found in namespace ns"
        );
        assert_eq!(result_word(&unchanged, None, true), "take-over-not-performed");
        assert!(!succeeded(&unchanged, true) && succeeded(&unchanged, false));
        assert_eq!(waited(&Waited::Confirmed), "confirmed");
        assert_eq!(
            progress(Verb::Suspend, 120, 1000, 2, std::time::Duration::from_secs(10)),
            "suspend: 120/1000 done, 2 failed, 12/s, about 74s left"
        );
    }
}
