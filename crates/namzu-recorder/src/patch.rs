//! JSON merge patches (RFC 7386) between two recorded states of an object: a change is recorded
//! as what changed, not the object again.

use serde_json::{Map, Value};

/// The merge patch that turns `old` into `new`; `None` where one cannot say it (a `null` value
/// in `new`, which a merge patch reads as "remove"): the change is then recorded whole.
pub(crate) fn diff(old: &Value, new: &Value) -> Option<Value> {
    match (old, new) {
        (Value::Object(a), Value::Object(b)) => {
            let mut out = Map::new();
            for (k, v) in b {
                match a.get(k) {
                    Some(prev) if prev == v => {}
                    Some(prev) if prev.is_object() && v.is_object() => {
                        out.insert(k.clone(), diff(prev, v)?);
                    }
                    _ if has_null(v) => return None,
                    _ => {
                        out.insert(k.clone(), v.clone());
                    }
                }
            }
            for k in a.keys() {
                if !b.contains_key(k) {
                    out.insert(k.clone(), Value::Null);
                }
            }
            Some(Value::Object(out))
        }
        _ if has_null(new) => None,
        _ => Some(new.clone()),
    }
}

fn has_null(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Object(m) => m.values().any(has_null),
        // inside an array a null is a value (arrays are replaced whole)
        _ => false,
    }
}

/// Apply a merge patch to `target`.
pub(crate) fn apply(target: &mut Value, patch: &Value) {
    let Value::Object(p) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    if let Value::Object(t) = target {
        for (k, v) in p {
            if v.is_null() {
                t.remove(k);
            } else {
                apply(t.entry(k.clone()).or_insert(Value::Null), v);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_diff_applied_gives_the_new_state() {
        let old =
            json!({"metadata": {"name": "a", "labels": {"x": "1", "y": "2"}}, "spec": {"replicas": 1, "list": [1, 2]}});
        let new = json!({"metadata": {"name": "a", "labels": {"x": "1", "z": "3"}}, "spec": {"replicas": 0, "list": [1, null]}, "status": {"ok": true}});
        let patch = diff(&old, &new).unwrap();
        assert_eq!(
            patch,
            json!({"metadata": {"labels": {"z": "3", "y": null}}, "spec": {"replicas": 0, "list": [1, null]}, "status": {"ok": true}})
        );
        let mut got = old.clone();
        apply(&mut got, &patch);
        assert_eq!(got, new);
        assert_eq!(diff(&old, &json!({"a": null})), None);
    }
}
