//! Bounded paged reads: a LIST whose continue tokens cycle ends `history` and `list` in one line;
//! a LIST that never ends stops at the page bound and at the time bound.

use crate::support::*;
use namzu_engine::cluster::resources::{self, PODS};
use namzu_sim::faults::{Fault, FaultAction};
use std::time::Duration;

/// The first `times` LISTs of `path` hand out these continue tokens in turn (none: a new one each
/// time); after them a token is the sim's own again (so a client without bounds ends too, on a 400
/// for a token the sim did not make, rather than hanging the test).
fn continue_tokens(t: &TestSim, path: &str, tokens: &[&str], times: u32) {
    t.sim.add_fault(
        Fault::new(
            Some("GET"),
            path,
            FaultAction::ContinueTokens(tokens.iter().map(|s| s.to_string()).collect()),
        )
        .times(times),
    );
}

/// The LIST requests of `path` that carried a continue token.
fn continued(t: &TestSim, path: &str) -> usize {
    t.sim
        .requests()
        .iter()
        .filter(|r| r.method == "GET" && r.path.ends_with(path) && r.query.contains("continue="))
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_continue_token_that_cycles_ends_history_and_list_in_one_line() {
    let t = start().await;
    // history's events: A, B, A, … — the third page hands out A again
    continue_tokens(&t, "/api/v1/namespaces/agents/events", &["A", "B"], 50);
    let o = namzu(&t, &["-n", "agents", "history", "awake"]).await;
    assert_eq!(code(&o), 1, "{}", err(&o));
    assert_eq!(err(&o).trim_end().lines().count(), 1, "{}", err(&o));
    assert!(
        err(&o).contains("continue token it had handed out before in this list"),
        "{}",
        err(&o)
    );
    assert_eq!(continued(&t, "/events"), 2, "pages after the first: B's and A's again");
    t.sim.clear_faults();
    t.sim.clear_requests();

    // `list -A`: the cluster-wide Sandbox LIST cycles
    continue_tokens(&t, "/sandboxes", &["A", "B", "C"], 50);
    let o = namzu(&t, &["list", "-A"]).await;
    assert_eq!(code(&o), 1, "{}", err(&o));
    assert!(
        err(&o).contains("continue token it had handed out before in this list"),
        "{}",
        err(&o)
    );
    assert!(!err(&o).contains("panicked"), "{}", err(&o));
    assert_eq!(continued(&t, "/sandboxes"), 3, "{:?}", t.sim.requests().len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_list_that_never_ends_stops_at_the_page_bound_and_at_the_time_bound() {
    let t = start().await;
    let mut conn = connect(&t, t.sim.kubeconfig(), None, Duration::from_secs(30)).await;
    assert_eq!(
        conn.list_bounds.max_pages,
        namzu_engine::cluster::connect::MAX_LIST_PAGES
    );
    assert_eq!(conn.list_bounds.max_pages, 10_000);
    assert_eq!(conn.list_bounds.max_time, Duration::from_secs(300));
    // a new token every page: only the page bound ends it
    continue_tokens(&t, "/pods", &[], 1000);
    conn.list_bounds.max_pages = 40;
    let e = resources::list(&conn, &PODS, Some("agents"), None)
        .await
        .expect_err("a list without end is an error");
    assert!(e.to_string().contains("did not end after 40 pages"), "{e}");
    let pages = t.sim.requests().iter().filter(|r| r.path.ends_with("/pods")).count();
    assert_eq!(pages, 40);

    // the time bound: all pages together (this list could never end otherwise)
    t.sim.clear_faults();
    continue_tokens(&t, "/pods", &[], 100_000);
    conn.list_bounds.max_pages = usize::MAX;
    conn.list_bounds.max_time = Duration::from_millis(300);
    let e = resources::list(&conn, &PODS, Some("agents"), None)
        .await
        .expect_err("a list without end is an error");
    assert!(e.to_string().contains("did not end within 300ms"), "{e}");
}
