//! `kubectl namzu reconcile ID --uid SANDBOX_UID [--claim ENTRY=UID …]`: what became of a
//! workspace a host or a script retained — live, suspended, absent or replaced — by the library's
//! rules (docs/interop.md §13.3). GET requests only; a failed read is an error, never "absent".

use super::exit::{self, Failure};
use super::globals::Globals;
use super::output::{self, ReportFormat};
use namzu_domain::identity::{self, Closure, Identity, Retained};
use namzu_domain::naming::WorkspaceId;
use namzu_engine::cluster::connect::Connection;
use namzu_engine::cluster::observe;
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// A retained uid: non-empty, no whitespace or control characters.
fn parse_uid(text: &str) -> Result<String, String> {
    if text.is_empty() || text.len() > 128 || text.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!(
            "invalid uid {text:?}: a uid is 1-128 characters without whitespace"
        ));
    }
    Ok(text.to_string())
}

/// `ENTRY=UID`: a volumeClaimTemplates entry and the claim uid retained for it.
fn parse_claim(text: &str) -> Result<(String, String), String> {
    let (entry, uid) = text.split_once('=').ok_or_else(|| {
        format!("invalid claim {text:?}: expected ENTRY=UID (a volumeClaimTemplates entry, =, its claim's uid)")
    })?;
    if entry.is_empty() || entry.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!(
            "invalid claim {text:?}: the entry before = is empty or not a name"
        ));
    }
    Ok((entry.to_string(), parse_uid(uid)?))
}

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The workspace id (the Sandbox is namzu-ws-<id>).
    pub id: WorkspaceId,
    /// The Sandbox uid retained for the workspace.
    #[arg(long, value_name = "SANDBOX_UID", value_parser = parse_uid)]
    pub uid: String,
    /// A volume claim uid retained for the workspace, by volumeClaimTemplates entry (repeatable).
    #[arg(long = "claim", value_name = "ENTRY=UID", value_parser = parse_claim)]
    pub claims: Vec<(String, String)>,
    /// Output format.
    #[arg(short = 'o', long, value_enum, default_value = "table")]
    pub output: ReportFormat,
}

fn identity_json(id: &Identity) -> Value {
    json!({"sandboxUid": id.sandbox_uid, "volumeClaimUids": namzu_domain::workspace::str_map_json(&id.volume_claim_uids), "podUid": id.pod_uid})
}

pub(crate) async fn run(globals: &Globals, args: Args) -> Result<(), Failure> {
    globals.one_namespace_for_names()?;
    let mut claims = BTreeMap::new();
    for (entry, uid) in &args.claims {
        if claims.insert(entry.clone(), uid.clone()).is_some() {
            return Err(Failure::usage(format!(
                "--claim {entry}=… given twice: retain one uid per volumeClaimTemplates entry"
            )));
        }
    }
    let retained = Retained {
        sandbox_uid: args.uid.clone(),
        claims,
    };
    globals.one_context("reconcile")?;
    let conn = Connection::open(&globals.connect_options(true)).await?;
    let ns = conn.namespace.clone();
    let seen = observe::observe(&conn, &ns, &args.id).await?;
    // a --claim entry the retained Sandbox has no volumeClaimTemplates entry for is a typo, not a
    // claim to ignore (a replaced Sandbox's entries say nothing of the retained one's)
    if let Some(o) = seen
        .as_ref()
        .filter(|o| namzu_domain::object::uid(&o.sandbox) == Some(args.uid.as_str()))
    {
        let entries: Vec<&str> = o
            .sandbox
            .pointer("/spec/volumeClaimTemplates")
            .and_then(serde_json::Value::as_array)
            .map(|a| a.iter().filter_map(|t| t.pointer("/metadata/name")?.as_str()).collect())
            .unwrap_or_default();
        if let Some(unknown) = retained.claims.keys().find(|k| !entries.contains(&k.as_str())) {
            return Err(Failure::usage(format!(
                "--claim {}=…: Sandbox {} has no volumeClaimTemplates entry {:?} (it has: {})",
                output::printable(unknown),
                args.id.sandbox_name(),
                output::printable(unknown),
                if entries.is_empty() {
                    "none".to_string()
                } else {
                    entries.join(", ")
                }
            )));
        }
    }
    let closure = identity::reconcile(
        &retained,
        seen.as_ref().map(|o| (&o.sandbox, o.claims.as_slice(), o.pod.as_ref())),
    );
    let sandbox_name = args.id.sandbox_name();
    let text = match args.output {
        ReportFormat::Table => format!(
            "{}\n",
            namzu_engine::present::outcome::closure(&ns, &sandbox_name, &closure)
        ),
        format => {
            let mut answer = json!({"state": closure.state(), "workspaceId": args.id.as_str(),
                "sandboxName": sandbox_name, "namespace": ns});
            match &closure {
                Closure::Live(id) | Closure::Suspended(id) => answer["identity"] = identity_json(id),
                Closure::Absent => {}
                Closure::Replaced(id, m) => {
                    answer["identity"] = identity_json(id);
                    answer["mismatch"] = json!({"kind": m.kind.as_str(), "expected": m.expected,
                        "actual": m.actual, "claim": m.claim});
                }
            }
            output::structured(&answer, format.format())
        }
    };
    match args.output {
        ReportFormat::Table => namzu_engine::out!("{}", output::printable_lines(&text)),
        _ => namzu_engine::out!("{text}"),
    }
    match closure {
        Closure::Live(_) | Closure::Suspended(_) => Ok(()),
        Closure::Absent => Err(Failure::quiet(exit::NOT_FOUND)),
        Closure::Replaced(..) => Err(Failure::quiet(exit::REPLACED)),
    }
}
