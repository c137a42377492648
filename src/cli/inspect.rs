//! `kubectl namzu inspect ID`: everything known about one workspace, like `kubectl describe`.

use super::exit::Failure;
use super::globals::Globals;
use super::output::{self, Format, Printer};
use super::overlay::OverlayArgs;
use super::schema;
use namzu_domain::naming::WorkspaceId;
use namzu_domain::object::{generation, owner_refs};
use namzu_domain::workspace::{Observed, Workspace};
use namzu_engine::cluster::connect::Connection;
use namzu_engine::cluster::detail::{self, Detail, event_time};
use namzu_engine::present;
use serde_json::{Value, json};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The workspace: its id, its Sandbox name namzu-ws-<id>, or what list -o name prints
    /// (sandbox.agents.x-k8s.io/namzu-ws-<id>).
    pub id: WorkspaceId,
    /// Output format: table (the describe text), json, yaml, name, jsonpath=TEMPLATE,
    /// jsonpath-file=FILE, custom-columns=HEADER:PATH,… or custom-columns-file=FILE.
    #[arg(short = 'o', long, default_value = "table", value_parser = output::parse_printer)]
    pub output: Printer,
    /// With a template: a path that finds nothing prints nothing (false: it is an error).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, value_name = "BOOL")]
    pub allow_missing_template_keys: bool,
    #[command(flatten)]
    pub overlays: OverlayArgs,
    /// Answer from the flight recorder's recording at TIME (RFC 3339, or relative: -2h, -30m).
    #[arg(long, value_name = "TIME", allow_hyphen_values = true)]
    pub at: Option<String>,
}

pub(crate) async fn run(globals: &Globals, args: Args) -> Result<(), Failure> {
    globals.one_namespace_for_names()?;
    globals.one_context("inspect")?;
    let conn = Connection::open(&globals.connect_options(true)).await?;
    let ns = conn.namespace.clone();
    let (source, now) = super::at::source(globals, args.at.as_deref(), conn.clock.now())?;
    let read = match &source {
        namzu_engine::ops::inventory::Source::At(at) => {
            let found = namzu_engine::ops::replay::detail_at(at, &conn.context, &ns, &args.id)?;
            namzu_engine::errln!("{}", output::printable(&found.coverage));
            match found.detail {
                Some(d) => Some(d),
                None => {
                    return Err(Failure {
                        code: super::exit::NOT_FOUND,
                        message: format!(
                            "workspace {} was not in namespace {ns} at {}",
                            args.id,
                            now.to_rfc3339()
                        ),
                    });
                }
            }
        }
        namzu_engine::ops::inventory::Source::Live => detail::read(&conn, &ns, &args.id).await?,
    };
    let Some(d) = read else {
        return Err(super::exit::absent(&conn, &args.id).await);
    };
    if !namzu_domain::naming::is_workspace(&d.sandbox) {
        return Err(Failure {
            code: super::exit::NOT_FOUND,
            message: super::exit::not_a_workspace(&args.id.sandbox_name(), &ns),
        });
    }
    let mut w = d.workspace(&globals.overlay_flags(&args.overlays), now);
    // a context named on the command line is named in the next step's command too: pasted
    // under another current context, it would act on another cluster
    w.context = globals.context.first().cloned();
    let text = match &args.output {
        Printer::Plain(Format::Json | Format::Yaml) => {
            let Printer::Plain(format) = args.output else {
                unreachable!()
            };
            output::structured(&structured(&w, &d, now), format)
        }
        Printer::Plain(Format::Name) => format!("sandbox.agents.x-k8s.io/{}\n", w.sandbox_name),
        Printer::Plain(Format::Table | Format::Wide) => output::printable_lines(&present::detail::render(&w, &d, now)),
        template => {
            let object = structured(&w, &d, now);
            template
                .render_template(
                    &object,
                    std::slice::from_ref(&object),
                    false,
                    args.allow_missing_template_keys,
                )
                .map_err(Failure::error)?
        }
    };
    namzu_engine::out!("{text}");
    Ok(())
}

fn structured(w: &Workspace, d: &Detail, now: chrono::DateTime<chrono::Utc>) -> Value {
    let mut out = schema::workspace(w);
    out["conditions"] = d.sandbox.pointer("/status/conditions").cloned().unwrap_or(json!([]));
    out["generation"] = json!(generation(&d.sandbox));
    out["ownerReferences"] = json!(owner_refs(&d.sandbox));
    // who last wrote spec.operatingMode, by managedFields (null when they do not say)
    out["modeSetBy"] = json!(namzu_domain::writers::of_mode(&d.sandbox));
    // the owning claim's lifecycle (null: no claim owns it)
    out["claimLifecycle"] = match &d.claim {
        None => Value::Null,
        Some(Observed::Forbidden) => json!("forbidden"),
        Some(Observed::Known(c)) => namzu_domain::claim_lifecycle::read(c).json(now),
    };
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
