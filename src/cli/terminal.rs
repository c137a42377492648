//! `kubectl namzu tui` (and `kubectl namzu` alone on a terminal, and the demo): the terminal UI
//! over the contexts the global flags select, each with its connection, safety rules and write
//! policy.

use super::exit::Failure;
use super::fleet::Fleet;
use super::globals::Globals;

/// The terminal UI over the flags' contexts (one, `--context a,b`, or `--all-contexts`).
pub async fn open(globals: &Globals, refresh: std::time::Duration) -> Result<(), Failure> {
    // exec credential plugins must not prompt inside the alternate screen
    let fleet = Fleet::open(globals, false).await?;
    let switch = (!fleet.labelled).then(|| switch(globals)).flatten();
    let options = crate::tui::Options {
        failed: fleet.failed(),
        several_contexts: fleet.labelled,
        clusters: fleet.members.into_iter().map(|m| (m.conn, m.rules)).collect(),
        policy: globals.write_policy(false),
        read_only_flag: globals.overrides().read_only == Some(true),
        all_namespaces: globals.all_namespaces,
        refresh,
        clock: fleet.clock,
        switch,
    };
    crate::tui::run(options).await.map_err(|e| Failure::error(e.0))
}

/// How a single-context session opens the kubeconfig's other contexts: the session's connect
/// options and rules, but `--write` (which lifts one named context's rule) and `--cluster`/`--user`
/// (one context's overrides) left out. `None` when the kubeconfig lists no other context.
fn switch(globals: &Globals) -> Option<crate::tui::io::Switch> {
    let rules = super::config::load(globals).ok()?;
    let mut overrides = globals.overrides();
    if overrides.read_only == Some(false) {
        overrides.read_only = None;
    }
    let connect = crate::cluster::connect::ConnectOptions {
        safety: Some(std::sync::Arc::new((rules, overrides))),
        cluster: None,
        user: None,
        interactive_exec: false,
        ..globals.connect_options(false)
    };
    let kubeconfig = crate::cluster::connect::load_kubeconfig(&connect).ok()?;
    let contexts: Vec<String> = kubeconfig.contexts.iter().map(|c| c.name.clone()).collect();
    (contexts.len() > 1).then_some(crate::tui::io::Switch { connect, contexts })
}
