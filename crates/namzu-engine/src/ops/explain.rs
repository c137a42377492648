//! `history ID --between T1 T2` (issue 43): what changed in a workspace between two recorded
//! instants, in words, with who wrote it. The recording is read from its start; at each recorded
//! change of the workspace's objects its row is derived again (the same derivation as `list`)
//! and what moved is said — mode, state, holder epoch, drift, diagnosis, its pod — with the writer:
//! the managedFields manager whose write time moved, this machine's audit entry, or the Event's
//! reporting component.

use super::replay::{At, recorded};
use crate::cluster::error::ClusterError;
use crate::cluster::inventory::{PackedNamespace, Query};
use crate::cluster::live::kind_name;
use chrono::{DateTime, Utc};
use namzu_domain::drift::OverlayFlags;
use namzu_domain::mirror::Kind;
use namzu_domain::naming::WorkspaceId;
use namzu_domain::object::{name, str_at};
use namzu_domain::workspace::{Observed, Workspace};
use namzu_recorder::{Key, Record, Store};
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;

/// One change, said.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Change {
    #[serde(serialize_with = "rfc3339")]
    pub time: DateTime<Utc>,
    /// `Sandbox namzu-ws-a`, `Pod namzu-ws-a`, `Event`, `audit`.
    pub object: String,
    pub what: String,
    /// The manager, this machine's audit entry, an Event's reporter; `unknown` when the recording
    /// cannot say (a pod's or a disk's writes).
    pub who: String,
}

fn rfc3339<S: serde::Serializer>(t: &DateTime<Utc>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&namzu_domain::timefmt::js_iso(*t))
}

/// What the workspace's row says, for comparison.
fn summary(w: &Workspace) -> BTreeMap<&'static str, String> {
    let pod = match &w.pod {
        Observed::Known(Some(p)) => format!("{} ({})", p.name, p.phase),
        Observed::Known(None) => "none".into(),
        Observed::Forbidden => "?".into(),
    };
    BTreeMap::from([
        ("mode", w.mode.as_str().to_string()),
        ("state", w.state.as_str().to_string()),
        (
            "holder epoch",
            w.epoch.epoch.map_or("unreadable".into(), |e| e.to_string()),
        ),
        ("drift", w.drift.state.as_str().to_string()),
        (
            "diagnosis",
            w.diagnosis
                .as_ref()
                .map_or("none".into(), |d| d.kind.as_str().to_string()),
        ),
        ("pod", pod),
        ("ready", w.ready.map_or("?".into(), |r| r.to_string())),
    ])
}

/// The workspace derived from the recorded state, `None` when its Sandbox is not there.
fn derive(state: &BTreeMap<Key, Value>, ns: &str, sandbox: &str, at: DateTime<Utc>) -> Option<Workspace> {
    let objects: Vec<(Key, Value)> = state
        .iter()
        .filter(|(k, _)| (k.ns == ns || k.ns.is_empty()) && (k.kind != kind_name(Kind::Sandboxes) || k.name == sandbox))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let mut out = None;
    PackedNamespace::of_objects(ns, recorded(objects), &Query::default())
        .derive(&OverlayFlags::default(), at, |w| out = Some(w));
    out
}

/// The words for a row that moved.
fn moved(before: &Option<Workspace>, after: &Option<Workspace>) -> Option<String> {
    match (before, after) {
        (None, None) => None,
        (None, Some(w)) => Some(format!("created: mode {}, state {}", w.mode.as_str(), w.state.as_str())),
        (Some(_), None) => Some("deleted (the Sandbox is gone)".into()),
        (Some(a), Some(b)) => {
            let (a, b) = (summary(a), summary(b));
            let said: Vec<String> = a
                .iter()
                .filter(|(k, v)| b.get(*k) != Some(*v))
                .map(|(k, v)| format!("{k} {v} → {}", b.get(k).map_or("?", String::as_str)))
                .collect();
            (!said.is_empty()).then(|| said.join(", "))
        }
    }
}

/// The annotations and labels that changed, in words.
fn labelled(before: Option<&Value>, now: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for (field, what) in [("annotations", "annotation"), ("labels", "label")] {
        let map = |v: Option<&Value>| -> BTreeMap<String, String> {
            v.and_then(|v| v.pointer(&format!("/metadata/{field}")))
                .and_then(Value::as_object)
                .map(|m| {
                    m.iter()
                        .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string()))
                        .collect()
                })
                .unwrap_or_default()
        };
        let (old, new) = (map(before), map(Some(now)));
        for (k, v) in &new {
            match old.get(k) {
                Some(o) if o == v => {}
                Some(o) => out.push(format!("{what} {k} {o:?} → {v:?}")),
                None if before.is_some() => out.push(format!("{what} {k} set to {v:?}")),
                None => {}
            }
        }
        out.extend(
            old.keys()
                .filter(|k| !new.contains_key(*k))
                .map(|k| format!("{what} {k} removed")),
        );
    }
    out
}

/// Who wrote `now` over `before`: the managers whose managedFields time moved.
fn writers(before: Option<&Value>, now: &Value) -> Option<String> {
    let entries = |v: &Value| -> BTreeMap<String, String> {
        v.pointer("/metadata/managedFields")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .map(|m| {
                        let manager = str_at(m, &["manager"]).unwrap_or("?");
                        let op = str_at(m, &["operation"]).unwrap_or("");
                        (
                            format!("{manager} ({op})"),
                            str_at(m, &["time"]).unwrap_or("").to_string(),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    let (old, new) = (before.map(entries).unwrap_or_default(), entries(now));
    let moved: Vec<String> = new
        .into_iter()
        .filter(|(k, t)| old.get(k) != Some(t))
        .map(|(k, _)| k)
        .collect();
    (!moved.is_empty()).then(|| moved.join(", "))
}

/// What `history --between` answers.
#[derive(Debug, Serialize)]
pub struct Explained {
    pub changes: Vec<Change>,
    /// The coverage line of the first instant.
    #[serde(skip)]
    pub coverage: String,
}

/// Whether a recorded object is about the workspace whose Sandbox is `sandbox`.
fn about(kind: &str, obj: &Value, sandbox: &str) -> bool {
    let named = |n: &str| n == sandbox || n.ends_with(&format!("-{sandbox}"));
    match kind {
        "Event" => str_at(obj, &["involvedObject", "name"])
            .or_else(|| str_at(obj, &["regarding", "name"]))
            .is_some_and(named),
        _ => named(name(obj)),
    }
}

/// The changes of workspace `id` in `ns` between `from` and `to` (both recorded instants).
pub fn explain(
    at: &At,
    context: &str,
    ns: &str,
    id: &WorkspaceId,
    to: DateTime<Utc>,
) -> Result<Explained, ClusterError> {
    let store = Store::open(&at.root, context);
    let from = at.instant;
    let start = store
        .replay(from)
        .map_err(|e| super::replay::not_recorded(&store, context, e))?;
    let coverage = super::replay::coverage(context, from, &start.span, start.before.as_ref());
    let sandbox = id.sandbox_name();
    let mut state: BTreeMap<Key, Value> = BTreeMap::new();
    let mut last = derive(&start.state, ns, &sandbox, from);
    let mut changes = Vec::new();
    let io = |e: std::io::Error| ClusterError::Other(format!("reading the recording in {}: {e}", store.dir.display()));
    store
        .scan(|record| {
            let when = record.at();
            let window = when > from && when <= to;
            let mut touched: Option<(String, Option<Value>, Value)> = None;
            match record {
                Record::Keyframe { objects, .. } => {
                    state = objects
                        .into_iter()
                        .filter(|o| {
                            namzu_domain::object::namespace(&o.obj) == ns
                                || namzu_domain::object::namespace(&o.obj).is_empty()
                        })
                        .map(|o| (Key::of(&o.kind, &o.obj), o.obj))
                        .collect();
                }
                Record::Put { kind, obj, .. } if namzu_domain::object::namespace(&obj) == ns => {
                    let prev = state.insert(Key::of(&kind, &obj), obj.clone());
                    touched = Some((kind, prev, obj));
                }
                Record::Patch {
                    kind,
                    ns: n,
                    name: nm,
                    patch,
                    ..
                } if n == ns => {
                    let key = Key {
                        kind: kind.clone(),
                        ns: n,
                        name: nm,
                    };
                    let prev = state.get(&key).cloned();
                    let target = state.entry(key).or_insert(Value::Null);
                    namzu_recorder::apply_patch(target, &patch);
                    touched = Some((kind, prev, target.clone()));
                }
                Record::Delete {
                    kind, ns: n, name: nm, ..
                } if n == ns => {
                    if let Some(prev) = state.remove(&Key {
                        kind: kind.clone(),
                        ns: n,
                        name: nm,
                    }) {
                        touched = Some((kind, Some(prev.clone()), prev));
                    }
                }
                Record::Audit { entry, .. } if window && audit_about(&entry, ns, id) => {
                    changes.push(audit_change(when, &entry));
                }
                _ => {}
            }
            if let Some((kind, prev, now)) = touched.filter(|(k, _, o)| window && about(k, o, &sandbox)) {
                if kind == "Event" {
                    if let Some(c) = event_change(when, prev.as_ref(), &now) {
                        changes.push(c);
                    }
                    return;
                }
                let derived = derive(&state, ns, &sandbox, when);
                let mut said: Vec<String> = moved(&last, &derived).into_iter().collect();
                if kind == kind_name(Kind::Sandboxes) {
                    said.extend(labelled(prev.as_ref(), &now));
                }
                if !said.is_empty() {
                    let what = said.join("; ");
                    changes.push(Change {
                        time: when,
                        object: format!("{kind} {}", name(&now)),
                        what,
                        who: writers(prev.as_ref(), &now).unwrap_or_else(|| "unknown".into()),
                    });
                }
                last = derived;
            }
        })
        .map_err(io)?;
    Ok(Explained { changes, coverage })
}

fn audit_about(entry: &Value, ns: &str, id: &WorkspaceId) -> bool {
    entry.get("namespace").and_then(Value::as_str) == Some(ns)
        && entry.get("workspace").and_then(Value::as_str) == Some(id.as_str())
}

fn audit_change(at: DateTime<Utc>, entry: &Value) -> Change {
    let field = |k: &str| entry.get(k).and_then(Value::as_str).unwrap_or("?").to_string();
    let user = entry
        .get("user")
        .and_then(Value::as_str)
        .map(|u| format!(", user {u}"))
        .unwrap_or_default();
    Change {
        time: at,
        object: "audit".into(),
        what: format!("{} sent from this machine: {}", field("verb"), field("outcome")),
        who: format!("kubectl-namzu (this machine's audit log{user})"),
    }
}

fn event_change(at: DateTime<Utc>, prev: Option<&Value>, now: &Value) -> Option<Change> {
    let count = |e: &Value| e.get("count").and_then(Value::as_i64).unwrap_or(1);
    if prev.is_some_and(|p| count(p) == count(now)) {
        return None;
    }
    let reason = str_at(now, &["reason"]).unwrap_or("?");
    let message = str_at(now, &["message"])
        .or_else(|| str_at(now, &["note"]))
        .unwrap_or("");
    let times = if count(now) > 1 {
        format!(" (×{})", count(now))
    } else {
        String::new()
    };
    let who = str_at(now, &["reportingComponent"])
        .filter(|c| !c.is_empty())
        .or_else(|| str_at(now, &["source", "component"]))
        .unwrap_or("unknown");
    let regarding = now.get("involvedObject").or_else(|| now.get("regarding"));
    Some(Change {
        time: at,
        object: format!(
            "Event on {} {}",
            regarding.and_then(|r| str_at(r, &["kind"])).unwrap_or("?"),
            regarding.and_then(|r| str_at(r, &["name"])).unwrap_or("?")
        ),
        what: format!("{reason}: {message}{times}"),
        who: who.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_writer_of_a_change_is_the_manager_whose_write_time_moved() {
        let before = json!({"metadata": {"annotations": {"a": "1"}, "managedFields": [
            {"manager": "namzu-sandbox", "operation": "Update", "time": "2026-05-01T10:00:00Z"},
            {"manager": "agent-sandbox-controller", "operation": "Update", "time": "2026-05-01T10:00:00Z"}]}});
        let after = json!({"metadata": {"annotations": {"a": "2", "b": "x"}, "managedFields": [
            {"manager": "namzu-sandbox", "operation": "Update", "time": "2026-05-01T10:00:00Z"},
            {"manager": "agent-sandbox-controller", "operation": "Update", "time": "2026-05-01T11:00:00Z"},
            {"manager": "kubectl-namzu", "operation": "Apply", "time": "2026-05-01T11:00:00Z"}]}});
        assert_eq!(
            writers(Some(&before), &after).as_deref(),
            Some("agent-sandbox-controller (Update), kubectl-namzu (Apply)")
        );
        assert_eq!(writers(Some(&after), &after), None);
        assert_eq!(
            labelled(Some(&before), &after),
            ["annotation a \"1\" → \"2\"", "annotation b set to \"x\""]
        );
    }
}
