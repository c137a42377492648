//! Issue 44, the fleet's pulse, driving the real binary against the sim: each figure (claims per
//! minute, warm-hit %, claim → Ready and resume → Ready percentiles, pool depth, refill, stale
//! members) and each cause of a slow start (pool empty, a replenish hold, a stale member adopted,
//! unschedulable, image pull, slow readiness, the controller's error), played through the sim's
//! model of agent-sandbox v1.0.3's claims and warm pools.

use crate::support::*;
use chrono::Duration;
use serde_json::Value;

/// One pool per cause, each with 20 claims 20 s apart (a minute's third of a claim, so the pool
/// is always Ready between them) and one of them slowed by its cause; a workspace to resume.
fn scenario() -> String {
    let causes = [
        "pool-empty",
        "replenish-hold",
        "stale-member",
        "image-pull",
        "unschedulable",
        "slow-readiness",
        "controller-error",
    ];
    let mut s = String::from(
        "namespaces: [team]\nobjects:\n  - apiVersion: extensions.agents.x-k8s.io/v1beta1\n    kind: SandboxTemplate\n    metadata: {name: coder, namespace: team}\n    spec: {podTemplate: {metadata: {labels: {sandbox.namzu.ai/template: coder}}, spec: {containers: [{name: agent, image: \"ghcr.io/namzu/agent:2.0\"}]}}}\n",
    );
    for c in causes {
        s.push_str(&format!(
            "  - apiVersion: extensions.agents.x-k8s.io/v1beta1\n    kind: SandboxWarmPool\n    metadata: {{name: p-{c}, namespace: team}}\n    spec: {{replicas: 2, sandboxTemplateRef: {{name: coder}}}}\n"
        ));
    }
    s.push_str("workspaces:\n  - {namespace: team, id: sleepy, mode: Suspended, podTemplate: {metadata: {labels: {sandbox.namzu.ai/template: coder}}, spec: {containers: [{name: agent, image: \"ghcr.io/namzu/agent:2.0\"}]}}, created: \"{{now-2d}}\", changedAt: \"{{now-1d|ms}}\"}\npulse:\n");
    for c in causes {
        s.push_str(&format!(
            "  - {{namespace: team, pool: p-{c}, claims: 20, every: 20s, readyDelay: 4s, slowBy: 30s, causes: {{{c}: 1}}}}\n"
        ));
    }
    s
}

fn json_of(o: &std::process::Output) -> Value {
    assert!(o.status.success(), "{}", err(o));
    serde_json::from_str(&out(o)).unwrap_or_else(|e| panic!("{e}: {}", out(o)))
}

fn group<'a>(p: &'a Value, pool: &str) -> &'a Value {
    p[0]["groups"]
        .as_array()
        .and_then(|gs| gs.iter().find(|g| g["pool"] == pool))
        .unwrap_or_else(|| panic!("no group of pool {pool} in {p}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_figure_of_a_pool_is_read_off_the_claims_sandboxes_and_pool() {
    let t = start_with(&scenario(), |c| c.namespace = "team".into()).await;
    let p = json_of(&namzu(&t, &["pulse", "-o", "json"]).await);
    assert_eq!(p[0]["percentileMethod"], "nearest-rank");
    assert_eq!(p[0]["windowSeconds"], 3600);
    assert_eq!(p[0]["eventsRead"], true);
    let g = group(&p, "p-pool-empty");
    assert_eq!(
        (g["namespace"].as_str(), g["template"].as_str()),
        (Some("team"), Some("coder"))
    );
    // 20 claims in the hour; one of them cold (the pool drained just before it)
    assert_eq!(g["claims"], 20);
    assert_eq!(g["claimsPerMinute"], 0.33);
    assert_eq!((g["warm"].as_u64(), g["cold"].as_u64()), (Some(19), Some(1)));
    assert_eq!(g["warmHitPercent"], 95.0);
    let l = &g["claimToReady"];
    assert_eq!(l["count"], 20);
    // a Ready member adopted in its request's second: 0 s; the cold one a pod start-up (4 s)
    assert_eq!(l["p50Ms"], 0);
    let p99 = l["p99Ms"].as_i64().unwrap();
    assert!((3_000..=5_000).contains(&p99), "{l}");
    let d = &g["depth"];
    assert_eq!((d["members"].as_u64(), d["readyMembers"].as_u64()), (Some(2), Some(2)));
    // two Ready members at a third of a claim a minute: six minutes
    assert_eq!(d["secondsToEmpty"], 360);
    // the pool made a member for each warm claim (19), and its two now (one of them made
    // before the hour began, for the first claim)
    let refill = d["refillPerMinute"].as_f64().unwrap();
    assert!((0.3..=0.37).contains(&refill), "{d}");
    assert_eq!(d["updateStrategy"], "OnReplenish (default)");
    // every start is listed, with what its latency was read from
    let starts = p[0]["starts"].as_array().unwrap();
    let cold = starts
        .iter()
        .find(|s| s["pool"] == "p-pool-empty" && s["launchType"] == "cold")
        .unwrap();
    assert_eq!(
        (cold["from"].as_str(), cold["until"].as_str()),
        (Some("client-first-requested-at"), Some("Sandbox Ready"))
    );
    let warm = starts
        .iter()
        .find(|s| s["pool"] == "p-pool-empty" && s["launchType"] == "warm")
        .unwrap();
    // a Ready member adopted: the claim's Ready says when it was handed over
    assert_eq!(warm["until"], "claim Ready", "{warm}");
    // a member on a stale template is counted on its pool (p-stale-member's was adopted: none left)
    assert_eq!(
        group(&p, "p-stale-member")["depth"]["staleMembers"],
        serde_json::json!([])
    );
    let text = out(&namzu(&t, &["pulse"]).await);
    assert!(
        text.contains("CLAIM→READY P50/P95/P99") && text.contains("p-pool-empty"),
        "{text}"
    );
    assert!(text.contains("95%"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_slow_start_is_blamed_on_its_cause_with_evidence() {
    let t = start_with(&scenario(), |c| c.namespace = "team".into()).await;
    let p = json_of(&namzu(&t, &["pulse", "-o", "json"]).await);
    for (cause, evidence) in [
        ("pool-empty", "had no member to adopt"),
        ("replenish-hold", "by the pool's replenish"),
        ("stale-member", "was made from template hash 0ld7e3a1"),
        ("image-pull", "`image pulled` leg took"),
        ("unschedulable", "Event FailedScheduling on Pod"),
        ("slow-readiness", "`ready` leg took"),
        ("controller-error", "Event ReconcilerError on Sandbox"),
    ] {
        let g = group(&p, &format!("p-{cause}"));
        let slow = g["slow"].as_array().unwrap();
        assert_eq!(slow.len(), 1, "{cause}: {g}");
        assert_eq!(slow[0]["cause"], cause, "{g}");
        let said = slow[0]["evidence"].as_array().unwrap();
        assert!(
            said.iter().any(|e| e.as_str().unwrap().contains(evidence)),
            "{cause}: {said:?}"
        );
        assert!(slow[0]["latencyMs"].as_i64().unwrap() > g["claimToReady"]["p95Ms"].as_i64().unwrap());
    }
    let text = out(&namzu(&t, &["pulse"]).await);
    assert!(
        text.contains("— image-pull") && text.contains("— controller-error"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resume_is_timed_from_its_stamp_to_ready() {
    let t = start_with(&scenario(), |c| c.namespace = "team".into()).await;
    let o = namzu(&t, &["resume", "sleepy"]).await;
    assert!(o.status.success(), "{}", err(&o));
    // the clock moves a second at a time, as a live one would past the pod's readiness
    for _ in 0..5 {
        t.sim.advance(Duration::seconds(1));
    }
    let all = json_of(&namzu(&t, &["pulse", "-o", "json"]).await);
    let p = all[0]["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["pool"] == "-" && g["template"] == "coder")
        .unwrap_or_else(|| panic!("no resume group in {all}"));
    assert_eq!(p["resumeToReady"]["count"], 1, "{p}");
    let l = &p["resumeToReady"];
    // the sim's default start-up: 1.5 s, seen at the next second
    let p50 = l["p50Ms"].as_i64().unwrap();
    assert!((1_000..=2_500).contains(&p50), "{l}");
    assert_eq!(p["claims"], 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_window_is_refused() {
    let t = start_with("namespaces: [team]", |c| c.namespace = "team".into()).await;
    let o = namzu(&t, &["pulse", "--since", "0s"]).await;
    assert!(!o.status.success());
    assert!(err(&o).contains("longer than zero"), "{}", err(&o));
    let o = namzu(&t, &["pulse", "-A"]).await;
    assert!(o.status.success(), "{}", err(&o));
    assert!(out(&o).contains("No claims, warm pools or resumes"), "{}", out(&o));
}

/// The demo's staging namespace has a pool per cause: `pulse` shows each cause once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_shows_a_pulse_with_each_cause() {
    let t = start_demo().await;
    let p = json_of(&namzu(&t, &["pulse", "-n", "staging", "-o", "json"]).await);
    let mut told: Vec<String> = p[0]["groups"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|g| g["slow"].as_array().unwrap().iter())
        .map(|b| b["cause"].as_str().unwrap().to_string())
        .collect();
    told.sort();
    assert_eq!(
        told,
        [
            "controller-error",
            "image-pull",
            "pool-empty",
            "replenish-hold",
            "slow-readiness",
            "stale-member",
            "unschedulable"
        ],
        "{p}"
    );
}

/// Across contexts: one object per context, each named, each with its own groups; the table
/// leads each row with its context.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn all_contexts_give_one_pulse_per_context() {
    let a = start_with(&scenario(), |c| c.namespace = "team".into()).await;
    let b = start_with(&scenario(), |c| c.namespace = "team".into()).await;
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("fleet.kubeconfig");
    namzu_sim::write_fleet_kubeconfig(&kubeconfig, &[("east", &a.sim), ("west", &b.sim)]).unwrap();
    let kc = kubeconfig.display().to_string();
    let args = |extra: &[&str]| {
        let mut v: Vec<String> = ["--kubeconfig", kc.as_str(), "pulse", "-A", "--all-contexts"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        v.extend(extra.iter().map(|s| s.to_string()));
        v
    };
    let o = namzu_env(args(&["-o", "json"]), vec![now_env(&a)]).await;
    let p = json_of(&o);
    let contexts: Vec<&str> = p
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["context"].as_str().unwrap())
        .collect();
    assert_eq!(contexts, ["east", "west"]);
    for c in p.as_array().unwrap() {
        assert_eq!(
            c["groups"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|g| !g["slow"].as_array().unwrap().is_empty())
                .count(),
            7,
            "{c}"
        );
    }
    let text = out(&namzu_env(args(&[]), vec![now_env(&a)]).await);
    assert!(text.starts_with("CONTEXT"), "{text}");
    assert!(text.contains("slow start east/team/"), "{text}");
}

/// The TUI's `:pulse` over the demo's staging pools, at 80×24 and 120×35 (the demo on the wall
/// clock, its request stamps in milliseconds): each group's figures, a count opened with Enter
/// lists the slow start behind it with its cause and evidence, Esc steps back, Esc closes.
#[test]
fn the_tui_pulse_view_opens_the_starts_behind_a_count() {
    if tool_missing("tmux", "the pulse view") {
        return;
    }
    for (width, height) in [(80u16, 24u16), (120, 35)] {
        let (t, _home) = crate::tui_tmux::one_cluster_demo(width, height, "pulseview");
        t.keys(&[":", "ns staging", "Enter"]);
        t.expect("namespace staging");
        t.keys(&[":", "pulse 30m", "Enter"]);
        let view = t.expect("pool pulse-controller-error");
        assert!(view.contains("pulse (namespace staging, last 30m)"), "{view}");
        assert!(view.contains("claims/min · warm-hit"), "{view}");
        // the first group's counts: its starts, its cold start, its slow start
        t.expect("›   20 starts");
        t.keys(&["j"]);
        t.expect("›   1 cold start");
        t.keys(&["j"]);
        t.expect("›   1 slow start");
        t.keys(&["Enter"]);
        let slow = t.expect("slow: controller-error");
        let flat = slow.replace(['\n', '│'], "");
        assert!(flat.contains("claim pulse-controller-error-claim-"), "{slow}");
        assert!(flat.contains("Event ReconcilerError on Sandbox"), "{slow}");
        t.keys(&["Escape"]);
        t.expect_gone("slow: controller-error");
        t.expect("›   1 slow start");
        t.keys(&["Escape"]);
        t.expect_gone("pulse (namespace");
        t.keys(&["q"]);
        t.expect("NAMZU-EXITED");
    }
}

/// The TUI's `:pulse` is live on its follow's watches: its figures are those `pulse -o json`
/// reads with its LISTs, a claim made while it is open shows in it, and once it shows its first
/// pulse nothing more is LISTed (a refresh is computed from what the watches hold).
#[test]
fn the_tui_pulse_view_is_live_on_its_watches() {
    use namzu_sim::resources::CLAIMS;
    let scenario = scenario();
    let started = start_with(&scenario, |c| c.namespace = "team".into());
    let Some((runtime, t, tmux)) = in_tmux("the live pulse view", "pulselive", started) else {
        return;
    };
    let cli = json_of(&runtime.block_on(namzu(&t, &["pulse", "-o", "json"])));
    // a pool's claim → Ready percentiles as the view words them
    let latencies = |pool: &str| {
        let l = &group(&cli, pool)["claimToReady"];
        let secs = |p: &str| format!("{:.1}s", l[p].as_i64().unwrap_or(-1) as f64 / 1000.0);
        format!("p50/p95/p99 {} / {} / {}", secs("p50Ms"), secs("p95Ms"), secs("p99Ms"))
    };
    let script = format!(
        "{} --kubeconfig {} -n team; sleep 60",
        bin_line(&t.home(), &[now_env(&t)]),
        t.sim.kubeconfig().display()
    );
    tmux.start(200, 60, &script);
    tmux.expect("WORKSPACE");
    tmux.expect("● live:");
    tmux.keys(&[":", "pulse", "Enter"]);
    let view = tmux.expect("pool p-image-pull");
    // the same percentiles as the CLI's, its slow start's among them
    let shown = latencies("p-image-pull");
    assert!(!shown.ends_with(" 0.0s") && view.contains(&shown), "{shown}:\n{view}");
    let lists = || {
        t.sim
            .requests()
            .iter()
            .filter(|r| r.method == "GET" && !r.query.contains("watch=") && r.path != "/version")
            .count()
    };
    let before = lists();
    let claim = serde_json::json!({"apiVersion": "extensions.agents.x-k8s.io/v1beta1", "kind": "SandboxClaim",
        "metadata": {"name": "late-claim", "namespace": "team"},
        "spec": {"warmPoolRef": {"name": "p-image-pull"}}});
    t.sim.create(&CLAIMS, claim).expect("the claim is made");
    tmux.expect("21 starts");
    let after: Vec<String> = t
        .sim
        .requests()
        .iter()
        .filter(|r| r.method == "GET" && !r.query.contains("watch=") && r.path != "/version")
        .map(|r| format!("{} {}?{}", r.method, r.path, r.query))
        .collect();
    assert_eq!(
        after.len(),
        before,
        "nothing LISTed since the first pulse: {:?}",
        &after[before.min(after.len())..]
    );
    tmux.keys(&["Escape"]);
    tmux.expect_gone("pulse (namespace");
    tmux.keys(&["q"]);
}
