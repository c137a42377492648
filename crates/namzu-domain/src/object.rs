//! Small readers over API objects held as JSON, so every rule reads fields the same way.

use serde_json::Value;

/// `obj[a][b]…` as a string, if it is one.
pub fn str_at<'a>(obj: &'a Value, path: &[&str]) -> Option<&'a str> {
    at(obj, path)?.as_str()
}

/// `obj[a][b]…`, if every step exists.
pub fn at<'a>(obj: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter().try_fold(obj, |v, key| v.get(*key))
}

/// A non-empty string at `path`.
pub fn non_empty<'a>(obj: &'a Value, path: &[&str]) -> Option<&'a str> {
    str_at(obj, path).filter(|s| !s.is_empty())
}

/// What a JSON value is, in a few words, for an error about an unexpected one.
pub fn brief(v: &Value) -> String {
    match v {
        Value::Object(_) => format!(
            "{} {}/{}",
            str_at(v, &["kind"]).unwrap_or("an object"),
            str_at(v, &["metadata", "namespace"]).unwrap_or("-"),
            str_at(v, &["metadata", "name"]).unwrap_or("-")
        ),
        Value::Array(_) => "an array".into(),
        Value::String(_) => "a string".into(),
        Value::Number(_) => "a number".into(),
        Value::Bool(_) => "a boolean".into(),
        Value::Null => "null".into(),
    }
}

/// The SandboxClaim that owns this object, if one does (`?` when the reference has no name).
pub fn claim_owner(obj: &Value) -> Option<&str> {
    owner_refs(obj)
        .iter()
        .find(|r| str_at(r, &["kind"]) == Some("SandboxClaim"))
        .map(|r| str_at(r, &["name"]).unwrap_or("?"))
}

pub fn name(obj: &Value) -> &str {
    str_at(obj, &["metadata", "name"]).unwrap_or("")
}

pub fn namespace(obj: &Value) -> &str {
    str_at(obj, &["metadata", "namespace"]).unwrap_or("")
}

pub fn uid(obj: &Value) -> Option<&str> {
    non_empty(obj, &["metadata", "uid"])
}

pub fn annotation<'a>(obj: &'a Value, key: &str) -> Option<&'a str> {
    obj.get("metadata")?.get("annotations")?.get(key)?.as_str()
}

pub fn generation(obj: &Value) -> Option<i64> {
    at(obj, &["metadata", "generation"])?.as_i64()
}

/// The condition of `type_` in `status.conditions`, if present.
pub(crate) fn condition<'a>(obj: &'a Value, type_: &str) -> Option<&'a Value> {
    at(obj, &["status", "conditions"])?
        .as_array()?
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(type_))
}

/// `(status, reason, message)` of a condition, empty strings where absent.
pub fn condition_parts(c: &Value) -> (&str, &str, &str) {
    let s = |k| c.get(k).and_then(Value::as_str).unwrap_or("");
    (s("status"), s("reason"), s("message"))
}

/// `ownerReferences[]` of an object.
pub fn owner_refs(obj: &Value) -> &[Value] {
    at(obj, &["metadata", "ownerReferences"])
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}
