//! The API resources the tool reads and writes, and typed-free access to them.

use super::connect::Connection;
use super::error::{ClusterError, Op};
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, ListParams};
use serde_json::Value;

pub struct Kind {
    pub group: &'static str,
    pub version: &'static str,
    pub kind: &'static str,
    pub plural: &'static str,
}

impl Kind {
    pub fn api_resource(&self) -> ApiResource {
        ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(self.group, self.version, self.kind), self.plural)
    }
    /// `sandboxes.agents.x-k8s.io`, as kubectl names a resource.
    pub fn qualified(&self) -> String {
        if self.group.is_empty() {
            self.plural.to_string()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }
}

const fn kind(group: &'static str, version: &'static str, kind: &'static str, plural: &'static str) -> Kind {
    Kind {
        group,
        version,
        kind,
        plural,
    }
}

pub const SANDBOXES: Kind = kind("agents.x-k8s.io", "v1beta1", "Sandbox", "sandboxes");
pub const TEMPLATES: Kind = kind(
    "extensions.agents.x-k8s.io",
    "v1beta1",
    "SandboxTemplate",
    "sandboxtemplates",
);
pub const CLAIMS: Kind = kind("extensions.agents.x-k8s.io", "v1beta1", "SandboxClaim", "sandboxclaims");
pub const WARM_POOLS: Kind = kind(
    "extensions.agents.x-k8s.io",
    "v1beta1",
    "SandboxWarmPool",
    "sandboxwarmpools",
);
pub const PODS: Kind = kind("", "v1", "Pod", "pods");
pub const PVCS: Kind = kind("", "v1", "PersistentVolumeClaim", "persistentvolumeclaims");
pub const EVENTS: Kind = kind("", "v1", "Event", "events");
pub const NAMESPACES: Kind = kind("", "v1", "Namespace", "namespaces");

/// An object as the JSON the API served (kind and apiVersion filled in for list items).
pub fn to_value(obj: DynamicObject, kind: &Kind) -> Value {
    let mut v = serde_json::to_value(obj).expect("a DynamicObject serialises");
    if v.get("kind").is_none_or(Value::is_null) {
        v["kind"] = Value::String(kind.kind.into());
        v["apiVersion"] = Value::String(kind.api_resource().api_version);
    }
    v
}

pub fn api(conn: &Connection, kind: &Kind, namespace: Option<&str>) -> Api<DynamicObject> {
    let ar = kind.api_resource();
    match namespace {
        Some(ns) => Api::namespaced_with(conn.client.clone(), ns, &ar),
        None => Api::all_with(conn.client.clone(), &ar),
    }
}

/// LIST one resource in a namespace (or everywhere), optionally by label selector.
pub async fn list(
    conn: &Connection,
    kind: &Kind,
    namespace: Option<&str>,
    selector: Option<&str>,
) -> Result<Vec<Value>, ClusterError> {
    let op = Op::new("list", kind, namespace, "");
    let params = match selector {
        Some(s) => ListParams::default().labels(s),
        None => ListParams::default(),
    };
    raw_list(conn, kind, namespace, &params, &op).await
}

/// The items of a LIST straight into JSON values (kind and apiVersion filled in where the core
/// API leaves them out), without a typed round trip: the inventory reads thousands of objects.
async fn raw_list(
    conn: &Connection,
    kind: &Kind,
    namespace: Option<&str>,
    params: &ListParams,
    op: &Op,
) -> Result<Vec<Value>, ClusterError> {
    #[derive(serde::Deserialize)]
    struct RawList {
        #[serde(default)]
        items: Vec<Value>,
    }
    let url = <DynamicObject as kube::Resource>::url_path(&kind.api_resource(), namespace);
    let request = kube::core::Request::new(url)
        .list(params)
        .map_err(|e| ClusterError::Other(format!("{op}: {e}")))?;
    let list: RawList = conn.bounded(op, conn.client.request::<RawList>(request)).await?;
    let api_version = kind.api_resource().api_version;
    Ok(list
        .items
        .into_iter()
        .map(|mut v| {
            if v.get("kind").is_none_or(Value::is_null) {
                v["kind"] = Value::String(kind.kind.into());
                v["apiVersion"] = Value::String(api_version.clone());
            }
            v
        })
        .collect())
}

/// LIST by field selector (`metadata.name=…`, `involvedObject.name=…`) in one namespace.
pub async fn list_fields(
    conn: &Connection,
    kind: &Kind,
    namespace: &str,
    fields: &str,
) -> Result<Vec<Value>, ClusterError> {
    let op = Op::new("list", kind, Some(namespace), "");
    raw_list(conn, kind, Some(namespace), &ListParams::default().fields(fields), &op).await
}

/// GET one object; `Ok(None)` when it does not exist.
pub async fn get(conn: &Connection, kind: &Kind, namespace: &str, name: &str) -> Result<Option<Value>, ClusterError> {
    let op = Op::new("get", kind, Some(namespace), name);
    match conn.bounded(&op, api(conn, kind, Some(namespace)).get(name)).await {
        Ok(o) => Ok(Some(to_value(o, kind))),
        Err(ClusterError::Api { code: 404, .. }) => Ok(None),
        Err(e) => Err(e),
    }
}
