//! Scenarios: data files (YAML or JSON) of namespaces, objects, workspace shorthands and knobs.
//! Strings `{{now}}`, `{{now-5m}}`, `{{now+1h}}`, `{{now-60d|ms}}` become timestamps at load.

use super::clock::k8s_time;
use super::controller::{Knobs, knob_key};
use chrono::{DateTime, Duration, SecondsFormat, Utc};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;

/// One workspace as `@namzu/sandbox` would have created it, expanded to a Sandbox at load.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WorkspaceSpec {
    pub namespace: String,
    pub id: String,
    /// The pod template as stored on the Sandbox (overlays applied).
    pub pod_template: Value,
    #[serde(default)]
    pub hash: Option<String>,
    #[serde(default = "running")]
    pub mode: String,
    #[serde(default)]
    pub epoch: Option<String>,
    #[serde(default)]
    pub changed_at: Option<String>,
    #[serde(default)]
    pub created: Option<String>,
    /// Further annotations (a foreign owner, say).
    #[serde(default)]
    pub annotations: BTreeMap<String, String>,
    /// No `metadata.annotations` map at all.
    #[serde(default)]
    pub no_annotations: bool,
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    #[serde(default = "default_disks")]
    pub disks: Vec<String>,
    /// A SandboxClaim of this name (in the scenario) owns the Sandbox.
    #[serde(default)]
    pub owner_claim: Option<String>,
    /// Held by a finalizer with a deletionTimestamp set.
    #[serde(default)]
    pub deleting: bool,
    #[serde(default)]
    pub shutdown_time: Option<String>,
    /// With `shutdownTime`: no `shutdownPolicy` at all (agent-sandbox then retains, its
    /// default) instead of an explicit `Retain`.
    #[serde(default)]
    pub no_shutdown_policy: bool,
    /// Per-sandbox egress (@namzu/sandbox 28.0.0): the per-sandbox label on the pod template
    /// (its value the Sandbox's name) and a CiliumNetworkPolicy `namzu-sbx-<uid>` the Sandbox owns.
    #[serde(default)]
    pub per_sandbox_egress: bool,
    /// A per-sandbox policy left by an earlier workspace of the same name (owned by that
    /// Sandbox's uid, not yet garbage-collected): it selects this workspace too.
    #[serde(default)]
    pub foreign_policy: bool,
    /// Acquired from a warm pool through its `ownerClaim`: the per-sandbox CiliumNetworkPolicy
    /// `namzu-sbx-<claim uid>` is named after and owned by the SandboxClaim (collected with
    /// it), as @namzu/sandbox makes it on the pooled path.
    #[serde(default)]
    pub claim_policy: bool,
    #[serde(default)]
    pub knobs: Knobs,
    /// The current log of each container (`{agent: [line, …]}`), stamped a second apart up to now.
    #[serde(default)]
    pub logs: BTreeMap<String, Vec<String>>,
    /// The log of each container's previous (terminated) instance, ending when it terminated.
    #[serde(default)]
    pub previous_logs: BTreeMap<String, Vec<String>>,
}

/// The per-sandbox egress label key the library's hosts use by default.
pub(crate) const PER_SANDBOX_LABEL: &str = "sandbox.namzu.ai/per-sandbox-egress";

fn running() -> String {
    "Running".into()
}

/// An agent-sandbox release whose CRDs the sim serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum Release {
    #[serde(rename = "v1.0")]
    V1_0,
    #[serde(rename = "v0.5")]
    V0_5,
}

impl Release {
    pub fn served(self) -> super::discovery::AgentSandbox {
        match self {
            Release::V1_0 => super::discovery::AgentSandbox::Current,
            Release::V0_5 => super::discovery::AgentSandbox::V05,
        }
    }
}

fn default_disks() -> Vec<String> {
    vec!["workspace-disk".into()]
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Scenario {
    /// The agent-sandbox release the sim poses as: `v1.0` (the default: v1beta1 only) or `v0.5`
    /// (v1beta1 and the deprecated v1alpha1 of Sandbox).
    #[serde(default)]
    pub agent_sandbox: Option<Release>,
    #[serde(default)]
    pub namespaces: Vec<String>,
    #[serde(default)]
    pub objects: Vec<Value>,
    #[serde(default)]
    pub workspaces: Vec<WorkspaceSpec>,
    /// Knobs for objects given in full, by `namespace/name`.
    #[serde(default)]
    pub knobs: BTreeMap<String, Knobs>,
    /// Users and their RBAC rules; the kubeconfig carries the first one's token.
    #[serde(default)]
    pub users: Vec<super::auth::User>,
    /// Pod templates that workspaces reference by YAML anchor; not served.
    #[serde(default)]
    pub revisions: BTreeMap<String, Value>,
    /// Unrelated apps' pods and PVCs, as a production cluster has them around the workspaces.
    #[serde(default)]
    pub background: Option<Background>,
    /// The API server the sim poses as: `server: {version: "1.20", gcDelay: 2s}`.
    #[serde(default)]
    pub server: Option<ServerSpec>,
    /// A scripted day's churn: `day: {churn: 1}` — changes per workspace per hour that
    /// [`crate::Sim::step_day`] makes as it moves the clock (issue 43's recorder benchmark).
    #[serde(default)]
    pub day: Option<Day>,
    /// Claims arriving on warm pools over the last stretch of time (`sim/pulse.rs`).
    #[serde(default)]
    pub pulse: Vec<super::pulse::PulseSpec>,
}

/// The knob of a scripted day.
#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Day {
    /// Changes per workspace per hour (a mode flipped, its stamp and holder epoch moved).
    pub churn: f64,
    /// Which workspaces change, reproducibly.
    #[serde(default)]
    pub seed: u64,
}

/// What a scenario sets of the server itself: its Kubernetes version (`"1.20"`: `/version`, and
/// with it streaming lists from 1.32 and OpenAPI v3 from 1.27), the garbage collector's delay
/// (`2s`, `500ms`; absent: dependents go within the owner's DELETE) and the round trip every
/// request takes (`latency: 30ms`; absent: none).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ServerSpec {
    #[serde(default)]
    pub version: Option<Value>,
    #[serde(default)]
    pub gc_delay: Option<Value>,
    #[serde(default)]
    pub latency: Option<Value>,
}

impl ServerSpec {
    /// The minor version of `version` (`"1.20"`, `"v1.31"`, `"1.20.2"`).
    pub fn minor(&self) -> Result<Option<u32>, String> {
        let Some(v) = &self.version else { return Ok(None) };
        let bad = || format!("scenario: server.version {v} is not a Kubernetes version such as \"1.20\" (quoted)");
        let text = v.as_str().ok_or_else(bad)?;
        let mut parts = text.trim_start_matches('v').split('.');
        match (parts.next(), parts.next().map(str::parse::<u32>)) {
            (Some("1"), Some(Ok(minor))) if parts.all(|p| p.parse::<u32>().is_ok()) => Ok(Some(minor)),
            _ => Err(bad()),
        }
    }

    /// `gcDelay` as a duration: `2s`, `500ms`, `1m`, `0`.
    pub fn gc_delay(&self) -> Result<Option<Duration>, String> {
        self.gc_delay.as_ref().map(|v| duration("gcDelay", v)).transpose()
    }

    /// `latency` as a duration: `30ms`, `1s`, `0`.
    pub fn latency(&self) -> Result<Option<std::time::Duration>, String> {
        let Some(v) = &self.latency else { return Ok(None) };
        let d = duration("latency", v)?;
        d.to_std()
            .map(Some)
            .map_err(|_| format!("scenario: server.latency {v} is negative"))
    }
}

/// A scenario's `server.<field>` duration (`2s`, `500ms`, `1m`, `0`).
fn duration(field: &str, v: &Value) -> Result<Duration, String> {
    let text = v
        .as_str()
        .map(str::to_string)
        .or_else(|| v.as_u64().map(|n| n.to_string()));
    parse_duration(text.as_deref().unwrap_or(""))
        .map_err(|_| format!("scenario: server.{field} {v} is not a duration such as 2s or 500ms"))
}

/// A duration as scenarios write one: whole `ms`, `s` or `m`, or `0`.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let bad = || format!("{text:?} is not a duration such as 2s or 500ms");
    let (digits, unit) = text.split_at(text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len()));
    let n: i64 = digits.parse().map_err(|_| bad())?;
    Ok(match unit {
        "ms" => Duration::milliseconds(n),
        "s" => Duration::seconds(n),
        "m" => Duration::minutes(n),
        "" if n == 0 => Duration::zero(),
        _ => return Err(bad()),
    })
}

/// Objects of other apps in bulk: `background: {pods: 50000, pvcs: 10000, namespaces: 20}`
/// spreads them round-robin over `app-0…app-<namespaces-1>` and the workspaces' namespaces.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Background {
    #[serde(default)]
    pub pods: usize,
    #[serde(default)]
    pub pvcs: usize,
    #[serde(default = "ten")]
    pub namespaces: usize,
}

fn ten() -> usize {
    10
}

impl Background {
    /// The namespaces of its own it adds.
    pub fn own_namespaces(&self) -> Vec<String> {
        (0..self.namespaces).map(|i| format!("app-{i}")).collect()
    }

    /// Pod `i` of an ordinary Deployment: a ReplicaSet owner, app labels, an env-heavy container,
    /// a node, Running with its conditions — what a real pod weighs, minus managedFields.
    pub fn pod(i: usize, namespace: &str, now: &str) -> Value {
        let app = format!("svc-{}", i % 97);
        let env: Vec<Value> = (0..12)
            .map(|e| json!({"name": format!("SETTING_{e}"), "value": format!("value-{e}-{app}")}))
            .collect();
        json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": format!("{app}-{i:06x}"), "namespace": namespace,
                "labels": {"app": app, "pod-template-hash": format!("{:08x}", i % 97), "tier": "backend"},
                "annotations": {"prometheus.io/scrape": "true", "prometheus.io/port": "9090"},
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": format!("{app}-{:08x}", i % 97),
                    "uid": format!("00000000-0000-4000-8000-{:012x}", i % 97), "controller": true, "blockOwnerDeletion": true}]},
            "spec": {"nodeName": format!("node-{}", i % 40), "serviceAccountName": "default",
                "containers": [{"name": app, "image": format!("registry.example.com/{app}:1.{}", i % 7),
                    "ports": [{"containerPort": 8080, "protocol": "TCP"}], "env": env,
                    "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"memory": "256Mi"}},
                    "volumeMounts": [{"name": "kube-api-access", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "readOnly": true}]}],
                "volumes": [{"name": "kube-api-access", "projected": {"sources": [{"serviceAccountToken": {"path": "token"}}]}}]},
            "status": {"phase": "Running", "podIP": format!("10.{}.{}.{}", i % 250, (i / 250) % 250, i % 199),
                "startTime": now,
                "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": now},
                    {"type": "ContainersReady", "status": "True", "lastTransitionTime": now},
                    {"type": "PodScheduled", "status": "True", "lastTransitionTime": now}],
                "containerStatuses": [{"name": app, "ready": true, "restartCount": 0, "started": true,
                    "image": format!("registry.example.com/{app}:1.{}", i % 7),
                    "state": {"running": {"startedAt": now}}}]}})
    }

    /// PVC `i` of a StatefulSet, Bound.
    pub fn pvc(i: usize, namespace: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": format!("data-db-{i}"), "namespace": namespace, "labels": {"app": "db"}},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "20Gi"}}, "storageClassName": "standard"},
            "status": {"phase": "Bound", "capacity": {"storage": "20Gi"}}})
    }
}

/// The built-in demo scenario.
pub const DEMO: &str = include_str!("../../../assets/demo-scenario.yaml");

impl Scenario {
    /// Parse scenario text (YAML or JSON), resolving `{{now…}}` against `now`.
    pub fn parse(text: &str, now: DateTime<Utc>) -> Result<Scenario, String> {
        let mut json = parse_text(text)?;
        if json.is_null() {
            return Ok(Scenario::default());
        }
        resolve_times(&mut json, now)?;
        let scenario: Scenario = serde_json::from_value(json).map_err(|e| format!("scenario: {e}"))?;
        if let Some(server) = &scenario.server {
            server.minor()?;
            server.gc_delay()?;
            server.latency()?;
        }
        for p in &scenario.pulse {
            p.check()?;
        }
        Ok(scenario)
    }

    pub fn demo(now: DateTime<Utc>) -> Scenario {
        Scenario::parse(DEMO, now).expect("the built-in demo scenario parses")
    }

    /// `n` clusters of a demo fleet, by context name: the first is the demo itself, each other a
    /// variant of it (`fleet_member`) with workspaces of its own. The same `now` gives
    /// the same fleet.
    pub fn demo_fleet(now: DateTime<Utc>, n: usize) -> Vec<(String, Scenario)> {
        let demo = Scenario::demo(now);
        (0..n)
            .map(|i| {
                let member = if i == 0 {
                    demo.clone()
                } else {
                    demo.fleet_member(i, now)
                };
                (fleet_name(i), member)
            })
            .collect()
    }

    /// Fleet member `i` (≥ 1) derived from this scenario, a somewhat different mix on another
    /// cluster: every id gets the suffix `-<tag>` (`alpha-us`), so no id is on two clusters; one
    /// namespace other than the first is left out with its objects (the last on odd members, the
    /// second on even ones); only every (i+1)-th workspace is kept, and every (i+3)-th plain one
    /// (no knobs, not held or owned) is in the other mode; 2·i more plain Running workspaces
    /// (`batch-01-<tag>`, …) copy the first namespace's first plain Running one.
    fn fleet_member(&self, i: usize, now: DateTime<Utc>) -> Scenario {
        let tag = FLEET
            .get(i)
            .map_or_else(|| format!("c{}", i + 1), |(_, tag)| tag.to_string());
        let left_out = match self.namespaces.len() {
            0 | 1 => None,
            len => self.namespaces.get(if i % 2 == 1 { len - 1 } else { 1 }).cloned(),
        };
        let kept = |ns: &str| left_out.as_deref() != Some(ns);
        let plain = |w: &WorkspaceSpec| {
            w.knobs == Knobs::default() && !w.deleting && w.shutdown_time.is_none() && w.owner_claim.is_none()
        };
        let mut out = self.clone();
        out.namespaces.retain(|ns| kept(ns));
        out.objects
            .retain(|o| kept(o.pointer("/metadata/namespace").and_then(Value::as_str).unwrap_or("")));
        out.pulse.retain(|p| kept(&p.namespace));
        out.workspaces = self
            .workspaces
            .iter()
            .enumerate()
            .filter(|(j, w)| kept(&w.namespace) && j % (i + 1) == 0)
            .map(|(j, w)| {
                let mut w = w.renamed(&format!("{}-{tag}", w.id));
                if j % (i + 3) == 0 && plain(&w) {
                    w.mode = if w.mode == "Running" { "Suspended" } else { "Running" }.into();
                }
                w
            })
            .collect();
        let first_ns = self.namespaces.first().cloned().unwrap_or_default();
        let template = self
            .workspaces
            .iter()
            .find(|w| w.namespace == first_ns && w.mode == "Running" && plain(w));
        if let Some(template) = template {
            for k in 1..=2 * i {
                let mut w = template.renamed(&format!("batch-{k:02}-{tag}"));
                let created = now - Duration::hours(k as i64);
                w.created = Some(k8s_time(created));
                w.changed_at = Some(created.to_rfc3339_opts(SecondsFormat::Millis, true));
                out.workspaces.push(w);
            }
        }
        out
    }

    /// Every knob, by `namespace/name`.
    pub fn all_knobs(&self) -> Vec<(String, Knobs)> {
        let mut out: Vec<(String, Knobs)> = self.knobs.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        for w in &self.workspaces {
            if w.knobs != Knobs::default() {
                out.push((knob_key(&w.namespace, &format!("namzu-ws-{}", w.id)), w.knobs.clone()));
            }
        }
        out
    }
}

/// The first fleet members' context names and id tags; then `cluster-<i+1>` and `c<i+1>`.
const FLEET: [(&str, &str); 3] = [("prod-eu-west", "eu"), ("prod-us-east", "us"), ("staging", "stg")];

/// The context name of fleet member `i`: `prod-eu-west`, `prod-us-east`, `staging`, `cluster-4`, …
pub fn fleet_name(i: usize) -> String {
    FLEET
        .get(i)
        .map_or_else(|| format!("cluster-{}", i + 1), |(name, _)| name.to_string())
}

impl WorkspaceSpec {
    /// The same workspace under another id; what names its Sandbox (a legacy pod-name
    /// annotation, a reconciler error) follows, so the copy reads as that workspace's own.
    fn renamed(&self, id: &str) -> WorkspaceSpec {
        let (from, to) = (format!("namzu-ws-{}", self.id), format!("namzu-ws-{id}"));
        let mut w = self.clone();
        w.id = id.to_string();
        for v in w.annotations.values_mut() {
            *v = v.replace(&from, &to);
        }
        if let Some(e) = &mut w.knobs.reconciler_error {
            *e = e.replace(&from, &to);
        }
        w
    }

    /// The Sandbox the library's create POST would have produced, as it stands now.
    pub fn sandbox(&self, claim_uid: Option<&str>) -> Value {
        let mut annotations = Map::new();
        if let Some(e) = &self.epoch {
            annotations.insert("sandbox.namzu.ai/holder-epoch".into(), json!(e));
        }
        if let Some(h) = &self.hash {
            annotations.insert("sandbox.namzu.ai/pod-template-hash".into(), json!(h));
        }
        if let Some(c) = &self.changed_at {
            annotations.insert("sandbox.namzu.ai/operating-mode-changed-at".into(), json!(c));
        }
        for (k, v) in &self.annotations {
            annotations.insert(k.clone(), json!(v));
        }
        let name = format!("namzu-ws-{}", self.id);
        let mut meta = json!({"name":name,"namespace":self.namespace});
        if !self.no_annotations {
            meta["annotations"] = Value::Object(annotations);
        }
        if !self.labels.is_empty() {
            meta["labels"] = json!(self.labels);
        }
        if let Some(c) = &self.created {
            meta["creationTimestamp"] = json!(c);
        }
        if let (Some(claim), Some(uid)) = (&self.owner_claim, claim_uid) {
            meta["ownerReferences"] = json!([{"apiVersion":"extensions.agents.x-k8s.io/v1beta1","kind":"SandboxClaim",
                "name":claim,"uid":uid,"controller":true,"blockOwnerDeletion":true}]);
        }
        if self.deleting {
            meta["finalizers"] = json!(["namzu.ai/demo-hold"]);
            meta["deletionTimestamp"] = json!(self.created.clone().unwrap_or_default());
        }
        let vcts: Vec<Value> = self
            .disks
            .iter()
            .map(|d| {
                json!({"metadata":{"name":d},
            "spec":{"accessModes":["ReadWriteOnce"],"volumeMode":"Block","resources":{"requests":{"storage":"10Gi"}}}})
            })
            .collect();
        let mut pod_template = self.pod_template.clone();
        if self.per_sandbox_egress {
            pod_template["metadata"]["labels"][PER_SANDBOX_LABEL] = json!(name);
        }
        let mut spec =
            json!({"podTemplate":pod_template,"operatingMode":self.mode,"service":true,"volumeClaimTemplates":vcts});
        if let Some(t) = &self.shutdown_time {
            spec["shutdownTime"] = json!(t);
            if !self.no_shutdown_policy {
                spec["shutdownPolicy"] = json!("Retain");
            }
        }
        json!({"apiVersion":"agents.x-k8s.io/v1beta1","kind":"Sandbox","metadata":meta,"spec":spec})
    }
}

impl WorkspaceSpec {
    /// The per-sandbox CiliumNetworkPolicies that stand with the `created` Sandbox: its own
    /// (`perSandboxEgress`), one an earlier Sandbox of the same name left (`foreignPolicy`), and
    /// its claim's (`claimPolicy`, owned by the SandboxClaim of uid `claim_uid`).
    pub fn policies(&self, created: &Value, claim_uid: Option<&str>) -> Vec<Value> {
        let name = created["metadata"]["name"].as_str().unwrap_or_default();
        let uid = created["metadata"]["uid"].as_str().unwrap_or_default();
        let sandbox_owner = |owner: &str| json!({"apiVersion": "agents.x-k8s.io/v1beta1", "kind": "Sandbox", "name": name, "uid": owner});
        let mut owners = Vec::new();
        if self.per_sandbox_egress {
            owners.push((uid.to_string(), sandbox_owner(uid)));
        }
        if self.foreign_policy {
            let earlier = super::controller::earlier_uid(name);
            owners.push((earlier.clone(), sandbox_owner(&earlier)));
        }
        if let (true, Some(claim), Some(claim_uid)) = (self.claim_policy, &self.owner_claim, claim_uid) {
            owners.push((
                claim_uid.to_string(),
                json!({"apiVersion": "extensions.agents.x-k8s.io/v1beta1", "kind": "SandboxClaim",
                    "name": claim, "uid": claim_uid}),
            ));
        }
        owners
            .into_iter()
            .map(|(owner, reference)| {
                json!({"apiVersion": "cilium.io/v2", "kind": "CiliumNetworkPolicy",
                    "metadata": {"name": format!("namzu-sbx-{owner}"), "namespace": self.namespace,
                        "labels": {"app.kubernetes.io/managed-by": "namzu-sandbox"},
                        "ownerReferences": [reference]},
                    "spec": {"endpointSelector": {"matchLabels": {PER_SANDBOX_LABEL: name}},
                        "egress": [{"toFQDNs": [{"matchName": "api.github.com"}],
                            "toPorts": [{"ports": [{"port": "443", "protocol": "TCP"}]}]}]}})
            })
            .collect()
    }
}

/// Scenario text as a value: JSON through a JSON parser when it is JSON (any size), else YAML
/// with a budget sized for the text — the YAML parser's default budget (250,000 nodes) refuses
/// a production-sized scenario, while its guards against alias bombs stay as they are.
fn parse_text(text: &str) -> Result<Value, String> {
    let json_error = if text.trim_start().starts_with(['{', '[']) {
        match serde_json::from_str::<Value>(text) {
            Ok(v) => return Ok(v),
            // a YAML flow mapping (`{namespaces: [a]}`) starts so too
            Err(e) => Some(e),
        }
    } else {
        None
    };
    let mut budget = serde_saphyr::Budget::default();
    // every node and event takes at least a byte of the text (a few bytes more for slack)
    budget.max_nodes = budget.max_nodes.max(text.len() + 64);
    budget.max_events = budget.max_events.max(2 * text.len() + 64);
    budget.max_total_scalar_bytes = budget.max_total_scalar_bytes.max(text.len());
    budget.max_depth = budget.max_depth.max(128);
    let mut options = serde_saphyr::Options::default();
    options.budget = Some(budget);
    // merge keys (`<<: *base`) are expanded by the parser
    serde_saphyr::from_str_with_options(text, options).map_err(|e| match json_error {
        Some(j) => format!("scenario is not JSON ({j}) nor YAML: {e}"),
        None => format!("scenario is not YAML or JSON: {e}"),
    })
}

fn resolve_times(v: &mut Value, now: DateTime<Utc>) -> Result<(), String> {
    match v {
        Value::String(s) if s.starts_with("{{") && s.ends_with("}}") => {
            *s = resolve_time(&s[2..s.len() - 2], now)?;
        }
        Value::Array(items) => {
            for i in items {
                resolve_times(i, now)?;
            }
        }
        Value::Object(map) => {
            for (_, m) in map.iter_mut() {
                resolve_times(m, now)?;
            }
        }
        _ => {}
    }
    Ok(())
}

/// `now`, `now-5m`, `now+2h`, `now-60d`, with `|ms` for the millisecond (`toISOString`) form.
fn resolve_time(expr: &str, now: DateTime<Utc>) -> Result<String, String> {
    let bad = || format!("scenario: cannot read time expression {{{{{expr}}}}}");
    let (expr, millis) = match expr.trim().strip_suffix("|ms") {
        Some(e) => (e.trim(), true),
        None => (expr.trim(), false),
    };
    let rest = expr.strip_prefix("now").ok_or_else(bad)?;
    let t = if rest.is_empty() {
        now
    } else {
        let (sign, amount) = rest.split_at(1);
        let unit = amount.chars().last().ok_or_else(bad)?;
        let n: i64 = amount[..amount.len() - 1].parse().map_err(|_| bad())?;
        let d = match unit {
            's' => Duration::seconds(n),
            'm' => Duration::minutes(n),
            'h' => Duration::hours(n),
            'd' => Duration::days(n),
            _ => return Err(bad()),
        };
        match sign {
            "-" => now - d,
            "+" => now + d,
            _ => return Err(bad()),
        }
    };
    Ok(if millis {
        t.to_rfc3339_opts(SecondsFormat::Millis, true)
    } else {
        k8s_time(t)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn time_expressions() {
        let now = Utc.with_ymd_and_hms(2026, 11, 29, 10, 0, 0).unwrap();
        assert_eq!(resolve_time("now", now).unwrap(), "2026-11-29T10:00:00Z");
        assert_eq!(resolve_time("now-90m", now).unwrap(), "2026-11-29T08:30:00Z");
        assert_eq!(resolve_time("now-60d|ms", now).unwrap(), "2026-09-30T10:00:00.000Z");
        assert!(resolve_time("yesterday", now).is_err());
    }

    #[test]
    fn server_knobs() {
        let now = Utc.with_ymd_and_hms(2026, 11, 29, 10, 0, 0).unwrap();
        let s = Scenario::parse("server: {version: \"1.20\", gcDelay: 2s}", now).unwrap();
        let server = s.server.unwrap();
        assert_eq!(server.minor().unwrap(), Some(20));
        assert_eq!(server.gc_delay().unwrap(), Some(Duration::seconds(2)));
        let s = Scenario::parse("server: {version: v1.31.4, gcDelay: 500ms}", now).unwrap();
        assert_eq!(s.server.unwrap().gc_delay().unwrap(), Some(Duration::milliseconds(500)));
        let s = Scenario::parse("server: {latency: 30ms}", now).unwrap();
        assert_eq!(
            s.server.unwrap().latency().unwrap(),
            Some(std::time::Duration::from_millis(30))
        );
        for bad in [
            "server: {latency: 30}",
            "server: {latency: fast}",
            "server: {version: 1.20}",
            "server: {version: \"2.1\"}",
            "server: {gcDelay: soon}",
            "server: {gc: 1s}",
        ] {
            assert!(Scenario::parse(bad, now).is_err(), "{bad}");
        }
    }
}
