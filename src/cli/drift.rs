//! `kubectl namzu drift [ID]`: the field-level difference between a workspace's pod template and
//! what its SandboxTemplate (with the overlays) gives today — for one workspace, or every drifted one.
//! With it, the template's own policies (agent-sandbox v1.0.3) and the refusals they explain
//! (`EnvVarsInjectionRejected`, `VolumeClaimTemplatesError`; `domain::template_policies`).

use super::exit::Failure;
use super::globals::Globals;
use super::output::{self, Format};
use super::overlay::OverlayArgs;
use namzu_domain::diff::Change;
use namzu_domain::drift::{DriftState, TemplateRead, field_changes};
use namzu_domain::naming::WorkspaceId;
use namzu_domain::template_policies::{Policy, Refusal, policies, refusals};
use namzu_domain::workspace::Workspace;
use namzu_engine::cluster::connect::Connection;
use namzu_engine::cluster::detail;
use namzu_engine::ops::inventory::{self, Query};
use namzu_engine::present::describe;
use serde_json::{Value, json};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// One workspace id; without it, every drifted workspace in scope.
    pub id: Option<WorkspaceId>,
    /// Output format: table (text) or json/yaml.
    #[arg(short = 'o', long, value_enum, default_value = "table")]
    pub output: Format,
    #[command(flatten)]
    pub overlays: OverlayArgs,
    /// Answer from the flight recorder's recording at TIME (RFC 3339, or relative: -2h, -30m).
    #[arg(long, value_name = "TIME", allow_hyphen_values = true)]
    pub at: Option<String>,
}

/// One workspace's objects, from the cluster or (`--at`) the recording; `None`: not there.
async fn detail_from(
    source: &inventory::Source,
    conn: &Connection,
    ns: &str,
    id: &WorkspaceId,
) -> Result<Option<namzu_engine::cluster::detail::Detail>, Failure> {
    match source {
        inventory::Source::At(at) => {
            let found = namzu_engine::ops::replay::detail_at(at, &conn.context, ns, id)?;
            namzu_engine::errln!("{}", output::printable(&found.coverage));
            Ok(found.detail)
        }
        inventory::Source::Live => Ok(detail::read(conn, ns, id).await?),
    }
}

/// One workspace's drift report.
struct Report {
    workspace: Workspace,
    changes: Vec<Change>,
    /// The template's policies (`None`: no template read).
    policies: Option<[Policy; 3]>,
    /// Refusals on the Sandbox's conditions and (for one workspace) its Events.
    refusals: Vec<Refusal>,
    /// The Sandbox's Events were read (one workspace, allowed).
    events_read: bool,
}

fn report(
    w: Workspace,
    sandbox: &Value,
    template: TemplateRead<'_>,
    events: Option<&[Value]>,
    claim: Option<&Value>,
) -> Report {
    let found = match template {
        TemplateRead::Found(t) => Some(t),
        _ => None,
    };
    let changes = match (found, &w.drift.overlays) {
        (Some(t), Some(o)) if w.drift.state != DriftState::Current => field_changes(sandbox, t, o),
        _ => Vec::new(),
    };
    Report {
        changes,
        policies: found.map(policies),
        refusals: {
            // the claim's own conditions say it too (its Ready carries the claim's reasons)
            let mut all = refusals(sandbox, events, found);
            for r in claim.map(|c| refusals(c, None, found)).unwrap_or_default() {
                if !all.iter().any(|a| a.reason == r.reason) {
                    all.push(r);
                }
            }
            all
        },
        events_read: events.is_some(),
        workspace: w,
    }
}

pub(crate) async fn run(globals: &Globals, args: Args) -> Result<(), Failure> {
    if args.id.is_some() {
        globals.one_namespace_for_names()?;
    }
    globals.one_context("drift")?;
    if args.output == Format::Name
        && let Some(refusal) = output::name_pipe_refusal("drift", globals.all_namespaces, false)
    {
        return Err(refusal);
    }
    let conn = Connection::open(&globals.connect_options(true)).await?;
    let (source, now) = super::at::source(globals, args.at.as_deref(), conn.clock.now())?;
    let flags = globals.overlay_flags(&args.overlays);
    let reports = match &args.id {
        Some(id) => {
            let ns = conn.namespace.clone();
            let Some(d) = detail_from(&source, &conn, &ns, id).await? else {
                return Err(super::exit::absent(&conn, id).await);
            };
            if !namzu_domain::naming::is_workspace(&d.sandbox) {
                return Err(Failure {
                    code: super::exit::NOT_FOUND,
                    message: super::exit::not_a_workspace(&id.sandbox_name(), &ns),
                });
            }
            let events = d.events.known().map(Vec::as_slice);
            let claim = d.claim.as_ref().and_then(|c| c.known());
            vec![report(
                d.workspace(&flags, now),
                &d.sandbox,
                d.template.as_read(),
                events,
                claim,
            )]
        }
        None => {
            // one namespace derived and let go at a time, as `list -A` does
            let mut reports = Vec::new();
            let warnings = inventory::read_each(
                &inventory::Source::Live,
                &conn,
                &globals.scope(&conn.namespace),
                &Query::default(),
                &mut |ns| {
                    reports.extend(
                        ns.entries(&flags, now)
                            .into_iter()
                            .filter(|e| e.workspace.drift.state == DriftState::Drifted)
                            .map(|e| report(e.workspace, e.sandbox, e.template, None, None)),
                    );
                },
            )
            .await?;
            for w in &warnings {
                namzu_engine::errln!("{}", output::printable(w));
            }
            reports
        }
    };
    match args.output {
        Format::Json | Format::Yaml => namzu_engine::out!(
            "{}",
            output::structured(&json!(reports.iter().map(structured).collect::<Vec<_>>()), args.output)
        ),
        Format::Name => reports
            .iter()
            .for_each(|r| namzu_engine::outln!("sandbox.agents.x-k8s.io/{}", r.workspace.sandbox_name)),
        Format::Table | Format::Wide => {
            if reports.is_empty() {
                namzu_engine::errln!("No drifted workspaces.");
            }
            reports
                .iter()
                .for_each(|r| namzu_engine::out!("{}", output::printable_lines(&text(r))));
        }
    }
    Ok(())
}

fn structured(r: &Report) -> Value {
    let w = &r.workspace;
    json!({
        "id": w.id, "namespace": w.namespace, "state": w.drift.state.as_str(),
        "stored": w.drift.stored, "current": w.drift.current, "overlays": w.drift.overlays,
        "changes": r.changes.iter().map(|c| json!({"path": c.path, "old": c.old, "new": c.new})).collect::<Vec<_>>(),
        "templatePolicies": r.policies.as_ref().map(|ps| {
            ps.iter().map(|p| (p.key.to_string(), p.json())).collect::<serde_json::Map<_, _>>()
        }),
        "refusals": r.refusals.iter().map(|f| json!({
            "reason": f.reason, "source": f.source, "message": f.message,
            "policy": f.policy.as_ref().map(|p| json!({"name": p.key, "value": p.value, "defaulted": p.defaulted})),
            "diagnosis": f.explain(),
        })).collect::<Vec<_>>(),
        "eventsRead": r.events_read,
    })
}

fn text(r: &Report) -> String {
    let w = &r.workspace;
    let mut s = format!("{} ({}): {}\n", w.id, w.namespace, w.drift.state.as_str());
    let hash = |h: &Option<String>| h.clone().unwrap_or_else(|| "-".into());
    s.push_str(&format!(
        "  stored  {}\n  current {}\n",
        hash(&w.drift.stored),
        hash(&w.drift.current)
    ));
    if let Some(o) = &w.drift.overlays {
        s.push_str(&format!("  overlays: {}\n", describe::overlays(o)));
    }
    if let Some(ps) = &r.policies {
        let shown: Vec<String> = ps.iter().map(Policy::shown).collect();
        s.push_str(&format!("  template policies: {}\n", shown.join(", ")));
    }
    for f in &r.refusals {
        s.push_str(&format!("  diagnosis: {}\n", f.explain()));
    }
    let note = match w.drift.state {
        DriftState::Current => Some("the workspace runs its template's current revision"),
        DriftState::NoTemplate => Some("the SandboxTemplate no longer exists: nothing to compare with"),
        DriftState::Unreadable => Some("the SandboxTemplate could not be read"),
        DriftState::Unknown if r.changes.is_empty() => {
            Some("no hash stored, and the pod template matches the template")
        }
        DriftState::Drifted if r.changes.is_empty() => Some(
            "the hash differs but no field does: the overlays inferred may not be the hosts' (see --runtime-class, --egress-profile)",
        ),
        _ => None,
    };
    if let Some(n) = note {
        s.push_str(&format!("  {n}\n"));
    }
    s.push_str(&describe::changes(&r.changes, "  "));
    s
}
