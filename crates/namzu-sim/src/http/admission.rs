//! What the API server checks and defaults before a write is stored: CRD defaults and pruning,
//! immutable fields, label and annotation keys, a Sandbox's spec and status schema.

use super::super::resources::Resource;
use super::super::status::{self, ApiError};
use super::super::store::meta;
use serde_json::{Value, json};

/// Keep what a write to the main resource cannot change.
pub(super) fn keep_immutable(r: &Resource, old: &Value, new: &mut Value) {
    for k in [
        "uid",
        "name",
        "namespace",
        "creationTimestamp",
        "generation",
        "deletionTimestamp",
    ] {
        match old["metadata"].get(k) {
            Some(v) => new["metadata"][k] = v.clone(),
            None => {
                if let Some(m) = new["metadata"].as_object_mut() {
                    m.remove(k);
                }
            }
        }
    }
    new["kind"] = old["kind"].clone();
    new["apiVersion"] = old["apiVersion"].clone();
    if r.has_status {
        match old.get("status") {
            Some(s) => new["status"] = s.clone(),
            None => {
                if let Some(o) = new.as_object_mut() {
                    o.remove("status");
                }
            }
        }
    }
}

pub(super) fn invalid(r: &Resource, name: &str, field_message: &str) -> ApiError {
    status::status(
        422,
        "Invalid",
        &format!("{} \"{name}\" is invalid: {field_message}", r.kind_qualified()),
        json!({"name":name,"group":r.group,"kind":r.kind}),
    )
}

/// Labels and annotations: qualified names, label values, maps of strings.
fn validate_metadata(r: &Resource, name: &str, obj: &Value) -> Result<(), ApiError> {
    if let Some(m) = obj.pointer("/metadata/labels").and_then(Value::as_object) {
        for (k, v) in m {
            if let Some(why) = qualified_name_error(k) {
                return Err(invalid(
                    r,
                    name,
                    &format!("metadata.labels: Invalid value: {k:?}: {why}"),
                ));
            }
            if let Some(v) = v.as_str()
                && let Some(why) = label_value_error(v)
            {
                return Err(invalid(
                    r,
                    name,
                    &format!("metadata.labels: Invalid value: {v:?}: {why}"),
                ));
            }
        }
    }
    if let Some(m) = obj.pointer("/metadata/annotations").and_then(Value::as_object) {
        for k in m.keys() {
            if let Some(why) = qualified_name_error(k) {
                return Err(invalid(
                    r,
                    name,
                    &format!("metadata.annotations: Invalid value: {k:?}: {why}"),
                ));
            }
        }
    }
    for map in ["labels", "annotations"] {
        if let Some(m) = obj["metadata"].get(map).filter(|m| !m.is_null()) {
            let ok = m.as_object().is_some_and(|m| m.values().all(Value::is_string));
            if !ok {
                return Err(invalid(
                    r,
                    name,
                    &format!("metadata.{map}: Invalid value: must be a map of strings"),
                ));
            }
        }
    }
    Ok(())
}

/// The extensions' enums, as their CRDs list them.
fn validate_enums(r: &Resource, name: &str, obj: &Value) -> Result<(), ApiError> {
    let enums: &[(&str, &str, &[&str])] = match r.plural {
        "sandboxclaims" => &[(
            "/spec/lifecycle/shutdownPolicy",
            "spec.lifecycle.shutdownPolicy",
            &["Delete", "DeleteForeground", "Retain"],
        )],
        "sandboxwarmpools" => &[(
            "/spec/updateStrategy/type",
            "spec.updateStrategy.type",
            &["Recreate", "OnReplenish"],
        )],
        "sandboxtemplates" => &[
            (
                "/spec/networkPolicyManagement",
                "spec.networkPolicyManagement",
                &["Managed", "Unmanaged"],
            ),
            (
                "/spec/envVarsInjectionPolicy",
                "spec.envVarsInjectionPolicy",
                &["Allowed", "Overrides", "Disallowed"],
            ),
            (
                "/spec/volumeClaimTemplatesPolicy",
                "spec.volumeClaimTemplatesPolicy",
                &["Disallowed", "Allowed", "Overrides"],
            ),
        ],
        _ => &[],
    };
    for (pointer, field, allowed) in enums {
        if let Some(v) = obj.pointer(pointer)
            && !v.as_str().is_some_and(|v| allowed.contains(&v))
        {
            let quoted: Vec<String> = allowed.iter().map(|a| format!("{a:?}")).collect();
            return Err(invalid(
                r,
                name,
                &format!(
                    "{field}: Unsupported value: {v}: supported values: {}",
                    quoted.join(", ")
                ),
            ));
        }
    }
    Ok(())
}

/// The schema rules the real server enforces that matter here.
pub(super) fn validate(r: &Resource, obj: &Value, old: Option<&Value>) -> Result<(), ApiError> {
    let name = meta(obj, "name");
    validate_metadata(r, name, obj)?;
    // the extensions' enums and minimums (crds: sandboxclaims, sandboxwarmpools, sandboxtemplates)
    validate_enums(r, name, obj)?;
    if r.plural == "sandboxclaims" && obj.pointer("/spec/warmPoolRef/name").is_none_or(|n| !n.is_string()) {
        return Err(invalid(r, name, "spec.warmPoolRef: Required value"));
    }
    for (plural, pointer, field) in [
        (
            "sandboxclaims",
            "/spec/lifecycle/ttlSecondsAfterFinished",
            "spec.lifecycle.ttlSecondsAfterFinished",
        ),
        ("sandboxwarmpools", "/spec/replicas", "spec.replicas"),
    ] {
        if r.plural == plural
            && let Some(v) = obj.pointer(pointer)
            && v.as_i64().is_none_or(|n| n < 0)
        {
            return Err(invalid(
                r,
                name,
                &format!("{field}: Invalid value: {v}: {field} in body should be greater than or equal to 0"),
            ));
        }
    }
    if r.plural == "sandboxes" {
        if let Some(mode) = obj.pointer("/spec/operatingMode")
            && mode != "Running"
            && mode != "Suspended"
        {
            return Err(invalid(
                r,
                name,
                &format!("spec.operatingMode: Unsupported value: {mode}: supported values: \"Running\", \"Suspended\""),
            ));
        }
        if let Some(old) = old
            && old.pointer("/spec/volumeClaimTemplates") != obj.pointer("/spec/volumeClaimTemplates")
        {
            return Err(invalid(
                r,
                name,
                "spec: Invalid value: \"object\": volumeClaimTemplates is immutable",
            ));
        }
    }
    Ok(())
}

pub(super) const NAME_PART: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`
pub(super) fn name_part_ok(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

/// A label or annotation key's error, as `IsQualifiedName` words it; `None` when valid.
pub(super) fn qualified_name_error(key: &str) -> Option<String> {
    let (prefix, name) = match key.rsplit_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, key),
    };
    if let Some(p) = prefix {
        let label_ok = |l: &str| {
            let b = l.as_bytes();
            !b.is_empty()
                && b.len() <= 63
                && b[0].is_ascii_alphanumeric()
                && b[b.len() - 1].is_ascii_alphanumeric()
                && b.iter()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        };
        if p.is_empty() || p.len() > 253 || !p.split('.').all(label_ok) {
            return Some("prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')".to_string());
        }
    }
    if name.is_empty() {
        return Some("name part must be non-empty".to_string());
    }
    if name.len() > 63 {
        return Some("name part must be no more than 63 characters".to_string());
    }
    (!name_part_ok(name)).then(|| NAME_PART.to_string())
}

/// A label value's error; `None` when valid (empty is valid).
pub(super) fn label_value_error(v: &str) -> Option<String> {
    if v.is_empty() {
        return None;
    }
    if v.len() > 63 {
        return Some("must be no more than 63 characters".to_string());
    }
    (!name_part_ok(v)).then(|| "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')".to_string())
}

/// The Sandbox spec fields of agent-sandbox's CRDs (v1.0 and 0.5.x): anything else is pruned.
pub(super) const SANDBOX_SPEC: [&str; 7] = [
    "operatingMode",
    "podTemplate",
    "replicas",
    "service",
    "shutdownPolicy",
    "shutdownTime",
    "volumeClaimTemplates",
];

/// What the API server does to a custom resource before validation: the CRD's defaults applied
/// and unknown fields pruned (a Sandbox's top level and spec; pod templates keep everything).
pub(super) fn admit_custom(r: &Resource, obj: &mut Value) {
    if !r.is_custom() {
        return;
    }
    if let Some(o) = obj.as_object_mut() {
        o.retain(|k, _| matches!(k.as_str(), "apiVersion" | "kind" | "metadata" | "spec" | "status"));
    }
    if r.plural == "sandboxes"
        && let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut)
    {
        spec.retain(|k, _| SANDBOX_SPEC.contains(&k.as_str()));
        if r.version != "v1alpha1" {
            spec.entry("operatingMode").or_insert(json!("Running"));
            spec.entry("shutdownPolicy").or_insert(json!("Retain"));
        }
    }
    // the extensions' CRD defaults: a default applies where its parent object is given
    let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    match r.plural {
        "sandboxclaims" => {
            if let Some(l) = spec.get_mut("lifecycle").and_then(Value::as_object_mut) {
                l.entry("shutdownPolicy").or_insert(json!("Retain"));
            }
        }
        "sandboxwarmpools" => {
            if r.version != "v1alpha1" {
                spec.entry("replicas").or_insert(json!(1));
            }
            if let Some(u) = spec.get_mut("updateStrategy").and_then(Value::as_object_mut) {
                u.entry("type").or_insert(json!("OnReplenish"));
            }
        }
        "sandboxtemplates" => {
            spec.entry("networkPolicyManagement").or_insert(json!("Managed"));
            spec.entry("envVarsInjectionPolicy").or_insert(json!("Disallowed"));
            spec.entry("volumeClaimTemplatesPolicy").or_insert(json!("Disallowed"));
        }
        _ => {}
    }
}

/// A Sandbox's status as its CRD's schema checks it: `podIPs` are strings, a condition's
/// `reason` is at least one character and `status` True/False/Unknown.
pub(super) fn status_errors(r: &Resource, obj: &Value) -> Option<String> {
    if r.plural != "sandboxes" {
        return None;
    }
    let status = obj.get("status")?;
    if let Some(ips) = status.get("podIPs").and_then(Value::as_array) {
        for (i, ip) in ips.iter().enumerate() {
            if !ip.is_string() {
                let kind = if ip.is_object() { "object" } else { "value" };
                return Some(format!(
                    "status.podIPs[{i}]: Invalid value: \"{kind}\": status.podIPs[{i}] in body must be of type string: \"{kind}\""
                ));
            }
        }
    }
    if let Some(conds) = status.get("conditions").and_then(Value::as_array) {
        for (i, c) in conds.iter().enumerate() {
            let reason = c.get("reason").and_then(Value::as_str).unwrap_or("");
            if reason.is_empty() {
                return Some(format!(
                    "status.conditions[{i}].reason: Invalid value: \"\": status.conditions[{i}].reason in body should be at least 1 chars long"
                ));
            }
            // ^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$
            let b = reason.as_bytes();
            let inner = |c: &u8| c.is_ascii_alphanumeric() || matches!(c, b'_' | b',' | b':');
            if !b[0].is_ascii_alphabetic()
                || !b.iter().all(inner)
                || !(b[b.len() - 1].is_ascii_alphanumeric() || b[b.len() - 1] == b'_')
            {
                return Some(format!(
                    "status.conditions[{i}].reason: Invalid value: \"{reason}\": status.conditions[{i}].reason in body should match '^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$'"
                ));
            }
            let st = c.get("status").and_then(Value::as_str).unwrap_or("");
            if !matches!(st, "True" | "False" | "Unknown") {
                return Some(format!(
                    "status.conditions[{i}].status: Unsupported value: \"{st}\": supported values: \"True\", \"False\", \"Unknown\""
                ));
            }
        }
    }
    None
}
