//! Bounded reads: a paged LIST whose continue tokens cycle or never end stops in one line; the
//! audit log opened once per append without following a symlink, a torn last line not swallowing
//! the next entry, read from its end by `audit --tail` and `history`; a history's Events those of
//! its objects (kind, name and uid) only, the newest of each kept and the rest counted.

use crate::support::*;
use namzu_domain::timeline::{MAX_AUDIT_ENTRIES, MAX_EVENTS_PER_OBJECT};
use namzu_engine::cluster::audit::AuditLog;
use namzu_engine::cluster::resources::{self, PODS};
use namzu_sim::faults::{Fault, FaultAction};
use namzu_sim::resources::{EVENTS, SANDBOXES};
use serde_json::{Value, json};
use std::io::Write;
use std::time::Duration;

fn code(o: &std::process::Output) -> i32 {
    o.status.code().unwrap_or(-1)
}

/// The first `times` LISTs of `path` hand out these continue tokens in turn (none: a new one each
/// time); after them a token is the sim's own again (so a client without bounds ends too, on a 400
/// for a token the sim did not make, rather than hanging the test).
fn continue_tokens(t: &TestSim, path: &str, tokens: &[&str], times: u32) {
    t.sim.add_fault(
        Fault::new(
            Some("GET"),
            path,
            FaultAction::ContinueTokens(tokens.iter().map(|s| s.to_string()).collect()),
        )
        .times(times),
    );
}

/// The LIST requests of `path` that carried a continue token.
fn continued(t: &TestSim, path: &str) -> usize {
    t.sim
        .requests()
        .iter()
        .filter(|r| r.method == "GET" && r.path.ends_with(path) && r.query.contains("continue="))
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_continue_token_that_cycles_ends_history_and_list_in_one_line() {
    let t = start().await;
    // history's events: A, B, A, … — the third page hands out A again
    continue_tokens(&t, "/api/v1/namespaces/agents/events", &["A", "B"], 50);
    let o = namzu(&t, &["-n", "agents", "history", "awake"]).await;
    assert_eq!(code(&o), 1, "{}", err(&o));
    assert_eq!(err(&o).trim_end().lines().count(), 1, "{}", err(&o));
    assert!(
        err(&o).contains("continue token it had handed out before in this list"),
        "{}",
        err(&o)
    );
    assert_eq!(continued(&t, "/events"), 2, "pages after the first: B's and A's again");
    t.sim.clear_faults();
    t.sim.clear_requests();

    // `list -A`: the cluster-wide Sandbox LIST cycles
    continue_tokens(&t, "/sandboxes", &["A", "B", "C"], 50);
    let o = namzu(&t, &["list", "-A"]).await;
    assert_eq!(code(&o), 1, "{}", err(&o));
    assert!(
        err(&o).contains("continue token it had handed out before in this list"),
        "{}",
        err(&o)
    );
    assert!(!err(&o).contains("panicked"), "{}", err(&o));
    assert_eq!(continued(&t, "/sandboxes"), 3, "{:?}", t.sim.requests().len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_list_that_never_ends_stops_at_the_page_bound_and_at_the_time_bound() {
    let t = start().await;
    let mut conn = connect(&t, t.sim.kubeconfig(), None, Duration::from_secs(30)).await;
    assert_eq!(
        conn.list_bounds.max_pages,
        namzu_engine::cluster::connect::MAX_LIST_PAGES
    );
    assert_eq!(conn.list_bounds.max_pages, 10_000);
    assert_eq!(conn.list_bounds.max_time, Duration::from_secs(300));
    // a new token every page: only the page bound ends it
    continue_tokens(&t, "/pods", &[], 1000);
    conn.list_bounds.max_pages = 40;
    let e = resources::list(&conn, &PODS, Some("agents"), None)
        .await
        .expect_err("a list without end is an error");
    assert!(e.to_string().contains("did not end after 40 pages"), "{e}");
    let pages = t.sim.requests().iter().filter(|r| r.path.ends_with("/pods")).count();
    assert_eq!(pages, 40);

    // the time bound: all pages together (this list could never end otherwise)
    t.sim.clear_faults();
    continue_tokens(&t, "/pods", &[], 100_000);
    conn.list_bounds.max_pages = usize::MAX;
    conn.list_bounds.max_time = Duration::from_millis(300);
    let e = resources::list(&conn, &PODS, Some("agents"), None)
        .await
        .expect_err("a list without end is an error");
    assert!(e.to_string().contains("did not end within 300ms"), "{e}");
}

/// The audit log of `t`'s runs.
fn audit_path(t: &TestSim) -> std::path::PathBuf {
    t.dir.path().join("audit.jsonl")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_torn_last_audit_line_does_not_swallow_the_next_entry() {
    let t = start().await;
    let log = audit_path(&t);
    // an entry, then a line torn by a full disk: no newline at its end
    let first = json!({"verb": "suspend", "outcome": "applied", "time": "2026-09-10T12:00:00.000Z",
        "workspace": "asleep", "namespace": "agents"});
    std::fs::write(&log, format!("{first}\n{{\"verb\":\"resume\",\"outc")).unwrap();
    let o = run_audited(&t, &["-n", "agents", "suspend", "awake", "--yes"]).await;
    assert_eq!(code(&o), 0, "{}", err(&o));
    let read = AuditLog {
        path: Some(log.clone()),
        ..Default::default()
    }
    .read()
    .unwrap();
    assert_eq!(read.skipped, 1, "only the torn line is not an entry");
    let awake: Vec<&str> = read
        .entries
        .iter()
        .filter(|e| e["workspace"] == "awake")
        .map(|e| e["outcome"].as_str().unwrap())
        .collect();
    assert_eq!(awake, ["intent", "applied"], "{:#?}", read.entries);
    assert!(std::fs::read(&log).unwrap().ends_with(b"\n"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_audit_log_that_is_a_symlink_is_refused_and_nothing_is_sent() {
    let t = start().await;
    let target = t.dir.path().join("someone-elses.log");
    std::fs::write(&target, "precious\n").unwrap();
    let link = t.dir.path().join("link.jsonl");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let mut full = vec!["--kubeconfig".to_string(), t.sim.kubeconfig().display().to_string()];
    full.extend(["-n", "agents", "suspend", "awake", "--yes"].map(String::from));
    let o = namzu_env(
        full,
        vec![
            now_env(&t),
            ("KUBECTL_NAMZU_AUDIT_LOG".into(), link.display().to_string()),
        ],
    )
    .await;
    assert_eq!(code(&o), 1, "{}", err(&o));
    assert_eq!(err(&o).trim_end().lines().count(), 1, "{}", err(&o));
    assert!(err(&o).contains("a symlink is not followed"), "{}", err(&o));
    assert!(err(&o).contains("nothing sent"), "{}", err(&o));
    let writes: Vec<String> = t
        .sim
        .requests()
        .iter()
        .filter(|r| !matches!(r.method.as_str(), "GET" | "HEAD"))
        .map(|r| format!("{} {}", r.method, r.path))
        .collect();
    assert!(writes.is_empty(), "{writes:?}");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "precious\n");
}

/// An audit entry of workspace `id` in namespace `agents`, as the tool writes one.
fn entry(id: &str, n: usize, server: &str) -> Value {
    json!({"verb": "suspend", "outcome": "applied", "time": format!("2026-09-{:02}T12:00:00.000Z", 1 + n % 28),
        "write": format!("w{n}"), "context": "elsewhere", "server": server, "namespace": "agents",
        "workspace": id, "epochCarried": "1", "epochStored": "1",
        "request": {"method": "PATCH", "path": format!("/apis/agents.x-k8s.io/v1beta1/namespaces/agents/sandboxes/namzu-ws-{id}")},
        "status": 200, "note": "x".repeat(200)})
}

/// The most data (heap and private writable mappings) `audit --tail` may use: half the log.
const DATA_LIMIT: u64 = 32 << 20;

/// Run the binary on `t`'s kubeconfig, clock and audit log with its data segment limited to
/// `limit` bytes (RLIMIT_DATA): a read that holds the log whole cannot succeed.
async fn run_limited(t: &TestSim, args: &[&str], limit: u64) -> std::process::Output {
    use std::os::unix::process::CommandExt;
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_kubectl-namzu"));
    command
        .arg("--kubeconfig")
        .arg(t.sim.kubeconfig())
        .args(args)
        .env_remove("KUBECONFIG")
        .env_remove("KUBECTL_NAMZU_CONFIG")
        .env("NO_COLOR", "1")
        .env(namzu_clock::NOW_ENV, t.sim.now().to_rfc3339())
        .env("KUBECTL_NAMZU_AUDIT_LOG", audit_path(t))
        .stdin(std::process::Stdio::null());
    let rlimit = libc::rlimit {
        rlim_cur: limit,
        rlim_max: limit,
    };
    // SAFETY: only setrlimit (async-signal-safe) runs between fork and exec
    unsafe {
        command.pre_exec(move || {
            if libc::setrlimit(libc::RLIMIT_DATA, &rlimit) == 0 {
                Ok(())
            } else {
                Err(std::io::Error::last_os_error())
            }
        });
    }
    tokio::task::spawn_blocking(move || command.output().unwrap())
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn audit_tail_and_history_read_the_newest_entries_from_the_end_of_a_large_log() {
    let t = start().await;
    // one real write, for the server this connection's entries name
    let o = run_audited(&t, &["-n", "agents", "suspend", "awake", "--yes"]).await;
    assert_eq!(code(&o), 0, "{}", err(&o));
    let log = audit_path(&t);
    let real: Value = serde_json::from_str(std::fs::read_to_string(&log).unwrap().lines().last().unwrap()).unwrap();
    let server = real["server"].as_str().unwrap().to_string();
    // about 64 MB of other workspaces' writes, then 1,100 of awake's and 5 last ones
    let mut f = std::io::BufWriter::new(std::fs::OpenOptions::new().append(true).open(&log).unwrap());
    let mut n = 0;
    while f.get_ref().metadata().unwrap().len() < 64 << 20 {
        for _ in 0..1000 {
            writeln!(f, "{}", entry("other", n, &server)).unwrap();
            n += 1;
        }
        f.flush().unwrap();
    }
    let awake = MAX_AUDIT_ENTRIES + 100;
    for i in 0..awake {
        writeln!(f, "{}", entry("awake", n + i, &server)).unwrap();
    }
    for i in 0..5 {
        writeln!(f, "{}", entry(&format!("last{i}"), 0, &server)).unwrap();
    }
    drop(f);
    let size = std::fs::metadata(&log).unwrap().len();

    assert!(size > 2 * DATA_LIMIT, "{size}");
    // read whole, the log does not fit in the data the process may have; read from its end, it does
    let o = run_limited(&t, &["audit", "--tail", "5", "-o", "json"], DATA_LIMIT).await;
    assert_eq!(code(&o), 0, "{}", err(&o));
    let tail: Vec<Value> = serde_json::from_str(&out(&o)).unwrap();
    let names: Vec<&str> = tail.iter().map(|e| e["workspace"].as_str().unwrap()).collect();
    assert_eq!(names, ["last0", "last1", "last2", "last3", "last4"]);

    // history: the newest MAX_AUDIT_ENTRIES of awake's, and a line saying there were more
    let o = run_audited(&t, &["-n", "agents", "history", "awake", "-o", "json"]).await;
    assert_eq!(code(&o), 0, "{}", err(&o));
    let h: Value = serde_json::from_str(&out(&o)).unwrap();
    let audited = h["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["source"] == "audit")
        .count();
    assert_eq!(audited, MAX_AUDIT_ENTRIES);
    assert!(
        h["warnings"].as_array().unwrap().iter().any(|w| w
            .as_str()
            .unwrap()
            .contains("older audit entries of this workspace not shown")),
        "{}",
        h["warnings"]
    );
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

fn stamp(t: chrono::DateTime<chrono::Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn history_shows_its_objects_events_by_kind_name_and_uid_only() {
    let t = start().await;
    let sandbox = t.sim.get(&SANDBOXES, "agents", "namzu-ws-awake").unwrap();
    let uid = sandbox["metadata"]["uid"].as_str().unwrap().to_string();
    let created: chrono::DateTime<chrono::Utc> = sandbox["metadata"]["creationTimestamp"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
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
    let sandbox = t.sim.get(&SANDBOXES, "agents", "namzu-ws-awake").unwrap();
    let uid = sandbox["metadata"]["uid"].as_str().unwrap().to_string();
    let created: chrono::DateTime<chrono::Utc> = sandbox["metadata"]["creationTimestamp"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
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
