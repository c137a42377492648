//! The simulated API server's round trip (`latency`) and its parallel serving, through the real
//! kube client: a bound asserted is a lower one (a sleep is at least its length), the serial
//! floor (N round trips), or a gate that holds one request while others are answered.

use crate::support::*;
use futures::StreamExt;
use kube::api::{ListParams, Patch, PatchParams, WatchEvent, WatchParams};
use namzu_sim::faults::{Fault, FaultAction, Gate};
use std::time::{Duration, Instant};

/// A scenario's `server: {latency: …}` delays each answer by at least that much, on the runtime's
/// timer: the sim's manual clock does not move.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn latency_delays_every_answer_and_leaves_the_sim_clock() {
    let t = start_with(&format!("{SMALL}\nserver: {{latency: 250ms}}\n"), |_| {}).await;
    let before = t.sim.now();
    let api = sandboxes(&t.client().await, "agents");
    for _ in 0..2 {
        let sent = Instant::now();
        api.get("namzu-ws-awake").await.unwrap();
        assert!(sent.elapsed() >= Duration::from_millis(250), "{:?}", sent.elapsed());
    }
    assert_eq!(
        t.sim.now(),
        before,
        "the latency is waited on the runtime's timer, not the sim clock"
    );

    t.sim.set_latency(Duration::from_millis(400));
    let sent = Instant::now();
    api.list(&ListParams::default()).await.unwrap();
    assert!(sent.elapsed() >= Duration::from_millis(400), "{:?}", sent.elapsed());
    assert_eq!(t.sim.now(), before);
}

/// A watch waits the round trip once, before its head; its events then flow as they happen.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_waits_the_latency_once() {
    let t = start().await;
    t.sim.set_latency(Duration::from_millis(200));
    let api = sandboxes(&t.client().await, "agents");
    let rv = api
        .list(&ListParams::default())
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    let sent = Instant::now();
    let mut events = api.watch(&WatchParams::default(), &rv).await.unwrap().boxed();
    assert!(sent.elapsed() >= Duration::from_millis(200), "{:?}", sent.elapsed());
    for n in 1..=3 {
        t.sim
            .modify(&namzu_sim::resources::SANDBOXES, "agents", "namzu-ws-awake", |o| {
                o["metadata"]["labels"]["seen"] = serde_json::json!(n.to_string());
            });
        // (the controller may write too: its events pass)
        loop {
            match events.next().await {
                Some(Ok(WatchEvent::Modified(o)))
                    if o.metadata.labels.as_ref().and_then(|l| l.get("seen")) == Some(&n.to_string()) =>
                {
                    break;
                }
                Some(Ok(WatchEvent::Modified(_) | WatchEvent::Bookmark(_))) => {}
                other => panic!("{other:?}"),
            }
        }
    }
}

/// `demo --serve --latency 200ms`: the served cluster answers a round trip later; a latency that
/// is not a duration is one line and exit 2.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn demo_serve_takes_a_latency() {
    use std::io::BufRead;
    let bad = run_bin(&["demo", "--serve", "--latency", "fast"], None);
    assert_eq!(bad.status.code(), Some(2), "{}", err(&bad));
    assert!(err(&bad).contains("not a duration"), "{}", err(&bad));

    let dir = tempfile::tempdir().unwrap();
    let kc = dir.path().join("demo.kubeconfig");
    let mut child = bin(&dir.path().join("home"))
        .args(["demo", "--serve", "--latency", "200ms", "--kubeconfig-out"])
        .arg(&kc)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    // the banner's last line says the server is up (read off the runtime's threads)
    let up = tokio::task::spawn_blocking(move || {
        std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
            .any(|l| l == "Press Ctrl-C to stop.")
    });
    let up = tokio::time::timeout(Duration::from_secs(60), up).await;
    let client = client_from(&kc, false).await;
    let sent = Instant::now();
    let got = sandboxes(&client, "agents").list(&ListParams::default()).await;
    let took = sent.elapsed();
    let _ = child.kill();
    let _ = child.wait();
    assert!(matches!(up, Ok(Ok(true))), "the demo served");
    assert!(!got.unwrap().items.is_empty());
    assert!(took >= Duration::from_millis(200), "{took:?}");
}

/// The server answers requests in parallel: a LIST held after its page was taken (the lock
/// released, the page not yet encoded) does not hold up a GET or a write on another connection;
/// it then answers the page it took, from before the write.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_list_does_not_hold_up_other_requests() {
    let t = start().await;
    let gate = Gate::new();
    t.sim.add_fault(
        Fault::new(
            Some("GET"),
            "*/namespaces/agents/sandboxes",
            FaultAction::Hold(gate.clone()),
        )
        .times(1),
    );
    let client = t.client().await;
    let api = sandboxes(&client, "agents");
    let listing = tokio::spawn({
        let api = api.clone();
        async move { api.list(&ListParams::default()).await }
    });
    // bounds on what must happen, not races: each is met at once unless the server is stuck
    let bound = Duration::from_secs(60);
    tokio::time::timeout(bound, gate.held())
        .await
        .expect("the LIST is held");
    let got = tokio::time::timeout(bound, api.get("namzu-ws-awake")).await;
    assert!(got.expect("a GET is answered while the LIST is held").is_ok());
    let patched = tokio::time::timeout(
        bound,
        api.patch(
            "namzu-ws-awake",
            &PatchParams::default(),
            &Patch::Json::<()>(
                serde_json::from_value(serde_json::json!([
                    {"op": "test", "path": "/metadata/name", "value": "namzu-ws-awake"},
                    {"op": "add", "path": "/metadata/annotations/while-held", "value": "yes"}
                ]))
                .unwrap(),
            ),
        ),
    )
    .await
    .expect("a write is answered while the LIST is held")
    .unwrap();

    gate.open();
    let list = listing.await.unwrap().unwrap();
    let listed_rv: u64 = list.metadata.resource_version.unwrap().parse().unwrap();
    let patched_rv: u64 = patched.metadata.resource_version.unwrap().parse().unwrap();
    assert!(
        listed_rv < patched_rv,
        "the page was taken before the write: {listed_rv} < {patched_rv}"
    );
    let awake = list
        .items
        .iter()
        .find(|o| o.metadata.name.as_deref() == Some("namzu-ws-awake"))
        .unwrap();
    assert!(!awake.metadata.annotations.as_ref().unwrap().contains_key("while-held"));
    let record = t.sim.requests();
    let last = record.last().unwrap();
    assert_eq!(
        (last.method.as_str(), last.path.as_str(), last.status),
        ("GET", "/apis/agents.x-k8s.io/v1beta1/namespaces/agents/sandboxes", 200),
        "the held LIST is recorded when it is answered, after the GET and the PATCH"
    );
    assert!(last.bytes > 0);
}

/// N requests sent at once with a round trip of `latency` each take about one round trip, not
/// N: the server waits them out side by side (the serial floor is N × latency).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_requests_wait_their_latency_side_by_side() {
    const N: u32 = 8;
    let latency = Duration::from_secs(1);
    let t = start().await;
    t.sim.set_latency(latency);
    let api = sandboxes(&t.client().await, "agents");
    t.sim.reset_counters();
    let sent = Instant::now();
    let answers = futures::future::join_all((0..N).map(|_| api.get("namzu-ws-awake"))).await;
    let took = sent.elapsed();
    assert!(answers.iter().all(Result::is_ok));
    assert!(took >= latency, "{took:?}");
    assert!(
        took < latency * N,
        "{N} requests at {latency:?} each took {took:?}: served one at a time"
    );
    // the same from the server's side, whatever the machine's speed: answers were in flight
    // together (the wall bound above only has a serial floor's margin)
    let (in_flight, _) = t.sim.concurrency();
    assert!(in_flight >= 2, "at most {in_flight} request in flight at once");
}
