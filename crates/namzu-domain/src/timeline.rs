//! One workspace's history as one timeline (`kubectl namzu history`, the TUI's `h`): the Events of
//! its Sandbox, pod, disks and claim (core/v1 and events.k8s.io/v1 read alike, each event once),
//! the mode change its annotations record, its conditions' and its pod's transitions, container
//! starts and terminations, and this machine's audit entries for it — in time order, each entry
//! naming its source. And the start-up waterfall of the current pod: where start-up time went.

use super::object::{annotation, at, name, str_at, uid};
use chrono::{DateTime, Utc};
use serde_json::Value;
use std::collections::HashSet;

mod entry;
mod modes;
mod waterfall;
pub use entry::{Entry, Inputs, Source};
pub(crate) use entry::{FIRST_REQUESTED_AT, event_time};
use entry::{object_words, short_kind, time};
use modes::mode_entries;
pub use modes::{STAMP_SKEW_SECONDS, Written, mode_unstamped};
pub use waterfall::{Leg, ORIGIN_WINDOW_SECONDS, OpenLeg, Waterfall, waterfall};

/// The most Events a history keeps of one object from one API (core/v1, events.k8s.io/v1): the
/// newest; how many more there were is said (`eventsNotShown`, a warning line).
pub const MAX_EVENTS_PER_OBJECT: usize = 1_000;

/// The most audit entries a history keeps of one workspace: the newest; that there were more is
/// said (a warning line).
pub const MAX_AUDIT_ENTRIES: usize = 1_000;

/// One object whose Events a history shows, as `kubectl describe` finds them: by kind, name and
/// uid. An event that names no uid is the object's when kind and name match and it is not older
/// than the object (an event of a predecessor of the same name is not).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Regarding {
    pub kind: String,
    pub name: String,
    pub uid: Option<String>,
    pub created: Option<DateTime<Utc>>,
}

impl Regarding {
    pub fn of(kind: &str, object: &Value) -> Regarding {
        Regarding {
            kind: kind.to_string(),
            name: name(object).to_string(),
            uid: uid(object).filter(|u| !u.is_empty()).map(str::to_string),
            created: time(str_at(object, &["metadata", "creationTimestamp"])),
        }
    }

    /// Whether event `e` (of either API) is about this object.
    pub(crate) fn is_of(&self, e: &Value) -> bool {
        let Some(r) = e.get("involvedObject").or_else(|| e.get("regarding")) else {
            return false;
        };
        if str_at(r, &["kind"]) != Some(self.kind.as_str()) || str_at(r, &["name"]) != Some(self.name.as_str()) {
            return false;
        }
        match str_at(r, &["uid"]).filter(|u| !u.is_empty()) {
            Some(u) => self.uid.as_deref() == Some(u),
            // what cannot be told apart is kept
            None => match (event_time(e), self.created) {
                (Some(t), Some(created)) => t >= created,
                _ => true,
            },
        }
    }
}

/// The Events of some objects (from one API) as they are read, each object's newest
/// [`MAX_EVENTS_PER_OBJECT`] kept (at most twice that held at once); events of none of them are
/// dropped, those of one beyond its newest counted.
#[derive(Debug, Default)]
pub struct NewestEvents {
    /// Each object, its events kept, and how many of its events were not.
    objects: Vec<(Regarding, Vec<Value>, usize)>,
}

impl NewestEvents {
    pub fn new(objects: Vec<Regarding>) -> NewestEvents {
        NewestEvents {
            objects: objects.into_iter().map(|r| (r, Vec::new(), 0)).collect(),
        }
    }

    /// The same objects, no events.
    pub fn empty_like(&self) -> NewestEvents {
        NewestEvents::new(self.objects.iter().map(|(r, _, _)| r.clone()).collect())
    }

    /// One event read: kept for the first object it is about, if any.
    pub fn keep(&mut self, e: Value) {
        let Some((_, kept, dropped)) = self.objects.iter_mut().find(|(r, _, _)| r.is_of(&e)) else {
            return;
        };
        kept.push(e);
        if kept.len() >= 2 * MAX_EVENTS_PER_OBJECT {
            *dropped += newest_only(kept);
        }
    }

    /// Every object's newest events, and each object's count of those not kept.
    pub fn finish(self) -> (Vec<Value>, Vec<(Regarding, usize)>) {
        let mut events = Vec::new();
        let mut not_shown = Vec::new();
        for (r, mut kept, dropped) in self.objects {
            let dropped = dropped + newest_only(&mut kept);
            events.append(&mut kept);
            not_shown.push((r, dropped));
        }
        (events, not_shown)
    }
}

/// Keep the newest [`MAX_EVENTS_PER_OBJECT`] of `events` (newest first); how many were dropped.
fn newest_only(events: &mut Vec<Value>) -> usize {
    if events.len() <= MAX_EVENTS_PER_OBJECT {
        return 0;
    }
    events.sort_by_key(|e| std::cmp::Reverse(event_time(e)));
    let dropped = events.len() - MAX_EVENTS_PER_OBJECT;
    events.truncate(MAX_EVENTS_PER_OBJECT);
    dropped
}

/// Every entry, oldest first (ties keep the order: status, annotation, managed, event, audit).
pub fn timeline(inputs: &Inputs<'_>) -> Vec<Entry> {
    let mut out = Vec::new();
    object_entries(&mut out, "Sandbox", inputs.sandbox);
    mode_entries(&mut out, inputs.sandbox, inputs.audit);
    if let Some(pod) = inputs.pod {
        object_entries(&mut out, "Pod", pod);
        container_entries(&mut out, pod);
    }
    if let Some(claim) = inputs.claim {
        object_entries(&mut out, "SandboxClaim", claim);
        if let Some(t) = time(annotation(claim, FIRST_REQUESTED_AT)) {
            out.push(Entry {
                time: t,
                source: Source::Annotation,
                object: object_words("SandboxClaim", claim),
                warning: false,
                reason: String::new(),
                text: "first requested by a client".into(),
            });
        }
    }
    for pvc in inputs.pvcs {
        object_entries(&mut out, "PersistentVolumeClaim", pvc);
    }
    let mut seen = HashSet::new();
    for e in inputs.events {
        if let Some(entry) = event_entry(e)
            && uid(e).is_none_or(|u| seen.insert(u.to_string()))
        {
            out.push(entry);
        }
    }
    out.extend(inputs.audit.iter().filter_map(audit_entry));
    out.sort_by(|a, b| a.time.cmp(&b.time).then(a.source.cmp(&b.source)));
    out
}

/// Created, deleted, and each condition's last transition.
fn object_entries(out: &mut Vec<Entry>, kind: &str, obj: &Value) {
    let object = object_words(kind, obj);
    if let Some(t) = time(str_at(obj, &["metadata", "creationTimestamp"])) {
        out.push(Entry {
            time: t,
            source: Source::Status,
            object: object.clone(),
            warning: false,
            reason: String::new(),
            text: match uid(obj) {
                Some(u) => format!("created (uid {u})"),
                None => "created".into(),
            },
        });
    }
    if let Some(t) = time(str_at(obj, &["metadata", "deletionTimestamp"])) {
        let finalizers: Vec<&str> = at(obj, &["metadata", "finalizers"])
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        out.push(Entry {
            time: t,
            source: Source::Status,
            object: object.clone(),
            warning: true,
            reason: String::new(),
            text: if finalizers.is_empty() {
                "deletion requested".into()
            } else {
                format!("deletion requested; waiting on finalizers {}", finalizers.join(", "))
            },
        });
    }
    for c in at(obj, &["status", "conditions"])
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let Some(t) = time(c.get("lastTransitionTime").and_then(Value::as_str)) else {
            continue;
        };
        let (status, reason, message) = super::object::condition_parts(c);
        let type_ = c.get("type").and_then(Value::as_str).unwrap_or("?");
        let mut text = format!("{type_}={status}");
        if !message.is_empty() {
            text.push_str(": ");
            text.push_str(message);
        }
        out.push(Entry {
            time: t,
            source: Source::Status,
            object: object.clone(),
            warning: status == "False" && type_ == "Ready" && !reason.is_empty() && reason != "SandboxSuspended",
            reason: reason.to_string(),
            text,
        });
    }
}

/// Container starts and terminations the pod's status records (the current instance and the
/// one before it: the status keeps no more).
fn container_entries(out: &mut Vec<Entry>, pod: &Value) {
    let object = object_words("Pod", pod);
    let statuses = ["initContainerStatuses", "containerStatuses"]
        .iter()
        .filter_map(|k| at(pod, &["status", k]).and_then(Value::as_array))
        .flatten();
    for s in statuses {
        let container = s.get("name").and_then(Value::as_str).unwrap_or("?");
        let restarts = s.get("restartCount").and_then(Value::as_i64).unwrap_or(0);
        for (state, which) in [("lastState", "previous instance"), ("state", "current instance")] {
            if let Some(t) = at(s, &[state, "terminated"]) {
                if let Some(started) = time(str_at(t, &["startedAt"])) {
                    out.push(container_entry(
                        &object,
                        started,
                        false,
                        "",
                        format!("container {container} started ({which})"),
                    ));
                }
                if let Some(finished) = time(str_at(t, &["finishedAt"])) {
                    let code = t.get("exitCode").and_then(Value::as_i64).unwrap_or(0);
                    let reason = str_at(t, &["reason"]).unwrap_or("");
                    out.push(container_entry(
                        &object,
                        finished,
                        code != 0,
                        reason,
                        format!("container {container} terminated with exit code {code} ({which})"),
                    ));
                }
            }
            if let Some(started) = at(s, &[state, "running"]).and_then(|r| time(str_at(r, &["startedAt"]))) {
                let text = match restarts {
                    0 => format!("container {container} started"),
                    n => format!("container {container} started (restart {n})"),
                };
                out.push(container_entry(&object, started, false, "", text));
            }
        }
    }
}

fn container_entry(object: &str, time: DateTime<Utc>, warning: bool, reason: &str, text: String) -> Entry {
    Entry {
        time,
        source: Source::Status,
        object: object.to_string(),
        warning,
        reason: reason.to_string(),
        text,
    }
}

/// An Event of either API as an entry.
/// The field the flight recorder's merge puts on an Event the cluster no longer serves.
pub const RECORDED: &str = "namzuRecorded";

fn event_entry(e: &Value) -> Option<Entry> {
    let core = e.get("involvedObject").is_some();
    let regarding = if core {
        e.get("involvedObject")
    } else {
        e.get("regarding")
    };
    let t = event_time(e)?;
    let count = e
        .get("count")
        .or_else(|| at(e, &["series", "count"]))
        .or_else(|| e.get("deprecatedCount"))
        .and_then(Value::as_i64)
        .unwrap_or(1);
    let message = e
        .get("message")
        .or_else(|| e.get("note"))
        .and_then(Value::as_str)
        .unwrap_or("");
    let mut text = message.to_string();
    if count > 1 {
        text.push_str(&format!(" (×{count})"));
    }
    let kind = regarding.and_then(|r| str_at(r, &["kind"])).unwrap_or("?");
    let object = format!(
        "{} {}",
        short_kind(kind),
        regarding.and_then(|r| str_at(r, &["name"])).unwrap_or("?")
    );
    let recorded = e.get(RECORDED).and_then(Value::as_bool) == Some(true);
    Some(Entry {
        time: t,
        source: if recorded { Source::Recorded } else { Source::Event },
        object,
        warning: e.get("type").and_then(Value::as_str) == Some("Warning"),
        reason: e.get("reason").and_then(Value::as_str).unwrap_or("").to_string(),
        text,
    })
}

/// An audit entry as a line: what was sent, what came of it.
fn audit_entry(a: &Value) -> Option<Entry> {
    let t = time(a.get("time").and_then(Value::as_str))?;
    let s = |k: &str| a.get(k).and_then(Value::as_str).unwrap_or("");
    let verb = s("verb");
    let outcome = s("outcome");
    let mut text = format!("{verb}: {outcome}");
    if let Some(epoch) = a.get("epochCarried").filter(|e| !e.is_null()) {
        text.push_str(&format!(
            " (holder epoch {})",
            epoch.as_str().map_or_else(|| epoch.to_string(), str::to_string)
        ));
    }
    if let Some(code) = a.get("status").and_then(Value::as_u64) {
        text.push_str(&format!(", HTTP {code}"));
    }
    if a.get("refreshTemplate").and_then(Value::as_bool) == Some(true) {
        text.push_str(", refreshing the template");
    }
    if let Some(w) = Written::of(a) {
        if w.is_take_over() {
            let from = w.replaced.as_deref().map_or_else(String::new, |r| format!(" from {r}"));
            text.push_str(&format!(
                "; a take-over: holder epoch{from} to {}, the mode left as it was",
                w.epoch.as_deref().unwrap_or("?")
            ));
        } else if let Some(mode) = &w.mode {
            text.push_str(&format!("; sets mode {mode}"));
            if let Some(stamp) = &w.stamp {
                text.push_str(&format!(", stamped {stamp}"));
            }
        }
    }
    let failed = !matches!(
        outcome,
        "applied" | "unchanged" | "dry-run" | "confirmed" | "already-gone" | "intent"
    );
    Some(Entry {
        time: t,
        source: Source::Audit,
        object: format!("by this machine ({})", non_empty_or(s("context"), "-")),
        warning: failed,
        reason: String::new(),
        text,
    })
}

fn non_empty_or<'a>(s: &'a str, or: &'a str) -> &'a str {
    if s.is_empty() { or } else { s }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::annotations::{CHANGED_AT, HOLDER_EPOCH};
    use crate::timefmt;
    use serde_json::json;

    #[test]
    fn an_objects_events_are_its_kind_name_and_uid_and_only_the_newest_are_kept() {
        let object = serde_json::json!({"kind": "Sandbox", "metadata": {"name": "namzu-ws-a", "uid": "u1",
            "creationTimestamp": "2026-09-10T12:00:00Z"}});
        let r = Regarding::of("Sandbox", &object);
        let ev = |kind: &str, uid: Option<&str>, at: &str| {
            let mut e =
                serde_json::json!({"involvedObject": {"kind": kind, "name": "namzu-ws-a"}, "lastTimestamp": at});
            if let Some(u) = uid {
                e["involvedObject"]["uid"] = u.into();
            }
            e
        };
        assert!(r.is_of(&ev("Sandbox", Some("u1"), "2026-09-10T13:00:00Z")));
        assert!(
            !r.is_of(&ev("Sandbox", Some("u0"), "2026-09-10T13:00:00Z")),
            "a predecessor's"
        );
        assert!(
            !r.is_of(&ev("Pod", Some("u1"), "2026-09-10T13:00:00Z")),
            "another kind's"
        );
        assert!(r.is_of(&ev("Sandbox", None, "2026-09-10T13:00:00Z")));
        assert!(
            !r.is_of(&ev("Sandbox", None, "2026-09-10T11:00:00Z")),
            "older than the object"
        );
        // events.k8s.io/v1 names it `regarding`
        let v1 = serde_json::json!({"regarding": {"kind": "Sandbox", "name": "namzu-ws-a", "uid": "u1"}});
        assert!(r.is_of(&v1));

        let mut newest = NewestEvents::new(vec![r]);
        let total = 2 * MAX_EVENTS_PER_OBJECT + 10;
        for i in 0..total {
            let at = (chrono::DateTime::parse_from_rfc3339("2026-09-11T00:00:00Z").unwrap()
                + chrono::Duration::seconds(i as i64))
            .to_rfc3339();
            newest.keep(ev("Sandbox", Some("u1"), &at));
            newest.keep(ev("Sandbox", Some("other"), &at));
        }
        let (events, not_shown) = newest.finish();
        assert_eq!(events.len(), MAX_EVENTS_PER_OBJECT);
        assert_eq!(not_shown[0].1, total - MAX_EVENTS_PER_OBJECT);
        let oldest_kept = events.iter().filter_map(event_time).min().unwrap();
        let first = chrono::DateTime::parse_from_rfc3339("2026-09-11T00:00:00Z").unwrap();
        assert_eq!(
            oldest_kept,
            first + chrono::Duration::seconds((total - MAX_EVENTS_PER_OBJECT) as i64)
        );
    }

    /// When the tests' tool reads its clock.
    fn now() -> DateTime<Utc> {
        timefmt::parse("2026-09-02T10:21:02Z").unwrap()
    }

    fn sandbox() -> Value {
        json!({"metadata": {"name": "namzu-ws-a", "uid": "sb", "creationTimestamp": "2026-09-01T10:00:00Z",
            "annotations": {CHANGED_AT: "2026-09-02T10:00:00.000Z", HOLDER_EPOCH: "3"},
            "managedFields": [{"manager": "namzu-sandbox", "operation": "Update", "time": "2026-09-02T10:00:00Z",
                "fieldsV1": {"f:metadata": {"f:annotations": {"f:sandbox.namzu.ai/holder-epoch": {}, "f:sandbox.namzu.ai/operating-mode-changed-at": {}}},
                    "f:spec": {"f:operatingMode": {}}}}]},
            "spec": {"operatingMode": "Running"},
            "status": {"conditions": [{"type": "Ready", "status": "True", "reason": "DependenciesReady", "lastTransitionTime": "2026-09-02T10:00:40Z"}]}})
    }

    fn pod() -> Value {
        json!({"metadata": {"name": "namzu-ws-a", "uid": "p1", "creationTimestamp": "2026-09-02T10:00:01Z"},
            "status": {"conditions": [
                {"type": "PodScheduled", "status": "True", "lastTransitionTime": "2026-09-02T10:00:02Z"},
                {"type": "Ready", "status": "True", "lastTransitionTime": "2026-09-02T10:00:40Z"}],
              "containerStatuses": [{"name": "agent", "restartCount": 1,
                "state": {"running": {"startedAt": "2026-09-02T10:00:35Z"}},
                "lastState": {"terminated": {"exitCode": 1, "reason": "Error", "startedAt": "2026-09-02T10:00:30Z", "finishedAt": "2026-09-02T10:00:33Z"}}}]}})
    }

    fn events() -> Vec<Value> {
        let pulled = json!({"metadata": {"uid": "e1"}, "type": "Normal", "reason": "Pulled",
            "message": "Successfully pulled image", "involvedObject": {"kind": "Pod", "name": "namzu-ws-a", "uid": "p1"},
            "lastTimestamp": "2026-09-02T10:00:29Z"});
        // the same event through events.k8s.io: one entry
        let again = json!({"metadata": {"uid": "e1"}, "type": "Normal", "reason": "Pulled", "note": "Successfully pulled image",
            "regarding": {"kind": "Pod", "name": "namzu-ws-a", "uid": "p1"}, "deprecatedLastTimestamp": "2026-09-02T10:00:29Z"});
        let warn = json!({"metadata": {"uid": "e2"}, "type": "Warning", "reason": "BackOff", "note": "Back-off restarting",
            "regarding": {"kind": "Pod", "name": "namzu-ws-a"}, "series": {"count": 3, "lastObservedTime": "2026-09-02T10:00:34Z"}});
        vec![pulled, again, warn]
    }

    #[test]
    fn one_timeline_in_time_order_each_event_once() {
        let (s, p, ev) = (sandbox(), pod(), events());
        let audit = [
            json!({"time": "2026-09-02T10:00:00.000Z", "verb": "resume", "outcome": "applied", "epochCarried": "3", "status": 200, "context": "prod"}),
        ];
        let t = timeline(&Inputs {
            sandbox: &s,
            pod: Some(&p),
            claim: None,
            pvcs: &[],
            events: &ev,
            audit: &audit,
        });
        let lines: Vec<String> = t
            .iter()
            .map(|e| {
                format!(
                    "{} {} {} {}",
                    timefmt::js_iso(e.time),
                    e.source.as_str(),
                    e.object,
                    e.text
                )
            })
            .collect();
        assert!(t.windows(2).all(|w| w[0].time <= w[1].time), "{lines:#?}");
        assert_eq!(t.iter().filter(|e| e.reason == "Pulled").count(), 1, "{lines:#?}");
        let backoff = t.iter().find(|e| e.reason == "BackOff").unwrap();
        assert!(backoff.warning && backoff.text.ends_with("(×3)"));
        assert!(
            lines
                .iter()
                .any(|l| l.contains("audit by this machine (prod) resume: applied (holder epoch 3), HTTP 200")),
            "{lines:#?}"
        );
        assert!(
            lines
                .iter()
                .any(|l| l.contains("annotation Sandbox namzu-ws-a mode changed to Running (holder epoch 3"))
        );
        assert!(
            lines
                .iter()
                .any(|l| l.contains("terminated with exit code 1 (previous instance)"))
        );
    }

    #[test]
    fn the_waterfall_names_the_slowest_leg() {
        let (s, p, ev) = (sandbox(), pod(), events());
        let w = waterfall(
            &Inputs {
                sandbox: &s,
                pod: Some(&p),
                claim: None,
                pvcs: &[],
                events: &ev,
                audit: &[],
            },
            now(),
        )
        .unwrap();
        assert_eq!(w.from, "resumed");
        let legs: Vec<(String, i64)> = w.legs.iter().map(|l| (l.to.clone(), l.seconds)).collect();
        assert_eq!(
            legs,
            vec![
                ("pod created".into(), 1),
                ("scheduled".into(), 1),
                ("image pulled".into(), 27),
                ("started".into(), 1),
                ("ready".into(), 10)
            ]
        );
        assert_eq!(w.slowest.as_deref(), Some("image pulled"));
        let claim = json!({"metadata": {"name": "c", "annotations": {FIRST_REQUESTED_AT: "2026-09-02T10:00:00.500Z"}}});
        let w = waterfall(
            &Inputs {
                sandbox: &s,
                pod: Some(&p),
                claim: Some(&claim),
                pvcs: &[],
                events: &ev,
                audit: &[],
            },
            now(),
        )
        .unwrap();
        assert_eq!(w.from, "requested (claim)");
        let mut starting = pod();
        starting["status"] = json!({"conditions": [{"type": "PodScheduled", "status": "True", "lastTransitionTime": "2026-09-02T10:00:02Z"}]});
        let w = waterfall(
            &Inputs {
                sandbox: &s,
                pod: Some(&starting),
                claim: None,
                pvcs: &[],
                events: &[],
                audit: &[],
            },
            now(),
        )
        .unwrap();
        assert_eq!(w.pending, vec!["started", "ready"]);
        let open = w.open.unwrap();
        assert_eq!((open.doing.as_str(), open.seconds), ("starting", 21 * 60));
        assert_eq!(w.slowest.as_deref(), Some("started"), "the open leg is the slowest");
        assert_eq!(w.total_seconds, 21 * 60 + 2);
    }

    #[test]
    fn a_pull_under_way_is_the_open_leg_and_an_old_stamp_is_not_the_origin() {
        let mut s = sandbox();
        // resumed 47 minutes before this pod was made: another pod was, this one came later
        s["metadata"]["annotations"][CHANGED_AT] = json!("2026-09-02T09:13:00.000Z");
        let mut p = pod();
        p["status"] = json!({"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "True", "lastTransitionTime": "2026-09-02T10:00:02Z"}],
            "containerStatuses": [{"name": "agent", "state": {"waiting": {"reason": "ImagePullBackOff"}}}]});
        let w = waterfall(
            &Inputs {
                sandbox: &s,
                pod: Some(&p),
                claim: None,
                pvcs: &[],
                events: &[],
                audit: &[],
            },
            now(),
        )
        .unwrap();
        assert_eq!(w.from, "pod created");
        assert_eq!(w.start, timefmt::parse("2026-09-02T10:00:01Z").unwrap());
        let legs: Vec<(String, i64)> = w.legs.iter().map(|l| (l.to.clone(), l.seconds)).collect();
        assert_eq!(legs, vec![("pod created".into(), 0), ("scheduled".into(), 1)]);
        let open = w.open.as_ref().unwrap();
        assert_eq!((open.doing.as_str(), open.seconds), ("pulling image", 21 * 60));
        assert_eq!(w.slowest.as_deref(), Some("image pulled"));
        assert_eq!(w.pending, vec!["image pulled", "started", "ready"]);
        assert_eq!(w.total_seconds, 21 * 60 + 1);
    }

    #[test]
    fn each_mode_entry_carries_what_was_true_at_its_time() {
        // suspended by this machine at 08:00 (epoch 7), set Running by kubectl at 09:00, taken
        // over (epoch 8, no mode change) at 10:00
        let mut s = sandbox();
        s["spec"]["operatingMode"] = json!("Running");
        s["metadata"]["annotations"] = json!({CHANGED_AT: "2026-09-02T08:00:00.123Z", HOLDER_EPOCH: "8"});
        s["metadata"]["managedFields"] = json!([
            {"manager": "kubectl-namzu", "operation": "Update", "time": "2026-09-02T10:00:00Z",
             "fieldsV1": {"f:metadata": {"f:annotations": {"f:sandbox.namzu.ai/holder-epoch": {}, "f:sandbox.namzu.ai/operating-mode-changed-at": {}}}}},
            {"manager": "kubectl-patch", "operation": "Update", "time": "2026-09-02T09:00:00Z",
             "fieldsV1": {"f:spec": {"f:operatingMode": {}}}}]);
        let entries = |audit: &[Value]| {
            timeline(&Inputs {
                sandbox: &s,
                pod: None,
                claim: None,
                pvcs: &[],
                events: &[],
                audit,
            })
            .into_iter()
            .filter(|e| e.source != Source::Status)
            .map(|e| format!("{} {} {}", timefmt::js_iso(e.time), e.source.as_str(), e.text))
            .collect::<Vec<_>>()
        };
        // another machine: the stamp's mode and epoch were written again since
        let seen = entries(&[]);
        assert_eq!(
            seen,
            vec![
                "2026-09-02T08:00:00.123Z annotation mode changed to unknown (holder epoch unknown; stamped by kubectl-namzu (this tool); written again since: what it was then is not recorded)",
                "2026-09-02T09:00:00.000Z managed mode Running, set by kubectl-patch (kubectl) without a mode-changed-at stamp (that manager's latest write)",
                "2026-09-02T10:00:00.000Z managed holder epoch raised to 8 by kubectl-namzu (this tool) with no mode change (a take-over)",
            ],
            "{seen:#?}"
        );
        // this machine: its audit entries say what each write set
        let e = super::super::patch::annotation_pointer(HOLDER_EPOCH);
        let c = super::super::patch::annotation_pointer(CHANGED_AT);
        let audit = [
            json!({"time": "2026-09-02T08:00:00.150Z", "verb": "suspend", "outcome": "applied", "epochCarried": 7, "context": "prod",
                "request": {"body": [{"op": "test", "path": e, "value": "7"}, {"op": "add", "path": e, "value": "7"},
                    {"op": "add", "path": c, "value": "2026-09-02T08:00:00.123Z"}, {"op": "add", "path": "/spec/operatingMode", "value": "Suspended"}]}}),
            json!({"time": "2026-09-02T10:00:00.200Z", "verb": "resume", "outcome": "applied", "epochCarried": 8, "context": "prod",
                "request": {"body": [{"op": "test", "path": e, "value": "7"}, {"op": "add", "path": e, "value": "8"}]}}),
        ];
        let seen = entries(&audit);
        assert_eq!(
            seen,
            vec![
                "2026-09-02T08:00:00.123Z annotation mode changed to Suspended (holder epoch 7; stamped by this machine's write)",
                "2026-09-02T08:00:00.150Z audit suspend: applied (holder epoch 7); sets mode Suspended, stamped 2026-09-02T08:00:00.123Z",
                "2026-09-02T09:00:00.000Z managed mode Running, set by kubectl-patch (kubectl) without a mode-changed-at stamp (that manager's latest write)",
                "2026-09-02T10:00:00.200Z audit resume: applied (holder epoch 8); a take-over: holder epoch from 7 to 8, the mode left as it was",
            ],
            "{seen:#?}"
        );
    }
}
