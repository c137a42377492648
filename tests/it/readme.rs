//! Every `kubectl namzu …` command shown in README.md runs as shown against the simulated demo,
//! the fleet examples against the demo fleet's three clusters (the README says which ones need a
//! real cluster: none do). `demo` itself is left out: it would
//! start a second simulated cluster.

use crate::support::*;

fn readme_commands() -> Vec<String> {
    let text = std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let mut in_block = false;
    let mut out = Vec::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_block = !in_block && line.trim_start().starts_with("```sh");
            continue;
        }
        let line = line.trim();
        if in_block && line.starts_with("kubectl namzu ") && !line.contains(" demo") {
            out.push(line.split(" #").next().unwrap().trim().to_string());
        }
    }
    out
}

/// Words as a POSIX shell splits them: whitespace outside quotes; quotes removed.
fn shell_words(line: &str) -> Vec<String> {
    let (mut out, mut word, mut quote, mut started) = (Vec::new(), String::new(), None, false);
    for c in line.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                started = true;
            }
            (None, c) if c.is_whitespace() => {
                if started || !word.is_empty() {
                    out.push(std::mem::take(&mut word));
                }
                started = false;
            }
            (None, c) => word.push(c),
        }
    }
    if started || !word.is_empty() {
        out.push(word);
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_readme_example_runs() {
    let commands = readme_commands();
    assert!(commands.len() >= 8, "{commands:?}");
    let t = start_with(namzu_sim::scenario::DEMO, |c| {
        c.namespace = "agents".into();
        c.timing.grace = chrono::Duration::zero();
        c.timing.ready_delay = chrono::Duration::zero();
    })
    .await;
    // the fleet examples' other contexts: the demo fleet's, beside the demo as prod-eu-west (the
    // current context, so every other example reads it alone)
    let now = t.sim.now();
    let mut others = Vec::new();
    for (name, scenario) in namzu_sim::scenario::Scenario::demo_fleet(now, 3).into_iter().skip(1) {
        let mut config = namzu_sim::SimConfig::for_tests(&t.dir.path().join(format!("{name}.kubeconfig")));
        config.namespace = "agents".into();
        others.push((name, namzu_sim::Sim::start(config, &scenario).await.unwrap()));
    }
    let fleet = t.dir.path().join("fleet.kubeconfig");
    let mut members = vec![("prod-eu-west", &t.sim)];
    members.extend(others.iter().map(|(n, s)| (n.as_str(), s)));
    namzu_sim::write_fleet_kubeconfig(&fleet, &members).unwrap();
    let audit = t.dir.path().join("audit.jsonl").display().to_string();
    for command in commands {
        let split = shell_words(&command);
        let words: Vec<&str> = split.iter().map(String::as_str).skip(2).collect();
        let mut args = vec!["--kubeconfig".to_string(), fleet.display().to_string()];
        let mut skip_next = false;
        for w in words {
            if skip_next {
                skip_next = false;
                continue;
            }
            if w == "--kubeconfig" {
                skip_next = true; // the README's path is the served demo's; ours is this sim's
                continue;
            }
            args.push(w.to_string());
        }
        if args.iter().any(|a| a == "port-forward") {
            // a free local port: the README's may be taken on the machine running the tests
            if let Some(last) = args.last_mut().filter(|l| !l.contains(':')) {
                *last = format!(":{last}");
            }
            watch_until_first_line(&command, args).await;
            continue;
        }
        if args.iter().any(|a| a == "-w" || a == "--watch") {
            watch_until_first_line(&command, args).await;
            continue;
        }
        let o = namzu_env(args, vec![("KUBECTL_NAMZU_AUDIT_LOG".into(), audit.clone())]).await;
        assert!(
            o.status.success(),
            "README command failed: {command}\n{}{}",
            out(&o),
            err(&o)
        );
    }
}

/// A watch (or a port-forward) runs until Ctrl-C: it must print its first line (the list, the
/// address listened on), then end with exit 0 on SIGINT.
async fn watch_until_first_line(command: &str, args: Vec<String>) {
    use std::io::BufRead;
    use std::process::Stdio;
    let command = command.to_string();
    tokio::task::spawn_blocking(move || {
        let home = tempfile::tempdir().unwrap();
        let mut child = crate::support::bin(home.path())
            .args(&args)
            .env(namzu_clock::NOW_ENV, namzu_sim::TEST_START)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut first = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut first)
            .unwrap();
        assert!(!first.trim().is_empty(), "README watch printed nothing: {command}");
        sigint(&child);
        let status = child.wait().unwrap();
        assert_eq!(
            status.code(),
            Some(0),
            "README watch did not end with 0 on Ctrl-C: {command}"
        );
    })
    .await
    .unwrap();
}

/// The README's key table is the TUI's key table, row for row.
#[test]
fn the_readme_key_table_is_the_tui_key_table() {
    let text = std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let table: Vec<&str> = text
        .lines()
        .skip_while(|l| *l != "| key | does |")
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .collect();
    assert_eq!(table, namzu_tui::keys::readme_rows());
}
