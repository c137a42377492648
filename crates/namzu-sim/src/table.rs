//! Server-side printing (`Accept: …;as=Table;g=meta.k8s.io`), which `kubectl get` asks for.

use super::resources::Resource;
use chrono::{DateTime, Utc};
use serde_json::{Value, json};

fn column(name: &str, format: &str) -> Value {
    json!({"name":name,"type":"string","format":format,"description":"","priority":0})
}

fn age(obj: &Value, now: DateTime<Utc>) -> String {
    obj.pointer("/metadata/creationTimestamp")
        .and_then(Value::as_str)
        .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
        .map(|t| namzu_domain::age::human_duration((now - t.with_timezone(&Utc)).num_seconds()))
        .unwrap_or_else(|| "<unknown>".into())
}

/// How long ago a time was, as `kubectl get` shows it.
fn since(t: Option<&str>, now: DateTime<Utc>) -> String {
    t.and_then(|t| DateTime::parse_from_rfc3339(t).ok())
        .map(|t| namzu_domain::age::human_duration((now - t.with_timezone(&Utc)).num_seconds()))
        .unwrap_or_else(|| "<unknown>".into())
}

/// An Event's row, core/v1 or events.k8s.io/v1 alike (the API server prints both from one type):
/// Last Seen, Type, Reason, Object, Message.
fn event_cells(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let field = |a: &str, b: &str| {
        obj.get(a)
            .filter(|v| !v.is_null())
            .or_else(|| obj.get(b).filter(|v| !v.is_null()))
    };
    let str_of = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or("").to_string();
    let last = field("lastTimestamp", "deprecatedLastTimestamp").or_else(|| obj.get("eventTime"));
    let regarding = field("involvedObject", "regarding").cloned().unwrap_or(json!({}));
    let object = format!(
        "{}/{}",
        regarding["kind"].as_str().unwrap_or("").to_lowercase(),
        regarding["name"].as_str().unwrap_or("")
    );
    vec![
        json!(since(last.and_then(Value::as_str), now)),
        json!(str_of(obj.get("type"))),
        json!(str_of(obj.get("reason"))),
        json!(object),
        json!(str_of(field("message", "note"))),
    ]
}

/// A PersistentVolume's row as kube-apiserver prints it.
fn pv_cells(obj: &Value, name: Value, now: DateTime<Utc>) -> Vec<Value> {
    let text = |p: &str| json!(obj.pointer(p).and_then(Value::as_str).unwrap_or(""));
    let modes: Vec<&str> = obj
        .pointer("/spec/accessModes")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(|m| match m {
                    "ReadWriteOnce" => "RWO",
                    "ReadOnlyMany" => "ROX",
                    "ReadWriteMany" => "RWX",
                    "ReadWriteOncePod" => "RWOP",
                    other => other,
                })
                .collect()
        })
        .unwrap_or_default();
    let claim = match obj.pointer("/spec/claimRef") {
        Some(c) => format!(
            "{}/{}",
            c.get("namespace").and_then(Value::as_str).unwrap_or(""),
            c.get("name").and_then(Value::as_str).unwrap_or("")
        ),
        None => String::new(),
    };
    vec![
        name,
        text("/spec/capacity/storage"),
        json!(modes.join(",")),
        text("/spec/persistentVolumeReclaimPolicy"),
        text("/status/phase"),
        json!(claim),
        text("/spec/storageClassName"),
        json!("<unset>"),
        text("/status/reason"),
        json!(age(obj, now)),
    ]
}

fn cells(r: &Resource, obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    if r.plural == "events" {
        return event_cells(obj, now);
    }
    let name = obj.pointer("/metadata/name").cloned().unwrap_or(json!(""));
    if r.plural == "persistentvolumes" {
        return pv_cells(obj, name, now);
    }
    if r.plural == "sandboxes" {
        let ready = obj
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .and_then(|cs| cs.iter().find(|c| c["type"] == "Ready"));
        let field = |k: &str| ready.and_then(|c| c.get(k)).cloned().unwrap_or(json!(""));
        vec![name, field("status"), field("reason"), json!(age(obj, now))]
    } else if r.plural == "runtimeclasses" {
        let handler = obj.get("handler").cloned().unwrap_or(json!(""));
        vec![name, handler, json!(age(obj, now))]
    } else {
        vec![name, json!(age(obj, now))]
    }
}

/// A meta.k8s.io/v1 Table of `objects`; `include` is the `includeObject` parameter.
/// A `meta.k8s.io/v1` Table of `objects`; `list_meta` is the list's metadata (resourceVersion,
/// and `continue` when paged: kubectl pages its Table requests too).
pub(crate) fn table<V: std::borrow::Borrow<Value>>(
    r: &Resource,
    objects: &[V],
    list_meta: &Value,
    include: &str,
    now: DateTime<Utc>,
) -> Value {
    let columns = if r.plural == "events" {
        vec![
            column("Last Seen", ""),
            column("Type", ""),
            column("Reason", ""),
            column("Object", ""),
            column("Message", ""),
        ]
    } else if r.plural == "persistentvolumes" {
        vec![
            column("Name", "name"),
            column("Capacity", ""),
            column("Access Modes", ""),
            column("Reclaim Policy", ""),
            column("Status", ""),
            column("Claim", ""),
            column("StorageClass", ""),
            column("VolumeAttributesClass", ""),
            column("Reason", ""),
            column("Age", ""),
        ]
    } else if r.plural == "sandboxes" {
        vec![
            column("Name", "name"),
            column("Ready", ""),
            column("Reason", ""),
            column("Age", ""),
        ]
    } else if r.plural == "runtimeclasses" {
        vec![column("Name", "name"), column("Handler", ""), column("Age", "")]
    } else {
        vec![column("Name", "name"), column("Age", "")]
    };
    let rows: Vec<Value> = objects
        .iter()
        .map(|o| {
            let o = o.borrow();
            let object = match include {
                "None" => Value::Null,
                "Object" => o.clone(),
                _ => json!({"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":o["metadata"]}),
            };
            json!({"cells":cells(r, o, now),"object":object})
        })
        .collect();
    json!({"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":list_meta,
        "columnDefinitions":columns,"rows":rows})
}
