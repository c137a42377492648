//! End to end: the real binary's demo in a real terminal (tmux): filter, detail, suspend, quit,
//! and the terminal is restored; a fleet of clusters in one view. Skipped, saying so, where tmux
//! is not installed.

use crate::support::*;
use namzu_sim::faults::Fault;
use std::process::Command;
use std::time::Duration;

#[test]
fn demo_in_a_real_terminal() {
    if tool_missing("tmux", "terminal end-to-end") {
        return;
    }
    let t = Tmux::new("demo");
    let home = tempfile::tempdir().unwrap();
    let bin = bin_line(home.path(), &[]);
    // one cluster: the demo as it was before fleets
    let script = format!("{bin} demo --clusters 1; echo NAMZU-EXITED; sleep 120");
    t.cmd(&["new-session", "-d", "-s", t.session, "-x", "160", "-y", "45", &script]);
    t.expect("41 workspaces");
    t.keys(&["/", "alpha", "Enter"]);
    t.expect("filter: alpha (1 of 41)");
    t.keys(&["Enter"]);
    t.expect("Holder epoch:    7 (annotation \"7\")");
    // (Escape then a key at once reads as Alt-key: the screen first)
    t.keys(&["Escape"]);
    t.expect("/ filter · ");
    t.keys(&["S"]);
    // the dialog opens at once, consequences first; `v` shows the epoch and the request
    t.expect("v: show the epoch");
    t.keys(&["v"]);
    let confirm = t.expect("keeps holder epoch 7");
    assert!(
        confirm.contains("keeps holder epoch 7") && confirm.contains("\"op\": \"test\""),
        "{confirm}"
    );
    t.keys(&["Tab", "Enter"]);
    t.expect("suspended confirmed");
    // the row follows at the re-list the confirmation starts
    t.expect("Suspended  Suspended");
    t.keys(&["q"]);
    let after = t.expect("NAMZU-EXITED");
    assert!(
        !after.contains("kubectl-namzu  context"),
        "the TUI is gone from the screen:\n{after}"
    );
    assert_eq!(
        t.cmd(&["display-message", "-p", "-t", t.session, "#{alternate_on}"])
            .trim(),
        "0",
        "left the alternate screen"
    );
    // raw mode is off: the shell's terminal echoes what is typed again
    t.keys(&["echo restored", "Enter"]);
    t.expect("restored");
}

/// SIGTERM, SIGHUP and SIGINT sent to the TUI leave the terminal as `q` does: the alternate
/// screen off, the cursor shown, the line discipline cooked (echo, icanon, isig).
#[test]
fn signals_restore_the_terminal() {
    if tool_missing("tmux", "terminal signal") {
        return;
    }
    let home = tempfile::tempdir().unwrap();
    let bin = bin_line(home.path(), &[]);
    for signal in ["TERM", "HUP", "INT"] {
        let t = Tmux::new("demo");
        // the demo's fleet of three, each context under the demo's safety rules
        let script = format!("{bin} demo; echo NAMZU-EXITED; stty -a; sleep 120");
        t.cmd(&["new-session", "-d", "-s", t.session, "-x", "160", "-y", "45", &script]);
        t.expect("3 contexts");
        let fleet = t.expect("staging [STG]");
        assert!(
            fleet.contains("prod-eu-west [PROD]") && fleet.contains("prod-us-east [PROD]"),
            "{fleet}"
        );
        let shell = t.cmd(&["display-message", "-p", "-t", t.session, "#{pane_pid}"]);
        let children = Command::new("pgrep")
            .args(["-P", shell.trim()])
            .output()
            .expect("pgrep runs");
        let pid = String::from_utf8_lossy(&children.stdout)
            .lines()
            .next()
            .unwrap_or("")
            .to_string();
        assert!(!pid.is_empty(), "the TUI's pid under shell {shell}");
        Command::new("kill")
            .args([&format!("-{signal}"), &pid])
            .status()
            .unwrap();
        let after = t.expect("NAMZU-EXITED");
        assert!(
            !after.contains("kubectl-namzu  context"),
            "SIG{signal}: the TUI is gone:\n{after}"
        );
        let flags = t.cmd(&[
            "display-message",
            "-p",
            "-t",
            t.session,
            "#{alternate_on} #{cursor_flag}",
        ]);
        assert_eq!(flags.trim(), "0 1", "SIG{signal}: alternate screen off, cursor shown");
        let settings = t.expect("icanon");
        let words: Vec<&str> = settings.split_whitespace().collect();
        for flag in ["echo", "icanon", "isig", "icrnl", "opost"] {
            assert!(
                words.contains(&flag),
                "SIG{signal}: the terminal is not restored ({flag} missing):\n{settings}"
            );
        }
    }
}

/// `delete` on a terminal asks for the id; the delete then sent is of the object and epoch that
/// were shown: a host that takes the workspace over while the user types is fenced out.
#[test]
fn a_typed_delete_is_bound_to_what_was_shown() {
    use namzu_sim::resources::SANDBOXES;
    let Some((_runtime, t, tmux)) = in_tmux("typed-delete", "del", start_demo()) else {
        return;
    };
    let script = format!("{} -n agents delete alpha; echo EXIT=$?; sleep 60", t.line(&[]));
    tmux.start(200, 20, &script);
    let prompt = tmux.expect("Type the workspace id (alpha)");
    assert!(prompt.contains("holder epoch 7"), "{prompt}");
    // the context is named even when there is one: a typed id is asked where a mistake costs most
    assert!(prompt.contains("(context namzu-sim)"), "{prompt}");
    // another host takes over while the user types
    t.sim.modify(&SANDBOXES, "agents", "namzu-ws-alpha", |o| {
        o["metadata"]["annotations"]["sandbox.namzu.ai/holder-epoch"] = serde_json::json!("8");
    });
    tmux.keys(&["alpha", "Enter"]);
    let done = tmux.expect("EXIT=");
    assert!(done.contains("EXIT=3"), "{done}");
    assert!(done.contains("held at epoch 8"), "{done}");
    assert!(
        t.sim.get(&SANDBOXES, "agents", "namzu-ws-alpha").is_some(),
        "not deleted"
    );
}

/// The TUI on watches in a real terminal: another client's patch shows within a second, a
/// stopped server is said in the header (the rows stay), and the same port serving again
/// brings it back live with the change made meanwhile.
#[test]
fn the_live_tui_follows_changes_and_outages() {
    use namzu_sim::resources::SANDBOXES;
    let Some((runtime, mut t, tmux)) = in_tmux("live TUI", "live", start_demo()) else {
        return;
    };
    let script = format!(
        "{} --kubeconfig {} -n research; sleep 60",
        bin_line(&t.home(), &[]),
        t.sim.kubeconfig().display()
    );
    tmux.start(200, 20, &script);
    tmux.expect("● live:");
    let set_epoch = |sim: &namzu_sim::Sim, epoch: &str| {
        sim.modify(&SANDBOXES, "research", "namzu-ws-tango", |o| {
            o["metadata"]["annotations"]["sandbox.namzu.ai/holder-epoch"] = serde_json::json!(epoch);
        });
    };
    set_epoch(&t.sim, "77");
    // how soon is a benchmark's question (benches/live.rs); here: it shows without a re-list
    tmux.expect(" 77 ");
    runtime.block_on(t.sim.stop());
    let down = tmux.expect("reconnecting");
    assert!(
        down.contains("tango") && down.contains(" 77 "),
        "the rows stay:\n{down}"
    );
    set_epoch(&t.sim, "78");
    runtime.block_on(t.sim.restart()).unwrap();
    tmux.expect(" 78 ");
    tmux.expect("● live:");
}

/// The TUI over two clusters in a real terminal: both contexts' rows in one table, a suspend on
/// one context's row sent to that cluster only, and a cluster that goes away said in its status
/// while the other's rows stay.
#[test]
fn a_fleet_in_a_real_terminal() {
    if tool_missing("tmux", "fleet TUI") {
        return;
    }
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (mut east, west) = runtime.block_on(async { (crate::support::start().await, crate::support::start().await) });
    let dir = east.dir.path();
    let kubeconfig = dir.join("fleet.kubeconfig");
    namzu_sim::write_fleet_kubeconfig(&kubeconfig, &[("east", &east.sim), ("west", &west.sim)]).unwrap();
    let rules = dir.join("config.yaml");
    std::fs::write(&rules, "contexts:\n  - {context: east, label: PROD, colour: red}\n").unwrap();
    let tmux = Tmux::new("fleet");
    let script = format!(
        "{} --kubeconfig {} --all-contexts -A; sleep 60",
        bin_line(
            &dir.join("home"),
            &[
                ("KUBECTL_NAMZU_CONFIG".into(), rules.display().to_string()),
                (
                    "KUBECTL_NAMZU_AUDIT_LOG".into(),
                    dir.join("audit.jsonl").display().to_string()
                ),
            ]
        ),
        kubeconfig.display()
    );
    tmux.start(160, 30, &script);
    tmux.expect("2 contexts");
    let both = tmux.expect("6 workspaces");
    for context in ["east [PROD] ", "west "] {
        let row = both
            .lines()
            .find(|l| l.trim_start().starts_with(context) && l.contains(" awake "));
        assert!(row.is_some(), "{context}'s awake in\n{both}");
    }
    // west only, then its awake: suspended there
    tmux.keys(&["c"]);
    tmux.expect("all contexts");
    tmux.keys(&["Down", "Down", "Enter"]);
    tmux.expect("showing west only");
    tmux.keys(&["/", "awake", "Enter", "S"]);
    tmux.expect("v: show the epoch");
    tmux.keys(&["v"]);
    tmux.expect("keeps holder epoch 2");
    tmux.keys(&["Tab", "Enter"]);
    let patches = |t: &crate::support::TestSim| t.sim.requests().into_iter().filter(|r| r.method == "PATCH").count();
    crate::support::wait_for(Duration::from_secs(20), || match patches(&west) {
        0 => Err(format!("west never got its PATCH:\n{}", tmux.screen())),
        _ => Ok(()),
    });
    assert_eq!(patches(&east), 0, "nothing sent to east");
    tmux.expect("west/awake: suspended");
    // every context again; east goes away: its status says so, the rows stay
    // (Escape then a key at once reads as Alt-key: the screen first)
    tmux.keys(&["Escape"]);
    tmux.expect("3 workspaces in west");
    tmux.keys(&["c", "Up", "Up", "Enter"]);
    tmux.expect("showing every context");
    runtime.block_on(east.sim.stop());
    let down = tmux.expect("⚠ reconnecting");
    let strip = down.lines().nth(1).unwrap_or_default();
    assert!(
        strip.contains("east [PROD] 3 ⚠ reconnecting") && strip.contains("west 3 ● live"),
        "{down}"
    );
    assert!(down.contains("6 workspaces"), "the last good rows stay:\n{down}");
}

/// Triage without leaving the UI, in a real terminal: a crash-looping workspace's log pane
/// (streaming, search), its history with the start-up waterfall, and a shell in a running
/// workspace's pod that comes back to the same row. Keys that could merge (Escape, then a key)
/// are never sent back to back: each waits for the screen the one before it makes.
#[test]
fn triage_in_a_real_terminal() {
    if tool_missing("tmux", "triage") {
        return;
    }
    let kubectl = Command::new("kubectl").args(["version", "--client"]).output().is_ok();
    assert!(
        kubectl || std::env::var("CI").as_deref() != Ok("true"),
        "CI=true: kubectl must be on PATH for the shell (s)"
    );
    let t = Tmux::new("triage");
    let home = tempfile::tempdir().unwrap();
    let bin = bin_line(home.path(), &[]);
    t.start(
        160,
        45,
        &format!("{bin} demo --clusters 1; echo NAMZU-EXITED; sleep 120"),
    );
    t.expect("41 workspaces");
    t.keys(&["/", "hotel", "Enter"]);
    t.expect("filter: hotel (1 of 41)");
    // l: the crash loop's log, and the pane says it waits for the next start
    t.keys(&["l"]);
    t.expect("startup failed: no API key");
    t.expect("is not running (waiting: CrashLoopBackOff)");
    t.keys(&["/", "fatal", "Enter"]);
    t.expect("match 1 of 1");
    t.keys(&["q"]);
    t.expect("filter: hotel (1 of 41)");
    // h: one timeline, and where the start-up time went
    t.keys(&["h"]);
    let history = t.expect("Start-up of the current pod");
    assert!(
        history.contains("BackOff") && history.contains("SandboxPodCreated"),
        "{history}"
    );
    t.keys(&["q"]);
    t.expect("filter: hotel (1 of 41)");
    if !kubectl {
        eprintln!("SKIPPED: kubectl is not on PATH; the shell half of the triage test did not run");
        return;
    }
    t.keys(&["Escape"]);
    t.expect("41 workspaces");
    t.keys(&["/", "alpha", "Enter"]);
    t.expect("filter: alpha (1 of 41)");
    // s: a shell in alpha's own pod, the UI stepped aside
    t.keys(&["s"]);
    t.expect("$");
    t.keys(&["hostname", "Enter"]);
    t.expect("namzu-ws-alpha");
    t.keys(&["exit", "Enter"]);
    let back = t.expect("the shell ended");
    assert!(
        back.contains("filter: alpha (1 of 41)"),
        "back on the same row:\n{back}"
    );
    // a Suspended workspace: no shell, and the way to wake it
    t.keys(&["Escape"]);
    t.expect("41 workspaces");
    t.keys(&["/", "delta", "Enter"]);
    t.expect("filter: delta (1 of 41)");
    t.keys(&["s"]);
    t.expect("press R to resume it");
    // the refusal stays until dismissed
    t.keys(&["q"]);
    t.expect_gone("no shell in delta");
    t.keys(&["q"]);
    t.expect("NAMZU-EXITED");
}

/// The ids a `list -o json` printed.
fn listed_ids(out: &std::process::Output) -> Vec<String> {
    let mut ids: Vec<String> = listed(out)
        .iter()
        .filter_map(|i| i["id"].as_str().map(str::to_string))
        .collect();
    ids.sort();
    ids
}

/// The rows the TUI's table shows (its first column, under WORKSPACE).
fn shown_ids(screen: &str) -> Vec<String> {
    let mut lines = screen.lines().skip_while(|l| !l.contains("WORKSPACE"));
    lines.next();
    let mut ids: Vec<String> = lines
        .take_while(|l| l.starts_with("  ") && !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect();
    ids.sort();
    ids
}

/// Finding like k9s, in a real terminal: the filter's field terms select exactly what the CLI's
/// selectors select on the same data; the problems toggle counts its rows; `:ns` switches with
/// a fuzzy name; an unbound key says so; the help stops at its end.
#[test]
fn find_and_move_like_k9s() {
    let Some((runtime, t, tmux)) = in_tmux("k9s find", "find", start_demo()) else {
        return;
    };
    let script = format!(
        "{} --kubeconfig {} -n agents; echo NAMZU-EXITED; sleep 60",
        bin_line(&t.home(), &[crate::support::now_env(&t)]),
        t.sim.kubeconfig().display()
    );
    tmux.start(100, 40, &script);
    tmux.expect("32 workspaces");
    for (term, flag, value) in [
        ("drift:drifted", "--drift", "drifted"),
        ("diag:crash-loop,image-pull", "--diagnosis", "crash-loop,image-pull"),
        ("state:Suspended", "--state", "Suspended"),
    ] {
        let cli = runtime.block_on(crate::support::namzu(
            &t,
            &["list", "-n", "agents", "-o", "json", flag, value],
        ));
        assert!(cli.status.success(), "{}", String::from_utf8_lossy(&cli.stderr));
        let want = listed_ids(&cli);
        assert!(!want.is_empty(), "{flag} {value} selects rows");
        tmux.keys(&["/", term, "Enter"]);
        let screen = tmux.expect(&format!("({} of 32)", want.len()));
        assert_eq!(shown_ids(&screen), want, "{term}:\n{screen}");
        tmux.keys(&["Escape"]);
        tmux.expect(" 32 workspaces");
    }
    // negation: every row but the drifted ones
    tmux.keys(&["/", "!drift:drifted", "Enter"]);
    tmux.expect("filter: !drift:drifted (");
    tmux.keys(&["Escape"]);
    tmux.expect(" 32 workspaces");
    // problems only: the count in the header is the rows shown
    tmux.keys(&["p"]);
    let problems = tmux.expect("problems only:");
    let count: usize = problems
        .split("problems only: ")
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .expect("the status counts the problems");
    assert!(count > 0, "{problems}");
    assert!(problems.contains(&format!("{count} of 32 workspaces")), "{problems}");
    tmux.keys(&["p"]);
    tmux.expect("every row");
    // an unbound key says so
    tmux.keys(&["x"]);
    tmux.expect("no action on x · ? for help");
    // the help: PgDn past its end keeps the last line in view; End and Home too
    tmux.keys(&["?"]);
    tmux.expect("┌ keys");
    // (the keys, then every column and diagnosis word: the last line is the last diagnosis's)
    for _ in 0..16 {
        tmux.keys(&["PgDn"]);
    }
    let end = tmux.expect("nothing else is wrong)");
    tmux.keys(&["Home"]);
    tmux.expect("↑/k ↓/j PgUp PgDn Home/g End/G  move");
    tmux.keys(&["G"]);
    let again = tmux.expect("nothing else is wrong)");
    let popup = |s: &str| {
        s.lines()
            .filter(|l| l.starts_with('│'))
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    assert_eq!(popup(&end), popup(&again), "End lands where PgDn stopped");
    assert!(
        popup(&end).last().is_some_and(|l| l.contains("nothing else is wrong)")),
        "the last line is the box's last:\n{end}"
    );
    tmux.keys(&["q"]);
    tmux.expect("p problems");
    // :ns with a fuzzy name, completed by Tab
    tmux.keys(&[":", "ns rsch", "Tab"]);
    tmux.expect(":ns research █");
    tmux.keys(&["Enter"]);
    tmux.expect("namespace research");
    tmux.expect("6 workspaces");
    tmux.keys(&[":", "q", "Enter"]);
    tmux.expect("NAMZU-EXITED");
}

/// The fleet at 80×24 keeps the columns the tool exists for, the footer keeps find, sort and
/// help; a typed confirmation confirms with Enter once the id is typed, and cancelling says so.
#[test]
fn the_fleet_at_80_columns_and_a_typed_confirmation() {
    if tool_missing("tmux", "k9s fleet") {
        return;
    }
    let t = Tmux::new("narrow");
    let home = tempfile::tempdir().unwrap();
    let bin = bin_line(home.path(), &[]);
    t.start(80, 24, &format!("{bin} demo; echo NAMZU-EXITED; sleep 120"));
    t.expect("3 contexts");
    let fleet = t.expect("79 workspaces");
    let header = fleet.lines().find(|l| l.contains("WORKSPACE")).unwrap_or_default();
    for column in ["STATE", "EPOCH", "DRIFT", "DIAGNOSIS"] {
        assert!(header.contains(column), "{column} at 80 columns:\n{fleet}");
    }
    let footer = fleet.lines().rev().nth(1).unwrap_or_default();
    for hint in ["/ filter", "o sort", "? help"] {
        assert!(footer.contains(hint), "{hint} in the footer:\n{fleet}");
    }
    // the view opens at the top: the first context's first row
    let first = fleet
        .lines()
        .skip_while(|l| !l.contains("WORKSPACE"))
        .nth(1)
        .unwrap_or_default();
    assert!(first.contains("prod-e") && first.contains("alpha"), "{fleet}");
    // prod-eu-west asks for the id typed: typed in full, Enter confirms
    t.keys(&["/", "ctx:prod-eu* alpha", "Enter"]);
    t.expect("(1 of 79)");
    t.keys(&["S"]);
    t.expect("Suspending stops the pod");
    t.expect("Type \"alpha\"");
    t.keys(&["alpha"]);
    t.expect("Type \"alpha\" to enable Suspend: alpha");
    // Enter once the confirmation has read the row (before, it sends nothing: "not read yet")
    t.expect_gone("reading…");
    t.keys(&["Enter"]);
    t.expect("suspended");
    t.expect("Suspended  7");
    // the suspend's wait ends (its line would otherwise replace the cancel's below)
    t.expect("suspended confirmed");
    // a cancelled confirmation says so
    t.keys(&["R"]);
    t.expect("Resuming starts a pod again");
    t.keys(&["Escape"]);
    t.expect("cancelled");
    // three of staging's running rows (no typing there): the header counts the marks, the
    // status says "3 of 3 suspended", and the rows stay where they were under the filter
    t.keys(&["Escape"]);
    t.expect(" 79 workspaces");
    t.keys(&["/", "ctx:st* run", "Enter"]);
    let before = t.expect("filter: ctx:st* run (");
    let first_three: Vec<String> = shown_ids(&before).into_iter().take(3).collect();
    t.keys(&["Space", "Space", "Space"]);
    t.expect("✓ 3 marked");
    t.keys(&["S"]);
    t.expect("Suspend 3 workspaces");
    t.expect_gone("reading…");
    t.keys(&["Tab", "Enter"]);
    let after = t.expect("3 of 3 suspended");
    for id in &first_three {
        assert!(after.contains(id.as_str()), "{id} stays in view:\n{after}");
    }
    t.keys(&["q"]);
    t.expect("NAMZU-EXITED");
}

/// A single-context session switches to the kubeconfig's other contexts: `:ctx` completes and
/// opens one (its rows, its own rules: here read-only with its badge, which flags given for the
/// first context do not lift), the typed `c` picker
/// opens another; a name the kubeconfig lacks is one line.
#[test]
fn a_single_context_session_switches_context() {
    if tool_missing("tmux", "context switch") {
        return;
    }
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (east, west) = runtime.block_on(async { (crate::support::start().await, crate::support::start().await) });
    let dir = east.dir.path();
    let kubeconfig = dir.join("two.kubeconfig");
    namzu_sim::write_fleet_kubeconfig(&kubeconfig, &[("east", &east.sim), ("west", &west.sim)]).unwrap();
    let rules = dir.join("config.yaml");
    std::fs::write(
        &rules,
        "contexts:\n  - {context: west, label: WESTPROD, colour: red, readOnly: true, confirm: typed}\n",
    )
    .unwrap();
    let tmux = Tmux::new("switch");
    let script = format!(
        "{} --kubeconfig {} --context east --write --confirm default tui -A; sleep 60",
        bin_line(
            &dir.join("home"),
            &[
                ("KUBECTL_NAMZU_CONFIG".into(), rules.display().to_string()),
                (
                    "KUBECTL_NAMZU_AUDIT_LOG".into(),
                    dir.join("audit.jsonl").display().to_string()
                ),
            ]
        ),
        kubeconfig.display()
    );
    tmux.start(160, 30, &script);
    tmux.expect("3 workspaces");
    let reads = |t: &crate::support::TestSim| t.sim.requests().len();
    assert_eq!(reads(&west), 0, "west is not read before it is asked for");
    // `:ctx w` Tab completes to west; Enter opens it with its own rules
    tmux.keys(&[":", "ctx w", "Tab"]);
    tmux.expect(":ctx west");
    tmux.keys(&["Enter"]);
    let on_west = tmux.expect("context west");
    // the flags were given for east: they lift none of west's rules, and the status says so
    tmux.expect("--write and --confirm default would loosen context \"west\"");
    tmux.expect("WESTPROD");
    assert!(reads(&west) > 0, "west was read:\n{on_west}");
    tmux.expect("3 workspaces");
    // its rule holds: a write is refused there
    tmux.keys(&["S"]);
    tmux.expect("read-only");
    // the typed picker: letters narrow it, Enter picks the best match
    tmux.keys(&["c"]);
    tmux.expect("all contexts");
    tmux.keys(&["ea"]);
    tmux.expect("contexts matching \"ea\": 1");
    tmux.keys(&["Enter"]);
    tmux.expect("context east");
    tmux.expect("3 workspaces");
    // east has no badge (west's goes once east's rules are in, within the wait)
    tmux.expect_gone("WESTPROD");
    tmux.keys(&[":", "ctx nowhere", "Enter"]);
    tmux.expect("no context \"nowhere\" in the kubeconfig");
}

/// A fleet opens with the contexts that answer: one whose API server hangs is shown connecting,
/// not a blank terminal until it times out (the hardening issue's fleet finding).
#[test]
fn a_fleet_opens_without_waiting_for_its_slowest_context() {
    if tool_missing("tmux", "slow context") {
        return;
    }
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (fast, slow) = runtime.block_on(async { (crate::support::start().await, crate::support::start().await) });
    slow.sim.add_fault(namzu_sim::faults::Fault::new(
        Some("GET"),
        "/version",
        namzu_sim::faults::FaultAction::Hang,
    ));
    let dir = fast.dir.path();
    let kubeconfig = dir.join("fleet.kubeconfig");
    namzu_sim::write_fleet_kubeconfig(&kubeconfig, &[("fast", &fast.sim), ("slow", &slow.sim)]).unwrap();
    let tmux = Tmux::new("slow");
    // the request timeout is far longer than the test waits: the UI must not wait for it
    let script = format!(
        "{} --kubeconfig {} --request-timeout 5m tui --all-contexts -A; sleep 60",
        bin_line(&dir.join("home"), &[]),
        kubeconfig.display()
    );
    tmux.start(160, 30, &script);
    let screen = tmux.expect("awake");
    assert!(
        screen.contains("connecting"),
        "the slow context is shown connecting:\n{screen}"
    );
}

/// The one-cluster demo in a terminal of `width`×`height`, its list on screen; the binary's
/// home (its config and state) is the returned directory's.
pub(crate) fn one_cluster_demo(width: u16, height: u16, session: &'static str) -> (Tmux, tempfile::TempDir) {
    let t = Tmux::new(session);
    let home = tempfile::tempdir().unwrap();
    let bin = bin_line(home.path(), &[]);
    t.start(
        width,
        height,
        &format!("{bin} demo --clusters 1; echo NAMZU-EXITED; sleep 120"),
    );
    t.expect("workspaces");
    // the whole list, not the provisional rows shown while it loads (a row acted on before it
    // was read whole is refused: nothing sent)
    t.expect_gone("loading…");
    (t, home)
}

/// The log pane searches and filters as less does, at 80×24 and 120×35: `/` highlights and goes to
/// the newest match (`n` down, `N` up), `&` shows only the lines holding a text, `t` puts the
/// server's timestamp before each line. Each key waits for the screen the one before it makes.
#[test]
fn log_search_filter_and_timestamps_like_less() {
    if tool_missing("tmux", "log search") {
        return;
    }
    for (width, height) in [(80u16, 24u16), (120, 35)] {
        let (t, _home) = one_cluster_demo(width, height, "logsearch");
        // juliet's drain: two lines name its session s-81f2, two say it is draining
        t.keys(&["/", "juliet", "Enter"]);
        t.expect("filter: juliet (1 of");
        t.keys(&["l"]);
        t.expect("still draining");
        // a filter: only the lines holding the text, counted
        // (a followed Running pod logs a heartbeat every 2 s: the total grows, the filter's count not)
        t.keys(&["&", "s-81f2", "Enter"]);
        let filtered = t.expect("lines hold \"s-81f2\"");
        assert!(
            filtered.contains("streaming · 2 of ")
                && filtered.contains("session opened")
                && !filtered.contains("msg=\"ready\""),
            "only the lines holding the text:\n{filtered}"
        );
        // an empty filter shows every line again
        t.keys(&["&", "Enter"]);
        t.expect("every line");
        t.expect("msg=\"ready\"");
        // a search: Enter on the newest match, N up (older), n down (newer), wrapping
        t.keys(&["/", "draining", "Enter"]);
        t.expect("match 2 of 2");
        t.keys(&["N"]);
        t.expect("match 1 of 2");
        t.keys(&["n"]);
        t.expect("match 2 of 2");
        // the server's timestamps, on and off
        t.keys(&["t"]);
        let stamped = t.expect("timestamps on");
        assert!(
            stamped
                .lines()
                .any(|l| l.contains("Z level=warn msg=\"still draining\"")),
            "each line after its timestamp:\n{stamped}"
        );
        t.keys(&["t"]);
        t.expect("timestamps off");
        t.keys(&["q"]);
        t.expect("filter: juliet (1 of");
        t.keys(&["q"]);
        t.expect("NAMZU-EXITED");
    }
}

/// A history is read at 80×24 and at 120×35: the message stays whole (wrapped under its row,
/// columns dropped by priority, never cut to `crea…`), in the TUI's `h` pane and in
/// `kubectl namzu history` on a terminal.
#[test]
fn a_history_reads_at_80_and_120_columns() {
    if tool_missing("tmux", "history at 80 columns") {
        return;
    }
    for (width, height) in [(80u16, 24u16), (120, 35)] {
        let (t, _home) = one_cluster_demo(width, height, "history");
        t.keys(&["/", "hotel", "Enter"]);
        t.expect("filter: hotel (1 of");
        t.keys(&["h"]);
        let pane = t.expect("MESSAGE");
        let flat: String = pane.split_whitespace().collect::<Vec<_>>().join(" ");
        // the scheduler's message, its words whole across the wrapped lines (the box's edges apart)
        let words: String = flat.replace(" │ │ ", " ").replace("│", "");
        assert!(
            words.contains("Successfully assigned agents/namzu-ws-hotel to sim-node-1"),
            "the message reads whole at {width} columns:\n{pane}"
        );
        assert!(!pane.contains("crea…"), "{pane}");
        t.keys(&["q"]);
        t.expect("filter: hotel (1 of");
        t.keys(&["q"]);
        t.expect("NAMZU-EXITED");
    }
}

/// Issue 26: the TUI's quit waits for a write in flight; a second `q` abandons it — exit 1 with
/// the CLI's wording, its intent left in the audit log as "outcome unknown".
#[test]
fn a_second_q_in_the_tui_abandons_a_hung_write_with_its_outcome_unknown() {
    use namzu_sim::faults::FaultAction;
    let Some((runtime, t, tmux)) = in_tmux("the TUI's second-q test", "second-q", start_demo()) else {
        return;
    };
    t.sim
        .add_fault(Fault::new(Some("PATCH"), "namzu-ws-alpha", FaultAction::Hang));
    let script = format!("{} -n agents tui; echo EXIT=$?; sleep 60", t.line(&[]));
    tmux.start(200, 40, &script);
    tmux.expect("/ filter");
    tmux.keys(&["/", "alpha", "Enter"]);
    tmux.expect("filter: alpha");
    // the row and the list's own keys first: an S before the row is there selects nothing
    tmux.expect("alpha      Running");
    tmux.expect("S suspend");
    tmux.keys(&["S"]);
    // consequences first; `v` shows the epoch the write carries (its fresh read has come)
    tmux.expect("v: show the epoch");
    tmux.keys(&["v"]);
    tmux.expect("keeps holder epoch 7");
    tmux.keys(&["Tab", "Enter"]);
    wait_until("the PATCH came", std::time::Duration::from_secs(20), || {
        t.sim.requests().iter().any(|r| r.method == "PATCH")
    });
    tmux.keys(&["q"]);
    tmux.expect("waiting for 1 write(s) in flight");
    tmux.keys(&["q"]);
    let done = tmux.expect("EXIT=");
    assert!(done.contains("EXIT=1"), "{done}");
    assert!(
        done.contains("quit twice: the writes in flight were abandoned"),
        "{done}"
    );
    let o = runtime.block_on(run_audited(&t, &["audit"]));
    assert!(out(&o).contains("outcome unknown"), "{}", out(&o));
}
