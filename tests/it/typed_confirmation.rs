//! Typed confirmations in a real terminal (tmux): what the user types the id of is what is sent —
//! a typed refresh shows the diff and is bound to it, a typed batch goes on past a workspace it
//! could not read.

use crate::refresh::refresh_scenario;
use crate::support::*;
use namzu_sim::faults::Fault;

/// Every context asks for the id typed.
const TYPED: &str = "contexts:\n- context: \"*\"\n  confirm: typed\n";

/// Issue 26: a refresh asked on a terminal (`confirm: typed`) shows the template, the hashes and
/// the field changes as the dry run does, and is bound to them: the template changed while the
/// id was typed is refused (exit 3), nothing written.
#[test]
fn a_typed_refresh_confirmation_shows_the_diff_and_is_bound_to_it() {
    use namzu_sim::resources::{SANDBOXES, TEMPLATES};
    let scenario = refresh_scenario("");
    let scenario = start_with(&scenario, |c| c.namespace = "ns".into());
    let Some((_runtime, t, tmux)) = in_tmux("the refresh confirmation test", "typed-refresh", scenario) else {
        return;
    };
    let script = format!(
        "{} resume desk --refresh-template; echo EXIT=$?; sleep 60",
        t.line(&[t.rules_env(TYPED)])
    );
    tmux.start(200, 40, &script);
    let shown = tmux.expect("Type the workspace id (desk)");
    assert!(
        shown.contains("refresh from SandboxTemplate ws: pod-template hash"),
        "{shown}"
    );
    assert!(shown.contains("field changes:"), "{shown}");
    assert!(shown.contains("namzu/agent:2"), "{shown}");
    assert!(shown.contains("no holder epoch (unfenced"), "{shown}");
    // the template changes while the user types: what was shown is no longer what would be written
    t.sim.modify(&TEMPLATES, "ns", "ws", |o| {
        o["spec"]["podTemplate"]["spec"]["containers"][0]["image"] = serde_json::json!("namzu/agent:3");
    });
    tmux.keys(&["desk", "Enter"]);
    let done = tmux.expect("EXIT=");
    assert!(done.contains("EXIT=3"), "{done}");
    assert!(done.contains("changed since it was shown"), "{done}");
    let after = t.sim.get(&SANDBOXES, "ns", "namzu-ws-desk").unwrap();
    assert_eq!(after["spec"]["operatingMode"], "Suspended");
    assert!(!t.sim.requests().iter().any(|r| r.method == "PATCH"));
    // asked again (in a terminal of its own), the id typed: the refresh shown is written
    drop(tmux);
    let tmux = Tmux::new("typed-refresh-again");
    tmux.start(200, 40, &script);
    let shown = tmux.expect("Type the workspace id (desk)");
    assert!(shown.contains("namzu/agent:3"), "{shown}");
    tmux.keys(&["desk", "Enter"]);
    let done = tmux.expect("EXIT=");
    assert!(done.contains("EXIT=0"), "{done}");
    let after = t.sim.get(&SANDBOXES, "ns", "namzu-ws-desk").unwrap();
    assert_eq!(
        after["spec"]["podTemplate"]["spec"]["containers"][0]["image"],
        "namzu/agent:3"
    );
}

/// Review of issue 29's batch: a Sandbox that cannot be read to ask its typed id fails that
/// workspace (its line, exit 1), and the batch goes on to ask the next; nothing is sent for it.
#[test]
fn a_typed_batch_goes_on_past_a_workspace_it_could_not_read() {
    use namzu_sim::resources::SANDBOXES;
    let Some((_runtime, t, tmux)) = in_tmux("the typed batch test", "typed-batch", start()) else {
        return;
    };
    t.sim
        .add_fault(Fault::status(Some("GET"), "/sandboxes/namzu-ws-awake", 500, "the read failed").times(1));
    let script = format!(
        "{} -n agents suspend awake asleep; echo EXIT=$?; sleep 60",
        t.line(&[t.rules_env(TYPED)])
    );
    tmux.start(200, 40, &script);
    let shown = tmux.expect("Type the workspace id (asleep)");
    assert!(shown.contains("the read failed"), "{shown}");
    tmux.keys(&["asleep", "Enter"]);
    let done = tmux.expect("EXIT=");
    assert!(done.contains("EXIT=1"), "{done}");
    assert!(done.contains("1 of 2 workspaces were not suspended"), "{done}");
    let awake = t.sim.get(&SANDBOXES, "agents", "namzu-ws-awake").unwrap();
    assert_eq!(awake["spec"]["operatingMode"], "Running");
    assert!(!t.sim.requests().iter().any(|r| r.method == "PATCH"));
}
