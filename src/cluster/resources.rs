//! The API resources the tool reads and writes, and typed-free access to them.

use super::connect::Connection;
use super::error::{ApiCall, ClusterError};
pub use super::kinds::{CLAIMS, EVENTS, Kind, NAMESPACES, PODS, PVCS, SANDBOXES, TEMPLATES, WARM_POOLS};
use crate::domain::naming::{is_path_safe_name, validate_namespace};
use kube::api::{Api, DynamicObject, ListParams};
use serde_json::Value;

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
    let op = ApiCall::new("list", kind, namespace, "");
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
    op: &ApiCall,
) -> Result<Vec<Value>, ClusterError> {
    #[derive(serde::Deserialize)]
    struct RawList {
        #[serde(default)]
        items: Vec<Value>,
    }
    check_path(op, namespace, "")?;
    let url = <DynamicObject as kube::Resource>::url_path(&kind.api_resource(), namespace);
    let request = kube::core::Request::new(url)
        .list(params)
        .map_err(|e| ClusterError::Other(format!("{op}: {e}")))?;
    let list: RawList = conn.bounded(op, conn.client.request::<RawList>(request)).await?;
    let mut items = list.items;
    // every item must be an object of the kind listed, in the namespace listed
    for (i, v) in items.iter_mut().enumerate() {
        let fits = v.is_object()
            && namespace.is_none_or(|ns| crate::domain::object::str_at(v, &["metadata", "namespace"]) == Some(ns));
        if !fits {
            return Err(ClusterError::Other(format!(
                "{op}: the API server answered a list whose item {i} is not a {} of this namespace: {}",
                kind.kind,
                crate::domain::object::brief(v)
            )));
        }
        fill_kind(v, kind);
    }
    Ok(items)
}

/// LIST by field selector (`metadata.name=…`, `involvedObject.name=…`) in one namespace.
pub async fn list_fields(
    conn: &Connection,
    kind: &Kind,
    namespace: &str,
    fields: &str,
) -> Result<Vec<Value>, ClusterError> {
    let op = ApiCall::new("list", kind, Some(namespace), "");
    raw_list(conn, kind, Some(namespace), &ListParams::default().fields(fields), &op).await
}

/// GET one object; `Ok(None)` when it does not exist. The answer must be the object asked for.
pub async fn get(conn: &Connection, kind: &Kind, namespace: &str, name: &str) -> Result<Option<Value>, ClusterError> {
    let op = ApiCall::new("get", kind, Some(namespace), name);
    // no object can have a name that is not one (a template label such as `Coder_X`): not found,
    // without a request that could carry it into a URL
    if !is_path_safe_name(name) {
        return Ok(None);
    }
    check_path(&op, Some(namespace), name)?;
    let url = <DynamicObject as kube::Resource>::url_path(&kind.api_resource(), Some(namespace));
    let request = kube::core::Request::new(url)
        .get(name, &Default::default())
        .map_err(|e| ClusterError::Other(format!("{op}: {e}")))?;
    match conn.bounded(&op, conn.client.request::<Value>(request)).await {
        Ok(mut o) => {
            fill_kind(&mut o, kind);
            check_identity(&o, kind, namespace, name).map_err(|e| ClusterError::Other(format!("{op}: {e}")))?;
            Ok(Some(o))
        }
        Err(ClusterError::Api { code: 404, .. }) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Only valid names reach a URL path: a namespace or name that could add a segment or a query
/// (`a/sandboxes/b?x=`) is refused before any request.
fn check_path(op: &ApiCall, namespace: Option<&str>, name: &str) -> Result<(), ClusterError> {
    if let Some(ns) = namespace {
        validate_namespace(ns).map_err(|e| ClusterError::Other(format!("{op}: {e}")))?;
    }
    if !name.is_empty() && !is_path_safe_name(name) {
        return Err(ClusterError::Other(format!("{op}: invalid name {name:?}")));
    }
    Ok(())
}

/// The core API leaves kind and apiVersion out of list items; fill them in where absent.
fn fill_kind(v: &mut Value, kind: &Kind) {
    if let Some(obj) = v.as_object_mut()
        && obj.get("kind").is_none_or(Value::is_null)
    {
        obj.insert("kind".into(), Value::String(kind.kind.into()));
        obj.insert("apiVersion".into(), Value::String(kind.api_resource().api_version));
    }
}

/// An answer is the object asked for: its kind, apiVersion, namespace and name, or an error
/// saying what came instead (a proxy or a hostile server can answer with anything).
pub fn check_identity(v: &Value, kind: &Kind, namespace: &str, name: &str) -> Result<(), ClusterError> {
    let field = |path: &[&str]| crate::domain::object::str_at(v, path).unwrap_or("-").to_string();
    let api_version = kind.api_resource().api_version;
    let (k, av, ns, n) = (
        field(&["kind"]),
        field(&["apiVersion"]),
        field(&["metadata", "namespace"]),
        field(&["metadata", "name"]),
    );
    if k == kind.kind && av == api_version && ns == namespace && n == name {
        Ok(())
    } else {
        Err(ClusterError::Other(format!(
            "the API server answered with {k} {av} {ns}/{n} where {} {api_version} {namespace}/{name} was asked for",
            kind.kind
        )))
    }
}
