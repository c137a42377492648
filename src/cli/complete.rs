//! `kubectl-namzu __complete ARGS…`: completion in cobra's protocol, which kubectl (≥ 1.26) speaks
//! to a `kubectl_complete-namzu` shim on PATH. Candidates one per line, then `:4` (no file names).

use super::Cli;
use super::globals::Globals;
use crate::cluster::connect::Connection;
use crate::cluster::inventory::{self, Query};
use clap::CommandFactory;

/// Verbs whose positional arguments are workspace ids.
const TAKES_IDS: [&str; 8] = [
    "inspect",
    "describe",
    "drift",
    "suspend",
    "resume",
    "delete",
    "rm",
    "reconcile",
];

pub async fn run(globals: &Globals, args: Vec<String>) {
    let (done, partial) = match args.split_last() {
        Some((last, rest)) => (rest.to_vec(), last.clone()),
        None => (Vec::new(), String::new()),
    };
    let verb = done.iter().find(|a| !a.starts_with('-')).cloned();
    let mut candidates: Vec<String> = match verb {
        None => Cli::command()
            .get_subcommands()
            .filter(|c| !c.is_hide_set())
            .map(|c| c.get_name().to_string())
            .collect(),
        Some(v) if TAKES_IDS.contains(&v.as_str()) && !partial.starts_with('-') => workspace_ids(globals).await,
        Some(_) => Vec::new(),
    };
    candidates.retain(|c| c.starts_with(&partial));
    for c in candidates {
        crate::outln!("{c}");
    }
    // cobra's ShellCompDirectiveNoFileComp
    crate::outln!(":4");
}

/// The workspace ids in the current namespace; nothing (never an error) when the cluster is away.
async fn workspace_ids(globals: &Globals) -> Vec<String> {
    let mut opts = globals.connect_options(false);
    opts.request_timeout = Some(std::time::Duration::from_secs(3));
    let Ok(conn) = Connection::open(&opts).await else {
        return Vec::new();
    };
    let scope = globals.scope(&conn.namespace);
    match inventory::read(&conn, &scope, &Query::default()).await {
        Ok(inv) => inv
            .workspaces(&Default::default(), conn.clock.now())
            .into_iter()
            .map(|w| w.id)
            .collect(),
        Err(_) => Vec::new(),
    }
}
