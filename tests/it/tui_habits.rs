//! Issue 42's TUI habits in a real terminal (tmux), each at 80×24 and at 120×35: logs of the marked
//! rows in one pane, keys from the config file, the help's columns and diagnoses, the shell's
//! banner and refusals, the YAML search, rows that stay put after a write, the sorted column in
//! sight, the footer's `h` and `w`.

use crate::support::*;
use crate::tui_tmux::one_cluster_demo;

const SIZES: [(u16, u16); 2] = [(80, 24), (120, 35)];

/// Filter the list to `id`, then Esc: the filter gone, the cursor stays on it.
fn mark(t: &Tmux, id: &str) {
    t.keys(&["/", id, "Enter"]);
    t.expect(&format!("filter: {id} (1 of"));
    t.keys(&["Space"]);
    t.expect(&format!("✓ {id} "));
    t.keys(&["Escape"]);
    t.expect_gone(&format!("filter: {id}"));
}

/// `l` on marked rows: every marked workspace's log in one pane, each line after its workspace,
/// each followed (the demo's running pods log a heartbeat every 2 s).
#[test]
fn l_on_marked_rows_streams_every_one_in_one_pane() {
    if tool_missing("tmux", "logs of marked rows") {
        return;
    }
    for (width, height) in SIZES {
        let (t, _home) = one_cluster_demo(width, height, "marklogs");
        mark(&t, "alpha");
        t.keys(&["/", "juliet", "Enter"]);
        t.expect("filter: juliet (1 of");
        t.keys(&["Space"]);
        t.expect("✓ juliet ");
        t.keys(&["l"]);
        let pane = t.expect("logs of 2 marked workspaces");
        let pane = if pane.contains("still draining") {
            pane
        } else {
            t.expect("still draining")
        };
        assert!(
            pane.lines()
                .any(|l| l.contains("agents/juliet ") && l.contains("still draining")),
            "juliet's lines after its name at {width}:\n{pane}"
        );
        let pane = t.expect("agents/alpha level=info msg=\"listening\"");
        assert!(pane.contains("--- agents/alpha: pod namzu-ws-alpha"), "{pane}");
        // followed: both running pods' heartbeats arrive
        t.expect("agents/alpha level=info msg=\"heartbeat\"");
        t.expect("agents/juliet level=info msg=\"heartbeat\"");
        t.keys(&["q"]);
        t.expect_gone("logs of 2 marked");
        t.keys(&["q"]);
        t.expect("NAMZU-EXITED");
    }
}

/// The one-cluster demo under a config file of `yaml` (at the default path), at `width`×`height`.
fn demo_with_config(width: u16, height: u16, session: &'static str, yaml: &str) -> (Tmux, tempfile::TempDir) {
    let t = Tmux::new(session);
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join(".config/kubectl-namzu");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("config.yaml"), yaml).unwrap();
    let bin = bin_line(home.path(), &[]);
    t.start(
        width,
        height,
        &format!("{bin} demo --clusters 1; echo NAMZU-EXITED $?; sleep 120"),
    );
    (t, home)
}

/// The config file's `keys:` moves the list's keys (the footer and the help say so); the action
/// behind a key keeps its confirmation; a key meaning two things is one line at start.
#[test]
fn keys_move_by_the_config_file() {
    if tool_missing("tmux", "keys from the config file") {
        return;
    }
    for (width, height) in SIZES {
        let yaml = "keys:\n  delete: X\n  logs: L\n";
        let (t, _home) = demo_with_config(width, height, "remap", yaml);
        t.expect("workspaces");
        t.expect_gone("loading…");
        t.keys(&["/", "alpha", "Enter"]);
        t.expect("filter: alpha (1 of");
        t.keys(&["l"]);
        t.expect("no action on l");
        t.keys(&["L"]);
        t.expect("logs of alpha");
        t.keys(&["q"]);
        t.expect_gone("logs of alpha");
        t.keys(&["D"]);
        t.expect("no action on D");
        // the delete moved to X: the same typed confirmation
        t.keys(&["X"]);
        let dialog = t.expect("type");
        assert!(dialog.contains("alpha"), "{dialog}");
        t.keys(&["Escape"]);
        t.expect("cancelled");
        t.keys(&["?"]);
        let help = t.expect("Keys moved by the config file");
        assert!(help.contains("delete → X") && help.contains("logs → L"), "{help}");
        t.keys(&["q"]);
        t.expect_gone("Keys moved");
        t.keys(&["q"]);
        t.expect("NAMZU-EXITED 0");
        // a key that would mean two things: one line, the UI never opens
        let (t, _home) = demo_with_config(width, height, "remapbad", "keys:\n  logs: j\n");
        let screen = t.expect("NAMZU-EXITED 2");
        assert!(
            screen.replace('\n', "").contains("keys: j would be both down and logs"),
            "{screen}"
        );
    }
}

/// `?` explains every column and every diagnosis word (the domain's own list), after the keys.
#[test]
fn help_explains_the_columns_and_the_diagnoses() {
    if tool_missing("tmux", "help's columns and diagnoses") {
        return;
    }
    for (width, height) in SIZES {
        let (t, _home) = one_cluster_demo(width, height, "legend");
        t.keys(&["?"]);
        t.expect("keys, columns, diagnoses");
        t.keys(&["G"]);
        let end = t.expect("unreadable-epoch");
        assert!(end.contains("the holder-epoch annotation"), "{end}");
        // up a page at a time until the columns' part shows
        let mut seen = t.screen();
        for _ in 0..12 {
            if seen.contains("MODE-CHANGED") {
                break;
            }
            t.keys(&["PageUp"]);
            // each look after the page moved
            let before = seen.clone();
            wait_until("the help scrolls up", std::time::Duration::from_secs(20), || {
                seen = t.screen();
                seen != before
            });
        }
        assert!(
            seen.contains("MODE-CHANGED") && seen.contains("how long ago the mode was last changed"),
            "{seen}"
        );
        t.keys(&["q"]);
        t.expect_gone("keys, columns, diagnoses");
        t.keys(&["q"]);
        t.expect("NAMZU-EXITED");
    }
}

/// `s` opens under a banner naming the pod, container, context and badge; a refusal stays on
/// screen in the tool's words until Esc.
#[test]
fn the_shell_has_a_banner_and_a_refusal_stays() {
    if tool_missing("tmux", "the shell's banner") || tool_missing("kubectl", "the shell's banner") {
        return;
    }
    for (width, height) in SIZES {
        let yaml = "contexts:\n  - context: namzu-sim\n    label: SIM\n    colour: blue\n";
        let (t, _home) = demo_with_config(width, height, "banner", yaml);
        t.expect("workspaces");
        t.expect_gone("loading…");
        t.keys(&["/", "hotel", "Enter"]);
        t.expect("filter: hotel (1 of");
        t.keys(&["s"]);
        let refused = t.expect("no shell in hotel");
        assert!(
            refused.contains("Esc closes") && refused.contains("CrashLoopBackOff"),
            "{refused}"
        );
        t.keys(&["Escape"]);
        t.expect_gone("no shell in hotel");
        t.keys(&["Escape"]);
        t.expect_gone("filter: hotel");
        t.keys(&["/", "alpha", "Enter"]);
        t.expect("filter: alpha (1 of");
        t.keys(&["s"]);
        let banner = t.expect("exit (or Ctrl-D)");
        let flat = banner.replace('\n', "");
        assert!(
            flat.contains("context namzu-sim [SIM]")
                && flat.contains("pod namzu-ws-alpha")
                && flat.contains("container agent"),
            "{banner}"
        );
        t.keys(&["exit", "Enter"]);
        t.expect("the shell ended");
        t.keys(&["q"]);
        t.expect("NAMZU-EXITED 0");
    }
}

/// The YAML view searches as the log pane does: `/` types, Enter goes to the first match from the
/// top, `n` forward, `N` back (wrapping), the title says which match.
#[test]
fn the_yaml_view_searches_as_the_log_pane_does() {
    if tool_missing("tmux", "YAML search") {
        return;
    }
    for (width, height) in SIZES {
        let (t, _home) = one_cluster_demo(width, height, "yamlsearch");
        t.keys(&["/", "alpha", "Enter"]);
        t.expect("filter: alpha (1 of");
        t.keys(&["y"]);
        t.expect("apiVersion: agents.x-k8s.io");
        t.keys(&["/"]);
        t.expect("search: ▏");
        // sandbox.namzu.ai/… : the holder epoch, the mode's time, the hash, the template label
        t.keys(&["namzu.ai/", "Enter"]);
        let first = t.expect("match 1 of");
        let total: String = first
            .split("match 1 of ")
            .nth(1)
            .map(|r| r.chars().take_while(char::is_ascii_digit).collect())
            .unwrap_or_default();
        assert!(total.parse::<u32>().unwrap_or(0) >= 3, "{first}");
        t.keys(&["n"]);
        t.expect("match 2 of");
        t.keys(&["N"]);
        t.expect("match 1 of");
        t.keys(&["N"]);
        t.expect(&format!("match {total} of {total}"));
        t.keys(&["/", "no-such-text", "Enter"]);
        t.expect("no line holds");
        t.keys(&["q"]);
        t.expect_gone("YAML");
        t.keys(&["q"]);
        t.expect("NAMZU-EXITED");
    }
}

/// The screen line a workspace's row is on.
fn line_of(screen: &str, id: &str) -> Option<usize> {
    screen
        .lines()
        .position(|l| l.split_whitespace().next().is_some_and(|w| w == id) || l.contains(&format!(" {id} ")))
}

/// After a write the row acted on stays where it was and the cursor on it, though its new state
/// sorts it elsewhere: nothing jumps under the cursor.
#[test]
fn rows_do_not_jump_after_a_write() {
    if tool_missing("tmux", "rows after a write") {
        return;
    }
    for (width, height) in SIZES {
        let (t, _home) = one_cluster_demo(width, height, "nojump");
        t.keys(&[":", "filter ns:agents state:Running", "Enter"]);
        // the eight running rows of agents, as the list has them once it is whole
        t.expect("filter: ns:agents state:Running (8 of 41)");
        t.keys(&[":", "sort state", "Enter"]);
        t.expect("sort: state");
        // alpha bravo charlie nomad romeo topaz vapor zulu: topaz is the sixth
        for _ in 0..5 {
            t.keys(&["j"]);
        }
        let before = t.expect("topaz");
        let at = line_of(&before, "topaz").unwrap();
        t.keys(&["S"]);
        t.expect("Tab switch");
        // Enter only once the confirmation read the row (before, it sends nothing)
        t.expect_gone("reading…");
        t.keys(&["Tab"]);
        t.keys(&["Enter"]);
        let after = t.expect("suspended confirmed");
        let after = if after.lines().nth(at).is_some_and(|l| l.contains("Suspended")) {
            after
        } else {
            t.expect("Suspended  Suspended")
        };
        assert_eq!(
            line_of(&after, "topaz"),
            Some(at),
            "topaz stays on its line:\n{before}\n{after}"
        );
        assert_eq!(line_of(&after, "vapor"), Some(at + 1), "{after}");
        // the cursor is still on it
        t.keys(&["Enter"]);
        t.expect("topaz (agents)");
        t.keys(&["Escape"]);
        t.expect_gone("topaz (agents)");
        t.keys(&["q"]);
        t.expect("NAMZU-EXITED");
    }
}

/// The sorted column is never the one a narrow terminal drops; a wide one gives its free width
/// to the columns that would be cut.
#[test]
fn the_sorted_column_stays_and_wide_columns_take_the_room() {
    if tool_missing("tmux", "the sorted column") {
        return;
    }
    for (width, height) in SIZES {
        let (t, _home) = one_cluster_demo(width, height, "sortcol");
        let plain = t.expect("DIAGNOSIS");
        assert!(!plain.contains("MODE-CHANGED"), "{plain}");
        t.keys(&[":", "sort mode-changed", "Enter"]);
        let sorted = t.expect("MODE-CHANGED▲");
        assert!(sorted.contains("DIAGNOSIS") && sorted.contains("EPOCH"), "{sorted}");
        t.keys(&["q"]);
        t.expect("NAMZU-EXITED");
    }
    let (t, _home) = one_cluster_demo(200, 50, "widecol");
    // the provisional rows (while loading) carry no diagnosis yet: wait until the list is whole
    t.expect("wren");
    t.expect_gone("loading…");
    let wide = t.expect("foreign-egress-pol");
    assert!(
        wide.contains("foreign-egress-policy") && !wide.contains("foreign-egress-pol…"),
        "{wide}"
    );
    assert!(wide.contains("controller-reason:EgressPolicyPending"), "{wide}");
    t.keys(&["q"]);
    t.expect("NAMZU-EXITED");
}

/// The footer's last line.
fn footer(screen: &str) -> String {
    screen
        .lines()
        .rev()
        .find(|l| l.contains("? help"))
        .unwrap_or_default()
        .to_string()
}

/// The footer hints the keys that apply to the row under the cursor: at 200 columns `h` always
/// (a row is selected), `w` once this session sent something; S on a Running row, R on a
/// Suspended one. At 80 and 120 columns it keeps find, sort, help and quit first.
#[test]
fn the_footer_hints_h_and_w_where_they_apply() {
    if tool_missing("tmux", "the footer's hints") {
        return;
    }
    for (width, height) in SIZES {
        let (t, _home) = one_cluster_demo(width, height, "footer");
        let f = footer(&t.expect("? help"));
        assert!(
            f.contains("/ filter") && f.contains("o sort") && f.contains("q quit"),
            "{f}"
        );
        assert!(f.chars().count() <= usize::from(width), "{f}");
        t.keys(&["q"]);
        t.expect("NAMZU-EXITED");
    }
    let (t, _home) = one_cluster_demo(200, 50, "footer200");
    t.keys(&["/", "alpha", "Enter"]);
    let f = footer(&t.expect("filter: alpha (1 of"));
    assert!(
        f.contains("h history") && f.contains("S suspend") && !f.contains("R resume"),
        "{f}"
    );
    assert!(!f.contains("w sent"), "nothing sent yet: {f}");
    t.keys(&["S"]);
    t.expect("Tab switch");
    t.expect_gone("reading…");
    t.keys(&["Tab"]);
    t.keys(&["Enter"]);
    t.expect("suspended confirmed");
    let f = footer(&t.expect("w sent"));
    assert!(
        f.contains("h history") && f.contains("R resume") && !f.contains("S suspend"),
        "{f}"
    );
    t.keys(&["q"]);
    t.expect("NAMZU-EXITED");
}

/// The README's triage tasks in the TUI, each from the list as it opens (no filter, no mark): the
/// keys pressed and what the screen then shows. A key name (`Enter`, `Escape`, `Space`, `Tab`) is
/// one keystroke, a word one per letter.
const TRIAGE: &[(&str, &[&str], &str)] = &[
    ("every broken one", &["p"], "problems only"),
    (
        "why hotel is broken, and its next step",
        &["/", "hotel", "Enter", "Enter"],
        "Next step",
    ),
    (
        "hotel's crashed instance's log",
        &["/", "hotel", "Enter", "l", "p"],
        "previous instan",
    ),
    (
        "hotel's timeline and start-up",
        &["/", "hotel", "Enter", "h"],
        "history of hotel",
    ),
    ("a shell in alpha", &["/", "alpha", "Enter", "s"], "exit (or Ctrl-D)"),
    (
        "alpha's port 8080 on localhost",
        &["/", "alpha", "Enter", "f"],
        "forwarding 127.0.0.1:",
    ),
    (
        "wake drifted delta onto its template",
        &["/", "delta", "Enter", "F", "Tab", "Enter"],
        "pod template refreshed",
    ),
    ("what this session sent", &["w"], "what was sent (this session)"),
    (
        "the logs of two broken ones at once",
        &[
            "/", "hotel", "Enter", "Space", "Escape", "/", "golf", "Enter", "Space", "l",
        ],
        "logs of 2 marked workspaces",
    ),
];

/// Keystrokes of `keys`: a named key is one, a word one per character.
fn keystrokes(keys: &[&str]) -> usize {
    keys.iter()
        .map(|k| match *k {
            "Enter" | "Escape" | "Space" | "Tab" => 1,
            word => word.chars().count(),
        })
        .sum()
}

/// The keys as the README writes them.
fn written(keys: &[&str]) -> String {
    keys.iter()
        .map(|k| match *k {
            "Enter" => "⏎".to_string(),
            "Escape" => "Esc ".to_string(),
            "Space" => "␣".to_string(),
            "Tab" => "⇥".to_string(),
            word => word.to_string(),
        })
        .collect::<String>()
}

/// Back to the list as it opened: every popup closed, the filter cleared, every row shown.
fn back_to_list(t: &Tmux) {
    for _ in 0..6 {
        let now = t.screen();
        let popup = now.lines().find(|l| l.contains('┌')).map(str::to_string);
        match popup {
            Some(line) => {
                t.keys(&["Escape"]);
                t.expect_gone(line.trim());
            }
            None if now.contains("problems only") => {
                t.keys(&["p"]);
                t.expect_gone("problems only");
            }
            None if now.contains("filter: ") => {
                t.keys(&["Escape"]);
                t.expect_gone("filter: ");
            }
            None => return,
        }
    }
}

/// Each triage task in the demo at 80×24 and 120×35, by the keys the README's table counts: the
/// screen each leads to, and the table's numbers are these.
#[test]
fn the_readme_counts_the_keystrokes_of_each_triage_task() {
    if tool_missing("tmux", "triage keystrokes") || tool_missing("kubectl", "triage keystrokes") {
        return;
    }
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    for (task, keys, _) in TRIAGE {
        let row = format!("| {task} | `{}` | {} |", written(keys), keystrokes(keys));
        assert!(readme.contains(&row), "the README's triage table lacks:\n{row}");
    }
    for (width, height) in SIZES {
        let (t, _home) = one_cluster_demo(width, height, "keystrokes");
        t.expect("41 workspaces");
        for (task, keys, shows) in TRIAGE {
            for k in *keys {
                t.keys(&[k]);
                // each key after the screen the one before it makes (a key after Escape would
                // read as Alt-key)
                match *k {
                    "Escape" => drop(t.expect_gone("filter: ")),
                    // the confirmation reads the row afresh before Tab and Enter
                    "F" => {
                        t.expect("Tab switch");
                        t.expect_gone("reading…");
                    }
                    _ => {}
                }
            }
            let screen = t.expect(shows);
            assert!(screen.contains(shows), "{task}");
            if *task == "a shell in alpha" {
                t.keys(&["exit", "Enter"]);
                t.expect("the shell ended");
            }
            back_to_list(&t);
        }
        t.keys(&["q"]);
        t.expect_gone("logs of 2");
        t.keys(&["q"]);
        t.expect("NAMZU-EXITED");
    }
}
