//! The audit log, through the real binary on the sim: write-ahead (the intent appended before the
//! send; a log that cannot take it sends nothing), private, opened without following a symlink or
//! a FIFO, a torn last line not swallowing the next entry, the rules file in force named in each
//! entry, and read from its end by `audit --tail` and `history`.

use crate::support::*;
use namzu_domain::timeline::MAX_AUDIT_ENTRIES;
use namzu_engine::cluster::audit::AuditLog;
use serde_json::{Value, json};
use std::io::Write;
use std::path::Path;
use std::process::Output;
use std::time::{Duration, Instant};

/// The binary with the file-size limit below the audit log's size: the log opens, no append can
/// land (as on a full disk).
async fn with_full_log(t: &TestSim, log: &Path, args: &str) -> Output {
    let script = format!(
        "trap '' XFSZ; ulimit -f 1; exec {} --kubeconfig {} --audit-log {} {args}",
        bin_line(&t.home(), &[now_env(t)]),
        t.sim.kubeconfig().display(),
        log.display()
    );
    tokio::task::spawn_blocking(move || std::process::Command::new("sh").args(["-c", &script]).output().unwrap())
        .await
        .unwrap()
}

/// Write-ahead: the intent is appended before the send, and a log that cannot take it sends
/// nothing; an intent with no outcome (a process killed mid-write) is shown as "outcome unknown"
/// with how to check.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_audit_log_is_write_ahead() {
    let t = start().await;
    let log = t.dir.path().join("full.jsonl");
    std::fs::write(&log, "x".repeat(1024)).unwrap();
    let o = with_full_log(&t, &log, "-n agents suspend awake").await;
    assert_eq!(o.status.code(), Some(1), "{}", err(&o));
    assert!(
        err(&o).contains("cannot append to the audit log") && err(&o).contains("nothing sent"),
        "{}",
        err(&o)
    );
    assert!(sent(&t).is_empty(), "nothing sent: {:?}", sent(&t));
    // a write that lands: its intent, then its outcome, tied by one id
    let o = run_audited(&t, &["-n", "agents", "suspend", "awake"]).await;
    assert!(o.status.success(), "{}", err(&o));
    let path = t.dir.path().join("audit.jsonl");
    let entries = audit_log_entries(&path);
    let outcomes: Vec<&str> = entries.iter().map(|e| e["outcome"].as_str().unwrap()).collect();
    assert_eq!(outcomes, ["intent", "applied"]);
    assert_eq!(entries[0]["write"], entries[1]["write"]);
    assert_eq!(entries[0]["request"], entries[1]["request"]);
    // a process killed between the two: the intent alone
    let mut torn = entries[0].clone();
    torn["write"] = "killed-1".into();
    torn["workspace"] = "asleep".into();
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str(&format!("{torn}\n"));
    std::fs::write(&path, text).unwrap();
    let o = run_audited(&t, &["audit"]).await;
    assert!(o.status.success(), "{}", err(&o));
    let table = out(&o);
    assert_eq!(table.lines().count(), 3, "the settled intent is not shown:\n{table}");
    assert!(table.lines().last().unwrap().contains("outcome unknown"), "{table}");
    assert!(
        err(&o).contains("no outcome recorded") && err(&o).contains("kubectl namzu inspect asleep -n agents"),
        "{}",
        err(&o)
    );
    let o = run_audited(&t, &["audit", "-o", "json"]).await;
    let json: Vec<Value> = serde_json::from_str(&out(&o)).unwrap();
    assert_eq!(json.len(), 2);
    assert_eq!(json[1]["outcomeUnknown"], true);
}

/// The audit path must be a regular file: a symlink (to /dev/full, or anywhere) and a FIFO are
/// refused at once and nothing is sent; an existing log others can read is made private.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_audit_path_refuses_symlinks_and_fifos_and_is_made_private() {
    use std::os::unix::fs::PermissionsExt;
    let t = start().await;
    let link = t.dir.path().join("link.jsonl");
    std::os::unix::fs::symlink(t.dir.path().join("elsewhere.jsonl"), &link).unwrap();
    let fifo = t.dir.path().join("fifo.jsonl");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    for bad in [&link, &fifo] {
        let started = Instant::now();
        let mut full = vec!["--kubeconfig".to_string(), t.sim.kubeconfig().display().to_string()];
        full.extend(["-n", "agents", "suspend", "awake", "--audit-log"].map(String::from));
        full.push(bad.display().to_string());
        let o = namzu_env(full, vec![]).await;
        assert_eq!(o.status.code(), Some(1), "{}", err(&o));
        assert!(err(&o).contains("not a regular file"), "{}", err(&o));
        assert!(started.elapsed() < Duration::from_secs(10), "a FIFO does not block");
    }
    assert!(
        !t.dir.path().join("elsewhere.jsonl").exists(),
        "the symlink was not followed"
    );
    assert!(sent(&t).is_empty());
    let log = t.dir.path().join("audit.jsonl");
    std::fs::write(&log, "").unwrap();
    std::fs::set_permissions(&log, std::fs::Permissions::from_mode(0o644)).unwrap();
    let o = run_audited(&t, &["-n", "agents", "suspend", "awake"]).await;
    assert!(o.status.success(), "{}", err(&o));
    assert_eq!(std::fs::metadata(&log).unwrap().permissions().mode() & 0o777, 0o600);
}

/// Issue 26: every write names the rules file in force in its audit entries (the intent and
/// the outcome); with no file, no `rules` key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_write_names_the_rules_file_in_force_in_its_audit_entries() {
    let t = start().await;
    let rules = t.dir.path().join("rules.yaml");
    std::fs::write(&rules, "contexts:\n- context: \"prod-*\"\n  readOnly: true\n").unwrap();
    let mut args = vec!["--kubeconfig".to_string(), t.sim.kubeconfig().display().to_string()];
    args.extend(["-n", "agents", "suspend", "awake"].map(String::from));
    let o = namzu_env(
        args,
        vec![
            audit_env(&t),
            now_env(&t),
            ("KUBECTL_NAMZU_CONFIG".into(), rules.display().to_string()),
        ],
    )
    .await;
    assert!(o.status.success(), "{}", err(&o));
    let entries = audit_entries(&t);
    assert!(entries.len() >= 2, "an intent and an outcome: {entries:?}");
    for e in &entries {
        assert_eq!(e["rules"], rules.display().to_string(), "{e}");
    }
    let o = run_audited(&t, &["-n", "agents", "resume", "awake"]).await;
    assert!(o.status.success(), "{}", err(&o));
    let later: Vec<Value> = audit_entries(&t).into_iter().skip(entries.len()).collect();
    assert!(!later.is_empty());
    assert!(later.iter().all(|e| e.get("rules").is_none()), "{later:?}");
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
    let mut command = t.bin();
    command
        .arg("--kubeconfig")
        .arg(t.sim.kubeconfig())
        .args(args)
        .env("KUBECTL_NAMZU_AUDIT_LOG", audit_path(t));
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
