//! Robustness of what reaches the user, through the real binary on the sim: `logs` without `-f`
//! bounded by `--request-timeout` on a body that never ends; piped `logs` passing a line over
//! 64 KiB whole (a terminal still cuts it); `-o json` and `-o yaml` escaping what YAML readers
//! and terminals refuse, on every path; bidirectional marks never reaching a terminal.

use crate::support::*;
use namzu_sim::faults::{Fault, FaultAction};
use namzu_sim::resources::{EVENTS, SANDBOXES, TEMPLATES};
use serde_json::{Value, json};
use std::process::{Command, Stdio};
use std::time::Duration;

fn code(o: &std::process::Output) -> i32 {
    o.status.code().unwrap_or(-1)
}

/// The binary's arguments against the sim (its kubeconfig, namespace `agents`).
fn args(t: &TestSim, rest: &[&str]) -> Vec<String> {
    let mut full = vec![
        "--kubeconfig".to_string(),
        t.sim.kubeconfig().display().to_string(),
        "-n".into(),
        "agents".into(),
    ];
    full.extend(rest.iter().map(|s| s.to_string()));
    full
}

/// Run the binary; a run still going after `limit` is killed and the test fails (a watchdog
/// for a read that would never end, not a race to win).
async fn bounded(t: &TestSim, rest: &[&str], limit: Duration) -> std::process::Output {
    let child = Command::new(env!("CARGO_BIN_EXE_kubectl-namzu"))
        .args(args(t, rest))
        .env_remove("KUBECONFIG")
        .env_remove("KUBECTL_NAMZU_CONFIG")
        .env("NO_COLOR", "1")
        .env(now_env(t).0, now_env(t).1)
        .env(audit_env(t).0, audit_env(t).1)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let pid = child.id();
    let waited = tokio::task::spawn_blocking(move || child.wait_with_output());
    match tokio::time::timeout(limit, waited).await {
        Ok(done) => done.expect("join").expect("output"),
        Err(_) => {
            let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
            panic!("kubectl-namzu {rest:?} still running after {limit:?}");
        }
    }
}

/// The binary with its stdout on a terminal (a pty from `script`): what the terminal is sent.
fn on_a_terminal(t: &TestSim, rest: &[&str]) -> Option<String> {
    if tool_missing("script", "a terminal's logs") {
        return None;
    }
    let quoted: Vec<String> = std::iter::once(env!("CARGO_BIN_EXE_kubectl-namzu").to_string())
        .chain(args(t, rest))
        .map(|a| format!("'{a}'"))
        .collect();
    let o = Command::new("script")
        .args(["-q", "-e", "-c", &quoted.join(" "), "/dev/null"])
        .env_remove("KUBECONFIG")
        .env_remove("KUBECTL_NAMZU_CONFIG")
        .env("NO_COLOR", "1")
        .env(now_env(t).0, now_env(t).1)
        .stdin(Stdio::null())
        .output()
        .expect("script runs");
    assert!(o.status.success(), "{}", err(&o));
    Some(out(&o).replace("\r\n", "\n"))
}

/// L4: `logs` without `-f` is one request and is bounded as one: a body that never ends stops
/// at `--request-timeout`, after the lines that came, with one line and exit 1.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn logs_without_follow_stop_at_the_request_timeout_on_a_body_that_never_ends() {
    let t = start().await;
    t.sim.add_fault(Fault::new(
        Some("GET"),
        "/pods/namzu-ws-awake/log",
        FaultAction::Endless {
            head: "first line\nsecond line\n".into(),
            drip: "x".into(),
        },
    ));
    let o = bounded(
        &t,
        &["logs", "awake", "--request-timeout", "1s"],
        Duration::from_secs(60),
    )
    .await;
    assert_eq!(code(&o), 1, "stdout: {}\nstderr: {}", out(&o), err(&o));
    assert!(out(&o).starts_with("first line\nsecond line\n"), "{}", out(&o));
    let stderr = err(&o);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("timed out after 1s") && stderr.contains("pods/log namzu-ws-awake"),
        "{stderr}"
    );
    // the one request, not retried
    let reads = t
        .sim
        .requests()
        .into_iter()
        .filter(|r| r.path.ends_with("/log"))
        .count();
    assert_eq!(reads, 1);
}

/// A line of `n` bytes with multi-byte characters across every 64 KiB boundary.
fn long_line(n: usize) -> String {
    let mut s = String::from("start ");
    while s.len() < n {
        s.push_str("€ab");
    }
    s.push_str(" end");
    s
}

/// L6: into a pipe a line over 64 KiB passes whole, as the container wrote it (as the README
/// says piped lines do), with `--timestamps` too; the lines around it are untouched.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn piped_logs_pass_a_line_over_64_kib_whole() {
    let t = start().await;
    let long = long_line(200 * 1024);
    for line in ["before", &long, "after"] {
        t.sim.append_log("agents", "namzu-ws-awake", "agent", line);
    }
    let o = namzu(&t, &["-n", "agents", "logs", "awake"]).await;
    assert_eq!(code(&o), 0, "{}", err(&o));
    let text = out(&o);
    assert!(!text.contains("line cut"), "not cut");
    assert!(
        text.ends_with(&format!("before\n{long}\nafter\n")),
        "{} bytes",
        text.len()
    );
    let o = namzu(&t, &["-n", "agents", "logs", "awake", "--timestamps", "--tail", "2"]).await;
    let text = out(&o);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{} bytes", text.len());
    assert_eq!(lines[0].split_once(' ').map(|(_, l)| l), Some(long.as_str()));
    assert!(lines[1].ends_with(" after"));
}

/// L6: a piped follow passes a long line whole too: its first part carries the time the follow
/// asks for (stripped), its other parts none; the line after it is a line of its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_piped_follow_passes_a_line_over_64_kib_whole() {
    use std::io::BufRead;
    let t = start().await;
    t.sim.append_log("agents", "namzu-ws-awake", "agent", "before");
    let mut child = Command::new(env!("CARGO_BIN_EXE_kubectl-namzu"))
        .args(args(&t, &["logs", "awake", "-f"]))
        .env_remove("KUBECONFIG")
        .env(now_env(&t).0, now_env(&t).1)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, lines) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let next = || lines.recv_timeout(Duration::from_secs(20)).expect("a line in time");
    // (the container's own first lines come before)
    while next() != "before" {}
    let long = long_line(150 * 1024);
    t.sim.append_log("agents", "namzu-ws-awake", "agent", &long);
    t.sim.append_log("agents", "namzu-ws-awake", "agent", "after");
    let got = next();
    assert!(
        got == long,
        "{} bytes, starting {:?}",
        got.len(),
        &got[..40.min(got.len())]
    );
    assert_eq!(next(), "after");
    let status = interrupt(child).await;
    assert_eq!(status.code(), Some(0));
}

/// L6: on a terminal the same line is still cut at 64 KiB, and says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn logs_on_a_terminal_still_cut_a_line_over_64_kib() {
    let t = start().await;
    let long = long_line(100 * 1024);
    t.sim.append_log("agents", "namzu-ws-awake", "agent", &long);
    let Some(screen) = tokio::task::block_in_place(|| on_a_terminal(&t, &["logs", "awake", "--tail", "1"])) else {
        return;
    };
    let line = screen.lines().next().unwrap_or_default();
    assert!(
        line.ends_with(" … [line cut at 64 KiB]"),
        "{}",
        &line[line.len().saturating_sub(80)..]
    );
    assert!(line.len() < 66 * 1024, "{}", line.len());
}

/// What a YAML reader refuses raw or a terminal acts on, in one annotation's value and key.
const HOSTILE: &str = "del\u{7f} nel\u{85} csi\u{9b} ls\u{2028} ps\u{2029} bom\u{feff} nc\u{fffe}\u{ffff}";
const ESCAPED: [char; 9] = [
    '\u{7f}', '\u{85}', '\u{9b}', '\u{2028}', '\u{2029}', '\u{feff}', '\u{fffe}', '\u{ffff}', '\u{9f}',
];

fn hostile_annotation(t: &TestSim, id: &str) {
    t.sim.modify(&SANDBOXES, "agents", &format!("namzu-ws-{id}"), |o| {
        o["metadata"]["annotations"]["sandbox.namzu.ai/note"] = json!(HOSTILE);
        o["metadata"]["annotations"]["sandbox.namzu.ai/k\u{85}ey"] = json!("v");
    });
}

/// No raw character a YAML reader or a terminal chokes on; `what` names the output.
fn assert_escaped(text: &str, what: &str) {
    let raw: Vec<String> = text
        .chars()
        .filter(|c| ESCAPED.contains(c))
        .map(|c| c.escape_unicode().to_string())
        .collect();
    assert!(raw.is_empty(), "{what} prints {raw:?} raw");
}

/// L7: every `-o json` and `-o yaml` of a verb escapes DEL, the C1 controls, U+2028/U+2029, the
/// BOM and U+FFFE/U+FFFF (`\u007f`, `\u0085`, …), and the text still reads back as the same data.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_and_yaml_escape_del_c1_separators_and_noncharacters_on_every_path() {
    let t = start().await;
    hostile_annotation(&t, "awake");
    hostile_annotation(&t, "asleep");
    t.sim
        .create(
            &EVENTS,
            json!({"apiVersion":"v1","kind":"Event","metadata":{"name":"ev-hostile","namespace":"agents"},
                "type":"Warning","reason":"Odd","message": HOSTILE,
                "involvedObject":{"kind":"Sandbox","name":"namzu-ws-awake","namespace":"agents"},
                "lastTimestamp": t.sim.now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)}),
        )
        .unwrap();
    for verb in [
        &["get", "awake"][..],
        &["list"],
        &["list", "--sort-by", "age"],
        &["list", "awake", "asleep"],
        &["inspect", "awake"],
        &["history", "awake"],
    ] {
        for format in ["json", "yaml"] {
            let mut argv = vec!["-n", "agents"];
            argv.extend_from_slice(verb);
            argv.extend(["-o", format]);
            let o = namzu(&t, &argv).await;
            assert_eq!(code(&o), 0, "{argv:?}: {}", err(&o));
            let text = out(&o);
            assert_escaped(&text, &format!("{argv:?}"));
            assert!(text.contains("\\u0085") && text.contains("\\u2028"), "{argv:?}: {text}");
            let back: Value = if format == "json" {
                serde_json::from_str(&text).unwrap_or_else(|e| panic!("{argv:?}: {e}"))
            } else {
                serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{argv:?}: {e}"))
            };
            assert!(
                back.to_string().contains(&Value::from(HOSTILE).to_string()[1..20]),
                "{argv:?}"
            );
        }
    }
    // a dry run's body carries the SandboxTemplate as it is: printed escaped too
    let asleep = t.sim.get(&SANDBOXES, "agents", "namzu-ws-asleep").unwrap();
    t.sim.modify(&TEMPLATES, "agents", "coder", |o| {
        o["spec"]["podTemplate"] = asleep["spec"]["podTemplate"].clone();
        o["spec"]["podTemplate"]["metadata"]["annotations"] = json!({"note": HOSTILE});
        o["spec"]["podTemplate"]["spec"]["containers"][0]["volumeDevices"] =
            json!([{"name": "workspace-disk", "devicePath": "/dev/workspace"}]);
    });
    let o = namzu(
        &t,
        &[
            "-n",
            "agents",
            "resume",
            "asleep",
            "--refresh-template",
            "--dry-run",
            "--runtime-class",
            "kata",
            "--egress-profile",
            "open",
        ],
    )
    .await;
    assert_eq!(code(&o), 0, "{}", err(&o));
    assert!(out(&o).contains("\\u0085"), "{}", out(&o));
    assert_escaped(&out(&o), "resume --refresh-template --dry-run");
}

/// L7: `list -w -o json` prints each row as one line of JSON, escaped as `-o json` is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_watch_json_lines_are_escaped_too() {
    use std::io::BufRead;
    let t = start().await;
    hostile_annotation(&t, "awake");
    let mut child = Command::new(env!("CARGO_BIN_EXE_kubectl-namzu"))
        .args(args(&t, &["list", "-w", "-o", "json", "--output-watch-events"]))
        .env_remove("KUBECONFIG")
        .env(now_env(&t).0, now_env(&t).1)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, mut lines) = tokio::sync::mpsc::unbounded_channel::<String>();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let awake = loop {
        let line = tokio::time::timeout(Duration::from_secs(20), lines.recv())
            .await
            .expect("a line in time")
            .expect("stdout open");
        let event: Value = serde_json::from_str(&line).expect("one JSON object per line");
        if event["object"]["id"] == "awake" {
            break line;
        }
    };
    let status = interrupt(child).await;
    assert_eq!(status.code(), Some(0));
    assert_escaped(&awake, "list -w -o json");
    assert!(awake.contains("\\u0085"), "{awake}");
}

/// L8: bidirectional marks (U+202E, U+2066, U+061C, U+200F …) never reach a terminal as they
/// are: `history` and `logs` on a terminal show `�`, tables escape them (`\u{61c}`), as every
/// other control character.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bidi_controls_never_reach_the_terminal() {
    let t = start().await;
    let bidi = "evil\u{202e}txt.exe \u{2066}iso\u{2069} \u{061c}alm \u{200f}rlm";
    t.sim
        .create(
            &EVENTS,
            json!({"apiVersion":"v1","kind":"Event","metadata":{"name":"ev-bidi","namespace":"agents"},
                "type":"Warning","reason":"Odd","message": bidi,
                "involvedObject":{"kind":"Sandbox","name":"namzu-ws-awake","namespace":"agents"},
                "lastTimestamp": t.sim.now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)}),
        )
        .unwrap();
    let marks = ['\u{202e}', '\u{2066}', '\u{2069}', '\u{061c}', '\u{200f}'];
    let has_mark = |s: &str| s.chars().any(|c| marks.contains(&c));
    // the history's timeline
    let o = namzu(&t, &["-n", "agents", "history", "awake"]).await;
    assert_eq!(code(&o), 0, "{}", err(&o));
    let line = out(&o).lines().find(|l| l.contains("evil")).map(str::to_string);
    let line = line.unwrap_or_else(|| panic!("{}", out(&o)));
    assert!(!has_mark(&line), "{line:?}");
    assert!(
        line.contains("evil\u{fffd}txt.exe \u{fffd}iso\u{fffd} \u{fffd}alm \u{fffd}rlm"),
        "{line:?}"
    );
    // a table (inspect's events): escaped as every control character is
    let o = namzu(&t, &["-n", "agents", "inspect", "awake"]).await;
    let line = out(&o).lines().find(|l| l.contains("evil")).map(str::to_string);
    let line = line.unwrap_or_else(|| panic!("{}", out(&o)));
    assert!(!has_mark(&line), "{line:?}");
    assert!(
        line.contains("\\u{61c}alm") && line.contains("evil\\u{202e}txt"),
        "{line:?}"
    );
    // logs on a terminal
    t.sim.append_log("agents", "namzu-ws-awake", "agent", bidi);
    let Some(screen) = tokio::task::block_in_place(|| on_a_terminal(&t, &["logs", "awake", "--tail", "1"])) else {
        return;
    };
    assert!(!has_mark(&screen), "{screen:?}");
    assert!(screen.contains("evil\u{fffd}txt.exe"), "{screen:?}");
}

/// L8: the TUI's log pane, in a real terminal (tmux), shows a bidirectional mark as `�`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tuis_log_pane_shows_bidi_controls_as_replacement_characters() {
    if tool_missing("tmux", "the TUI's log pane") {
        return;
    }
    let t = start().await;
    t.sim.append_log(
        "agents",
        "namzu-ws-awake",
        "agent",
        "evil\u{202e}txt.exe \u{2067}iso\u{2069} end",
    );
    let socket = format!("namzu-r4b-{}", std::process::id());
    let tmux = |args: &[&str]| {
        let o = Command::new("tmux").arg("-L").arg(&socket).args(args).output().unwrap();
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    struct Kill(String);
    impl Drop for Kill {
        fn drop(&mut self) {
            let _ = Command::new("tmux").args(["-L", &self.0, "kill-server"]).output();
        }
    }
    let _kill = Kill(socket.clone());
    let (now_key, now_value) = now_env(&t);
    let script = format!(
        "NO_COLOR=1 {now_key}={now_value} {} --kubeconfig {} -n agents tui; sleep 60",
        env!("CARGO_BIN_EXE_kubectl-namzu"),
        t.sim.kubeconfig().display(),
    );
    tmux(&["new-session", "-d", "-s", "r4b", "-x", "200", "-y", "30", &script]);
    // the screen, once it shows `text` (bounded)
    let expect = |text: &str| {
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        loop {
            let s = tmux(&["capture-pane", "-p", "-t", "r4b"]);
            if s.contains(text) {
                return s;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "screen never showed {text:?}:\n{s}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    };
    tokio::task::block_in_place(|| {
        expect("awake");
        for k in ["/", "awake", "Enter"] {
            tmux(&["send-keys", "-t", "r4b", k]);
        }
        expect("1 of 3");
        tmux(&["send-keys", "-t", "r4b", "l"]);
        let screen = expect(" end");
        let line = screen.lines().find(|l| l.contains("evil")).unwrap_or_default();
        assert!(
            line.contains("evil\u{fffd}txt.exe \u{fffd}iso\u{fffd} end"),
            "{line:?}\n{screen}"
        );
        assert!(!screen.contains(['\u{202e}', '\u{2067}', '\u{2069}']), "{screen:?}");
        tmux(&["send-keys", "-t", "r4b", "q"]);
    });
}
