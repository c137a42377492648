//! The detail text of one workspace, like `kubectl describe`: `inspect` prints it, the TUI's
//! detail pane shows it with the drift's field diff. One section per function, in print order.

use super::describe::{changes, overlays, when};
use crate::cluster::detail::{Detail, event_time};
use chrono::{DateTime, Utc};
use namzu_domain::age::age;
use namzu_domain::annotations::{KNOWN_ANNOTATIONS, POD_NAME_ANNOTATION};
use namzu_domain::columns::{epoch_text, restarts_text};
use namzu_domain::drift::{DriftState, TemplateRead, field_changes};
use namzu_domain::egress::{PolicyRead, delete_command};
use namzu_domain::next_step::next_step;
use namzu_domain::object::{claim_owner, condition_parts, generation, owner_refs, str_at};
use namzu_domain::timefmt;
use namzu_domain::workspace::{Observed, Workspace};
use serde_json::Value;
use std::fmt::Write;

/// `Key:` padded to one column, then the value.
fn line(s: &mut String, key: &str, value: &str) {
    let _ = writeln!(s, "{:<17}{value}", format!("{key}:"));
}

/// The describe text.
pub fn render(w: &Workspace, d: &Detail, now: DateTime<Utc>) -> String {
    let mut s = String::new();
    identity(&mut s, w, now);
    mode_writer(&mut s, &d.sandbox, now);
    epoch_and_drift(&mut s, w);
    template_policies(&mut s, d);
    owners(&mut s, &d.sandbox);
    claim_lifecycle(&mut s, d, now);
    pod_and_disks(&mut s, w, now);
    egress(&mut s, w);
    library_annotations(&mut s, w);
    conditions(&mut s, &d.sandbox);
    events(&mut s, d, now);
    s
}

/// [`render`], then the field-level drift (stored → template today) when the template was read.
pub fn render_with_drift(w: &Workspace, d: &Detail, now: DateTime<Utc>) -> String {
    let mut text = render(w, d, now);
    if let (TemplateRead::Found(t), Some(o)) = (d.template.as_read(), &w.drift.overlays) {
        let list = field_changes(&d.sandbox, t, o);
        if !list.is_empty() {
            text.push_str("Drift (stored → template today):\n");
            text.push_str(&changes(&list, "  "));
        }
    }
    text
}

fn identity(s: &mut String, w: &Workspace, now: DateTime<Utc>) {
    line(s, "Name", &w.sandbox_name);
    line(s, "Workspace", &w.id);
    line(s, "Namespace", &w.namespace);
    line(s, "UID", w.uid.as_deref().unwrap_or("-"));
    line(s, "Created", &when(w.created_at.as_deref(), now));
    line(s, "Mode", w.mode.as_str());
    line(s, "State", w.state.as_str());
    lifecycle(s, w, now);
    let ready = match w.ready {
        Some(true) => "yes (Ready=True for the current generation, a live pod under it)",
        Some(false) => "no",
        None => "? (pods may not be read)",
    };
    line(s, "Ready", ready);
    let diagnosis = match &w.diagnosis {
        Some(diag) => format!("{} ({}): {}", diag.kind.as_str(), diag.reason, diag.message),
        None if matches!(w.pod, Observed::Forbidden) => "? (pods may not be read)".into(),
        None => "-".into(),
    };
    line(s, "Diagnosis", &diagnosis);
    if let Some(step) = next_step(w) {
        line(s, "Next step", &step.text);
        if let Some(command) = &step.command {
            line(s, "  Command", command);
        }
        if let Some(key) = step.key {
            line(s, "  Key", &key.to_string());
        }
    }
    let changed = match &w.changed_at {
        Some(_) => when(w.changed_at.as_deref(), now),
        None => "- (never changed by @namzu/sandbox)".into(),
    };
    line(s, "Mode changed at", &changed);
}

/// Who last wrote `spec.operatingMode`, and when, by the Sandbox's managedFields: this tool,
/// @namzu/sandbox, the controller, kubectl or another manager, named; a write after the last
/// stamp is said to be one the annotations do not record.
fn mode_writer(s: &mut String, sandbox: &Value, now: DateTime<Utc>) {
    let Some(w) = namzu_domain::writers::of_mode(sandbox) else {
        line(s, "Mode set by", "- (no managedFields name its writer)");
        return;
    };
    let mut text = w.who();
    if let Some(t) = w.time {
        text.push_str(&format!(
            ", its latest write {} ({} ago)",
            timefmt::js_iso(t),
            age(t, now)
        ));
        let stamp =
            namzu_domain::object::annotation(sandbox, namzu_domain::annotations::CHANGED_AT).and_then(timefmt::parse);
        if stamp.is_some_and(|c| namzu_domain::timeline::mode_unstamped(sandbox, c)) {
            text.push_str("; after the mode-changed-at stamp: a change the annotations do not record");
        }
    }
    line(s, "Mode set by", &text);
}

/// The Sandbox's deletion (when it was asked for, the finalizers that hold it) and its
/// shutdown (when, under which policy), where there is one.
fn lifecycle(s: &mut String, w: &Workspace, now: DateTime<Utc>) {
    if w.deletion.is_some() {
        line(s, "Deletion", &when(w.deletion.as_deref(), now));
    }
    if w.deletion.is_some() || !w.finalizers.is_empty() {
        let finalizers = if w.finalizers.is_empty() {
            "- (none)".to_string()
        } else {
            w.finalizers.join(", ")
        };
        line(s, "Finalizers", &finalizers);
    }
    if let Some(raw) = w.shutdown_time.as_deref() {
        let at = match timefmt::parse(raw) {
            Some(t) if t > now => format!("{raw} (in {})", age(now, t)),
            Some(t) => format!("{raw} ({} ago)", age(t, now)),
            None => format!("!{raw} (unreadable)"),
        };
        let policy = w.shutdown_policy.as_deref().unwrap_or("Retain, the default");
        line(s, "Shutdown", &format!("{at}, shutdownPolicy {policy}"));
    }
}

/// The SandboxTemplate's own policies (agent-sandbox v1.0.3), defaults said as such: they explain
/// a Ready=False `EnvVarsInjectionRejected` or `VolumeClaimTemplatesError`.
fn template_policies(s: &mut String, d: &Detail) {
    let template = match d.template.as_read() {
        TemplateRead::Found(t) => Some(t),
        _ => None,
    };
    if let Some(t) = template {
        let shown: Vec<String> = namzu_domain::template_policies::policies(t)
            .iter()
            .map(namzu_domain::template_policies::Policy::shown)
            .collect();
        line(s, "  Policies", &shown.join(", "));
    }
    // a refusal the policy explains, on the Sandbox's or its claim's conditions or its Events
    let mut refusals =
        namzu_domain::template_policies::refusals(&d.sandbox, d.events.known().map(Vec::as_slice), template);
    if let Some(Observed::Known(claim)) = &d.claim {
        for r in namzu_domain::template_policies::refusals(claim, None, template) {
            if !refusals.iter().any(|a| a.reason == r.reason) {
                refusals.push(r);
            }
        }
    }
    for r in &refusals {
        line(s, "  Refused", &r.explain());
    }
}

/// The owning claim's lifecycle (agent-sandbox v1.0.3: the claim's, never copied to the
/// Sandbox): policy, ttl, shutdown time, how it moves (a keepalive said once), and a claim
/// expired under Retain as a diagnosis with its next step.
fn claim_lifecycle(s: &mut String, d: &Detail, now: DateTime<Utc>) {
    let claim = match &d.claim {
        None => return,
        Some(Observed::Forbidden) => {
            line(s, "Claim lifecycle", "? (the SandboxClaim may not be read)");
            return;
        }
        Some(Observed::Known(c)) => c,
    };
    let l = namzu_domain::claim_lifecycle::read(claim);
    let ttl = l
        .ttl_seconds_after_finished
        .map_or("no ttlSecondsAfterFinished".into(), |t| {
            format!("ttlSecondsAfterFinished {t}")
        });
    line(
        s,
        "Claim lifecycle",
        &format!("{}: shutdownPolicy {}, {ttl}", l.claim, l.policy_shown()),
    );
    line(s, "  Shutdown", &l.shutdown_shown(now));
    if l.shutdown_raw.is_some() {
        line(s, "  Moves", &l.moves(now));
    }
    if let Some((diagnosis, next)) = l.diagnosis() {
        line(s, "  Diagnosis", &diagnosis);
        line(s, "  Next step", &next);
    }
}

fn epoch_and_drift(s: &mut String, w: &Workspace) {
    let epoch = match (&w.epoch.annotation, w.epoch.epoch) {
        (None, _) => "0 (no holder-epoch annotation)".into(),
        (Some(raw), Some(e)) => format!("{e} (annotation {raw:?})"),
        (Some(raw), None) => format!(
            "{} — unreadable: the annotation reads {raw:?}; every fenced write is refused",
            epoch_text(w)
        ),
    };
    line(s, "Holder epoch", &epoch);
    line(s, "Template", w.template.as_deref().unwrap_or("-"));
    let launch = w
        .labels
        .get(namzu_domain::annotations::LAUNCH_TYPE)
        .map_or("-", String::as_str);
    let pooled = if w.labels.contains_key(namzu_domain::annotations::WARM_POOL_SANDBOX) {
        " (an unclaimed warm-pool member)"
    } else {
        ""
    };
    line(s, "Launch type", &format!("{launch}{pooled}"));
    let drift_note = match w.drift.state {
        DriftState::Current => "current: the workspace runs its template's current revision",
        DriftState::Drifted => "drifted: the template changed since this workspace was created or refreshed",
        DriftState::Unknown => "unknown: no pod-template hash stored (created by an older release)",
        DriftState::NoTemplate => "no-template: the SandboxTemplate no longer exists",
        DriftState::Unreadable => "? (the SandboxTemplate could not be read)",
    };
    line(s, "Drift", drift_note);
    line(s, "  Stored hash", w.drift.stored.as_deref().unwrap_or("-"));
    line(s, "  Current hash", w.drift.current.as_deref().unwrap_or("-"));
    if let Some(o) = &w.drift.overlays {
        line(s, "  Overlays", &overlays(o));
    }
}

fn owners(s: &mut String, sandbox: &Value) {
    if let Some(claim) = claim_owner(sandbox) {
        line(
            s,
            "Owner",
            &format!(
                "SandboxClaim {claim} — warning: deleting the Sandbox only makes the claim recreate it; delete the claim instead"
            ),
        );
    }
    for r in owner_refs(sandbox)
        .iter()
        .filter(|r| str_at(r, &["kind"]) != Some("SandboxClaim"))
    {
        let kind = str_at(r, &["kind"]).unwrap_or("?");
        line(s, "Owner", &format!("{kind} {}", str_at(r, &["name"]).unwrap_or("?")));
    }
}

fn pod_and_disks(s: &mut String, w: &Workspace, now: DateTime<Utc>) {
    let pod = match &w.pod {
        Observed::Forbidden => "? (pods may not be read)".into(),
        Observed::Known(None) => "- (none)".into(),
        Observed::Known(Some(p)) => format!(
            "{}  uid {}  phase {}{}  node {}",
            p.name,
            p.uid.as_deref().unwrap_or("-"),
            p.phase,
            if p.terminating { " (terminating)" } else { "" },
            p.node.as_deref().unwrap_or("-")
        ),
    };
    line(s, "Pod", &pod);
    if let Observed::Known(Some(p)) = &w.pod {
        line(s, "  Restarts", &restarts_text(p, now));
        if let Some(t) = &p.last_termination {
            let code = t
                .exit_code
                .map_or("exit code ?".to_string(), |c| format!("exit code {c}"));
            let reason = t.reason.as_deref().map_or(String::new(), |r| format!(" ({r})"));
            line(
                s,
                "  Last exit",
                &format!(
                    "container {}: {code}{reason}, finished {}",
                    t.container,
                    when(t.finished_at.as_deref(), now)
                ),
            );
        }
    }
    if let Some(legacy) = &w.legacy_pod_name {
        line(
            s,
            "Legacy pod name",
            &format!(
                "the {POD_NAME_ANNOTATION} annotation names pod {legacy}, not the Sandbox's own pod {}: not followed (agent-sandbox v1.0 no longer writes it; another pod's name here is a confused-deputy risk)",
                w.sandbox_name
            ),
        );
    }
    match &w.pvcs {
        Observed::Forbidden => line(s, "Disks", "? (persistentvolumeclaims may not be read)"),
        Observed::Known(list) if list.is_empty() => line(s, "Disks", "- (no volumeClaimTemplates)"),
        Observed::Known(list) => {
            line(s, "Disks", "");
            for p in list {
                let owners: Vec<String> = p.owners.iter().map(|o| o.words()).collect();
                let owners = if owners.is_empty() {
                    "owners: none reported".to_string()
                } else {
                    format!("owners: {}", owners.join(", "))
                };
                let _ = writeln!(
                    s,
                    "  {}  uid {}  {}  {owners}{}",
                    p.name,
                    p.uid.as_deref().unwrap_or("-"),
                    p.phase.as_deref().unwrap_or("MISSING"),
                    if p.foreign {
                        "  FOREIGN: not this Sandbox's disk"
                    } else {
                        ""
                    }
                );
            }
        }
    }
}

/// The egress profile, whether per-sandbox egress is on, and the per-sandbox policies that
/// select the workspace (a foreign one with the command that removes it).
fn egress(s: &mut String, w: &Workspace) {
    line(s, "Egress profile", w.egress.profile.as_deref().unwrap_or("-"));
    let per_sandbox = match &w.egress.per_sandbox {
        Some(v) => format!("on (pod template label value {v})"),
        None => "off".into(),
    };
    line(s, "Per-sandbox", &per_sandbox);
    match &w.egress.policies {
        PolicyRead::Forbidden => line(s, "Policies", "? (ciliumnetworkpolicies.cilium.io may not be listed)"),
        PolicyRead::NotServed if w.egress.per_sandbox.is_some() => line(
            s,
            "Policies",
            "? (cilium.io/v2 is not served: nothing enforces per-sandbox egress here)",
        ),
        PolicyRead::NotServed => line(s, "Policies", "- (cilium.io/v2 is not served)"),
        PolicyRead::Known(list) if list.is_empty() => line(s, "Policies", "- (no per-sandbox policy selects it)"),
        PolicyRead::Known(list) => {
            line(s, "Policies", "");
            for p in list {
                let owners = if p.owners.is_empty() {
                    "none".to_string()
                } else {
                    p.owners.join(", ")
                };
                let verdict = if p.owned {
                    "own".to_string()
                } else {
                    format!(
                        "FOREIGN (an earlier workspace's grant; a resume is refused): {}",
                        delete_command(&w.namespace, &p.name)
                    )
                };
                let _ = writeln!(s, "  {}  owners: {owners}  {verdict}", p.name);
            }
        }
    }
}

/// The library's annotations the tool does not read itself (28.0.0's allocation annotations,
/// say), as stored: shown, preserved by every write, never an error.
fn library_annotations(s: &mut String, w: &Workspace) {
    let other: Vec<(&String, &String)> = w
        .namzu_annotations
        .iter()
        .filter(|(k, _)| !KNOWN_ANNOTATIONS.contains(&k.as_str()))
        .collect();
    if other.is_empty() {
        return;
    }
    line(s, "Library annotations", "");
    // quoted, so a value's spaces and line breaks show as stored
    for (k, v) in other {
        let _ = writeln!(s, "  {k}: {}", serde_json::Value::String(v.clone()));
    }
}

/// Each condition with the generation it is for: one from an older generation is STALE.
fn conditions(s: &mut String, sandbox: &Value) {
    let current_gen = generation(sandbox);
    let _ = writeln!(s, "Conditions:");
    let conds = sandbox
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if conds.is_empty() {
        let _ = writeln!(s, "  (none reported yet)");
    }
    for c in &conds {
        let (status, reason, message) = condition_parts(c);
        let observed = c.get("observedGeneration").and_then(Value::as_i64);
        let generation = match (observed, current_gen) {
            (Some(o), Some(g)) if o < g => format!("gen {o}/{g} STALE"),
            (Some(o), Some(g)) => format!("gen {o}/{g}"),
            _ => "gen ?".into(),
        };
        let _ = writeln!(
            s,
            "  {:<13}{:<8}{:<22}{:<16}{message}",
            str_at(c, &["type"]).unwrap_or("?"),
            status,
            reason,
            generation
        );
    }
}

/// The last 15 events, oldest first.
fn events(s: &mut String, d: &Detail, now: DateTime<Utc>) {
    let _ = writeln!(s, "Events:");
    match &d.events {
        Observed::Forbidden => {
            let _ = writeln!(s, "  ? (events may not be listed)");
        }
        Observed::Known(list) if list.is_empty() => {
            let _ = writeln!(s, "  <none>");
        }
        Observed::Known(list) => {
            let shown: Vec<_> = list.iter().rev().take(15).rev().collect();
            // as wide as the longest reason (agent-sandbox v1.0's `SandboxPodCreateFailed`), so a
            // reason never runs into the age
            let reason_width = shown
                .iter()
                .map(|e| str_at(e, &["reason"]).unwrap_or("").chars().count() + 2)
                .max()
                .unwrap_or(0)
                .max(20);
            for e in shown {
                let t = event_time(e)
                    .and_then(timefmt::parse)
                    .map_or("?".to_string(), |t| age(t, now));
                let _ = writeln!(
                    s,
                    "  {:<9}{:<reason_width$}{:<7}{:<9}{}",
                    str_at(e, &["type"]).unwrap_or(""),
                    str_at(e, &["reason"]).unwrap_or(""),
                    t,
                    str_at(e, &["involvedObject", "kind"]).unwrap_or(""),
                    str_at(e, &["message"]).unwrap_or("")
                );
            }
        }
    }
}
