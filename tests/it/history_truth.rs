//! "Every verdict true": `history` says what was true at each time — the mode and holder epoch a
//! mode change set, not today's; a take-over as its own entry; who set the mode, by managedFields,
//! in `history` and `inspect` — and its start-up waterfall times the leg under way, counting from
//! what started the pod. The real binary against the demo.

use crate::support::*;
use kube::api::{Patch, PatchParams};
use namzu_domain::timeline::MAX_EVENTS_PER_OBJECT;
use namzu_engine::cluster::audit::AuditLog;
use namzu_sim::resources::{EVENTS, PODS, SANDBOXES};
use serde_json::{Value, json};
use std::time::Duration;

fn code(o: &std::process::Output) -> i32 {
    o.status.code().unwrap_or(-1)
}

/// The binary on the sim's clock with an audit log of its own: another machine, which wrote
/// nothing here.
async fn elsewhere(t: &TestSim, args: &[&str]) -> std::process::Output {
    let mut full = vec!["--kubeconfig".to_string(), t.sim.kubeconfig().display().to_string()];
    full.extend(args.iter().map(|s| s.to_string()));
    let log = t.dir.path().join("elsewhere.jsonl").display().to_string();
    namzu_env(full, vec![now_env(t), ("KUBECTL_NAMZU_AUDIT_LOG".into(), log)]).await
}

fn lines_with<'a>(text: &'a str, needle: &str) -> Vec<&'a str> {
    text.lines().filter(|l| l.contains(needle)).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_mode_change_says_what_was_true_then_and_who_set_the_mode() {
    let t = start_demo().await;
    // as the demo is: the library's stamp, its manager named
    let o = elsewhere(&t, &["history", "alpha"]).await;
    assert_eq!(code(&o), 0, "{}", err(&o));
    assert!(
        out(&o).contains("mode changed to Running (holder epoch 7; stamped by namzu-sandbox (@namzu/sandbox))"),
        "{}",
        out(&o)
    );

    // suspended here (epoch 7), set Running by kubectl an hour later, taken over (epoch 8, the
    // mode left Running) an hour after that
    let o = run_audited(&t, &["suspend", "alpha", "--yes"]).await;
    assert_eq!(code(&o), 0, "{}", err(&o));
    let suspended_at = t.sim.now();
    t.sim.advance(chrono::Duration::hours(1));
    let api = sandboxes(&t.client().await, "agents");
    let flip: json_patch::Patch = serde_json::from_value(json!([
        {"op": "test", "path": "/spec/operatingMode", "value": "Suspended"},
        {"op": "replace", "path": "/spec/operatingMode", "value": "Running"}]))
    .unwrap();
    let params = PatchParams {
        field_manager: Some("kubectl-patch".into()),
        ..Default::default()
    };
    api.patch("namzu-ws-alpha", &params, &Patch::Json::<()>(flip))
        .await
        .expect("kubectl's flip");
    t.sim.advance(chrono::Duration::hours(1));
    let o = run_audited(&t, &["resume", "alpha", "--take-over", "--yes"]).await;
    assert_eq!(code(&o), 0, "{}", err(&o));
    let stored = t
        .sim
        .get(&namzu_sim::resources::SANDBOXES, "agents", "namzu-ws-alpha")
        .unwrap();
    assert_eq!(stored["metadata"]["annotations"]["sandbox.namzu.ai/holder-epoch"], "8");
    assert_eq!(stored["spec"]["operatingMode"], "Running");

    // this machine: its own writes say what they set
    let o = run_audited(&t, &["history", "alpha"]).await;
    assert_eq!(code(&o), 0, "{}", err(&o));
    let text = out(&o);
    let stamp = lines_with(&text, "annotation");
    assert_eq!(stamp.len(), 1, "{text}");
    assert!(
        stamp[0].contains("mode changed to Suspended (holder epoch 7; stamped by this machine's write)"),
        "today's mode and epoch are not the stamp's: {text}"
    );
    assert!(
        stamp[0].starts_with(&suspended_at.format("%Y-%m-%d %H:%M:%S").to_string()),
        "{text}"
    );
    assert!(!text.contains("mode changed to Running"), "{text}");
    let flip = lines_with(&text, "managed");
    assert_eq!(flip.len(), 1, "{text}");
    assert!(
        flip[0].contains("mode Running, set by kubectl-patch (kubectl) without a mode-changed-at stamp"),
        "{text}"
    );
    let take_over: Vec<&str> = lines_with(&text, "a take-over")
        .into_iter()
        .filter(|l| l.contains("applied"))
        .collect();
    assert_eq!(take_over.len(), 1, "{text}");
    assert!(
        take_over[0].contains("audit") && take_over[0].contains("holder epoch from 7 to 8, the mode left as it was"),
        "{text}"
    );
    // the pod kubectl's flip made: counted from its creation, not from the suspend's stamp
    assert!(
        text.contains("Start-up of the current pod, from pod created at"),
        "{text}"
    );

    // another machine: what it cannot know is unknown, and the take-over is its own entry
    let o = elsewhere(&t, &["history", "alpha", "-o", "json"]).await;
    assert_eq!(code(&o), 0, "{}", err(&o));
    let h: Value = serde_json::from_str(&out(&o)).expect("json");
    let texts: Vec<(String, String)> = h["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["source"] == "annotation" || e["source"] == "managed")
        .map(|e| {
            (
                e["source"].as_str().unwrap().to_string(),
                e["text"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(texts.len(), 3, "{texts:#?}");
    assert!(
        texts[0]
            .1
            .starts_with("mode changed to unknown (holder epoch unknown; stamped by kubectl-namzu (this tool)"),
        "{texts:#?}"
    );
    assert!(texts[1].1.contains("set by kubectl-patch (kubectl)"), "{texts:#?}");
    assert_eq!(
        texts[2].1, "holder epoch raised to 8 by kubectl-namzu (this tool) with no mode change (a take-over)",
        "{texts:#?}"
    );

    // inspect names who set the mode
    let o = elsewhere(&t, &["inspect", "alpha"]).await;
    assert_eq!(code(&o), 0, "{}", err(&o));
    let set_by = lines_with(&out(&o), "Mode set by:").join("\n");
    assert!(
        set_by.contains("kubectl-patch (kubectl)") && set_by.contains("a change the annotations do not record"),
        "{}",
        out(&o)
    );
    let o = elsewhere(&t, &["inspect", "alpha", "-o", "json"]).await;
    let v: Value = serde_json::from_str(&out(&o)).expect("json");
    assert_eq!(v["modeSetBy"]["manager"], "kubectl-patch", "{v:#}");
    let o = elsewhere(&t, &["inspect", "bravo"]).await;
    assert!(
        out(&o).contains("Mode set by:     namzu-sandbox (@namzu/sandbox)"),
        "{}",
        out(&o)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_waterfall_times_the_open_leg_from_what_started_the_pod() {
    let t = start_demo().await;
    t.sim.advance(chrono::Duration::minutes(1));
    // golf's image pull has failed since its resume 21 minutes ago
    let o = elsewhere(&t, &["history", "golf"]).await;
    assert_eq!(code(&o), 0, "{}", err(&o));
    let text = out(&o);
    let pulling = lines_with(&text, "pulling image").join("\n");
    assert!(
        pulling.contains("20m and counting") && pulling.contains("← slowest"),
        "{text}"
    );
    assert!(lines_with(&text, "  total").join("").contains("and counting"), "{text}");
    assert!(text.contains("from resumed at"), "{text}");
    assert!(text.contains("not yet: image pulled, started, ready"), "{text}");
    let o = elsewhere(&t, &["history", "golf", "-o", "json"]).await;
    let h: Value = serde_json::from_str(&out(&o)).expect("json");
    assert_eq!(h["startup"]["open"]["doing"], "pulling image", "{h:#}");
    assert!(h["startup"]["open"]["seconds"].as_i64().unwrap() >= 20 * 60, "{h:#}");
    assert_eq!(h["startup"]["slowest"], "image pulled", "{h:#}");

    // its pod made again 47 minutes after the resume: the waterfall counts from that pod
    t.sim.advance(chrono::Duration::minutes(47));
    t.sim.delete(&PODS, "agents", "namzu-ws-golf");
    let o = elsewhere(&t, &["history", "golf", "-o", "json"]).await;
    let h: Value = serde_json::from_str(&out(&o)).expect("json");
    assert_eq!(h["startup"]["from"], "pod created", "{h:#}");
    let legs = h["startup"]["legs"].as_array().unwrap();
    assert!(
        legs.iter().all(|l| l["seconds"].as_i64().unwrap() < 60),
        "no leg counts from the old stamp: {h:#}"
    );

    // zephyr started slowly and is Ready: every leg timed, the pull the slowest, nothing open
    let o = elsewhere(&t, &["-n", "research", "history", "zephyr"]).await;
    assert_eq!(code(&o), 0, "{}", err(&o));
    let text = out(&o);
    assert!(
        lines_with(&text, "image pulled").join("").contains("← slowest"),
        "{text}"
    );
    assert!(!text.contains("and counting") && !text.contains("not yet"), "{text}");
    assert!(lines_with(&text, "  total").join("").contains("14m"), "{text}");
}

/// An Event of `kind` `name` (uid `uid`, none if empty) at `at`, with this reason.
fn event(n: usize, kind: &str, name: &str, uid: &str, at: &str, reason: &str) -> Value {
    let mut regarding = json!({"apiVersion": "v1", "kind": kind, "name": name, "namespace": "agents"});
    if !uid.is_empty() {
        regarding["uid"] = json!(uid);
    }
    json!({"apiVersion": "v1", "kind": "Event",
        "metadata": {"name": format!("test-event-{n}"), "namespace": "agents", "creationTimestamp": at},
        "involvedObject": regarding, "reason": reason, "message": reason, "type": "Normal", "count": 1,
        "firstTimestamp": at, "lastTimestamp": at, "source": {"component": "test"}})
}

/// The uid and creation time of Sandbox `agents/name`.
fn uid_and_creation(t: &TestSim, name: &str) -> (String, chrono::DateTime<chrono::Utc>) {
    let sandbox = t.sim.get(&SANDBOXES, "agents", name).unwrap();
    let uid = sandbox["metadata"]["uid"].as_str().unwrap().to_string();
    let created = sandbox["metadata"]["creationTimestamp"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    (uid, created)
}

fn stamp(t: chrono::DateTime<chrono::Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn history_shows_its_objects_events_by_kind_name_and_uid_only() {
    let t = start().await;
    let (uid, created) = uid_and_creation(&t, "namzu-ws-awake");
    let (before, after) = (
        stamp(created - chrono::Duration::hours(1)),
        stamp(created + chrono::Duration::hours(1)),
    );
    let name = "namzu-ws-awake";
    for e in [
        event(1, "ConfigMap", name, "another-uid", &after, "ForeignKind"),
        event(2, "Sandbox", name, "a-predecessors-uid", &after, "Predecessor"),
        event(3, "Sandbox", name, "", &before, "OlderWithoutUid"),
        event(4, "Sandbox", name, "", &after, "NewerWithoutUid"),
        event(5, "Sandbox", name, &uid, &after, "OwnEvent"),
    ] {
        t.sim.create(&EVENTS, e).unwrap();
    }
    let o = run_audited(&t, &["-n", "agents", "history", "awake", "-o", "json"]).await;
    assert_eq!(code(&o), 0, "{}", err(&o));
    let h: Value = serde_json::from_str(&out(&o)).unwrap();
    let reasons: Vec<&str> = h["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["source"] == "event")
        .filter_map(|e| e["reason"].as_str())
        .collect();
    for shown in ["OwnEvent", "NewerWithoutUid"] {
        assert_eq!(
            reasons.iter().filter(|r| **r == shown).count(),
            1,
            "{shown}: {reasons:?}"
        );
    }
    for hidden in ["ForeignKind", "Predecessor", "OlderWithoutUid"] {
        assert!(!reasons.contains(&hidden), "{hidden}: {reasons:?}");
    }
    assert_eq!(h["eventsNotShown"], 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn history_keeps_each_objects_newest_events_and_says_how_many_more() {
    let t = start().await;
    let (uid, created) = uid_and_creation(&t, "namzu-ws-awake");
    let own = |e: &Value| e["involvedObject"]["kind"] == "Sandbox" && e["involvedObject"]["uid"] == uid.as_str();
    let before = t.sim.list(&EVENTS, Some("agents")).iter().filter(|e| own(e)).count();
    let flood = MAX_EVENTS_PER_OBJECT + 250;
    for i in 0..flood {
        let at = stamp(created + chrono::Duration::minutes(10) + chrono::Duration::seconds(i as i64));
        t.sim
            .create(
                &EVENTS,
                event(i, "Sandbox", "namzu-ws-awake", &uid, &at, &format!("Flood{i}")),
            )
            .unwrap();
    }
    let total = before + flood;
    let o = run_audited(&t, &["-n", "agents", "history", "awake", "-o", "json"]).await;
    assert_eq!(code(&o), 0, "{}", err(&o));
    let h: Value = serde_json::from_str(&out(&o)).unwrap();
    let shown: Vec<&str> = h["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["source"] == "event" && e["object"] == "Sandbox namzu-ws-awake")
        .filter_map(|e| e["reason"].as_str())
        .collect();
    assert_eq!(shown.len(), MAX_EVENTS_PER_OBJECT);
    let newest = format!("Flood{}", flood - 1);
    assert!(shown.contains(&newest.as_str()));
    assert!(!shown.contains(&"Flood0"), "the oldest are the ones left out");
    assert_eq!(
        h["eventsNotShown"],
        json!(total - MAX_EVENTS_PER_OBJECT),
        "{}",
        h["warnings"]
    );
    // the table says so in a warning line
    let o = run_audited(&t, &["-n", "agents", "history", "awake"]).await;
    assert_eq!(code(&o), 0, "{}", err(&o));
    let line = format!(
        "warning: {} older events not shown (the newest {MAX_EVENTS_PER_OBJECT} of each object are)",
        total - MAX_EVENTS_PER_OBJECT
    );
    assert!(out(&o).contains(&line), "{}", out(&o));

    // the TUI's history pane (`h`), through its I/O task over the real client: the same line
    let conn = connect(&t, t.sim.kubeconfig(), None, Duration::from_secs(30)).await;
    let audit = AuditLog {
        path: Some(audit_path(&t)),
        ..Default::default()
    };
    let key = namzu_domain::naming::WorkspaceKey::new(Some(&conn.context), "agents", "awake");
    let io = tui_io(vec![(conn, policy(false, audit))], Default::default());
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    io.perform(namzu_tui::action::Effect::History(key), tx).await;
    let pane = match rx.recv().await {
        Some(namzu_tui::action::Action::History { result, .. }) => {
            namzu_engine::present::history::render(&result.unwrap(), None).join("\n")
        }
        other => panic!("{other:?}"),
    };
    assert!(pane.contains(&line), "{pane}");
}
