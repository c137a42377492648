//! `ops` is the one door of a write: writes a front-end confirmed and bound itself (the TUI's
//! popup) go through the same rules check and the same batch as the CLI's selection — the
//! context's read-only rule and maxBulk are checked again below the front-end, each write is sent
//! as it was bound (a Sandbox replaced since is refused, not written), results come in the
//! selection's order, and the front-end hears each send before its wait.

use crate::support::*;
use futures::future::BoxFuture;
use namzu_domain::fence::{EpochChoice, Verb};
use namzu_domain::naming::{WorkspaceId, WorkspaceKey};
use namzu_domain::safety::ContextRules;
use namzu_domain::state::State;
use namzu_engine::cluster::audit::AuditLog;
use namzu_engine::cluster::write::{Outcome, Plan};
use namzu_engine::ops::fleet::Member;
use namzu_engine::ops::write::{self, Front, Question, Request, Step, WriteError};
use std::sync::Mutex;
use std::time::Duration;

/// A front-end that writes down what the batch tells it, in order.
#[derive(Default)]
struct Heard(Mutex<Vec<String>>);

impl Heard {
    fn push(&self, line: String) {
        self.0.lock().unwrap().push(line);
    }
    fn lines(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
}

impl Front for Heard {
    fn can_ask(&self) -> bool {
        false
    }
    fn ask_typed<'a>(&'a self, q: &'a Question) -> BoxFuture<'a, Result<bool, String>> {
        self.push(format!("asked {}", q.key.id));
        Box::pin(async { Ok(false) })
    }
    fn previewed(&self, _: &Outcome) {}
    fn sending(&self, key: &WorkspaceKey<WorkspaceId>) {
        self.push(format!("sending {}", key.id));
    }
    fn sent(&self, key: &WorkspaceKey<WorkspaceId>, outcome: &Outcome) {
        self.push(format!("sent {} landed={}", key.id, outcome.landed()));
    }
    fn waiting(&self, _: &WorkspaceKey<WorkspaceId>, _: &str, _: Option<State>) {}
    fn waited(&self) {}
    fn step(&self, step: &Step) {
        match step {
            Step::Done(r) => self.push(format!("done {} {}", r.key.id, r.result())),
            Step::Cancelled(k) => self.push(format!("cancelled {k}")),
            Step::NotStarted(_, _, k) => self.push(format!("not started {}", k.id)),
        }
    }
    fn output_closed(&self) -> bool {
        false
    }
    fn interrupted_twice() {}
}

fn plan(id: &str, expected_uid: Option<String>) -> (WorkspaceKey<WorkspaceId>, Plan) {
    let id = WorkspaceId::parse(id).unwrap();
    let key = WorkspaceKey {
        context: None,
        namespace: "agents".into(),
        id: id.clone(),
    };
    let plan = Plan {
        verb: Verb::Suspend,
        namespace: "agents".into(),
        id,
        epoch: EpochChoice::Stored,
        dry_run: false,
        server_dry_run: false,
        expected_uid,
        refresh: None,
    };
    (key, plan)
}

fn request() -> Request {
    Request {
        verb: Verb::Suspend,
        epoch: EpochChoice::Stored,
        take_over: false,
        dry_run: false,
        server_dry_run: false,
        yes: true,
        parallel: 4,
        wait: None,
        refresh: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn confirmed_writes_are_checked_again_below_the_front_end() {
    let t = start_demo().await;
    let conn = connect(&t, t.sim.kubeconfig(), None, Duration::from_secs(5)).await;
    let audit = AuditLog {
        path: Some(t.dir.path().join("audit.jsonl")),
        ..Default::default()
    };
    let member = |rules: ContextRules| Member {
        conn: conn.clone(),
        rules,
    };
    t.sim.clear_requests();
    // a read-only context takes no write, whatever the front-end confirmed
    let read_only = ContextRules {
        read_only: true,
        ..Default::default()
    };
    let refused = write::confirmed(
        member(read_only),
        &policy(false, audit.clone()),
        None,
        false,
        vec![plan("alpha", None)],
    );
    assert!(matches!(refused, Err(WriteError::ReadOnly(_))), "{:?}", refused.err());
    // more rows than the context's maxBulk: none is sent
    let capped = ContextRules {
        max_bulk: Some(1),
        ..Default::default()
    };
    let refused = write::confirmed(
        member(capped),
        &policy(false, audit.clone()),
        None,
        false,
        vec![plan("alpha", None), plan("bravo", None)],
    );
    assert!(matches!(refused, Err(WriteError::Bulk(_))), "{:?}", refused.err());
    assert!(
        t.sim.requests().is_empty(),
        "nothing read or sent: {:?}",
        t.sim.requests()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bound_writes_go_through_the_one_batch_as_they_were_bound() {
    let t = start_demo().await;
    let conn = connect(&t, t.sim.kubeconfig(), None, Duration::from_secs(5)).await;
    let audit = AuditLog {
        path: Some(t.dir.path().join("audit.jsonl")),
        ..Default::default()
    };
    let bravo_uid = t
        .sim
        .get(&namzu_sim::resources::SANDBOXES, "agents", "namzu-ws-bravo")
        .unwrap()["metadata"]["uid"]
        .as_str()
        .unwrap()
        .to_string();
    let member = Member {
        conn: conn.clone(),
        rules: ContextRules::default(),
    };
    // alpha bound to the uid shown; bravo to a uid the Sandbox no longer has (replaced since)
    let checked = write::confirmed(
        member,
        &policy(false, audit),
        None,
        false,
        vec![plan("alpha", None), plan("bravo", Some(format!("{bravo_uid}-gone")))],
    )
    .unwrap();
    let heard = Heard::default();
    let ran = write::run(&checked, &request(), &heard).await.unwrap();
    let results: Vec<(String, &str)> = ran.reports.iter().map(|r| (r.key.id.to_string(), r.result())).collect();
    assert_eq!(results[0], ("alpha".to_string(), "applied"), "{results:?}");
    assert_ne!(
        results[1].1, "applied",
        "a write bound to another uid is not written: {results:?}"
    );
    let lines = heard.lines();
    assert!(
        !lines.iter().any(|l| l.starts_with("asked")),
        "a bound write asks nothing: {lines:?}"
    );
    // each workspace: sending, then its answer, then its step (the step comes in order)
    let at = |l: &str| {
        lines
            .iter()
            .position(|x| x == l)
            .unwrap_or_else(|| panic!("{l} not in {lines:?}"))
    };
    assert!(at("sending alpha") < at("sent alpha landed=true"));
    assert!(at("sent alpha landed=true") < at("done alpha applied"));
    let dones: Vec<&String> = lines.iter().filter(|l| l.starts_with("done")).collect();
    assert!(dones[0].contains("alpha") && dones[1].contains("bravo"), "{dones:?}");
    assert_eq!(
        t.sim
            .get(&namzu_sim::resources::SANDBOXES, "agents", "namzu-ws-bravo")
            .unwrap()["spec"]["operatingMode"],
        "Running",
        "bravo was not written"
    );
}

/// Every inventory read of the command line (`list`, `capacity`, `drift`, completion, a `logs`
/// selection) goes through `ops::inventory`, where its source — the cluster or a recording at an
/// instant — is decided once: `src/cli/` never names the cluster's inventory pass.
#[test]
fn the_command_line_reads_the_inventory_only_through_ops() {
    let cli = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/cli");
    let mut found = Vec::new();
    for entry in std::fs::read_dir(&cli).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        for (n, line) in text.lines().enumerate() {
            if line.contains("cluster::inventory") {
                found.push(format!("{}:{}: {}", path.display(), n + 1, line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "cli/ reads the inventory around ops:\n{}",
        found.join("\n")
    );
}
