//! Who wrote a field, and when: an object's `metadata.managedFields` — each manager, its
//! operation, the time of its latest write and the fields it owns (FieldsV1). `history` reads
//! them for what was true when, `inspect` for who set the mode.

use super::timefmt;
use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::Value;

/// This tool's field manager (`fieldManager=kubectl-namzu` on every write).
pub const THIS_TOOL: &str = "kubectl-namzu";
/// @namzu/sandbox's field manager.
pub const LIBRARY: &str = "namzu-sandbox";

/// The latest writer of one field.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Writer {
    pub manager: String,
    /// `Update` or `Apply`.
    pub operation: String,
    /// The manager's latest write (of any field it owns): the field was written then or before.
    #[serde(serialize_with = "rfc3339_opt")]
    pub time: Option<DateTime<Utc>>,
}

fn rfc3339_opt<S: serde::Serializer>(t: &Option<DateTime<Utc>>, s: S) -> Result<S::Ok, S::Error> {
    match t {
        Some(t) => s.serialize_str(&timefmt::js_iso(*t)),
        None => s.serialize_none(),
    }
}

impl Writer {
    /// The manager and what it is: this tool, @namzu/sandbox, the agent-sandbox controller,
    /// kubectl, or another manager (named all the same).
    pub fn who(&self) -> String {
        let m = self.manager.as_str();
        let what = if m == THIS_TOOL {
            "this tool"
        } else if m == LIBRARY {
            "@namzu/sandbox"
        } else if m.contains("agent-sandbox") || m.contains("sandbox-controller") {
            "the agent-sandbox controller"
        } else if m == "kubectl" || m.starts_with("kubectl-") {
            "kubectl"
        } else {
            "another manager"
        };
        format!("{m} ({what})")
    }
}

/// Every non-status entry of the object's managedFields.
fn entries(obj: &Value) -> impl Iterator<Item = &Value> {
    obj.pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|e| e.get("subresource").and_then(Value::as_str).is_none_or(str::is_empty))
}

fn writer(e: &Value) -> Writer {
    let s = |k: &str| e.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    Writer {
        manager: s("manager"),
        operation: s("operation"),
        time: e.get("time").and_then(Value::as_str).and_then(timefmt::parse),
    }
}

/// Whether a FieldsV1 set owns `path` (`f:spec`, `f:operatingMode`): the path is in it, or an
/// owned leaf above it holds the whole of it.
fn owns(set: &Value, path: &[String]) -> bool {
    let mut at = set;
    for (i, k) in path.iter().enumerate() {
        match at.get(k) {
            Some(next) => at = next,
            None => return i > 0 && at.as_object().is_some_and(|m| m.is_empty()),
        }
    }
    true
}

/// The latest writer of the field at `path` (object keys, `["spec", "operatingMode"]`), when the
/// object's managedFields say (several owners of one field: the latest).
pub(crate) fn of_field(obj: &Value, path: &[&str]) -> Option<Writer> {
    let path: Vec<String> = path.iter().map(|k| format!("f:{k}")).collect();
    entries(obj)
        .filter(|e| e.get("fieldsV1").is_some_and(|f| owns(f, &path)))
        .map(writer)
        .max_by_key(|w| w.time)
}

/// Who last wrote `spec.operatingMode`.
pub fn of_mode(sandbox: &Value) -> Option<Writer> {
    of_field(sandbox, &["spec", "operatingMode"])
}

/// Who last wrote annotation `key`.
pub(crate) fn of_annotation(sandbox: &Value, key: &str) -> Option<Writer> {
    of_field(sandbox, &["metadata", "annotations", key])
}

/// The latest write by any manager to the object's metadata or spec (not its status), if the
/// managedFields say.
pub(crate) fn latest_write(obj: &Value) -> Option<DateTime<Utc>> {
    entries(obj).filter_map(|e| writer(e).time).max()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_owner_of_a_field_is_named_with_what_it_is() {
        let s = json!({"metadata": {"managedFields": [
            {"manager": "namzu-sandbox", "operation": "Update", "time": "2026-09-01T10:00:00Z",
             "fieldsV1": {"f:metadata": {"f:annotations": {"f:sandbox.namzu.ai/holder-epoch": {}}}}},
            {"manager": "kubectl-patch", "operation": "Update", "time": "2026-09-01T11:00:00Z",
             "fieldsV1": {"f:spec": {"f:operatingMode": {}}}},
            {"manager": "agent-sandbox-controller", "operation": "Update", "time": "2026-09-01T12:00:00Z",
             "subresource": "status", "fieldsV1": {"f:spec": {"f:operatingMode": {}}}}]}});
        let mode = of_mode(&s).unwrap();
        assert_eq!(mode.manager, "kubectl-patch", "a status entry owns no spec");
        assert_eq!(mode.who(), "kubectl-patch (kubectl)");
        let epoch = of_annotation(&s, "sandbox.namzu.ai/holder-epoch").unwrap();
        assert_eq!(epoch.who(), "namzu-sandbox (@namzu/sandbox)");
        assert_eq!(of_annotation(&s, "other"), None);
        assert_eq!(latest_write(&s), timefmt::parse("2026-09-01T11:00:00Z"));
        let whole = json!({"metadata": {"managedFields": [{"manager": "x", "fieldsV1": {"f:spec": {}}}]}});
        assert_eq!(of_mode(&whole).unwrap().who(), "x (another manager)");
        assert_eq!(of_mode(&json!({})), None);
    }
}
