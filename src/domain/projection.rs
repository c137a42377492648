//! What the derivation reads of each listed object, listed once: list items are pruned to these
//! fields as they are parsed, so an inventory holds what it uses, not every pod's managedFields,
//! env and volumes. `tests/it/derive.rs` proves a projected object derives the same workspace.

use serde_json::Value;

/// Which part of a JSON value to keep.
#[derive(Debug, Clone, Copy)]
pub enum Keep {
    All,
    /// These fields of an object, each kept as said; every other field dropped.
    Fields(&'static [(&'static str, Keep)]),
    /// Every field of an object but these.
    AllBut(&'static [&'static str]),
    /// Each element of an array kept as said.
    Each(&'static Keep),
}

use Keep::{All, AllBut, Each, Fields};

const META: Keep = Fields(&[
    ("name", All),
    ("namespace", All),
    ("uid", All),
    ("resourceVersion", All),
    ("generation", All),
    ("creationTimestamp", All),
    ("deletionTimestamp", All),
    ("labels", All),
    (
        "annotations",
        AllBut(&["kubectl.kubernetes.io/last-applied-configuration"]),
    ),
    ("ownerReferences", All),
]);

/// A Sandbox: all of spec (the pod template is hashed whole) and status; metadata without
/// managedFields.
pub const SANDBOX: Keep = Fields(&[
    ("apiVersion", All),
    ("kind", All),
    ("metadata", META),
    ("spec", All),
    ("status", All),
]);

const CONTAINERS: Keep = Each(&Fields(&[("name", All), ("image", All)]));

/// A pod: identity, owners, labels, node, images, and status (phase, conditions, container
/// states: what state and diagnosis read).
pub const POD: Keep = Fields(&[
    ("apiVersion", All),
    ("kind", All),
    ("metadata", META),
    (
        "spec",
        Fields(&[
            ("nodeName", All),
            ("containers", CONTAINERS),
            ("initContainers", CONTAINERS),
        ]),
    ),
    ("status", All),
]);

/// A PersistentVolumeClaim: identity, owners and phase.
pub const PVC: Keep = Fields(&[
    ("apiVersion", All),
    ("kind", All),
    ("metadata", META),
    ("status", Fields(&[("phase", All)])),
]);

/// Prune `value` in place to what `keep` says.
pub fn project(value: &mut Value, keep: Keep) {
    match (keep, value) {
        (All, _) => {}
        (Fields(fields), Value::Object(map)) => {
            map.retain(|k, _| fields.iter().any(|(f, _)| f == k));
            for (f, k) in fields {
                if let Some(v) = map.get_mut(*f) {
                    project(v, *k);
                }
            }
        }
        (AllBut(dropped), Value::Object(map)) => map.retain(|k, _| !dropped.contains(&k.as_str())),
        (Each(k), Value::Array(items)) => items.iter_mut().for_each(|v| project(v, *k)),
        // a field of an unexpected type is kept as it is: the derivation reads it defensively
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keeps_what_is_listed_and_drops_the_rest() {
        let mut pod = json!({"kind": "Pod", "metadata": {"name": "p", "managedFields": [{"manager": "x"}],
            "annotations": {"a": "1", "kubectl.kubernetes.io/last-applied-configuration": "{…}"}},
            "spec": {"nodeName": "n", "containers": [{"name": "c", "image": "i", "env": [{"name": "SECRET"}]}], "volumes": []},
            "status": {"phase": "Running"}});
        project(&mut pod, POD);
        assert_eq!(
            pod,
            json!({"kind": "Pod", "metadata": {"name": "p", "annotations": {"a": "1"}},
                "spec": {"nodeName": "n", "containers": [{"name": "c", "image": "i"}]}, "status": {"phase": "Running"}})
        );
        let mut odd = json!({"metadata": "not an object", "spec": {"containers": 7}});
        project(&mut odd, POD);
        assert_eq!(odd, json!({"metadata": "not an object", "spec": {"containers": 7}}));
    }
}
