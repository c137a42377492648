//! What reaches the user is safe to read, through the real binary on the sim: `-o json` and `-o
//! yaml` escape what YAML readers and terminals refuse, on every path (watch lines too);
//! bidirectional marks never reach a terminal, the TUI's log pane included.

use crate::support::*;
use namzu_sim::resources::{EVENTS, SANDBOXES, TEMPLATES};
use serde_json::{Value, json};
use std::process::Stdio;
use std::time::Duration;

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
    let t = start().await;
    hostile_annotation(&t, "awake");
    let mut child = t
        .bin()
        .args(agents_args(&t, &["list", "-w", "-o", "json", "--output-watch-events"]))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = stdout_lines_async(&mut child);
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
    let tmux = Tmux::new("bidi-log-pane");
    let script = format!(
        "{} --kubeconfig {} -n agents tui; sleep 60",
        bin_line(&t.home(), &[now_env(&t)]),
        t.sim.kubeconfig().display(),
    );
    tmux.start(200, 30, &script);
    tokio::task::block_in_place(|| {
        tmux.expect("awake");
        tmux.keys(&["/", "awake", "Enter"]);
        tmux.expect("1 of 3");
        tmux.keys(&["l"]);
        let screen = tmux.expect(" end");
        let line = screen.lines().find(|l| l.contains("evil")).unwrap_or_default();
        assert!(
            line.contains("evil\u{fffd}txt.exe \u{fffd}iso\u{fffd} end"),
            "{line:?}\n{screen}"
        );
        assert!(!screen.contains(['\u{202e}', '\u{2067}', '\u{2069}']), "{screen:?}");
        tmux.keys(&["q"]);
    });
}
