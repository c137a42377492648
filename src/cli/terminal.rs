//! `kubectl namzu tui` (and `kubectl namzu` alone on a terminal, and the demo): the terminal UI
//! opened with the global flags' connection and write policy.

use super::exit::Failure;
use super::globals::Globals;

/// The terminal UI with the global flags' connection and write policy.
pub async fn open(globals: &Globals, refresh: std::time::Duration) -> Result<(), Failure> {
    let options = crate::tui::Options {
        // exec credential plugins must not prompt inside the alternate screen
        connect: globals.connect_options(false),
        policy: globals.write_policy(globals.overrides().read_only.unwrap_or(false)),
        all_namespaces: globals.all_namespaces,
        refresh,
    };
    crate::tui::run(options).await.map_err(|e| Failure::error(e.0))
}
