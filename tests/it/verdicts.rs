//! Every verdict true on agent-sandbox v1.0.3 as it runs: a pod's restarts and last exit
//! (`list -o wide`, `list -o json`, `inspect`, the TUI's detail), and the diagnoses of a Sandbox
//! held in deletion, of one past its shutdown, and of a pod terminating past its grace period.

use crate::support::*;
use kube::api::{Patch, PatchParams};
use serde_json::{Value, json};

fn items(o: &std::process::Output) -> Vec<Value> {
    listed(o)
}

fn one<'a>(items: &'a [Value], id: &str) -> &'a Value {
    items
        .iter()
        .find(|w| w["id"] == id)
        .unwrap_or_else(|| panic!("no workspace {id}"))
}

/// The table row of `id` (its first cell).
fn row<'a>(table: &'a str, id: &str) -> &'a str {
    table
        .lines()
        .find(|l| l.split_whitespace().next() == Some(id))
        .unwrap_or_else(|| panic!("no row {id} in\n{table}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restarts_and_the_last_exit_in_list_wide_json_and_inspect() {
    let t = start_demo().await;
    // the default table stays as it was: DIAGNOSIS already says crash-loop
    let plain = out(&namzu(&t, &["list", "-n", "agents"]).await);
    assert!(!plain.contains("RESTARTS"), "{plain}");
    let wide = namzu(&t, &["list", "-n", "agents", "-o", "wide"]).await;
    assert!(wide.status.success(), "{}", err(&wide));
    let wide = out(&wide);
    let header = wide.lines().next().unwrap();
    assert!(header.contains(" POD ") && header.contains(" RESTARTS "), "{header}");
    // hotel's crash loop: kubectl get pods' cell, the last run's end 74s ago
    assert!(row(&wide, "hotel").contains(" 7 (74s ago) "), "{wide}");
    assert!(row(&wide, "alpha").contains(" 0 "), "{wide}");

    let all = items(&namzu(&t, &["list", "-n", "agents", "-o", "json"]).await);
    let hotel = one(&all, "hotel");
    assert_eq!(hotel["restarts"], 7);
    assert_eq!(
        hotel["lastTermination"],
        json!({"container": "agent", "exitCode": 1, "reason": "Error", "finishedAt": "2026-11-29T11:58:46Z"})
    );
    assert_eq!(one(&all, "alpha")["restarts"], 0);
    assert_eq!(one(&all, "alpha")["lastTermination"], Value::Null);
    // no pod: nothing to count
    assert_eq!(one(&all, "delta")["restarts"], Value::Null);
    assert_eq!(one(&all, "delta")["lastTermination"], Value::Null);

    let inspect = namzu(&t, &["inspect", "-n", "agents", "hotel"]).await;
    assert!(inspect.status.success(), "{}", err(&inspect));
    let text = out(&inspect);
    assert!(text.contains("\n  Restarts:      7 (74s ago)\n"), "{text}");
    assert!(
        text.contains(
            "\n  Last exit:     container agent: exit code 1 (Error), finished 2026-11-29T11:58:46Z (74s ago)\n"
        ),
        "{text}"
    );

    // a restart as it happens: counted, and the newest end is alpha's own
    t.sim.restart_container("agents", "namzu-ws-alpha", "agent");
    t.sim.advance(chrono::Duration::minutes(5));
    let wide = out(&namzu(&t, &["list", "-n", "agents", "-o", "wide"]).await);
    assert!(row(&wide, "alpha").contains(" 1 (5m ago) "), "{wide}");
    let all = items(&namzu(&t, &["list", "-n", "agents", "-o", "json"]).await);
    let alpha = one(&all, "alpha");
    assert_eq!(alpha["restarts"], 1);
    assert_eq!(alpha["lastTermination"]["container"], "agent");
    assert_eq!(alpha["lastTermination"]["exitCode"], 1);
    assert_eq!(alpha["lastTermination"]["finishedAt"], "2026-11-29T12:00:00Z");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sandbox_held_in_deletion_and_one_expired_are_diagnosed() {
    let t = start_demo().await;
    let table = out(&namzu(&t, &["list", "-n", "agents"]).await);
    assert!(row(&table, "quebec").ends_with(" stuck-deleting"), "{table}");
    assert!(row(&table, "papa").ends_with(" expired"), "{table}");

    let quebec = items(
        &namzu(
            &t,
            &["list", "-n", "agents", "--diagnosis", "stuck-deleting", "-o", "json"],
        )
        .await,
    );
    assert_eq!(quebec.len(), 1, "{quebec:?}");
    let q = &quebec[0];
    assert_eq!(q["id"], "quebec");
    assert_eq!(q["diagnosis"]["reason"], "DeletionHeld");
    assert_eq!(
        q["diagnosis"]["message"],
        "the Sandbox has been deleting for 50d (deletionTimestamp 2026-10-10T12:00:00Z), held by finalizer namzu.ai/demo-hold"
    );
    assert_eq!(q["nextStep"]["command"], "kubectl namzu history quebec -n agents");
    let step = q["nextStep"]["text"].as_str().unwrap();
    assert!(
        step.contains("namzu.ai/demo-hold") && !step.contains("kubectl delete"),
        "{step}"
    );
    assert_eq!(q["deletionTimestamp"], "2026-10-10T12:00:00Z");
    assert_eq!(q["finalizers"], json!(["namzu.ai/demo-hold"]));

    // papa, and retained (no shutdownPolicy at all: agent-sandbox's default, Retain)
    let papa = items(&namzu(&t, &["list", "-n", "agents", "--diagnosis", "expired", "-o", "json"]).await);
    assert_eq!(papa.len(), 2, "{papa:?}");
    assert_eq!(papa[1]["id"], "retained");
    assert!(
        papa[1]["diagnosis"]["message"]
            .as_str()
            .unwrap()
            .contains("shutdownPolicy Retain, agent-sandbox's default"),
        "{:?}",
        papa[1]
    );
    let p = &papa[0];
    assert_eq!((&p["id"], &p["state"]), (&json!("papa"), &json!("Expired")));
    assert_eq!(p["diagnosis"]["reason"], "RetainedByPolicy");
    let message = p["diagnosis"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("past its shutdownTime 2026-11-28T12:00:00Z, retained by policy (shutdownPolicy Retain)"),
        "{message}"
    );
    assert_eq!(p["nextStep"]["command"], "kubectl namzu history papa -n agents");
    assert_eq!(
        (&p["shutdownTime"], &p["shutdownPolicy"]),
        (&json!("2026-11-28T12:00:00Z"), &json!("Retain"))
    );

    // inspect shows when the deletion was asked for and what holds it
    let o = namzu(&t, &["inspect", "-n", "agents", "quebec"]).await;
    assert!(o.status.success(), "{}", err(&o));
    let text = out(&o);
    for want in [
        "\nState:           Deleting\nDeletion:        2026-10-10T12:00:00Z (50d ago)\nFinalizers:      namzu.ai/demo-hold\n",
        "\nDiagnosis:       stuck-deleting (DeletionHeld): the Sandbox has been deleting for 50d",
        "\n  Command:       kubectl namzu history quebec -n agents\n",
    ] {
        assert!(text.contains(want), "missing {want:?} in\n{text}");
    }
    let text = out(&namzu(&t, &["inspect", "-n", "agents", "papa"]).await);
    for want in [
        "\nShutdown:        2026-11-28T12:00:00Z (24h ago), shutdownPolicy Retain\n",
        "\nDiagnosis:       expired (RetainedByPolicy): past its shutdownTime",
    ] {
        assert!(text.contains(want), "missing {want:?} in\n{text}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_workspace_under_delete_is_not_reaped() {
    // the controller lags an hour behind a write: papa's new policy is not acted on
    let t = start_with(namzu_sim::scenario::DEMO, |c| {
        c.namespace = "agents".into();
        c.strict = false;
        c.timing.reconcile_delay = chrono::Duration::hours(1);
    })
    .await;
    let api = sandboxes(&t.client().await, "agents");
    api.patch(
        "namzu-ws-papa",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"shutdownPolicy": "Delete"}})),
    )
    .await
    .expect("patched");
    let papa = items(&namzu(&t, &["list", "-n", "agents", "--diagnosis", "expired", "-o", "json"]).await);
    assert_eq!(papa.len(), 2, "papa and retained: {papa:?}");
    let d = &papa[0]["diagnosis"];
    assert_eq!(d["reason"], "NotReaped");
    assert_eq!(
        d["message"],
        "past its shutdownTime 2026-11-28T12:00:00Z under shutdownPolicy Delete and not reaped by the controller: the Sandbox should be gone; its disks stay with it"
    );
    assert_eq!(papa[0]["nextStep"]["command"], "kubectl namzu history papa -n agents");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pod_terminating_past_its_grace_period_and_a_margin_is_stuck() {
    let t = start().await;
    stuck_terminating(&t, "agents", "namzu-ws-awake");
    let o = run_audited(&t, &["suspend", "awake", "-n", "agents"]).await;
    assert!(o.status.success(), "{}", err(&o));
    let awake = || async {
        let all = items(&namzu(&t, &["list", "-n", "agents", "-o", "json"]).await);
        one(&all, "awake")["diagnosis"].clone()
    };
    // the sim's grace period is 2s: 30s past it the kubelet may still be confirming
    t.sim.advance(chrono::Duration::seconds(32));
    let d = awake().await;
    assert_eq!(d["kind"], "suspend-unconfirmed", "{d}");
    // past the margin: stuck
    t.sim.advance(chrono::Duration::seconds(60));
    let d = awake().await;
    assert_eq!(d["kind"], "stuck-terminating", "{d}");
    let message = d["message"].as_str().unwrap();
    assert!(
        message.starts_with("pod namzu-ws-awake is still terminating past its grace period of 2s (deletionTimestamp "),
        "{message}"
    );
    let table = out(&namzu(&t, &["list", "-n", "agents"]).await);
    assert!(
        row(&table, "awake").contains("Suspending") && row(&table, "awake").ends_with(" stuck-terminating"),
        "{table}"
    );
}

/// The TUI's detail pane, in a real terminal: a crash loop's restarts and last exit, a
/// deletion's finalizers, an expiry's policy.
#[test]
fn the_detail_pane_shows_restarts_and_the_new_diagnoses() {
    use crate::support::{Tmux, bin_line, tool_missing};
    if tool_missing("tmux", "verdicts detail") {
        return;
    }
    let t = Tmux::new("verdicts");
    let home = tempfile::tempdir().unwrap();
    let bin = bin_line(home.path(), &[]);
    // tall enough for the whole detail pane, the diagnosis at its end
    t.start(
        200,
        70,
        &format!("{bin} demo --clusters 1; echo NAMZU-EXITED; sleep 120"),
    );
    t.expect("41 workspaces");
    // the whole list, not its provisional rows: the simulated controller has made its pass
    t.expect_gone("loading…");
    let open = |id: &str| {
        t.keys(&["/", id, "Enter"]);
        t.expect(&format!("filter: {id} (1 of 41)"));
        t.keys(&["Enter"]);
        t.expect(&format!("Name:            namzu-ws-{id}"))
    };
    // (Escape then a key at once reads as Alt-key: the pane closed first)
    let close = || {
        t.keys(&["Escape"]);
        t.expect_gone("Name:            namzu-ws-");
        t.keys(&["Escape"]);
        t.expect("41 workspaces");
    };
    // each line waited for: a screen read while the pane is drawn may hold half of it
    open("hotel");
    t.expect("│  Restarts:      7 (");
    t.expect("│  Last exit:     container agent: exit code 1 (Error), finished ");
    close();
    open("quebec");
    t.expect("│Diagnosis:       stuck-deleting (DeletionHeld): the Sandbox has been deleting for 50d");
    t.expect("│Finalizers:      namzu.ai/demo-hold");
    t.expect("│Deletion:        ");
    close();
    open("papa");
    t.expect("│Diagnosis:       expired (RetainedByPolicy): past its shutdownTime");
    t.expect("shutdownPolicy Retain");
    t.keys(&["Escape"]);
    t.expect_gone("Name:            namzu-ws-papa");
    t.keys(&["q"]);
    t.expect("NAMZU-EXITED");
}

/// agent-sandbox v1.0.3's `Suspended=Unknown/PodStateUnknown` (the demo's nomad, whose node
/// stopped reporting) is a diagnosis with a next step, not `-`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pod_state_the_controller_cannot_read_is_diagnosed() {
    let t = start_demo().await;
    let found = items(&namzu(&t, &["list", "-n", "agents", "-o", "json"]).await);
    let w = one(&found, "nomad");
    assert_eq!(w["diagnosis"]["kind"], "pod-state-unknown", "{w:#}");
    assert_eq!(w["diagnosis"]["reason"], "PodStateUnknown");
    assert!(
        w["diagnosis"]["message"]
            .as_str()
            .unwrap()
            .starts_with("Suspended=Unknown (PodStateUnknown): the pod's node worker-3 stopped reporting"),
        "{w:#}"
    );
    assert_eq!(w["nextStep"]["command"], "kubectl namzu history nomad -n agents");
    let o = namzu(&t, &["list", "-n", "agents", "--diagnosis", "pod-state-unknown"]).await;
    assert!(
        out(&o).contains("nomad") && out(&o).contains("pod-state-unknown"),
        "{}",
        out(&o)
    );
}

/// agent-sandbox v1.0.3's launch type and warm-pool membership, as its labels say, in
/// `list -o json` and `inspect` (`-` when the controller wrote none: a workspace created directly).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_launch_type_and_pool_membership_are_shown() {
    let t = start_demo().await;
    t.sim
        .modify(&namzu_sim::resources::SANDBOXES, "agents", "namzu-ws-alpha", |s| {
            s["metadata"]["labels"]["agents.x-k8s.io/launch-type"] = json!("warm");
        });
    let found = items(&namzu(&t, &["list", "-n", "agents", "-o", "json"]).await);
    assert_eq!(one(&found, "alpha")["launchType"], "warm");
    assert_eq!(one(&found, "alpha")["warmPoolMember"], false);
    assert_eq!(one(&found, "bravo")["launchType"], Value::Null);
    let o = namzu(&t, &["-n", "agents", "inspect", "alpha"]).await;
    assert!(out(&o).contains("Launch type:     warm"), "{}", out(&o));
    // the template's own policies, defaults said as such
    assert!(
        out(&o).contains("networkPolicyManagement Managed (default), envVarsInjectionPolicy Disallowed (default), volumeClaimTemplatesPolicy Disallowed (default)"),
        "{}",
        out(&o)
    );
}
