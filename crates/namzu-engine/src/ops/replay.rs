//! `--at`: a read answered from the flight recorder's store (issue 43) — the objects the
//! watches had recorded by an instant, grouped by namespace as an inventory pass would have
//! read them, and a line saying the instant and how complete the recording is around it.

use crate::cluster::connect::Connection;
use crate::cluster::error::ClusterError;
use crate::cluster::inventory::{PackedNamespace, Query, Recorded, Scope};
use crate::cluster::live::{READABLE, kind_name};
use chrono::{DateTime, SecondsFormat, Utc};
use namzu_domain::drift::TemplateFetch;
use namzu_domain::egress::PolicyRead;
use namzu_domain::mirror::Kind;
use namzu_domain::workspace::Observed;
use namzu_recorder::{Key, ReplayError, Span, Store};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// A read of a recording at an instant.
#[derive(Debug, Clone)]
pub struct At {
    /// The recordings' directory (a store per context under it).
    pub root: PathBuf,
    pub instant: DateTime<Utc>,
}

fn stamp(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

fn span_text(s: &Span) -> String {
    match s.to {
        Some(to) => format!("{} to {}", stamp(s.from), stamp(to)),
        None => format!("{} on (still recording)", stamp(s.from)),
    }
}

/// The line that says which instant a replay answers and how complete the recording is there.
pub(super) fn coverage(context: &str, at: DateTime<Utc>, span: &Span, before: Option<&Span>) -> String {
    let gap = match before.and_then(|b| b.to) {
        Some(end) => format!("; not recorded from {} to {}", stamp(end), stamp(span.from)),
        None => "; nothing recorded before".to_string(),
    };
    let scope = if span.scope == "-A" {
        "every namespace".to_string()
    } else {
        format!("namespace {}", span.scope)
    };
    format!(
        "replay at {} (context \"{context}\", {scope}): recorded from {}{gap}",
        stamp(at),
        span_text(span)
    )
}

/// Why an instant cannot be answered, in one line.
pub(super) fn not_recorded(store: &Store, context: &str, e: ReplayError) -> ClusterError {
    match e {
        ReplayError::Empty => ClusterError::NotRecorded(format!(
            "nothing is recorded for context \"{context}\" in {} (run `kubectl namzu record`)",
            store.dir.display()
        )),
        ReplayError::Outside { at, spans } => ClusterError::NotRecorded(format!(
            "{} is not in the recording of context \"{context}\": it holds {}",
            stamp(at),
            spans.iter().map(span_text).collect::<Vec<_>>().join(", ")
        )),
        ReplayError::Io(e) => ClusterError::Other(format!("reading the recording in {}: {e}", store.dir.display())),
    }
}

/// The recorded inventory of `scope` at `at.instant`, each namespace handed to `each` in name
/// order; the first warning is the coverage line.
pub(crate) fn read(
    at: &At,
    conn: &Connection,
    scope: &Scope,
    query: &Query,
    each: &mut (impl FnMut(PackedNamespace) + Send),
) -> Result<Vec<String>, ClusterError> {
    let store = Store::open(&at.root, &conn.context);
    // what `recorded` reads: the inventory's kinds, never the Events, claims or pools
    let inventory = [Kind::Sandboxes, Kind::Pods, Kind::Pvcs, Kind::Templates, Kind::Policies].map(kind_name);
    let replayed = store
        .replay_kinds(at.instant, &|kind| kind == READABLE || inventory.contains(&kind))
        .map_err(|e| not_recorded(&store, &conn.context, e))?;
    let mut warnings = vec![coverage(
        &conn.context,
        at.instant,
        &replayed.span,
        replayed.before.as_ref(),
    )];
    if let Scope::Namespace(ns) = scope
        && replayed.span.scope != "-A"
        && replayed.span.scope != *ns
    {
        return Err(ClusterError::NotRecorded(format!(
            "the recording of context \"{}\" at {} holds namespace {}, not {ns}",
            conn.context,
            stamp(at.instant),
            replayed.span.scope
        )));
    }
    let selector = match &query.selector {
        Some(s) => Some(Selector::parse(s)?),
        None => None,
    };
    for (ns, objects) in by_namespace(replayed.state, scope) {
        let mut objects = recorded(objects);
        if let Some(sel) = &selector {
            objects.sandboxes.retain(|s| sel.matches(s));
        }
        if objects.sandboxes.is_empty() {
            continue;
        }
        each(PackedNamespace::of_objects(&ns, objects, query));
    }
    if replayed.span.scope != "-A" && *scope == Scope::All {
        warnings.push(format!(
            "warning: the recording at that instant holds namespace {} only",
            replayed.span.scope
        ));
    }
    Ok(warnings)
}

/// The recorded objects of `scope`, by namespace in name order (cluster-scoped ones under "").
fn by_namespace(state: BTreeMap<Key, Value>, scope: &Scope) -> BTreeMap<String, Vec<(Key, Value)>> {
    let mut out: BTreeMap<String, Vec<(Key, Value)>> = BTreeMap::new();
    for (key, value) in state {
        if let Scope::Namespace(ns) = scope
            && key.ns != *ns
            && !key.ns.is_empty()
        {
            continue;
        }
        out.entry(key.ns.clone()).or_default().push((key, value));
    }
    // what is recorded as unreadable cluster-wide holds in every namespace
    let global = out.remove("").unwrap_or_default();
    for list in out.values_mut() {
        list.extend(global.iter().cloned());
    }
    out
}

/// One namespace's recorded objects as an inventory pass reads them.
pub(super) fn recorded(objects: Vec<(Key, Value)>) -> Recorded {
    let mut out = Recorded {
        sandboxes: Vec::new(),
        pods: Observed::Known(Vec::new()),
        pvcs: Observed::Known(Vec::new()),
        templates: BTreeMap::new(),
        policies: PolicyRead::Known(Vec::new()),
    };
    for (key, value) in objects {
        let push = |o: &mut Observed<Vec<Value>>, value: Value| {
            if let Observed::Known(v) = o {
                v.push(value);
            }
        };
        match key.kind.as_str() {
            k if k == kind_name(Kind::Sandboxes) && namzu_domain::naming::is_workspace(&value) => {
                out.sandboxes.push(value);
            }
            k if k == kind_name(Kind::Pods) => push(&mut out.pods, value),
            k if k == kind_name(Kind::Pvcs) => push(&mut out.pvcs, value),
            k if k == kind_name(Kind::Templates) => {
                out.templates.insert(key.name, TemplateFetch::Found(value));
            }
            k if k == kind_name(Kind::Policies) => {
                if let PolicyRead::Known(v) = &mut out.policies {
                    v.push(value);
                }
            }
            READABLE => {
                let what = value.get("readable").and_then(Value::as_str).unwrap_or("");
                match (key.name.as_str(), what) {
                    (n, _) if n == kind_name(Kind::Pods) => out.pods = Observed::Forbidden,
                    (n, _) if n == kind_name(Kind::Pvcs) => out.pvcs = Observed::Forbidden,
                    (n, "NotServed") if n == kind_name(Kind::Policies) => out.policies = PolicyRead::NotServed,
                    (n, _) if n == kind_name(Kind::Policies) => out.policies = PolicyRead::Forbidden,
                    _ => {}
                }
            }
            _ => {}
        }
    }
    // a template the Sandboxes name that the recording never saw was not there
    let names: Vec<String> = out
        .sandboxes
        .iter()
        .filter_map(|s| namzu_domain::naming::template_label(s).map(str::to_string))
        .collect();
    for name in names {
        out.templates.entry(name).or_insert(TemplateFetch::NotFound);
    }
    out
}

/// A label selector of equality terms (`k=v`, `k==v`, `k!=v`, `k`, `!k`, comma-joined), as the
/// API server reads `-l`; a set term (`in`, `notin`) is refused with `--at`.
struct Selector(Vec<(String, Option<String>, bool)>);

impl Selector {
    fn parse(text: &str) -> Result<Selector, ClusterError> {
        let mut terms = Vec::new();
        for term in text.split(',').map(str::trim).filter(|t| !t.is_empty()) {
            if term.contains('(') {
                return Err(ClusterError::Other(format!(
                    "-l {text:?} with --at: only equality terms (k=v, k!=v, k, !k) are read from a recording"
                )));
            }
            let parsed = if let Some((k, v)) = term.split_once("!=") {
                (k.trim().to_string(), Some(v.trim().to_string()), false)
            } else if let Some((k, v)) = term.split_once("==").or_else(|| term.split_once('=')) {
                (k.trim().to_string(), Some(v.trim().to_string()), true)
            } else if let Some(k) = term.strip_prefix('!') {
                (k.trim().to_string(), None, false)
            } else {
                (term.to_string(), None, true)
            };
            terms.push(parsed);
        }
        Ok(Selector(terms))
    }

    fn matches(&self, obj: &Value) -> bool {
        let labels = namzu_domain::object::at(obj, &["metadata", "labels"]);
        self.0.iter().all(|(k, v, eq)| {
            let got = labels.and_then(|l| l.get(k)).and_then(Value::as_str);
            match v {
                Some(v) => (got == Some(v.as_str())) == *eq,
                None => got.is_some() == *eq,
            }
        })
    }
}

/// `history ID`: add the Events the recording holds about the workspace's objects (its Sandbox,
/// pods, disks, claim) that the cluster no longer serves — Kubernetes keeps an Event an hour —
/// each marked [`namzu_domain::timeline::RECORDED`]. How many were added; nothing when nothing
/// is recorded for the context.
pub fn merge_recorded_events(
    read: &mut crate::cluster::triage::HistoryRead,
    root: &std::path::Path,
    context: &str,
    namespace: &str,
) -> std::io::Result<usize> {
    let name = |o: &Value| namzu_domain::object::name(o).to_string();
    let sandbox = name(&read.sandbox);
    let mut names: Vec<String> = vec![sandbox.clone()];
    names.extend(read.pod.iter().map(name));
    names.extend(read.pvcs.iter().map(name));
    names.extend(read.claim.iter().map(name));
    let about = |e: &Value| {
        let regarding = e.get("involvedObject").or_else(|| e.get("regarding"));
        regarding
            .and_then(|r| r.get("name"))
            .and_then(Value::as_str)
            .is_some_and(|n| names.iter().any(|m| m == n) || n.ends_with(&format!("-{sandbox}")))
    };
    let served: std::collections::BTreeSet<String> = read
        .events
        .iter()
        .filter_map(|e| namzu_domain::object::str_at(e, &["metadata", "uid"]).map(str::to_string))
        .collect();
    let mut added = 0;
    for mut e in events(&Store::open(root, context))?.into_values() {
        let uid = namzu_domain::object::str_at(&e, &["metadata", "uid"]).unwrap_or("");
        if namzu_domain::object::namespace(&e) != namespace || served.contains(uid) || !about(&e) {
            continue;
        }
        if let Some(o) = e.as_object_mut() {
            o.insert(namzu_domain::timeline::RECORDED.to_string(), Value::Bool(true));
        }
        read.events.push(e);
        added += 1;
    }
    Ok(added)
}

/// Every Event the store holds, each in its latest recorded version.
fn events(store: &Store) -> std::io::Result<BTreeMap<Key, Value>> {
    use namzu_recorder::Record;
    const EVENT: &str = "Event";
    let mut out: BTreeMap<Key, Value> = BTreeMap::new();
    store.scan(|record| match record {
        Record::Keyframe { objects, .. } => {
            for o in objects.into_iter().filter(|o| o.kind == EVENT) {
                out.insert(Key::of(EVENT, &o.obj), o.obj);
            }
        }
        Record::Put { kind, obj, .. } if kind == EVENT => {
            out.insert(Key::of(EVENT, &obj), obj);
        }
        Record::Patch {
            kind, ns, name, patch, ..
        } if kind == EVENT => {
            if let Some(target) = out.get_mut(&Key { kind, ns, name }) {
                namzu_recorder::apply_patch(target, &patch);
            }
        }
        _ => {}
    })?;
    Ok(out)
}

/// One workspace's objects as the recording held them at an instant, and the coverage line.
pub struct WorkspaceAt {
    pub detail: Option<crate::cluster::detail::Detail>,
    pub coverage: String,
}

/// The state at `at.instant` for `context`, or the one line why not.
fn replayed(at: &At, context: &str) -> Result<(namzu_recorder::Replayed, String), ClusterError> {
    let store = Store::open(&at.root, context);
    let replayed = store.replay(at.instant).map_err(|e| not_recorded(&store, context, e))?;
    let line = coverage(context, at.instant, &replayed.span, replayed.before.as_ref());
    Ok((replayed, line))
}

fn get<'a>(state: &'a BTreeMap<Key, Value>, kind: &str, ns: &str, name: &str) -> Option<&'a Value> {
    state.get(&Key {
        kind: kind.to_string(),
        ns: ns.to_string(),
        name: name.to_string(),
    })
}

fn of_kind<'a>(state: &'a BTreeMap<Key, Value>, kind: &'a str, ns: &'a str) -> impl Iterator<Item = &'a Value> + 'a {
    state
        .iter()
        .filter(move |(k, _)| k.kind == kind && k.ns == ns)
        .map(|(_, v)| v)
}

/// `inspect ID --at TIME`: what `inspect` would have read then, from the recording.
pub fn detail_at(
    at: &At,
    context: &str,
    namespace: &str,
    id: &namzu_domain::naming::WorkspaceId,
) -> Result<WorkspaceAt, ClusterError> {
    use namzu_domain::object::str_at;
    let (replayed, coverage) = replayed(at, context)?;
    let state = &replayed.state;
    let name = id.sandbox_name();
    let Some(sandbox) = get(state, kind_name(Kind::Sandboxes), namespace, &name).cloned() else {
        return Ok(WorkspaceAt { detail: None, coverage });
    };
    let objects = recorded(
        state
            .iter()
            .filter(|(k, _)| k.ns == namespace || k.ns.is_empty())
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
    );
    let selector = str_at(&sandbox, &["status", "selector"]).and_then(|s| s.split_once('='));
    let own_pod = |p: &&Value| {
        namzu_domain::object::name(p) == name
            || selector.is_some_and(|(k, v)| str_at(p, &["metadata", "labels", k]) == Some(v))
    };
    let pods = objects.pods.map(|v| v.iter().filter(own_pod).cloned().collect());
    let wanted = namzu_domain::pod::pvc_names(&sandbox);
    let pvcs = objects.pvcs.map(|v| {
        v.iter()
            .filter(|p| wanted.iter().any(|w| w == namzu_domain::object::name(p)))
            .cloned()
            .collect()
    });
    let template = namzu_domain::naming::template_label(&sandbox)
        .and_then(|t| objects.templates.get(t).cloned())
        .unwrap_or(TemplateFetch::NotFound);
    let mut events: Vec<Value> = of_kind(state, "Event", namespace)
        .filter(|e| str_at(e, &["involvedObject", "name"]) == Some(name.as_str()))
        .cloned()
        .collect();
    events.sort_by_key(|e| crate::cluster::detail::event_time(e).map(str::to_string));
    let claim = namzu_domain::object::claim_owner(&sandbox)
        .and_then(|c| get(state, "SandboxClaim", namespace, c))
        .map(|c| Observed::Known(c.clone()));
    let detail = crate::cluster::detail::Detail {
        sandbox,
        pods,
        pvcs,
        template,
        events: Observed::Known(events),
        policies: objects.policies,
        claim,
    };
    Ok(WorkspaceAt {
        detail: Some(detail),
        coverage,
    })
}

/// `history ID --at TIME`: the history as it could be told then, from the recording: the
/// workspace's objects at the instant, every recorded Event about them up to it, and this
/// machine's recorded audit entries for it up to it. `None`: no such workspace then.
pub fn history_at(
    at: &At,
    context: &str,
    namespace: &str,
    id: &namzu_domain::naming::WorkspaceId,
) -> Result<(Option<crate::cluster::triage::HistoryRead>, String), ClusterError> {
    let WorkspaceAt { detail, coverage } = detail_at(at, context, namespace, id)?;
    let Some(d) = detail else {
        return Ok((None, coverage));
    };
    let mut read = crate::cluster::triage::HistoryRead {
        pod: d.pods.known().and_then(|p| p.first().cloned()),
        pvcs: d.pvcs.known().cloned().unwrap_or_default(),
        claim: d.claim.and_then(|c| c.known().cloned()),
        sandbox: d.sandbox,
        ..Default::default()
    };
    let store = Store::open(&at.root, context);
    let io = |e: std::io::Error| ClusterError::Other(format!("reading the recording in {}: {e}", store.dir.display()));
    merge_recorded_events(&mut read, &at.root, context, namespace).map_err(io)?;
    let instant = at.instant;
    read.events.retain(|e| {
        crate::cluster::detail::event_time(e)
            .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
            .is_none_or(|t| t <= instant)
    });
    let name = id.sandbox_name();
    store
        .scan(|record| {
            if let namzu_recorder::Record::Audit { at, entry } = record
                && at <= instant
                && entry.get("namespace").and_then(Value::as_str) == Some(namespace)
                && ["workspace", "id", "sandbox"].iter().any(|k| {
                    entry
                        .get(*k)
                        .and_then(Value::as_str)
                        .is_some_and(|v| v == id.as_str() || v == name)
                })
            {
                read.audit.push(entry);
            }
        })
        .map_err(io)?;
    Ok((Some(read), coverage))
}

/// The rows of a replay, as a front-end shows them (the TUI's `:at`): the workspaces derived at
/// the instant from the recording — as `list --at` derives them — the read's warnings (the
/// coverage line first), and, when asked for, every instant the context's recording changed at
/// (a scrubber's steps, oldest first; a read of the whole store, so once per replay).
#[derive(Debug, Clone)]
pub struct RowsAt {
    pub rows: Vec<namzu_domain::workspace::Workspace>,
    pub warnings: Vec<String>,
    pub changes: Vec<DateTime<Utc>>,
}

/// [`RowsAt`] of `scope` at `at.instant`, through the one inventory read (`ops::inventory`).
pub async fn rows_at(
    at: &At,
    conn: &Connection,
    scope: &Scope,
    flags: &namzu_domain::drift::OverlayFlags,
    with_changes: bool,
) -> Result<RowsAt, ClusterError> {
    let mut rows = Vec::new();
    let source = super::inventory::Source::At(at.clone());
    let warnings = super::inventory::read_packed(&source, conn, scope, &Query::default(), &mut |packed| {
        packed.derive(flags, at.instant, |w| rows.push(w));
    })
    .await?;
    let store = Store::open(&at.root, &conn.context);
    let changes = match with_changes {
        true => store
            .change_times()
            .map_err(|e| ClusterError::Other(format!("reading the recording in {}: {e}", store.dir.display())))?,
        false => Vec::new(),
    };
    Ok(RowsAt {
        rows,
        warnings,
        changes,
    })
}

/// What `capacity --at` reads beyond the inventory, as recorded: the warm pools, claims and the
/// pools' progress Events of the scope (`record` records them; `None`: the recording holds none
/// of that kind) and the pools' unclaimed members (Sandboxes carrying the pool label).
#[derive(Debug, Clone, Default)]
pub struct PoolsAt {
    pub pools: Option<Vec<Value>>,
    pub claims: Option<Vec<Value>>,
    pub events: Option<Vec<Value>>,
    pub members: Vec<Value>,
}

/// [`PoolsAt`] of `scope` at `at.instant` in `context`'s recording.
pub fn pools_at(at: &At, context: &str, scope: &Scope) -> Result<PoolsAt, ClusterError> {
    let (replayed, _) = replayed(at, context)?;
    let in_scope = |k: &Key| match scope {
        Scope::Namespace(ns) => k.ns == *ns,
        Scope::All => true,
    };
    let of_kind = |kind: &str| -> Option<Vec<Value>> {
        replayed.state.keys().any(|k| k.kind == kind).then(|| {
            replayed
                .state
                .iter()
                .filter(|(k, _)| k.kind == kind && in_scope(k))
                .map(|(_, v)| v.clone())
                .collect()
        })
    };
    let members = replayed
        .state
        .iter()
        .filter(|(k, _)| k.kind == kind_name(Kind::Sandboxes) && in_scope(k))
        .filter(|(_, v)| {
            namzu_domain::object::at(v, &["metadata", "labels", namzu_domain::annotations::WARM_POOL_SANDBOX]).is_some()
        })
        .map(|(_, v)| v.clone())
        .collect();
    let events = of_kind("Event").map(|events| {
        events
            .into_iter()
            .filter(|e| namzu_domain::object::str_at(e, &["involvedObject", "kind"]) == Some("SandboxWarmPool"))
            .collect()
    });
    Ok(PoolsAt {
        pools: of_kind("SandboxWarmPool"),
        claims: of_kind("SandboxClaim"),
        events,
        members,
    })
}

/// `leaks --at TIME`: what `leaks` would have found at `at.instant` in `context`'s recording,
/// judged by the same rule at that instant, and notes on what the recording cannot tell. Pods
/// are recorded only when they carry agent-sandbox's name-hash label, so a pod of another app
/// that mounted a disk is unknown: no disk is shown unused in the past ("unknown beats a
/// guess"); the other findings are whole.
pub fn leaks_at(
    at: &At,
    context: &str,
    scope: &Scope,
) -> Result<(Vec<namzu_domain::leaks::Leak>, Vec<String>), ClusterError> {
    let (replayed, coverage) = replayed(at, context)?;
    // a namespace the recording did not hold is refused, as `list --at` refuses it: "no leaks"
    // would be an all-clear for what was never read
    let held = replayed.span.scope.clone();
    if let Scope::Namespace(ns) = scope
        && held != "-A"
        && held != *ns
    {
        return Err(ClusterError::NotRecorded(format!(
            "the recording of context \"{context}\" at {} holds namespace {held}, not {ns}",
            stamp(at.instant)
        )));
    }
    let state = replayed.state;
    let recorded = |kind: &str| state.keys().any(|k| k.kind == kind);
    let (claims_read, pools_read, events_read) =
        (recorded("SandboxClaim"), recorded("SandboxWarmPool"), recorded("Event"));
    // the kinds the recording says were not readable, by namespace ("": cluster-wide)
    let not_readable: std::collections::BTreeSet<(String, String)> = state
        .keys()
        .filter(|k| k.kind == READABLE)
        .map(|k| (k.ns.clone(), k.name.clone()))
        .collect();
    let unreadable = |kind: Kind, ns: &str| {
        let name = kind_name(kind).to_string();
        not_readable.contains(&(ns.to_string(), name.clone())) || not_readable.contains(&(String::new(), name))
    };
    // the objects themselves moved, not copied (a large fleet's recording is held once)
    let mut by_namespace: BTreeMap<String, BTreeMap<String, Vec<Value>>> = BTreeMap::new();
    for (k, v) in state {
        if matches!(scope, Scope::Namespace(ns) if k.ns != *ns) || k.ns.is_empty() {
            continue;
        }
        by_namespace.entry(k.ns).or_default().entry(k.kind).or_default().push(v);
    }
    let mut found = Vec::new();
    let mut notes = vec![coverage];
    for (ns, kinds) in &by_namespace {
        // judged against no Sandboxes, every disk and policy would look left behind
        if unreadable(Kind::Sandboxes, ns) {
            notes.push(format!(
                "warning: the recording could not read the Sandboxes of namespace {ns} then: nothing there is judged"
            ));
            continue;
        }
        if unreadable(Kind::Pvcs, ns) {
            notes.push(format!(
                "warning: the recording could not read the persistentvolumeclaims of namespace {ns} then: its orphaned disks are not told"
            ));
        }
        let of = |kind: &str| kinds.get(kind).map_or(&[][..], Vec::as_slice);
        let pool_events: Vec<Value> = of("Event")
            .iter()
            .filter(|e| namzu_domain::object::str_at(e, &["involvedObject", "kind"]) == Some("SandboxWarmPool"))
            .cloned()
            .collect();
        let reads = namzu_domain::leaks::Reads {
            namespace: ns,
            sandboxes: of(kind_name(Kind::Sandboxes)),
            pvcs: of(kind_name(Kind::Pvcs)),
            policies: (!unreadable(Kind::Policies, ns)).then(|| of(kind_name(Kind::Policies))),
            claims: claims_read.then(|| of("SandboxClaim")),
            pools: pools_read.then(|| of("SandboxWarmPool")),
            pool_events: events_read.then_some(pool_events.as_slice()),
            mounts: None,
            now: at.instant,
        };
        found.extend(namzu_domain::leaks::find(&reads));
    }
    notes.push("note: the recording keeps only the workspaces' pods, so no disk is shown unused at a past instant (a pod of another app may have mounted it)".to_string());
    if held != "-A" && *scope == Scope::All {
        notes.push(format!(
            "warning: the recording at that instant holds namespace {held} only"
        ));
    }
    for (read, what) in [(claims_read, "SandboxClaims"), (pools_read, "warm pools")] {
        if !read {
            notes.push(format!(
                "note: the recording holds no {what} (kubectl namzu record records them): none are told"
            ));
        }
    }
    Ok((found, notes))
}
