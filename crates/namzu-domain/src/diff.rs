//! Field-level differences between two JSON documents (the Sandbox's pod template and the
//! template it would get today), as `path: old → new`.

use serde_json::Value;

#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    /// `spec.containers[0].image`; keys that are not plain identifiers are quoted:
    /// `metadata.labels["app.kubernetes.io/name"]`.
    pub path: String,
    /// `None` = absent on that side.
    pub old: Option<Value>,
    pub new: Option<Value>,
}

/// Every leaf that differs, in document order (object keys sorted).
pub(crate) fn diff(old: &Value, new: &Value) -> Vec<Change> {
    let mut out = Vec::new();
    walk(String::new(), Some(old), Some(new), &mut out);
    out
}

fn key_path(base: &str, key: &str) -> String {
    let plain = !key.is_empty() && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    match (plain, base.is_empty()) {
        (true, true) => key.to_string(),
        (true, false) => format!("{base}.{key}"),
        (false, _) => format!("{base}[{}]", Value::String(key.to_string())),
    }
}

fn walk(path: String, old: Option<&Value>, new: Option<&Value>, out: &mut Vec<Change>) {
    match (old, new) {
        (Some(Value::Object(a)), Some(Value::Object(b))) => {
            let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
            keys.sort();
            keys.dedup();
            for k in keys {
                walk(key_path(&path, k), a.get(k), b.get(k), out);
            }
        }
        (Some(Value::Array(a)), Some(Value::Array(b))) => {
            for i in 0..a.len().max(b.len()) {
                walk(format!("{path}[{i}]"), a.get(i), b.get(i), out);
            }
        }
        (a, b) if a == b => {}
        (a, b) => out.push(Change {
            path,
            old: a.cloned(),
            new: b.cloned(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn leaves_that_differ() {
        let old = json!({"metadata":{"labels":{"app.kubernetes.io/name":"a","x":"1"}},
            "spec":{"containers":[{"image":"i:1","resources":{"limits":{"memory":"2Gi"}}}],"nodeSelector":{"pool":"a"}}});
        let new = json!({"metadata":{"labels":{"app.kubernetes.io/name":"b","x":"1"}},
            "spec":{"containers":[{"image":"i:2","resources":{"limits":{"memory":"4Gi"}}},{"image":"side"}]}});
        let d = diff(&old, &new);
        let paths: Vec<&str> = d.iter().map(|c| c.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "metadata.labels[\"app.kubernetes.io/name\"]",
                "spec.containers[0].image",
                "spec.containers[0].resources.limits.memory",
                "spec.containers[1]",
                "spec.nodeSelector",
            ]
        );
        assert_eq!(d[1].old, Some(json!("i:1")));
        assert_eq!(d[3].old, None);
        assert_eq!(d[4].new, None);
        assert!(diff(&old, &old).is_empty());
    }
}
