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

/// A Sandbox's metadata (without the last-applied configuration), and of managedFields who wrote and when (a recording's
/// `history --between` names the writer of each change), never the field sets.
const SANDBOX_META: Keep = Fields(&[
    ("name", All),
    ("namespace", All),
    ("uid", All),
    ("resourceVersion", All),
    ("generation", All),
    ("creationTimestamp", All),
    ("deletionTimestamp", All),
    // what holds a deletion (the `stuck-deleting` diagnosis, `inspect`)
    ("finalizers", All),
    ("labels", All),
    (
        "annotations",
        AllBut(&["kubectl.kubernetes.io/last-applied-configuration"]),
    ),
    ("ownerReferences", All),
    (
        "managedFields",
        Each(&Fields(&[("manager", All), ("operation", All), ("time", All)])),
    ),
]);

/// A Sandbox: its mode, shutdown, disks' names and the pod template (hashed whole); of status
/// what state, readiness and the pod's selector read; of managedFields who and when only. (A view
/// of the whole object — the TUI's YAML — reads it anew.)
pub const SANDBOX: Keep = Fields(&[
    ("apiVersion", All),
    ("kind", All),
    ("metadata", SANDBOX_META),
    (
        "spec",
        Fields(&[
            ("operatingMode", All),
            ("podTemplate", All),
            (
                "volumeClaimTemplates",
                Each(&Fields(&[
                    ("metadata", Fields(&[("name", All)])),
                    // the disk's size (`resources` in `list -o json`)
                    ("spec", Fields(&[("resources", Fields(&[("requests", All)]))])),
                ])),
            ),
            ("shutdownTime", All),
            ("shutdownPolicy", All),
        ]),
    ),
    (
        "status",
        Fields(&[
            (
                "conditions",
                Each(&Fields(&[
                    ("type", All),
                    ("status", All),
                    ("reason", All),
                    ("message", All),
                    ("observedGeneration", All),
                    // when it turned: what `inspect` shows, and what a recording replays
                    ("lastTransitionTime", All),
                ])),
            ),
            ("selector", All),
            ("replicas", All),
        ]),
    ),
]);

/// Requests and limits, a container's or the pod's own (`resources` in `list -o json`, capacity).
const REQUESTS_AND_LIMITS: Keep = Fields(&[("requests", All), ("limits", All)]);

/// A container's name, image and requests and limits; `restartPolicy` says an init container is
/// a sidecar, whose restarts `kubectl get pods` counts with the containers' (and whose requests
/// the pod's sum adds).
const CONTAINERS: Keep = Each(&Fields(&[
    ("name", All),
    ("image", All),
    ("restartPolicy", All),
    ("resources", REQUESTS_AND_LIMITS),
]));

/// What the derivation reads of a pod's or a disk's metadata: identity, owners, labels (a
/// Sandbox's `status.selector` matches them) and the deletion stamp.
const OWNED_META: Keep = Fields(&[
    ("name", All),
    ("namespace", All),
    ("uid", All),
    // a watch resumes from the newest object it saw
    ("resourceVersion", All),
    // when a pod was made: the start-up waterfall's first step (the live pulse)
    ("creationTimestamp", All),
    ("deletionTimestamp", All),
    // the grace period a terminating pod was given (`stuck-terminating` says it)
    ("deletionGracePeriodSeconds", All),
    ("labels", All),
    (
        "ownerReferences",
        Each(&Fields(&[("kind", All), ("name", All), ("uid", All)])),
    ),
]);

/// A container's state as diagnoses read it, its restarts and how its last run ended (the
/// RESTARTS column, `lastTermination`): three fields of `lastState.terminated`, not its message.
const CONTAINER_STATUSES: Keep = Each(&Fields(&[
    ("name", All),
    ("state", All),
    ("restartCount", All),
    (
        "lastState",
        Fields(&[(
            "terminated",
            // `startedAt`: a restarted container's first start (the start-up waterfall)
            Fields(&[
                ("exitCode", All),
                ("reason", All),
                ("startedAt", All),
                ("finishedAt", All),
            ]),
        )]),
    ),
]));

/// A pod: identity, owners, labels, node, images, requests and limits, and of its status what state and diagnosis
/// read (phase, message, conditions, container states).
pub const POD: Keep = Fields(&[
    ("apiVersion", All),
    ("kind", All),
    ("metadata", OWNED_META),
    (
        "spec",
        Fields(&[
            ("nodeName", All),
            ("containers", CONTAINERS),
            ("initContainers", CONTAINERS),
            // what the pod holds as admitted: pod-level resources, the RuntimeClass's overhead
            ("resources", REQUESTS_AND_LIMITS),
            ("overhead", All),
        ]),
    ),
    (
        "status",
        Fields(&[
            ("phase", All),
            ("message", All),
            ("reason", All),
            (
                "conditions",
                Each(&Fields(&[
                    ("type", All),
                    ("status", All),
                    ("reason", All),
                    ("message", All),
                    // when it turned: the start-up waterfall's legs (the live pulse)
                    ("lastTransitionTime", All),
                ])),
            ),
            ("containerStatuses", CONTAINER_STATUSES),
            ("initContainerStatuses", CONTAINER_STATUSES),
        ]),
    ),
]);

/// A PersistentVolumeClaim: identity, owners and phase.
pub const PVC: Keep = Fields(&[
    ("apiVersion", All),
    ("kind", All),
    ("metadata", OWNED_META),
    // the size it asks for and holds (`resources` in `list -o json`)
    ("spec", Fields(&[("resources", Fields(&[("requests", All)]))])),
    ("status", Fields(&[("phase", All), ("capacity", All)])),
]);

/// A CiliumNetworkPolicy (`cilium.io/v2`): its name, owners and endpoint selectors — what says
/// which workspace a per-sandbox policy selects and whose it is (docs/interop.md §13.5).
pub const POLICY: Keep = Fields(&[
    ("apiVersion", All),
    ("kind", All),
    (
        "metadata",
        Fields(&[
            ("name", All),
            ("namespace", All),
            ("uid", All),
            (
                "ownerReferences",
                Each(&Fields(&[("kind", All), ("name", All), ("uid", All)])),
            ),
        ]),
    ),
    ("spec", Fields(&[("endpointSelector", All)])),
    ("specs", Each(&Fields(&[("endpointSelector", All)]))),
]);

/// A condition with the time it last changed: what a pulse times starts by.
const TIMED_CONDITIONS: Keep = Each(&Fields(&[
    ("type", All),
    ("status", All),
    ("reason", All),
    ("lastTransitionTime", All),
]));

/// A Sandbox as the pulse reads it (`domain::pulse`): metadata, its mode, the pod template's
/// labels (the template it came from), and its conditions with their transition times.
pub const PULSE_SANDBOX: Keep = Fields(&[
    ("apiVersion", All),
    ("kind", All),
    ("metadata", SANDBOX_META),
    (
        "spec",
        Fields(&[
            ("operatingMode", All),
            ("podTemplate", Fields(&[("metadata", Fields(&[("labels", All)]))])),
        ]),
    ),
    ("status", Fields(&[("conditions", TIMED_CONDITIONS)])),
]);

/// A pod as the start-up waterfall reads it: when it was made, its conditions' transitions and
/// its containers' starts.
pub const PULSE_POD: Keep = Fields(&[
    ("apiVersion", All),
    ("kind", All),
    (
        "metadata",
        Fields(&[
            ("name", All),
            ("namespace", All),
            ("uid", All),
            ("creationTimestamp", All),
            ("deletionTimestamp", All),
        ]),
    ),
    (
        "status",
        Fields(&[
            ("phase", All),
            ("conditions", TIMED_CONDITIONS),
            (
                "containerStatuses",
                Each(&Fields(&[
                    ("name", All),
                    ("state", All),
                    ("lastState", Fields(&[("terminated", Fields(&[("startedAt", All)]))])),
                ])),
            ),
        ]),
    ),
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

/// Parse one value straight into its projection: dropped fields are skipped by the parser and
/// never allocated (a pod's managedFields, env and volumes cost nothing to hold).
#[derive(Clone, Copy)]
pub struct Projected(pub Keep);

impl<'de> serde::de::DeserializeSeed<'de> for Projected {
    type Value = Value;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Projected {
    type Value = Value;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        // collected first, so the map is built at its exact size: thousands of small maps are
        // held for the whole pass
        let mut out: Vec<(String, Value)> = Vec::new();
        while let Some(key) = map.next_key::<String>()? {
            let keep = match self.0 {
                Fields(fields) => fields.iter().find(|(f, _)| *f == key).map(|(_, k)| *k),
                AllBut(dropped) => (!dropped.contains(&key.as_str())).then_some(All),
                All | Each(_) => Some(All),
            };
            match keep {
                Some(k) => {
                    let v = map.next_value_seed(Projected(k))?;
                    out.push((key, v));
                }
                None => {
                    map.next_value::<serde::de::IgnoredAny>()?;
                }
            }
        }
        let mut object = serde_json::Map::with_capacity(out.len());
        object.extend(out);
        Ok(Value::Object(object))
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let each = match self.0 {
            Each(k) => *k,
            _ => All,
        };
        let mut out = Vec::new();
        while let Some(v) = seq.next_element_seed(Projected(each))? {
            out.push(v);
        }
        out.shrink_to_fit();
        Ok(Value::Array(out))
    }
    // any other type where an object or array was expected is kept as it is
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
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
            json!({"kind": "Pod", "metadata": {"name": "p"},
                "spec": {"nodeName": "n", "containers": [{"name": "c", "image": "i"}]}, "status": {"phase": "Running"}})
        );
        let mut odd = json!({"metadata": "not an object", "spec": {"containers": 7}});
        project(&mut odd, POD);
        assert_eq!(odd, json!({"metadata": "not an object", "spec": {"containers": 7}}));
    }

    #[test]
    fn parsing_into_the_projection_is_pruning_after_parsing() {
        use serde::de::DeserializeSeed;
        for text in [
            r#"{"kind": "Pod", "metadata": {"name": "p", "managedFields": [{"m": 1}], "annotations": {"a": "1"}},
                "spec": {"nodeName": "n", "containers": [{"name": "c", "image": "i", "env": []}, 7], "volumes": [1]},
                "status": {"phase": "Running", "x": [1.5, null, true]}}"#,
            r#"{"metadata": "x", "spec": {"containers": {"a": 1}}, "status": null}"#,
            r#"[1, {"a": 2}]"#,
            r#""just a string""#,
        ] {
            let mut whole: Value = serde_json::from_str(text).unwrap();
            project(&mut whole, POD);
            let mut de = serde_json::Deserializer::from_str(text);
            assert_eq!(Projected(POD).deserialize(&mut de).unwrap(), whole, "{text}");
        }
    }
}
