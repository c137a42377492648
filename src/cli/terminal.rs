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
    let options = crate::tui::Options {
        failed: fleet.failed(),
        several_contexts: fleet.labelled,
        clusters: fleet.members.into_iter().map(|m| (m.conn, m.rules)).collect(),
        policy: globals.write_policy(false),
        read_only_flag: globals.overrides().read_only == Some(true),
        all_namespaces: globals.all_namespaces,
        refresh,
        clock: fleet.clock,
    };
    crate::tui::run(options).await.map_err(|e| Failure::error(e.0))
}
