//! The start-up waterfall of a workspace's current pod: where its start-up time went, and the leg
//! under way.

use super::super::annotations::CHANGED_AT;
use super::super::object::{annotation, at, name, str_at, uid};
use super::super::patch::Mode;
use super::entry::{FIRST_REQUESTED_AT, Inputs, first_time, rfc3339, time};
use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::Value;

/// One leg of the start-up waterfall.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Leg {
    /// The step this leg ends with: `pod created`, `scheduled`, `image pulled`, `started`, `ready`.
    pub to: String,
    #[serde(serialize_with = "rfc3339")]
    pub at: DateTime<Utc>,
    /// Since the step before.
    pub seconds: i64,
}

/// The leg under way: from the last step that happened to now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OpenLeg {
    /// The step it waits for (`image pulled`).
    pub to: String,
    /// What is under way, in words: `pulling image`.
    pub doing: String,
    #[serde(serialize_with = "rfc3339")]
    pub since: DateTime<Utc>,
    /// Since `since`, by the clock the tool reads: and counting.
    pub seconds: i64,
}

/// Where the current pod's start-up time went.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Waterfall {
    /// What the first leg counts from: what started this pod — `requested (claim)`, `resumed`,
    /// `Sandbox created` (each only when the pod followed it within [`ORIGIN_WINDOW_SECONDS`]),
    /// else `pod created`.
    pub from: String,
    #[serde(serialize_with = "rfc3339")]
    pub start: DateTime<Utc>,
    pub legs: Vec<Leg>,
    /// The leg under way, while the pod is not ready.
    pub open: Option<OpenLeg>,
    /// The leg that took (or takes, the open one included) longest: its `to`.
    pub slowest: Option<String>,
    /// Steps that have not happened (yet): `ready` while the pod starts, say.
    pub pending: Vec<String>,
    /// From the start to the last step, or to now while a leg is open.
    #[serde(rename = "totalSeconds")]
    pub total_seconds: i64,
}

/// How long after a request, a resume or the Sandbox's creation its pod may be created and
/// still be the pod it started: a pod made later was made for another reason (a node lost, an
/// eviction, the controller's own recreation), and counting from the older stamp would give its
/// `pod created` leg time that was not spent starting it.
pub const ORIGIN_WINDOW_SECONDS: i64 = 300;

/// A container waiting on its image: the pull is under way (or backing off).
const PULL_WAITING: [&str; 4] = [
    "ImagePullBackOff",
    "ErrImagePull",
    "ErrImageNeverPull",
    "InvalidImageName",
];

/// What started the pod (see [`waterfall`]) and when: the latest of the request, the resume and
/// the Sandbox's creation at or before the pod's creation and within the window; else the pod's
/// creation.
fn origin(inputs: &Inputs<'_>, created: DateTime<Utc>) -> (&'static str, DateTime<Utc>) {
    let running = Mode::of_sandbox(inputs.sandbox) == Mode::Running;
    let candidates = [
        (
            "requested (claim)",
            inputs.claim.and_then(|c| time(annotation(c, FIRST_REQUESTED_AT))),
        ),
        (
            "resumed",
            running.then(|| time(annotation(inputs.sandbox, CHANGED_AT))).flatten(),
        ),
        (
            "Sandbox created",
            time(str_at(inputs.sandbox, &["metadata", "creationTimestamp"])),
        ),
    ];
    candidates
        .iter()
        .filter_map(|(w, t)| {
            t.filter(|t| *t <= created && (created - *t).num_seconds() <= ORIGIN_WINDOW_SECONDS)
                .map(|t| (*w, t))
        })
        .max_by_key(|(_, t)| *t)
        .unwrap_or(("pod created", created))
}

/// The legs of the steps reached, each from the one before (from `start`), and the steps pending.
fn legs_of(steps: &[(&str, Option<DateTime<Utc>>)], start: DateTime<Utc>, pulling: bool) -> (Vec<Leg>, Vec<String>) {
    let mut legs = Vec::new();
    let mut pending = Vec::new();
    let mut last = start;
    for &(step, at) in steps {
        match at {
            // a step stamped before the one before it (clock skew between writers) costs nothing
            Some(t) => {
                let t = t.max(last);
                legs.push(Leg {
                    to: step.to_string(),
                    at: t,
                    seconds: (t - last).num_seconds(),
                });
                last = t;
            }
            // an image already on the node is not pulled: no step, unless a pull is under way
            None if step == "image pulled" && !pulling => {}
            None => pending.push(step.to_string()),
        }
    }
    (legs, pending)
}

/// The start-up waterfall of the current pod: from what started it — the request (the claim's
/// `client-first-requested-at`), the resume (the mode-changed-at stamp, a Running one) or the
/// Sandbox's creation, the latest of these at or before the pod's creation and no more than
/// [`ORIGIN_WINDOW_SECONDS`] before it; else the pod's creation — to pod created → scheduled →
/// image pulled → started → Ready. A step not reached yet is the open leg, timed to `now`.
/// `None` without a pod.
pub fn waterfall(inputs: &Inputs<'_>, now: DateTime<Utc>) -> Option<Waterfall> {
    let pod = inputs.pod?;
    let created = time(str_at(pod, &["metadata", "creationTimestamp"]))?;
    let (from, start) = origin(inputs, created);
    let condition_true = |type_: &str| {
        super::super::object::condition(pod, type_)
            .filter(|c| c.get("status").and_then(Value::as_str) == Some("True"))
            .and_then(|c| time(c.get("lastTransitionTime").and_then(Value::as_str)))
    };
    let pod_uid = uid(pod);
    let of_pod = |e: &&Value| {
        let r = e.get("involvedObject").or_else(|| e.get("regarding"));
        let of = |k: &str| r.and_then(|r| str_at(r, &[k]));
        of("kind") == Some("Pod") && (of("uid") == pod_uid || of("uid").is_none() && of("name") == Some(name(pod)))
    };
    // the first time the pod's kubelet said `reason` (an event's firstTimestamp: a crash loop's
    // later starts do not move it)
    let first_event = |reason: &str| {
        inputs
            .events
            .iter()
            .filter(|e| e.get("reason").and_then(Value::as_str) == Some(reason))
            .filter(of_pod)
            .filter_map(first_time)
            .filter(|t| *t >= created)
            .min()
    };
    let statuses = || {
        at(pod, &["status", "containerStatuses"])
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
    };
    let pulled = first_event("Pulled");
    // a pull under way: a container waits on its image, or the kubelet said Pulling and not Pulled
    let pulling = pulled.is_none()
        && (statuses().any(|s| str_at(s, &["state", "waiting", "reason"]).is_some_and(|r| PULL_WAITING.contains(&r)))
            || first_event("Pulling").is_some());
    let started = statuses()
        .flat_map(|s| {
            [
                &["state", "running", "startedAt"][..],
                &["lastState", "terminated", "startedAt"],
            ]
            .into_iter()
            .filter_map(move |path| time(str_at(s, path)))
        })
        .chain(first_event("Started"))
        .min();
    let steps = [
        ("pod created", Some(created)),
        ("scheduled", condition_true("PodScheduled")),
        ("image pulled", pulled),
        ("started", started),
        ("ready", condition_true("Ready")),
    ];
    let (legs, pending) = legs_of(&steps, start, pulling);
    // a pod that has ended is not starting: nothing is under way
    let ended = matches!(str_at(pod, &["status", "phase"]), Some("Failed" | "Succeeded"))
        || str_at(pod, &["metadata", "deletionTimestamp"]).is_some();
    let open = pending.first().filter(|_| !ended).map(|to| {
        // the last step reached before the first one pending
        let order = steps.iter().position(|(s, _)| s == to).unwrap_or(0);
        let since = legs
            .iter()
            .filter(|l| steps.iter().position(|(s, _)| *s == l.to).unwrap_or(0) < order)
            .map(|l| l.at)
            .max()
            .unwrap_or(start);
        OpenLeg {
            to: to.clone(),
            doing: doing(to).to_string(),
            since,
            seconds: (now - since).num_seconds().max(0),
        }
    });
    let slowest_done = legs.iter().filter(|l| l.seconds > 0).max_by_key(|l| l.seconds);
    let slowest = match (&open, slowest_done) {
        (Some(o), Some(l)) if o.seconds > 0 && o.seconds >= l.seconds => Some(o.to.clone()),
        (Some(o), None) if o.seconds > 0 => Some(o.to.clone()),
        (_, l) => l.map(|l| l.to.clone()),
    };
    let total_seconds = match &open {
        Some(_) => (now - start).num_seconds().max(0),
        None => legs.last().map_or(0, |l| (l.at - start).num_seconds()),
    };
    Some(Waterfall {
        from: from.to_string(),
        start,
        legs,
        open,
        slowest,
        pending,
        total_seconds,
    })
}

/// What is under way while a step is awaited.
fn doing(step: &str) -> &'static str {
    match step {
        "scheduled" => "scheduling",
        "image pulled" => "pulling image",
        "started" => "starting",
        "ready" => "becoming ready",
        _ => "creating pod",
    }
}
