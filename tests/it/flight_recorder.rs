//! The flight recorder (issue 43), process-level: the real binary records the simulated cluster
//! while the test changes it, on the sim's manual clock (`KUBECTL_NAMZU_NOW=@FILE`, the file
//! rewritten at each step), and `--at` answers what the live read printed at those instants.

use crate::support::*;
use namzu_clock::NOW_ENV;
use namzu_sim::resources::{PODS, SANDBOXES};
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc::Receiver;
use std::time::Duration;

/// Generous: the whole suite shares two cores (a wait that succeeds returns at once).
const WITHIN: Duration = Duration::from_secs(60);

fn clock_file(t: &TestSim) -> PathBuf {
    t.dir.path().join("now")
}

/// The binary's clock moves to the sim's.
fn tick(t: &TestSim) {
    std::fs::write(clock_file(t), t.sim.now().to_rfc3339()).unwrap();
}

fn store(t: &TestSim) -> PathBuf {
    t.dir.path().join("recordings")
}

/// The binary on this sim, on the sim's clock, its recordings in the test's directory.
fn namzu_cmd(t: &TestSim, args: &[&str]) -> Command {
    let mut c = bin(&t.home());
    c.env(NOW_ENV, format!("@{}", clock_file(t).display()))
        .envs([audit_env(t)])
        .arg("--kubeconfig")
        .arg(t.sim.kubeconfig())
        .arg("--recording")
        .arg(store(t))
        .args(args);
    c
}

fn run(t: &TestSim, args: &[&str]) -> Output {
    namzu_cmd(t, args).output().unwrap()
}

struct Recorder {
    child: Child,
    stderr: Receiver<String>,
}

impl Recorder {
    fn start(t: &TestSim) -> Recorder {
        let mut child = namzu_cmd(t, &["record", "-A"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = child.stderr.take().unwrap();
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            use std::io::BufRead;
            for line in std::io::BufReader::new(stderr).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Recorder { child, stderr: lines }
    }

    /// Wait for a stderr line containing `text`; the lines before it.
    fn said(&self, text: &str) -> Vec<String> {
        let mut seen = Vec::new();
        wait_until(&format!("the recorder says {text:?}"), WITHIN, || {
            while let Ok(line) = self.stderr.try_recv() {
                let found = line.contains(text);
                seen.push(line);
                if found {
                    return true;
                }
            }
            false
        });
        seen
    }

    fn stop(mut self) -> std::process::ExitStatus {
        sigint(&self.child);
        self.child.wait().unwrap()
    }
}

impl Drop for Recorder {
    /// A test that fails leaves no recorder running.
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn at_now(t: &TestSim) -> String {
    t.sim.now().to_rfc3339()
}

/// Wait until the recording holds what the cluster shows now; what `list -A -o json` printed.
fn recorded_now(t: &TestSim) -> String {
    wait_for(WITHIN, || {
        let live = out(&run(t, &["list", "-A", "-o", "json"]));
        let replay = run(t, &["list", "-A", "-o", "json", "--at", &at_now(t)]);
        if replay.status.success() && out(&replay) == live {
            return Ok(live);
        }
        // on failure, where the two first differ
        let differ = live
            .lines()
            .zip(out(&replay).lines())
            .find(|(a, b)| a != b)
            .map(|(a, b)| format!("live:   {a}\nreplay: {b}"));
        Err(format!(
            "the recording never caught up with the cluster: {}\n{}",
            differ.unwrap_or_else(|| "(one ends first)".into()),
            err(&replay)
        ))
    })
}

/// One step of a day: the clock moves, a workspace changes.
fn change(t: &TestSim, step: usize) {
    // the binary's clock first: what the sim does as its clock moves is recorded at the new time
    let by = chrono::Duration::minutes(17);
    std::fs::write(clock_file(t), (t.sim.now() + by).to_rfc3339()).unwrap();
    t.sim.advance(by);
    t.sim.modify(&SANDBOXES, "agents", "namzu-ws-awake", |o| {
        o["metadata"]["annotations"]["example.com/step"] = step.to_string().into();
    });
    if step == 2 {
        // the controller replaces the pod (its uid shows in the rows)
        let before = t.sim.get(&PODS, "agents", "namzu-ws-awake").unwrap()["metadata"]["uid"].clone();
        t.sim.delete(&PODS, "agents", "namzu-ws-awake");
        wait_until("the controller replaced the pod", WITHIN, || {
            t.sim
                .get(&PODS, "agents", "namzu-ws-awake")
                .is_some_and(|p| p["metadata"]["uid"] != before)
        });
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn list_at_an_instant_prints_what_list_printed_then() {
    let t = start().await;
    // what `leaks --at` is to find: a workspace held in deletion by a finalizer, a disk left
    // behind by a delete that orphaned it
    t.sim.modify(&SANDBOXES, "agents", "namzu-ws-owned", |o| {
        o["metadata"]["finalizers"] = serde_json::json!(["example.com/hold"]);
    });
    t.sim.delete(&SANDBOXES, "agents", "namzu-ws-owned");
    t.sim.delete_orphaning(&SANDBOXES, "agents", "namzu-ws-asleep");
    tick(&t);
    let before = at_now(&t);
    t.sim.advance(chrono::Duration::minutes(1));
    tick(&t);
    let recorder = Recorder::start(&t);
    recorder.said("recording into");
    let mut seen = vec![(at_now(&t), recorded_now(&t))];
    for step in 0..4 {
        change(&t, step);
        seen.push((at_now(&t), recorded_now(&t)));
    }
    // inspect at an instant, as inspect printed it then
    // (but who set the mode: the recording keeps no managedFields)
    let inspected = |o: &Output| {
        let mut v: serde_json::Value = serde_json::from_str(&out(o)).unwrap();
        v["modeSetBy"] = serde_json::Value::Null;
        v
    };
    let inspect_now = inspected(&run(&t, &["inspect", "awake", "-n", "agents", "-o", "json"]));
    let inspect_at = run(
        &t,
        &["inspect", "awake", "-n", "agents", "-o", "json", "--at", &at_now(&t)],
    );
    assert_eq!(code(&inspect_at), 0, "{}", err(&inspect_at));
    assert_eq!(inspected(&inspect_at), inspect_now);
    let drift_now = run(&t, &["drift", "-A", "-o", "json"]);
    let drift_at = run(&t, &["drift", "-A", "-o", "json", "--at", &at_now(&t)]);
    assert_eq!(
        (code(&drift_at), out(&drift_at)),
        (0, out(&drift_now)),
        "{}",
        err(&drift_at)
    );
    let capacity_now = run(&t, &["capacity", "-A", "-o", "json"]);
    let capacity_at = run(&t, &["capacity", "-A", "-o", "json", "--at", &at_now(&t)]);
    assert_eq!(
        (code(&capacity_at), out(&capacity_at)),
        (0, out(&capacity_now)),
        "{}",
        err(&capacity_at)
    );
    assert!(err(&capacity_at).contains("replay at"), "{}", err(&capacity_at));
    // leaks at an instant: every finding leaks found then but the disks' (the recording keeps
    // only the workspaces' pods, so a disk is never shown unused in the past), which say so
    let leaks = |o: &Output| -> Vec<serde_json::Value> {
        assert_eq!(code(o), 0, "{}", err(o));
        serde_json::from_str(&out(o)).unwrap()
    };
    let leaks_now = leaks(&run(&t, &["leaks", "-A", "-o", "json"]));
    let leaks_then = run(&t, &["leaks", "-A", "-o", "json", "--at", &at_now(&t)]);
    assert!(
        err(&leaks_then).contains("no disk is shown unused"),
        "{}",
        err(&leaks_then)
    );
    let leaks_then = leaks(&leaks_then);
    let not_disks = |v: &[serde_json::Value]| -> Vec<serde_json::Value> {
        v.iter()
            .filter(|l| l["kind"] != "PersistentVolumeClaim")
            .cloned()
            .collect()
    };
    assert!(!not_disks(&leaks_now).is_empty(), "the demo has leaks other than disks");
    assert_eq!(not_disks(&leaks_then), not_disks(&leaks_now));
    for disk in leaks_then.iter().filter(|l| l["kind"] == "PersistentVolumeClaim") {
        assert_eq!(disk["leak"], "in-use", "{disk}");
        assert!(disk["checks"].to_string().contains("cannot be ruled out"), "{disk}");
    }
    let refused = run(&t, &["leaks", "--delete", "--at", &at_now(&t)]);
    assert_eq!(code(&refused), 2, "{}", err(&refused));
    let history_at = run(
        &t,
        &["history", "awake", "-n", "agents", "-o", "json", "--at", &seen[0].0],
    );
    assert_eq!(code(&history_at), 0, "{}", err(&history_at));
    assert!(err(&history_at).contains("replay at"), "{}", err(&history_at));
    let distinct: std::collections::BTreeSet<&String> = seen.iter().map(|(_, s)| s).collect();
    assert!(distinct.len() >= 3, "the steps changed what list prints");
    for (at, printed) in &seen {
        let replay = run(&t, &["list", "-A", "-o", "json", "--at", at]);
        assert_eq!(code(&replay), 0, "{}", err(&replay));
        assert_eq!(&out(&replay), printed, "list --at {at}");
        assert!(
            err(&replay).contains(&format!("replay at {}", &at[..19])),
            "{}",
            err(&replay)
        );
        assert!(err(&replay).contains("still recording"), "{}", err(&replay));
    }
    // relative, and the table
    let table = run(&t, &["list", "-A", "--at", "-17m"]);
    assert_eq!(code(&table), 0, "{}", err(&table));
    assert!(out(&table).contains("awake"), "{}", out(&table));
    // before the recording: one line, exit 8
    let outside = run(&t, &["list", "-A", "--at", &before]);
    assert_eq!(code(&outside), 8, "{}", err(&outside));
    assert!(out(&outside).is_empty());
    assert_eq!(err(&outside).trim().lines().count(), 1, "{}", err(&outside));
    assert!(err(&outside).contains("is not in the recording"), "{}", err(&outside));
    // what changed between the first and the last instant, in words, with who wrote it
    let between = run(
        &t,
        &[
            "history",
            "awake",
            "-n",
            "agents",
            "-o",
            "json",
            "--between",
            &seen[0].0,
            &seen[4].0,
        ],
    );
    assert_eq!(code(&between), 0, "{}", err(&between));
    let changes: serde_json::Value = serde_json::from_str(&out(&between)).unwrap();
    let changes = changes["changes"].as_array().unwrap().clone();
    assert!(
        changes
            .iter()
            .any(|c| c["what"].as_str().unwrap().contains("pod namzu-ws-awake")),
        "{changes:?}"
    );
    assert!(
        changes.iter().all(|c| c["who"].is_string() && c["time"].is_string()),
        "{changes:?}"
    );
    // Ctrl-C ends the session cleanly: exit 0, and the recording says where it ends
    assert!(recorder.stop().success());
    let (last, printed) = seen.last().unwrap();
    let replay = run(&t, &["list", "-A", "-o", "json", "--at", last]);
    assert_eq!(&out(&replay), printed);
    assert!(!err(&replay).contains("still recording"), "{}", err(&replay));
}

/// The newest segment file of the recording.
fn newest_segment(t: &TestSim) -> PathBuf {
    let mut segments: Vec<PathBuf> = walk(&store(t))
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "seg"))
        .collect();
    segments.sort();
    segments.pop().expect("a segment")
}

fn walk(dir: &std::path::Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = entry.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_recorder_killed_mid_write_leaves_a_readable_store() {
    let t = start().await;
    tick(&t);
    let mut recorder = Recorder::start(&t);
    recorder.said("recording into");
    change(&t, 0);
    let printed = recorded_now(&t);
    let at = at_now(&t);
    recorder.child.kill().unwrap();
    recorder.child.wait().unwrap();
    // a torn frame and garbage after the last whole one
    let segment = newest_segment(&t);
    let mut bytes = std::fs::read(&segment).unwrap();
    bytes.extend_from_slice(&[200, 1, 0, 0, 7, 7, 7, 7]);
    bytes.extend_from_slice(b"{\"r\":\"put\",\"at\":\"2026");
    std::fs::write(&segment, &bytes).unwrap();
    let replay = run(&t, &["list", "-A", "-o", "json", "--at", &at]);
    assert_eq!(code(&replay), 0, "{}", err(&replay));
    assert_eq!(out(&replay), printed);
    // the next recorder cuts the tail and goes on after a gap the replay names
    change(&t, 1);
    let recorder = Recorder::start(&t);
    let said = recorder.said("recording into");
    assert!(
        said.iter().any(|l| l.contains("cut a torn tail of 29 bytes")),
        "{said:?}"
    );
    let printed = recorded_now(&t);
    let replay = run(&t, &["list", "-A", "-o", "json", "--at", &at_now(&t)]);
    assert_eq!(out(&replay), printed);
    assert!(err(&replay).contains("not recorded from"), "{}", err(&replay));
    assert!(recorder.stop().success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_recorders_on_one_store_take_turns_and_never_corrupt_it() {
    let t = start().await;
    tick(&t);
    let first = Recorder::start(&t);
    first.said("recording into");
    let second = Recorder::start(&t);
    second.said("standing by");
    change(&t, 0);
    let (at_first, printed_first) = (at_now(&t), recorded_now(&t));
    // the first ends: the standby takes over with a keyframe of its own
    assert!(first.stop().success());
    second.said("recording into");
    change(&t, 1);
    let (at_second, printed_second) = (at_now(&t), recorded_now(&t));
    assert!(second.stop().success());
    for (at, printed) in [(&at_first, &printed_first), (&at_second, &printed_second)] {
        let replay = run(&t, &["list", "-A", "-o", "json", "--at", at]);
        assert_eq!(code(&replay), 0, "{}", err(&replay));
        assert_eq!(&out(&replay), printed, "--at {at}");
    }
}

/// The entries of `history awake -o json` from `source`.
fn history_entries(t: &TestSim, recording: Option<&std::path::Path>, source: &str) -> Vec<serde_json::Value> {
    let mut cmd = namzu_cmd(t, &["history", "awake", "-n", "agents", "-o", "json"]);
    if let Some(dir) = recording {
        // a later --recording wins
        cmd.arg("--recording").arg(dir);
    }
    let o = cmd.output().unwrap();
    assert_eq!(code(&o), 0, "{}", err(&o));
    let v: serde_json::Value = serde_json::from_str(&out(&o)).unwrap();
    v["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["source"] == source)
        .cloned()
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn history_keeps_the_events_the_cluster_dropped_after_its_hour() {
    let t = start().await;
    tick(&t);
    let recorder = Recorder::start(&t);
    recorder.said("recording into");
    // the pod replaced: the controller's Events about it
    change(&t, 2);
    let replaced = namzu_domain::timefmt::js_iso(t.sim.now());
    // a minute on, the new pod has started
    std::fs::write(
        clock_file(&t),
        (t.sim.now() + chrono::Duration::minutes(1)).to_rfc3339(),
    )
    .unwrap();
    t.sim.advance(chrono::Duration::minutes(1));
    let mut live = Vec::new();
    wait_until("the replacement's Events are served", WITHIN, || {
        live = history_entries(&t, None, "event");
        live.iter()
            .any(|e| e["reason"] == "Started" && e["time"].as_str().is_some_and(|at| at >= replaced.as_str()))
    });
    recorded_now(&t);
    // two hours on the cluster has dropped them; the recording has not
    std::fs::write(clock_file(&t), (t.sim.now() + chrono::Duration::hours(2)).to_rfc3339()).unwrap();
    t.sim.advance(chrono::Duration::hours(2));
    let empty = t.dir.path().join("empty");
    wait_until("the cluster dropped its Events", WITHIN, || {
        history_entries(&t, Some(&empty), "event").len() < live.len()
    });
    let recorded = history_entries(&t, None, "recorded");
    let said = |entries: &[serde_json::Value]| -> Vec<(String, String, String)> {
        entries
            .iter()
            .map(|e| (e["time"].to_string(), e["reason"].to_string(), e["text"].to_string()))
            .collect()
    };
    let still = history_entries(&t, None, "event");
    let mut merged = said(&recorded);
    merged.extend(said(&still));
    merged.sort();
    let missing: Vec<_> = said(&live).into_iter().filter(|e| !merged.contains(e)).collect();
    assert!(
        missing.is_empty(),
        "every Event served before is in the history again: {missing:?}"
    );
    assert!(!recorded.is_empty());
    // the replaced pod's Events too, which the live history no longer tied to the workspace
    assert!(merged.len() > live.len(), "{merged:?}");
    assert!(recorder.stop().success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn list_watch_records_what_it_watches() {
    let t = start().await;
    tick(&t);
    let mut watch = namzu_cmd(&t, &["list", "-A", "-w", "-o", "json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let lines = stdout_lines(&mut watch);
    lines.recv_timeout(WITHIN).expect("the list comes first");
    change(&t, 0);
    // no `record` runs: list -w's own watches fill the recording
    let printed = recorded_now(&t);
    let at = at_now(&t);
    sigint(&watch);
    assert!(watch.wait().unwrap().success());
    drop(lines);
    let replay = run(&t, &["list", "-A", "-o", "json", "--at", &at]);
    assert_eq!(out(&replay), printed);
}

/// `list -w -l …` watches part of the Sandboxes: it records nothing (that part would replay as
/// the whole fleet).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_selected_list_watch_records_nothing() {
    let t = start().await;
    tick(&t);
    let mut watch = namzu_cmd(&t, &["list", "-A", "-w", "-o", "json", "-l", "!example.com/none"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let lines = stdout_lines(&mut watch);
    // the three workspaces' first full state: the follow has synced, when a recording begins
    for _ in 0..3 {
        lines.recv_timeout(WITHIN).expect("the list comes first");
    }
    change(&t, 0);
    sigint(&watch);
    assert!(watch.wait().unwrap().success());
    drop(lines);
    let replay = run(&t, &["list", "-A", "-o", "json", "--at", &at_now(&t)]);
    assert_eq!(code(&replay), 8, "{}", err(&replay));
    assert!(err(&replay).contains("nothing is recorded"), "{}", err(&replay));
}

/// The TUI replays the recording (`:at`), at 80×24 and 120×35: the header says REPLAY and the
/// instant, the rows are those of then, `]` steps to the next recorded change, a write is refused
/// in one line, Enter shows the detail as recorded then, `:at now` brings the live rows back.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_tui_replays_the_recording_and_steps_through_its_changes() {
    if tool_missing("tmux", "the TUI's replay") {
        return;
    }
    let t = start().await;
    tick(&t);
    let recorder = Recorder::start(&t);
    recorder.said("recording into");
    recorded_now(&t);
    let awake_running = at_now(&t);
    // 17 minutes on, awake is suspended (the controller then deletes its pod)
    let by = chrono::Duration::minutes(17);
    std::fs::write(clock_file(&t), (t.sim.now() + by).to_rfc3339()).unwrap();
    t.sim.advance(by);
    t.sim.modify(&SANDBOXES, "agents", "namzu-ws-awake", |o| {
        o["spec"]["operatingMode"] = "Suspended".into();
    });
    recorded_now(&t);
    let quote = |p: &std::path::Path| format!("'{}'", p.display());
    for (width, height) in [(80u16, 24u16), (120, 35)] {
        let tm = Tmux::new("replay");
        let clock = vec![(NOW_ENV.to_string(), format!("@{}", clock_file(&t).display()))];
        tm.start(
            width,
            height,
            &format!(
                "{} --kubeconfig {} --recording {} -n agents tui; echo NAMZU-EXITED $?; sleep 60",
                bin_line(&t.home(), &clock),
                quote(t.sim.kubeconfig()),
                quote(&store(&t)),
            ),
        );
        // keys only once the UI has the terminal (typed before, the tty turns Enter into ^J)
        tm.expect("WORKSPACE");
        tm.keys(&["/", "awake", "Enter"]);
        tm.expect("filter: awake (1 of");
        let awake = |screen: &str| {
            screen
                .lines()
                .find(|l| l.trim_start().starts_with("awake "))
                .unwrap_or_default()
                .to_string()
        };
        // the STATE column (MODE is the first a narrow terminal drops): suspending, its pod
        // still there on the test's stopped clock
        // awake's row shows `word` (the header's counts may say it of another row)
        let row_shows = |word: &str| {
            let mut screen = String::new();
            wait_until(&format!("awake's row shows {word}"), WITHIN, || {
                screen = tm.screen();
                awake(&screen).contains(word)
            });
            screen
        };
        row_shows("Suspend");
        tm.keys(&[":", &format!("at {awake_running}"), "Enter"]);
        tm.expect("REPLAY at");
        let then = row_shows("Running");
        assert!(then.contains(&format!("REPLAY at {}", &awake_running[..19])), "{then}");
        // a write is refused in one line
        tm.keys(&["S"]);
        tm.expect("nothing is written");
        // the next recorded change: the suspend
        tm.keys(&["]"]);
        let next = row_shows("Suspend");
        assert!(!next.contains(&format!("REPLAY at {}", &awake_running[..19])), "{next}");
        // the detail as recorded then, under the line that says how complete the recording is
        tm.keys(&["Enter"]);
        let detail = tm.expect("replay at");
        assert!(detail.contains("awake"), "{detail}");
        tm.keys(&["Escape"]);
        tm.expect_gone("replay at");
        tm.keys(&[":", "at now", "Enter"]);
        tm.expect("live again");
        tm.expect_gone("REPLAY");
        tm.keys(&["q"]);
        tm.expect("NAMZU-EXITED 0");
    }
    assert!(recorder.stop().success());
}
