//! `kubectl namzu inspect ID`: everything known about one workspace, like `kubectl describe`.

use super::describe::{self, when};
use super::exit::Failure;
use super::globals::Globals;
use super::output::{self, Format};
use super::overlay::OverlayArgs;
use super::schema;
use crate::cluster::connect::Connection;
use crate::cluster::detail::{self, Detail, event_time};
use crate::domain::age::age;
use crate::domain::columns::epoch_text;
use crate::domain::drift::DriftState;
use crate::domain::naming::validate_id;
use crate::domain::object::{condition_parts, generation, owner_refs};
use crate::domain::timefmt;
use crate::domain::workspace::{Observed, Workspace};
use chrono::{DateTime, Utc};
use serde_json::{Value, json};
use std::fmt::Write;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The workspace id (the Sandbox is namzu-ws-<id>).
    pub id: String,
    /// Output format: table (describe text), json or yaml.
    #[arg(short = 'o', long, value_enum, default_value = "table")]
    pub output: Format,
    #[command(flatten)]
    pub overlays: OverlayArgs,
}

pub async fn run(globals: &Globals, args: Args) -> Result<(), Failure> {
    validate_id(&args.id)?;
    let conn = Connection::open(&globals.connect_options(true)).await?;
    let ns = conn.namespace.clone();
    let Some(d) = detail::read(&conn, &ns, &args.id).await? else {
        return Err(Failure::error(format!(
            "workspace {} not found in namespace {ns}",
            args.id
        )));
    };
    let now = conn.clock.now();
    let w = d.workspace(&args.overlays.flags(), now);
    let text = match args.output {
        Format::Json | Format::Yaml => output::structured(&structured(&w, &d), args.output),
        Format::Name => format!("sandbox.agents.x-k8s.io/{}\n", w.sandbox_name),
        Format::Table | Format::Wide => output::printable_lines(&render(&w, &d, now)),
    };
    crate::out!("{text}");
    Ok(())
}

fn claim_owner(sandbox: &Value) -> Option<&str> {
    owner_refs(sandbox)
        .iter()
        .find(|r| r.get("kind").and_then(Value::as_str) == Some("SandboxClaim"))
        .and_then(|r| r.get("name").and_then(Value::as_str))
}

fn structured(w: &Workspace, d: &Detail) -> Value {
    let mut out = schema::workspace(w);
    out["conditions"] = d.sandbox.pointer("/status/conditions").cloned().unwrap_or(json!([]));
    out["generation"] = json!(generation(&d.sandbox));
    out["ownerReferences"] = json!(owner_refs(&d.sandbox));
    out["events"] = match &d.events {
        Observed::Known(list) => json!(
            list.iter()
                .map(|e| json!({
            "type": e["type"], "reason": e["reason"], "message": e["message"],
            "object": e["involvedObject"]["kind"], "time": event_time(e)}))
                .collect::<Vec<_>>()
        ),
        Observed::Forbidden => json!("forbidden"),
    };
    out
}

/// The describe text.
pub fn render(w: &Workspace, d: &Detail, now: DateTime<Utc>) -> String {
    let mut s = String::new();
    let mut line = |k: &str, v: String| {
        let _ = writeln!(s, "{:<17}{v}", format!("{k}:"));
    };
    line("Name", w.sandbox_name.clone());
    line("Workspace", w.id.clone());
    line("Namespace", w.namespace.clone());
    line("UID", w.uid.clone().unwrap_or_else(|| "-".into()));
    line("Created", when(w.created_at.as_deref(), now));
    line("Mode", w.mode.as_str().into());
    line("State", w.state.as_str().into());
    line(
        "Diagnosis",
        match &w.diagnosis {
            Some(diag) => format!("{} ({}): {}", diag.kind.as_str(), diag.reason, diag.message),
            None if matches!(w.pod, Observed::Forbidden) => "? (pods may not be read)".into(),
            None => "-".into(),
        },
    );
    line(
        "Mode changed at",
        match &w.changed_at {
            Some(_) => when(w.changed_at.as_deref(), now),
            None => "- (never changed by @namzu/sandbox)".into(),
        },
    );
    line(
        "Holder epoch",
        match (&w.epoch.annotation, w.epoch.epoch) {
            (None, _) => "0 (no holder-epoch annotation)".into(),
            (Some(raw), Some(e)) => format!("{e} (annotation {raw:?})"),
            (Some(raw), None) => format!(
                "{} — unreadable: the annotation reads {raw:?}; every fenced write is refused",
                epoch_text(w)
            ),
        },
    );
    line("Template", w.template.clone().unwrap_or_else(|| "-".into()));
    let drift_note = match w.drift.state {
        DriftState::Current => "current: the workspace runs its template's current revision",
        DriftState::Drifted => "drifted: the template changed since this workspace was created or refreshed",
        DriftState::Unknown => "unknown: no pod-template hash stored (created by an older release)",
        DriftState::NoTemplate => "no-template: the SandboxTemplate no longer exists",
        DriftState::Unreadable => "? (the SandboxTemplate could not be read)",
    };
    line("Drift", drift_note.into());
    line("  Stored hash", w.drift.stored.clone().unwrap_or_else(|| "-".into()));
    line("  Current hash", w.drift.current.clone().unwrap_or_else(|| "-".into()));
    if let Some(o) = &w.drift.overlays {
        line("  Overlays", describe::overlays(o));
    }
    if let Some(claim) = claim_owner(&d.sandbox) {
        line(
            "Owner",
            format!(
                "SandboxClaim {claim} — warning: deleting the Sandbox only makes the claim recreate it; delete the claim instead"
            ),
        );
    }
    for r in owner_refs(&d.sandbox)
        .iter()
        .filter(|r| r.get("kind").and_then(Value::as_str) != Some("SandboxClaim"))
    {
        line(
            "Owner",
            format!(
                "{} {}",
                r["kind"].as_str().unwrap_or("?"),
                r["name"].as_str().unwrap_or("?")
            ),
        );
    }
    line(
        "Pod",
        match &w.pod {
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
        },
    );
    match &w.pvcs {
        Observed::Forbidden => line("Disks", "? (persistentvolumeclaims may not be read)".into()),
        Observed::Known(list) if list.is_empty() => line("Disks", "- (no volumeClaimTemplates)".into()),
        Observed::Known(list) => {
            line("Disks", String::new());
            for p in list {
                let _ = writeln!(
                    s,
                    "  {}  uid {}  {}",
                    p.name,
                    p.uid.as_deref().unwrap_or("-"),
                    p.phase.as_deref().unwrap_or("MISSING")
                );
            }
        }
    }
    let current_gen = generation(&d.sandbox);
    let _ = writeln!(s, "Conditions:");
    let conds = d
        .sandbox
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
            c.get("type").and_then(Value::as_str).unwrap_or("?"),
            status,
            reason,
            generation
        );
    }
    let _ = writeln!(s, "Events:");
    match &d.events {
        Observed::Forbidden => {
            let _ = writeln!(s, "  ? (events may not be listed)");
        }
        Observed::Known(list) if list.is_empty() => {
            let _ = writeln!(s, "  <none>");
        }
        Observed::Known(list) => {
            for e in list.iter().rev().take(15).rev() {
                let t = event_time(e)
                    .and_then(timefmt::parse)
                    .map_or("?".to_string(), |t| age(t, now));
                let _ = writeln!(
                    s,
                    "  {:<9}{:<20}{:<7}{:<9}{}",
                    e["type"].as_str().unwrap_or(""),
                    e["reason"].as_str().unwrap_or(""),
                    t,
                    e["involvedObject"]["kind"].as_str().unwrap_or(""),
                    e["message"].as_str().unwrap_or("")
                );
            }
        }
    }
    s
}
