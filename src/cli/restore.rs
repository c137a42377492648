//! `kubectl namzu restore KIND/NAME… [-n NS]`: undo `leaks --delete` — each object re-created
//! from its newest tombstone (`cluster/tombstone.rs`) in the context and namespace it was deleted
//! from, a disk re-bound to its retained volume (`cluster::write::restore`); `--list` shows the
//! tombstones kept.

use super::exit::{self, Failure};
use super::globals::Globals;
use super::output::{self, Tone};
use namzu_engine::cluster::connect::Connection;
use namzu_engine::cluster::tombstone;
use namzu_engine::cluster::write::{self, RestoreOutcome};
use namzu_engine::console::printable;
use namzu_engine::ops::fleet::Fleet;
use serde_json::Value;

#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  # what leaks --delete kept for an undo
  kubectl namzu restore --list

  # a deleted disk back, on its retained volume (kubectl's -o name form, or pvc/, cnp/)
  kubectl namzu restore -n agents persistentvolumeclaim/workspace-disk-namzu-ws-ghost
  kubectl namzu restore -n agents cnp/namzu-sbx-0e0e0e0e-0000-4000-8000-00003785be10")]
pub struct Args {
    /// The objects: KIND/NAME as `leaks` and kubectl's -o name print them (persistentvolumeclaim/…,
    /// ciliumnetworkpolicy/…, or pvc/…, cnp/…).
    #[arg(value_name = "KIND/NAME")]
    pub targets: Vec<String>,
    /// List the tombstones kept (newest last) instead of restoring.
    #[arg(long)]
    pub list: bool,
}

/// `pvc/x`, `persistentvolumeclaim/x`, … → (kind, name).
fn parse_target(text: &str) -> Result<(&'static str, &str), Failure> {
    let (kind, name) = text.split_once('/').ok_or_else(|| {
        Failure::usage(format!(
            "{}: give KIND/NAME, e.g. pvc/NAME or cnp/NAME",
            printable(text)
        ))
    })?;
    let kind = match kind.to_lowercase().as_str() {
        "pvc" | "persistentvolumeclaim" | "persistentvolumeclaims" => "PersistentVolumeClaim",
        "cnp" | "ciliumnetworkpolicy" | "ciliumnetworkpolicies" | "ciliumnetworkpolicy.cilium.io" => {
            "CiliumNetworkPolicy"
        }
        _ => {
            return Err(Failure::usage(format!(
                "{}: restore re-creates what leaks --delete deleted: persistentvolumeclaim/NAME or ciliumnetworkpolicy/NAME",
                printable(text)
            )));
        }
    };
    if !namzu_domain::naming::is_path_safe_name(name) {
        return Err(Failure::usage(format!("{}: not a name", printable(text))));
    }
    Ok((kind, name))
}

pub(crate) async fn run(globals: &Globals, args: Args) -> Result<(), Failure> {
    let audit = globals.audit();
    let dir = tombstone::dir(audit.path.as_deref())
        .ok_or_else(|| Failure::error("no state directory (set XDG_STATE_HOME or HOME)"))?;
    if args.list {
        list(&dir);
        return Ok(());
    }
    if args.targets.is_empty() {
        return Err(Failure::usage("give KIND/NAME to restore, or --list"));
    }
    let targets = args
        .targets
        .iter()
        .map(|t| parse_target(t))
        .collect::<Result<Vec<_>, _>>()?;
    globals.one_namespace_for_names()?;
    globals.one_context("restore")?;
    let fleet = Fleet::open(crate::cli::config::fleet_request(globals, true)?).await?;
    let Some(member) = fleet.members.first() else {
        return Err(Failure::error("no context was opened"));
    };
    let conn: &Connection = &member.conn;
    let policy = namzu_engine::ops::write::rules::policy(&globals.write_policy(fleet.read_only_flag()), &member.rules);
    let mut failed = false;
    for (kind, name) in targets {
        let what = format!("{}/{name}", kind.to_lowercase());
        let Some((path, stone)) = tombstone::newest(&dir, Some(&conn.context), kind, &conn.namespace, name) else {
            namzu_engine::errln!(
                "{what} in {}: no tombstone (kubectl namzu restore --list shows what was kept)",
                printable(&conn.namespace)
            );
            failed = true;
            continue;
        };
        // a context of the same name may reach another cluster: the tombstone's server must be
        // this connection's
        let server = stone
            .get("server")
            .and_then(serde_json::Value::as_str)
            .unwrap_or_default();
        if server != conn.server {
            namzu_engine::errln!(
                "{what} in {}: its tombstone was kept for server {} of context {}, and this connection reaches {}: not restored",
                printable(&conn.namespace),
                printable(server),
                printable(&conn.context),
                printable(&conn.server)
            );
            failed = true;
            continue;
        }
        let outcome = write::restore(conn, &policy, &stone).await;
        let ns = &conn.namespace;
        match &outcome {
            RestoreOutcome::Restored { volume: Some(pv), .. } => {
                namzu_engine::outln!("{what} in {ns}: restored, bound to its retained volume {pv}")
            }
            RestoreOutcome::Restored { volume: None, .. } => namzu_engine::outln!("{what} in {ns}: restored"),
            RestoreOutcome::RestoredEmpty { why } => {
                namzu_engine::outln!("{what} in {ns}: restored empty: {}", printable(why))
            }
            RestoreOutcome::Refused { message } => {
                namzu_engine::errln!("{what} in {ns}: refused: {}", printable(message));
                failed = true;
            }
            RestoreOutcome::ReadOnly => {
                namzu_engine::errln!("{what} in {ns}: refused: {}", fleet.read_only_reason(member));
                failed = true;
            }
            RestoreOutcome::Failed(e) => {
                namzu_engine::errln!("{what} in {ns}: failed: {}", printable(&e.to_string()));
                failed = true;
            }
        }
        // a tombstone restored is spent: the next delete keeps a new one
        if matches!(
            outcome,
            RestoreOutcome::Restored { .. } | RestoreOutcome::RestoredEmpty { .. }
        ) {
            let _ = std::fs::rename(&path, path.with_extension("json.restored"));
        }
    }
    if failed {
        return Err(Failure {
            code: exit::NOT_APPLIED,
            message: String::new(),
        });
    }
    Ok(())
}

/// The tombstones kept, newest last.
fn list(dir: &std::path::Path) {
    let stones = tombstone::list(dir);
    if stones.is_empty() {
        namzu_engine::errln!("No tombstones in {}.", printable(&dir.display().to_string()));
        return;
    }
    let field = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("-").to_string();
    let rows: Vec<Vec<(String, Tone)>> = stones
        .iter()
        .map(|(_, v)| {
            let volume = match (
                v.pointer("/volume/name").and_then(Value::as_str),
                v.pointer("/volume/retained").and_then(Value::as_bool),
            ) {
                (Some(pv), Some(true)) => format!("{pv} (retained)"),
                (Some(pv), _) => format!("{pv} (data lost)"),
                (None, _) => "-".into(),
            };
            vec![
                (field(v, "deletedAt"), Tone::Plain),
                (field(v, "context"), Tone::Plain),
                (field(v, "namespace"), Tone::Plain),
                (
                    format!("{}/{}", field(v, "kind").to_lowercase(), field(v, "name")),
                    Tone::Plain,
                ),
                (volume, Tone::Plain),
                (field(v, "by"), Tone::Plain),
            ]
            .into_iter()
            .map(|(t, tone)| (printable(&t), tone))
            .collect()
        })
        .collect();
    namzu_engine::out!(
        "{}",
        output::table(
            &["DELETED", "CONTEXT", "NAMESPACE", "OBJECT", "VOLUME", "BY"],
            &rows,
            false,
            output::colour_enabled()
        )
    );
}
