//! The safety rules a context is written under (its rules file), decided once below both
//! front-ends: `--cluster`/`--user` reaching another cluster than the context's refused by the CLI,
//! the TUI's write path and the TUI binary; an odd rules path an error, never fail-open.

use crate::support::*;
use namzu_domain::safety::{ContextRules, Overrides, SafetyConfig};
use namzu_engine::cluster::audit::AuditLog;
use namzu_engine::cluster::connect::{ConnectOptions, Connection};
use namzu_tui::action::{Action, Effect};
use namzu_tui::app::{App, AppOptions, update};
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use std::path::PathBuf;
use std::process::Output;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// prod-* is read-only; staging has no rule of its own.
const RULES: &str = "contexts:\n- context: \"prod-*\"\n  readOnly: true\n  label: PROD\n  colour: red\n";

const REASON: &str =
    "--cluster/--user reach a cluster other than context \"staging\"'s: its safety rules cannot be applied";

/// Two sims, `prod-eu-west` and `staging`, in one kubeconfig, and a rules file.
struct Two {
    prod: TestSim,
    staging: TestSim,
    kubeconfig: PathBuf,
    rules: PathBuf,
}

impl Two {
    async fn start() -> Two {
        let (prod, staging) = (start().await, start().await);
        let kubeconfig = prod.dir.path().join("fleet.kubeconfig");
        namzu_sim::write_fleet_kubeconfig(&kubeconfig, &[("prod-eu-west", &prod.sim), ("staging", &staging.sim)])
            .unwrap();
        let rules = prod.dir.path().join("rules.yaml");
        std::fs::write(&rules, RULES).unwrap();
        Two {
            prod,
            staging,
            kubeconfig,
            rules,
        }
    }

    fn audit(&self) -> PathBuf {
        self.prod.dir.path().join("audit.jsonl")
    }

    async fn run(&self, args: &[&str]) -> Output {
        let mut full = vec![
            "--kubeconfig".to_string(),
            self.kubeconfig.display().to_string(),
            "--config".into(),
            self.rules.display().to_string(),
            "--audit-log".into(),
            self.audit().display().to_string(),
        ];
        full.extend(args.iter().map(|s| s.to_string()));
        namzu_env(full, vec![]).await
    }

    /// [`Two::run`] in staging's context (namespace `agents`).
    async fn as_staging(&self, args: &[&str]) -> Output {
        let mut full = vec!["-n", "agents", "--context", "staging"];
        full.extend_from_slice(args);
        self.run(&full).await
    }
}

/// The CLI: staging's name over prod's cluster is refused before anything is read or sent, with
/// the reason, whatever --write says; nothing is audited.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_refuses_a_context_s_rules_over_another_cluster() {
    let two = Two::start().await;
    for extra in [&[][..], &["--write"][..], &["--dry-run"][..]] {
        let mut args = vec![
            "-n",
            "agents",
            "--context",
            "staging",
            "--cluster",
            "prod-eu-west",
            "suspend",
            "awake",
        ];
        args.extend_from_slice(extra);
        let o = two.run(&args).await;
        assert_eq!(o.status.code(), Some(2), "{extra:?}: {}", err(&o));
        assert!(err(&o).contains(REASON), "{}", err(&o));
        assert_eq!(err(&o).trim_end().lines().count(), 1, "{}", err(&o));
    }
    // the user override too
    let o = two
        .as_staging(&["--user", "prod-eu-west-user", "resume", "asleep"])
        .await;
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert!(
        sent(&two.prod).is_empty() && sent(&two.staging).is_empty(),
        "nothing sent"
    );
    assert!(!two.audit().exists(), "nothing audited");
    // the context's own cluster named again is no override: its rules apply as they are
    let o = two.as_staging(&["--cluster", "staging", "suspend", "awake"]).await;
    assert!(o.status.success(), "{}", err(&o));
    assert_eq!(sent(&two.staging).len(), 1);
    assert!(sent(&two.prod).is_empty());
}

/// Run TUI effects to completion, feeding their answers back through `update` (a Follow until
/// its context settles).
async fn settle(app: &mut App, io: &Arc<namzu_tui::io::Io>, effects: Vec<Effect>) {
    crate::tui::settle(app, io, effects).await;
}

/// The TUI, even one that ignored the rules (its policy and context say writable): the
/// connection decided its rules as it opened, and the write path refuses with the reason —
/// nothing is sent to the cluster reached.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tui_write_path_refuses_a_context_s_rules_over_another_cluster() {
    let two = Two::start().await;
    let safety = SafetyConfig::parse(RULES).unwrap();
    let conn = Connection::open(&ConnectOptions {
        kubeconfig: Some(two.kubeconfig.clone()),
        context: Some("staging".into()),
        cluster: Some("prod-eu-west".into()),
        request_timeout: Some(Duration::from_secs(5)),
        clock: Some(two.prod.sim.clock()),
        safety: Some(Arc::new((safety, Overrides::default()))),
        ..Default::default()
    })
    .await
    .unwrap();
    assert!(conn.rules.read_only && conn.rules.refusal.as_deref().unwrap().contains(REASON));
    let audit = AuditLog {
        path: Some(two.audit()),
        session: Some(Arc::new(Mutex::new(Vec::new()))),
        failure: Default::default(),
    };
    let mut app = App::new(AppOptions {
        several_contexts: false,
        contexts: vec![context_options(&conn, ContextRules::default())],
        namespace: "agents".into(),
        all_namespaces: false,
        read_only: false,
        now: two.prod.sim.now(),
    });
    let io = Arc::new(tui_io(vec![(conn, policy(false, audit))], Default::default()));
    let first = app.start();
    settle(&mut app, &io, first).await;
    for k in
        "/awake"
            .chars()
            .map(KeyCode::Char)
            .chain([KeyCode::Enter, KeyCode::Char('S'), KeyCode::Tab, KeyCode::Enter])
    {
        let effects = update(&mut app, Action::Key(KeyEvent::new(k, KeyModifiers::NONE)));
        settle(&mut app, &io, effects).await;
    }
    // the dialog's preview (a dry run through the write path) was refused with the reason: the
    // row's note says it, and the confirmation had nothing left to send
    let notes: Vec<&str> = app.notes.values().map(|n| n.text.as_str()).collect();
    assert!(notes.len() == 1 && notes[0].contains(REASON), "{notes:?}");
    assert_eq!(app.status, "nothing sent");
    assert!(
        sent(&two.prod).is_empty() && sent(&two.staging).is_empty(),
        "nothing sent: {:?} {:?}",
        sent(&two.prod),
        sent(&two.staging)
    );
    assert_eq!(
        two.prod
            .sim
            .get(&namzu_sim::resources::SANDBOXES, "agents", "namzu-ws-awake")
            .unwrap()["spec"]["operatingMode"],
        "Running"
    );
}

/// The real TUI binary in a terminal: `tui --context staging --cluster prod-eu-west` under rules
/// shows the suspend disabled with the reason; nothing is sent.
#[test]
fn the_tui_binary_refuses_a_context_s_rules_over_another_cluster() {
    let Some((_runtime, two, tmux)) = in_tmux("the TUI rules test", "rules", Two::start()) else {
        return;
    };
    let script = format!(
        "{} --kubeconfig {} --config {} -n agents tui --context staging --cluster prod-eu-west; sleep 60",
        bin_line(&two.prod.home(), &[audit_env(&two.prod)]),
        two.kubeconfig.display(),
        two.rules.display()
    );
    tmux.start(250, 30, &script);
    tmux.expect("awake");
    tmux.keys(&["/", "awake", "Enter", "S"]);
    tmux.expect("suspend is disabled: --cluster/--user reach a cluster other than context");
    tmux.keys(&["Enter"]);
    assert!(
        sent(&two.prod).is_empty() && sent(&two.staging).is_empty(),
        "nothing sent"
    );
}

/// Rules never fail open: /dev/null or a dangling symlink where the rules file is read is one
/// line and exit 2; `--write` names the context it lifts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_odd_rules_path_is_an_error_and_write_names_its_context() {
    let t = start().await;
    let base = ["--kubeconfig".to_string(), t.sim.kubeconfig().display().to_string()];
    let args = |more: &[&str]| {
        base.iter()
            .cloned()
            .chain(more.iter().map(|s| s.to_string()))
            .collect::<Vec<_>>()
    };
    let o = namzu_env(
        args(&["list"]),
        vec![("KUBECTL_NAMZU_CONFIG".into(), "/dev/null".into())],
    )
    .await;
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert!(err(&o).contains("/dev/null is not a regular file"), "{}", err(&o));
    let home = t.dir.path().join("xdg");
    std::fs::create_dir_all(home.join("kubectl-namzu")).unwrap();
    std::os::unix::fs::symlink(home.join("gone.yaml"), home.join("kubectl-namzu/config.yaml")).unwrap();
    let o = namzu_env(
        args(&["-n", "agents", "suspend", "awake"]),
        vec![("XDG_CONFIG_HOME".into(), home.display().to_string()), audit_env(&t)],
    )
    .await;
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert!(err(&o).contains("is a symlink to nothing"), "{}", err(&o));
    assert!(sent(&t).is_empty());
    let o = namzu_env(
        args(&["-n", "agents", "--write", "suspend", "awake"]),
        vec![audit_env(&t)],
    )
    .await;
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert!(err(&o).contains("name that one with --context"), "{}", err(&o));
    assert!(sent(&t).is_empty());
}
