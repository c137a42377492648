//! The sentences said about a write and about a wait, from typed outcomes: the CLI's line per
//! workspace and the TUI's row note and confirmation are the same words.

use crate::cluster::verdict::Verdict;
use crate::cluster::wait::Waited;
use crate::cluster::write::Outcome;
use namzu_domain::epoch::Reading;
use namzu_domain::fence::{Change, Verb};
use namzu_domain::identity::{Closure, Identity, MismatchKind};
use namzu_domain::refresh::{DiskProblem, Field, Mismatch, Refresh, Refusal, Source, Unreadable};

/// Said with every resume of a workspace with per-sandbox egress (docs/interop.md §13.5).
pub const ADMISSION_FENCE_NOTE: &str = "note: this workspace has per-sandbox egress: the library re-verifies the host's admission fence before every resume, and this tool cannot (it is host configuration); resume only where that fence is known to be in place";

/// An identity in words: `Sandbox uid U, claims disk=C, pod uid P`.
pub(crate) fn identity(id: &Identity) -> String {
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
pub(crate) fn outcome(verb: Verb, namespace: &str, outcome: &Outcome, take_over: bool) -> String {
    match outcome {
        Outcome::Applied {
            change: Change::StampOnly,
            epoch,
            ..
        } => format!("holder epoch stamped, mode unchanged ({})", epoch.describe()),
        Outcome::Applied {
            epoch,
            refresh: Some(r),
            ..
        } => format!(
            "{}, pod template refreshed from SandboxTemplate {} ({} → {}) ({})",
            verb.past(),
            r.template,
            short_hash(r.stored.as_deref()),
            short_hash(Some(&r.hash)),
            epoch.describe()
        ),
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
        Outcome::DryRun {
            request,
            epoch,
            refresh,
            ..
        } => {
            // a server dry run was sent: the API server admitted it and changed nothing
            let sent = if request.path.contains("dryRun=All") {
                "the API server accepted (nothing changed)"
            } else {
                "would send"
            };
            let mut text = format!(
                "dry run ({}): {sent} {} {} ({})\n",
                epoch.describe(),
                request.method,
                request.path,
                request.content_type,
            );
            for line in refresh.iter().flat_map(|r| refresh_lines(r)) {
                text.push_str(&line);
                text.push('\n');
            }
            text + &super::yaml::pretty_json(&request.body)
        }
        Outcome::Refused { message } => format!("refused: {message}"),
        Outcome::RefreshRefused(r) => format!("refused: {}", refresh_refusal(r)),
        Outcome::NotApplied { message, .. } => format!("not applied: {message}"),
        Outcome::Raced {
            template, mismatches, ..
        } => format!(
            "not applied: another process resumed the workspace between the read and the PATCH (the refresh's test of spec.operatingMode failed), so it was not retried. It is Running off-template: its pod runs the pod template it had, not SandboxTemplate {template} as it is now{}. Suspend it, then refresh again",
            mismatched(mismatches)
        ),
        Outcome::Conflict { message } => format!("changed concurrently: {message}"),
        Outcome::NotFound => format!("not found in namespace {namespace}"),
        Outcome::ClaimOwned { claim } => format!(
            "refused: SandboxClaim {claim} owns this Sandbox, so deleting it only makes the claim recreate it; delete the claim instead: kubectl delete sandboxclaims.extensions.agents.x-k8s.io {claim} -n {namespace}"
        ),
        Outcome::ReadOnly => "read-only mode: nothing sent".into(),
        Outcome::Failed(e) => e.to_string(),
    }
}

/// `sha256:368a7e2b5d85…`, or `-` for none.
fn short_hash(hash: Option<&str>) -> String {
    match hash {
        Some(h) if h.chars().count() > 19 => format!("{}…", h.chars().take(19).collect::<String>()),
        Some(h) => h.to_string(),
        None => "-".into(),
    }
}

/// An overlay's name as the user reads it.
pub(crate) fn field_name(f: Field) -> &'static str {
    match f {
        Field::TemplateLabel => "template label",
        Field::RuntimeClassName => "runtimeClassName",
        Field::EgressProfile => "egress profile",
        Field::PerSandboxLabel => "per-sandbox label",
    }
}

/// The flag that names an overlay, if one does.
fn flag_of(f: Field) -> Option<&'static str> {
    match f {
        Field::RuntimeClassName => Some("--runtime-class"),
        Field::EgressProfile => Some("--egress-profile"),
        Field::TemplateLabel | Field::PerSandboxLabel => None,
    }
}

/// What a refresh writes, for a dry run and a confirmation: the template and the hashes, the
/// field changes, each overlay with where it came from; the body follows.
pub fn refresh_lines(r: &Refresh) -> Vec<String> {
    let mut lines = vec![format!(
        "refresh from SandboxTemplate {}: pod-template hash {} → {}",
        r.template,
        short_hash(r.stored.as_deref()),
        short_hash(Some(&r.hash))
    )];
    if r.changes.is_empty() {
        lines.push("field changes: none (the pod template is already the template's)".into());
    } else {
        lines.push("field changes:".into());
        lines.extend(super::describe::changes(&r.changes, "  ").lines().map(str::to_string));
    }
    lines.push("overlays:".into());
    for u in &r.uses {
        let value = match (u.field, &u.value) {
            (Field::PerSandboxLabel, Some(v)) => {
                let hashed = r.overlays.per_sandbox_label.as_ref().is_some_and(|p| p.hashed);
                format!("{v}, {} the hash", if hashed { "counted in" } else { "left out of" })
            }
            (_, Some(v)) => v.clone(),
            (_, None) => "not configured".into(),
        };
        let source = match u.source {
            Source::StoredLabel => "the Sandbox's own label".to_string(),
            Source::Flag => format!("from {}", flag_of(u.field).unwrap_or("the flags")),
            Source::ReproducedWithTemplate => {
                "inferred: reproduces the stored hash with the template as it is now".into()
            }
            Source::ReproducedFromStored => "inferred: reproduces the stored hash from the stored pod template".into(),
            Source::EitherWay => "the hosts' overlay or the template's own: the same either way".into(),
        };
        lines.push(format!("  {} {value} ({source})", field_name(u.field)));
    }
    lines.push("body:".into());
    lines
}

/// `; its runtimeClassName is runc, not kata-qemu`, for each overlay a pod template lacks.
fn mismatched(mismatches: &[Mismatch]) -> String {
    mismatches
        .iter()
        .map(|m| {
            format!(
                "; its {} is {}, not {}",
                field_name(m.field),
                m.stored.as_deref().unwrap_or("(absent)"),
                m.wanted
            )
        })
        .collect()
}

/// After a bulk refresh: the workspaces another process resumed first, which run off-template.
pub fn off_template(workspaces: &[String]) -> String {
    format!(
        "running off-template (another process resumed them before the refresh; suspend, then refresh again): {}",
        workspaces.join(", ")
    )
}

/// Why a refresh sent nothing (docs/interop.md §14); the workspace is left as it was.
pub(crate) fn refresh_refusal(r: &Refusal) -> String {
    let kept = "the workspace stays Suspended; nothing sent";
    match r {
        Refusal::Running { mismatches } => format!(
            "the workspace is Running: a refresh happens only on Suspended → Running (the controller does not rebuild a pod that is running){}; nothing sent. Suspend it first, then resume it with --refresh-template",
            mismatched(mismatches)
        ),
        Refusal::NoTemplate { template } => format!(
            "SandboxTemplate {template}, which its sandbox.namzu.ai/template label names, is not there: nothing to refresh from; {kept}"
        ),
        Refusal::TemplateUnreadable {
            template,
            why: Unreadable::Forbidden,
        } => format!(
            "SandboxTemplate {template} may not be read (RBAC get on sandboxtemplates.extensions.agents.x-k8s.io): the template cannot be read; {kept}"
        ),
        Refusal::TemplateUnreadable {
            template,
            why: Unreadable::NoPodTemplate,
        } => format!("SandboxTemplate {template} has no spec.podTemplate: nothing to refresh from; {kept}"),
        Refusal::OtherTemplate { template, label } => format!(
            "SandboxTemplate {template}'s pod template labels itself sandbox.namzu.ai/template={label}: a refresh never moves a workspace to another template; {kept}"
        ),
        Refusal::Disk { template, problem } => {
            let why = match problem {
                DiskProblem::NoDisk => {
                    "the Sandbox declares no volumeClaimTemplates: it has no disk to keep, so it is not a workspace the library refreshes".to_string()
                }
                DiskProblem::Lacking(d) => format!(
                    "SandboxTemplate {template} declares the disk {d:?}, which the Sandbox lacks: its spec.volumeClaimTemplates are CEL-immutable and no refresh writes them, so the refreshed pod could never have that disk"
                ),
                DiskProblem::Unnamed => {
                    "a volumeClaimTemplates entry of the Sandbox has no name, so no container can claim it".to_string()
                }
                DiskProblem::NotBlock { disk, mode } => format!(
                    "the Sandbox's disk {disk:?} is volumeMode {}, not Block, which a workspace's disk must be",
                    mode.as_deref().unwrap_or("Filesystem (the API default)")
                ),
                DiskProblem::Mounted(d) => format!(
                    "SandboxTemplate {template} mounts the disk {d:?} through volumeMounts: a workspace's Block disk is claimed through volumeDevices, and the kubelet would refuse the pod"
                ),
                DiskProblem::Unclaimed(d) => format!(
                    "SandboxTemplate {template} no longer claims the Sandbox's disk {d:?} through volumeDevices (renamed or dropped): the refreshed pod would come up with the disk attached to nothing, and the Sandbox's volumeClaimTemplates are CEL-immutable and still name it"
                ),
            };
            format!("{why}; {kept}")
        }
        Refusal::UnknownDrift { open } => format!(
            "no pod-template hash is stored (a workspace from before the hash existed): nothing records which overlays built its pod template ({}), and a refresh never guesses them; {kept}",
            open.iter().map(|f| field_name(*f)).collect::<Vec<_>>().join(", ")
        ),
        Refusal::NoCandidate { stored } => format!(
            "no overlays reproduce the stored hash {stored} (the pod template changed after it was stamped, or the hosts' overlays are not ones the object shows), and a refresh never guesses them: name them with --runtime-class and --egress-profile; {kept}"
        ),
        Refusal::Ambiguous { fields } => {
            let names: Vec<&str> = fields.iter().map(|f| field_name(*f)).collect();
            let flags: Vec<&str> = fields.iter().filter_map(|f| flag_of(*f)).collect();
            format!(
                "more than one hosts' configuration reproduces the stored hash, and they would write different pod templates ({}: the stored value may be the hosts' overlay or the template's own), and a refresh never guesses: name it with {}; {kept}",
                names.join(", "),
                if flags.is_empty() {
                    "the flags".to_string()
                } else {
                    flags.join(" and ")
                }
            )
        }
        Refusal::Changed { confirmed, now } => format!(
            "what the refresh would write changed since it was shown (hash {confirmed} then, {now} now); {kept}: look again"
        ),
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
        Waited::Replaced { was, now } => {
            format!("replaced while waiting: the Sandbox written was {was}, the one there now is {now}; not confirmed")
        }
        Waited::Deleted => "deleted while waiting: the Sandbox is gone; not confirmed".into(),
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

/// Whether an outcome counts as done (the TUI's green note, the CLI's exit 0 before any wait).
pub fn succeeded(o: &Outcome, take_over: bool) -> bool {
    Verdict::of(o, None, take_over).succeeded()
}

#[cfg(test)]
mod tests {
    use super::*;
    use namzu_domain::patch::Mode;
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
        assert_eq!(Verdict::of(&unchanged, None, true).word(), "take-over-not-performed");
        assert!(!succeeded(&unchanged, true) && succeeded(&unchanged, false));
        assert_eq!(waited(&Waited::Confirmed), "confirmed");
        assert_eq!(
            progress(Verb::Suspend, 120, 1000, 2, std::time::Duration::from_secs(10)),
            "suspend: 120/1000 done, 2 failed, 12/s, about 74s left"
        );
    }
}
