//! `logs` of several workspaces at once, as stern and `kubectl logs -l` read many pods: the ids
//! given or a selection's matches, each line after its workspace, a workspace without a log said
//! on stderr while the others go on, and `-f` following every stream across restarts.

use crate::support::*;
use std::process::Stdio;
use std::time::Duration;

fn lines_of(o: &std::process::Output) -> Vec<String> {
    out(o).lines().map(str::to_string).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn several_workspaces_each_line_after_its_own() {
    let t = start_demo().await;
    let o = namzu(&t, &["-n", "agents", "logs", "alpha", "bravo"]).await;
    assert!(o.status.success(), "{}", err(&o));
    let lines = lines_of(&o);
    assert!(
        lines.iter().all(|l| l.starts_with("alpha ") || l.starts_with("bravo ")),
        "every line after its workspace:\n{}",
        out(&o)
    );
    for id in ["alpha", "bravo"] {
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with(&format!("{id} level=info msg=\"agent starting\""))),
            "{id}'s start-up is read:\n{}",
            out(&o)
        );
    }
    // one workspace alone reads as kubectl logs does: no prefix
    let one = namzu(&t, &["-n", "agents", "logs", "alpha"]).await;
    assert!(out(&one).starts_with("level=info"), "{}", out(&one));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_selection_reads_every_match() {
    let t = start_demo().await;
    let o = namzu(&t, &["-n", "agents", "logs", "--diagnosis", "crash-loop"]).await;
    assert!(o.status.success(), "{}", err(&o));
    // a selection's match without a log (a Suspended one) is said, and fails nothing
    let problems = namzu(&t, &["-n", "agents", "logs", "--problems", "--tail", "1"]).await;
    assert!(problems.status.success(), "{}", err(&problems));
    assert!(err(&problems).contains("--- "), "{}", err(&problems));
    let lines = lines_of(&o);
    assert!(
        !lines.is_empty() && lines.iter().all(|l| l.starts_with("hotel ")),
        "{}",
        out(&o)
    );
    assert!(out(&o).contains("startup failed"), "{}", out(&o));
    // ids and a selection together are a usage error; neither is too
    let both = namzu(&t, &["-n", "agents", "logs", "alpha", "--problems"]).await;
    assert_eq!(both.status.code(), Some(2), "{}", err(&both));
    let neither = namzu(&t, &["-n", "agents", "logs"]).await;
    assert_eq!(neither.status.code(), Some(2), "{}", err(&neither));
    // a selection over the cap is refused before any workspace's pod or log is read (the
    // inventory's own reads by name are the selection's)
    t.sim.clear_requests();
    let capped = namzu(&t, &["-n", "agents", "logs", "--problems", "--max-log-requests", "1"]).await;
    assert_eq!(capped.status.code(), Some(2), "{}", err(&capped));
    assert!(
        err(&capped).contains("more than --max-log-requests 1"),
        "{}",
        err(&capped)
    );
    assert!(
        !t.sim
            .requests()
            .iter()
            .any(|r| r.path.contains("/sandboxes/namzu-ws-") || r.path.ends_with("/log")),
        "no workspace read for its log: {:?}",
        t.sim.requests().iter().map(|r| &r.path).collect::<Vec<_>>()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workspace_without_a_log_says_why_and_the_others_go_on() {
    let t = start_demo().await;
    // delta is Suspended: no pod, so no log
    let o = namzu(&t, &["-n", "agents", "logs", "alpha", "delta"]).await;
    assert_eq!(o.status.code(), Some(7), "unavailable: {}", err(&o));
    assert!(err(&o).contains("--- delta: "), "{}", err(&o));
    assert!(lines_of(&o).iter().any(|l| l.starts_with("alpha ")), "{}", out(&o));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follow_of_several_crosses_a_restart_and_ctrl_c_ends_it() {
    let t = start_demo().await;
    let mut child = t
        .bin()
        .arg("--kubeconfig")
        .arg(t.sim.kubeconfig())
        .args(["-n", "agents", "logs", "alpha", "bravo", "-f"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let lines = stdout_lines(&mut child);
    // the next line holding `text` (a followed pod also logs heartbeats), within 20 s
    let until = |text: &str| loop {
        let line = lines
            .recv_timeout(Duration::from_secs(20))
            .unwrap_or_else(|_| panic!("the follow never printed {text:?}"));
        if line.contains(text) {
            return line;
        }
    };
    // both streams are open once each has printed its start-up's last line
    let mut ready = std::collections::BTreeSet::new();
    while ready.len() < 2 {
        let line = until("msg=\"ready\"");
        ready.insert(line.split(' ').next().unwrap_or_default().to_string());
    }
    assert_eq!(ready.into_iter().collect::<Vec<_>>(), ["alpha", "bravo"]);
    t.sim.append_log("agents", "namzu-ws-bravo", "agent", "bravo works");
    assert_eq!(until("bravo works"), "bravo bravo works");
    t.sim.append_log("agents", "namzu-ws-alpha", "agent", "task 1 done");
    assert_eq!(until("task 1 done"), "alpha task 1 done");
    t.sim.restart_container("agents", "namzu-ws-alpha", "agent");
    t.sim.append_log("agents", "namzu-ws-alpha", "agent", "booting again");
    assert_eq!(until("booting again"), "alpha booting again");
    let status = interrupt(child).await;
    assert_eq!(status.code(), Some(0), "Ctrl-C ends a follow with exit 0");
}
