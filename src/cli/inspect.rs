//! `kubectl namzu inspect ID`: everything known about one workspace, like `kubectl describe`.

use super::exit::Failure;
use super::globals::Globals;
use super::output::{self, Format};
use super::overlay::OverlayArgs;
use super::schema;
use crate::cluster::connect::Connection;
use crate::cluster::detail::{self, Detail, event_time};
use crate::domain::naming::WorkspaceId;
use crate::domain::object::{generation, owner_refs};
use crate::domain::workspace::{Observed, Workspace};
use crate::present;
use serde_json::{Value, json};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The workspace id (the Sandbox is namzu-ws-<id>).
    pub id: WorkspaceId,
    /// Output format: table (describe text), json or yaml.
    #[arg(short = 'o', long, value_enum, default_value = "table")]
    pub output: Format,
    #[command(flatten)]
    pub overlays: OverlayArgs,
}

pub async fn run(globals: &Globals, args: Args) -> Result<(), Failure> {
    globals.one_namespace_for_names()?;
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
        Format::Table | Format::Wide => output::printable_lines(&present::detail::render(&w, &d, now)),
    };
    crate::out!("{text}");
    Ok(())
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
