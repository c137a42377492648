use super::*;
use crate::annotations::{POOL_TEMPLATE_HASH, WARM_POOL_SANDBOX};
use crate::naming::name_hash;
use chrono::TimeZone;
use serde_json::json;

fn now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 12, 1, 12, 0, 0).unwrap()
}

fn at(base: DateTime<Utc>, ms: i64) -> String {
    timefmt::js_iso(base + Duration::milliseconds(ms))
}

/// The world of one pool: claims, their Sandboxes and pods, and Events.
#[derive(Default)]
struct World {
    claims: Vec<Value>,
    sandboxes: Vec<Value>,
    pods: Vec<Value>,
    events: Vec<Value>,
}

/// How one start went, in ms from its request.
#[derive(Clone, Default)]
struct Shape {
    launch: &'static str,
    sandbox_made: i64,
    /// The Sandbox's Ready transition.
    ready: i64,
    /// The claim's Ready transition (an adopted Ready member).
    claim_ready: Option<i64>,
    /// The pod: created, scheduled, pulled, started (ready = `ready`); `None`: no pod read.
    pod: Option<[i64; 4]>,
    hash: &'static str,
    error_at: Option<i64>,
}

impl World {
    fn start(&mut self, i: usize, requested: DateTime<Utc>, s: &Shape) {
        let (claim, sbx) = (format!("c{i}"), format!("s{i}"));
        let mut c = json!({"metadata": {"name": claim, "namespace": "ns", "uid": format!("u{i}"),
            "creationTimestamp": at(requested, 0),
            "annotations": {FIRST_REQUESTED_AT: at(requested, 0)}},
            "spec": {"warmPoolRef": {"name": "p"}}});
        if let Some(r) = s.claim_ready {
            c["status"] =
                json!({"conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": at(requested, r)}]});
        }
        self.claims.push(c);
        self.sandboxes.push(json!({"metadata": {"name": sbx, "namespace": "ns", "uid": format!("su{i}"),
            "creationTimestamp": at(requested, s.sandbox_made),
            "labels": {LAUNCH_TYPE: s.launch, POOL_TEMPLATE_HASH: s.hash},
            "ownerReferences": [{"kind": "SandboxClaim", "name": claim, "uid": format!("u{i}"), "controller": true}]},
            "status": {"conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": at(requested, s.ready)}]}}));
        if let Some([made, scheduled, pulled, started]) = s.pod {
            self.pods.push(json!({"metadata": {"name": sbx, "namespace": "ns", "uid": format!("pu{i}"),
                "creationTimestamp": at(requested, made)},
                "status": {"phase": "Running", "conditions": [
                    {"type": "PodScheduled", "status": "True", "lastTransitionTime": at(requested, scheduled)},
                    {"type": "Ready", "status": "True", "lastTransitionTime": at(requested, s.ready)}],
                    "containerStatuses": [{"name": "agent", "state": {"running": {"startedAt": at(requested, started)}}}]}}));
            self.events.push(
                json!({"involvedObject": {"kind": "Pod", "name": sbx, "uid": format!("pu{i}")},
                "reason": "Pulled", "message": "Successfully pulled image", "firstTimestamp": at(requested, pulled)}),
            );
        }
        if let Some(e) = s.error_at {
            self.events.push(
                json!({"involvedObject": {"kind": "Sandbox", "name": sbx, "uid": format!("su{i}")},
                "reason": "ReconcilerError", "type": "Warning", "message": "Error seen: quota",
                "firstTimestamp": at(requested, e), "lastTimestamp": at(requested, e)}),
            );
        }
    }

    fn pulse(&self, pools: &[Value]) -> Pulse {
        pulse(&Inputs {
            claims: &self.claims,
            sandboxes: &self.sandboxes,
            pools,
            pods: &self.pods,
            events: Some(&self.events),
            now: now(),
            since: Duration::hours(1),
        })
    }
}

fn pool() -> Value {
    json!({"metadata": {"name": "p", "namespace": "ns", "uid": "pool"},
        "spec": {"replicas": 2, "sandboxTemplateRef": {"name": "t"}}})
}

fn member(n: &str, hash: &str, made: i64, ready: bool) -> Value {
    let mut m = json!({"metadata": {"name": n, "namespace": "ns", "creationTimestamp": at(now(), made),
        "labels": {WARM_POOL_SANDBOX: name_hash("p"), POOL_TEMPLATE_HASH: hash}}});
    if ready {
        m["status"] =
            json!({"conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": at(now(), made)}]});
    }
    m
}

#[test]
fn nearest_rank_takes_the_ceiling_rank() {
    let v: Vec<i64> = (1..=20).collect();
    assert_eq!(
        (nearest_rank(&v, 50), nearest_rank(&v, 95), nearest_rank(&v, 99)),
        (Some(10), Some(19), Some(20))
    );
    assert_eq!(nearest_rank(&[7], 99), Some(7));
    assert_eq!(nearest_rank(&[], 50), None);
}

#[test]
fn figures_per_pool_rate_warm_hit_latency_depth_and_refill() {
    let mut w = World::default();
    // 20 claims, a minute apart over the last 20 minutes; the i-th Ready i seconds after
    for i in 1..=20usize {
        let requested = now() - Duration::minutes(21 - i as i64);
        let launch = if i % 4 == 0 { "cold" } else { "warm" };
        w.start(
            i,
            requested,
            &Shape {
                launch,
                sandbox_made: -1_000,
                ready: i as i64 * 1000,
                hash: "h",
                ..Shape::default()
            },
        );
    }
    // one claim from before the window is not counted
    w.start(
        99,
        now() - Duration::hours(2),
        &Shape {
            launch: "warm",
            ready: 1000,
            hash: "h",
            ..Shape::default()
        },
    );
    w.sandboxes.push(member("p-a", "old", -50 * 60_000, true));
    w.sandboxes.push(member("p-b", "new", -5 * 60_000, false));
    let p = w.pulse(&[pool()]);
    let g = &p.groups[0];
    assert_eq!(
        (g.namespace.as_str(), g.template.as_str(), g.pool.as_str()),
        ("ns", "t", "p")
    );
    assert_eq!((g.claims, g.warm, g.cold, g.launch_unknown), (20, 15, 5, 0));
    assert_eq!(g.claims_per_minute, 0.33);
    assert_eq!(g.warm_hit_percent, Some(75.0));
    let l = &g.claim_to_ready;
    assert_eq!(
        (l.count, l.p50_ms, l.p95_ms, l.p99_ms),
        (20, Some(10_000), Some(19_000), Some(20_000))
    );
    let d = g.depth.as_ref().unwrap();
    // one Ready member at 1/3 claim a minute: empty in 3 minutes
    assert_eq!((d.members, d.ready_members, d.seconds_to_empty), (2, 1, Some(180)));
    // made in the hour: p-a, p-b and the 15 adopted warm Sandboxes
    assert_eq!(d.refill_per_minute, 0.28);
    assert_eq!(d.stale_members, ["p-a"]);
    assert_eq!(d.update_strategy, "OnReplenish (default)");
    // the one above p95: claim 20, cold (every fourth is): the pool was empty
    assert_eq!(g.slow.len(), 1);
    assert_eq!(
        (g.slow[0].claim.as_deref(), g.slow[0].cause),
        (Some("c20"), Cause::PoolEmpty)
    );
    let s = p.starts.iter().find(|s| s.claim.as_deref() == Some("c3")).unwrap();
    assert_eq!(
        (s.from, s.until, s.latency_ms),
        (From::FirstRequested, Some(Until::SandboxReady), Some(3000))
    );
}

/// 19 ordinary starts of `base`, then one shaped `slow`: the cause told for it.
fn cause_of(base: &Shape, slow: &Shape, members: Vec<Value>) -> (Cause, Vec<String>) {
    let mut w = World::default();
    for i in 1..=19 {
        w.start(i, now() - Duration::minutes(30 - i as i64), base);
    }
    w.start(20, now() - Duration::minutes(5), slow);
    w.sandboxes.extend(members);
    let p = w.pulse(&[pool()]);
    let g = &p.groups[0];
    assert_eq!(g.slow.len(), 1, "{:?}", g.slow);
    (g.slow[0].cause, g.slow[0].evidence.clone())
}

/// A cold start of the group's usual shape: made, scheduled, pulled, started, Ready at 5 s.
fn cold() -> Shape {
    Shape {
        launch: "cold",
        sandbox_made: 100,
        ready: 5_000,
        pod: Some([1_000, 1_500, 3_500, 3_600]),
        hash: "h",
        ..Shape::default()
    }
}

/// A request stamped with milliseconds (`client-first-requested-at`) and the controller's Event in
/// that same second, which `metav1.Time` keeps whole: the Event is not before the request.
#[test]
fn an_event_in_the_requests_own_second_is_after_it() {
    let cold = cold();
    let mut w = World::default();
    for i in 1..=19 {
        w.start(i, now() - Duration::minutes(30 - i as i64), &cold);
    }
    let requested = now() - Duration::minutes(5) + Duration::milliseconds(513);
    let slow = Shape {
        // the Event's whole second: 513 ms "before" the request's stamp
        error_at: Some(-513),
        pod: Some([27_000, 27_500, 29_500, 29_600]),
        ready: 30_487,
        ..cold.clone()
    };
    w.start(20, requested, &slow);
    let p = w.pulse(&[pool()]);
    let b = &p.groups[0].slow[0];
    assert_eq!(b.cause, Cause::ControllerError, "{b:?}");
    assert!(b.evidence[0].contains("in the request's second"), "{b:?}");
}

#[test]
fn each_cause_is_told_with_its_evidence() {
    let cold = cold();
    let warm = Shape {
        launch: "warm",
        sandbox_made: -600_000,
        ready: -500_000,
        claim_ready: Some(400),
        hash: "h",
        ..Shape::default()
    };
    let with = |f: &dyn Fn(&mut Shape)| {
        let mut s = cold.clone();
        f(&mut s);
        s
    };
    let (c, e) = cause_of(
        &cold,
        &with(&|s| {
            s.pod = Some([1_000, 20_000, 22_000, 22_100]);
            s.ready = 23_000
        }),
        vec![],
    );
    assert_eq!(c, Cause::Unschedulable, "{e:?}");
    assert!(
        e[0].contains("`scheduled` leg took 19.0s against the group's median 0.5s"),
        "{e:?}"
    );
    let (c, e) = cause_of(
        &cold,
        &with(&|s| {
            s.pod = Some([1_000, 1_500, 30_000, 30_100]);
            s.ready = 31_000
        }),
        vec![],
    );
    assert_eq!(c, Cause::ImagePull, "{e:?}");
    assert!(e.iter().any(|l| l.starts_with("Event Pulled on Pod s20")), "{e:?}");
    let (c, _) = cause_of(&cold, &with(&|s| s.ready = 25_000), vec![]);
    assert_eq!(c, Cause::SlowReadiness);
    let (c, e) = cause_of(
        &cold,
        &with(&|s| {
            s.error_at = Some(2_000);
            s.pod = Some([20_000, 20_500, 22_500, 22_600]);
            s.ready = 24_000
        }),
        vec![],
    );
    assert_eq!(c, Cause::ControllerError);
    assert!(
        e[0].starts_with("Event ReconcilerError on Sandbox s20 2.0s after the request: Error seen: quota"),
        "{e:?}"
    );
    let (c, e) = cause_of(&warm, &cold, vec![]);
    assert_eq!(c, Cause::PoolEmpty);
    assert!(e[0].contains("warm pool p had no member to adopt"), "{e:?}");
    let stale = Shape {
        launch: "warm",
        hash: "old",
        ..cold.clone()
    };
    let (c, e) = cause_of(&warm, &stale, vec![member("p-n", "new", -60_000, true)]);
    assert_eq!(c, Cause::StaleMember, "{e:?}");
    assert!(
        e[0].contains("template hash old, the pool's newest member p-n from new"),
        "{e:?}"
    );
    let held = Shape {
        launch: "warm",
        sandbox_made: -2_000,
        ready: 9_000,
        pod: Some([-1_900, -1_500, 6_000, 6_100]),
        ..cold.clone()
    };
    let (c, e) = cause_of(&warm, &held, vec![member("p-n", "h", -60_000, true)]);
    assert_eq!(c, Cause::ReplenishHold, "{e:?}");
    assert!(
        e[0].contains("was made 2.0s before the request by the pool's replenish and became Ready 9.0s after"),
        "{e:?}"
    );
}

#[test]
fn an_adopted_ready_member_ends_at_the_claims_ready_and_resumes_are_their_own_figure() {
    let mut w = World::default();
    w.start(
        1,
        now() - Duration::minutes(3),
        &Shape {
            launch: "warm",
            sandbox_made: -600_000,
            ready: -500_000,
            claim_ready: Some(800),
            hash: "h",
            ..Shape::default()
        },
    );
    w.start(
        2,
        now() - Duration::minutes(2),
        &Shape {
            launch: "warm",
            sandbox_made: -600_000,
            ready: -500_000,
            hash: "h",
            ..Shape::default()
        },
    );
    w.sandboxes.push(
        json!({"metadata": {"name": "namzu-ws-a", "namespace": "ns", "creationTimestamp": at(now(), -86_400_000),
        "annotations": {CHANGED_AT: at(now(), -60_000)}},
        "spec": {"operatingMode": "Running", "podTemplate": {"metadata": {"labels": {TEMPLATE_LABEL: "coder"}}}},
        "status": {"conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": at(now(), -52_000)}]}}),
    );
    let p = w.pulse(&[pool()]);
    let c1 = p.starts.iter().find(|s| s.claim.as_deref() == Some("c1")).unwrap();
    assert_eq!((c1.until, c1.latency_ms), (Some(Until::ClaimReady), Some(800)));
    let c2 = p.starts.iter().find(|s| s.claim.as_deref() == Some("c2")).unwrap();
    assert!(
        c2.latency_ms.is_none()
            && c2
                .unknown
                .as_deref()
                .is_some_and(|u| u.contains("Ready before the request"))
    );
    let g = p.groups.iter().find(|g| g.template == "coder").unwrap();
    assert_eq!(
        (g.pool.as_str(), g.resume_to_ready.count, g.resume_to_ready.p50_ms),
        ("-", 1, Some(8_000))
    );
    let pg = p.groups.iter().find(|g| g.pool == "p").unwrap();
    assert_eq!((pg.claim_to_ready.count, pg.claim_to_ready.unknown), (1, 1));
}
