//! `kubectl namzu tui` (and `kubectl namzu` alone on a terminal, and the demo): the terminal UI
//! over the contexts the global flags select, each with its connection, safety rules and write
//! policy.

use super::exit::Failure;
use super::globals::Globals;
use namzu_engine::ops::fleet::Fleet;

/// The terminal UI over the flags' contexts (one, `--context a,b`, or `--all-contexts`).
pub(crate) async fn open(globals: &Globals, refresh: std::time::Duration) -> Result<(), Failure> {
    // exec credential plugins must not prompt inside the alternate screen
    let request = crate::cli::config::fleet_request(globals, false)?;
    // the list's keys the config file moves: a wrong entry is one line before anything opens
    let keys = namzu_tui::keys::KeyMap::from_config(&request.rules.keys).map_err(|e| {
        let file = request.rules.file.as_deref().unwrap_or("(none)");
        Failure::usage(format!("config file {file}: {e}"))
    })?;
    let fleet = Fleet::open(request.clone()).await?;
    // a single-context session may open the kubeconfig's other contexts (`ops::fleet` says how)
    let own = fleet
        .members
        .first()
        .map(|m| m.conn.context.clone())
        .unwrap_or_default();
    let switch = (!fleet.several_contexts)
        .then(|| request.others(&own))
        .flatten()
        .map(|o| namzu_tui::io::Switch {
            connect: o.connect,
            contexts: o.contexts,
        });
    let options = namzu_tui::Options {
        failed: fleet.failed(),
        several_contexts: fleet.several_contexts,
        read_only_flag: fleet.read_only_flag(),
        clusters: fleet.members.into_iter().map(|m| (m.conn, m.rules)).collect(),
        policy: globals.write_policy(false),
        all_namespaces: globals.all_namespaces,
        refresh,
        clock: fleet.clock,
        switch,
        keys,
        recording: globals.recording_root().ok(),
        // what the watches see is recorded, at no extra request (unless `record` holds the store)
        record: globals.recording_tap(),
    };
    namzu_tui::run(options).await.map_err(|e| Failure::error(e.0))
}
