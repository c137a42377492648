//! What a real API server does to a pod as it is created, before it is stored: the defaulting
//! of each container's `resources.requests` from its `limits` (`SetDefaults_Pod`: a resource
//! with a limit and no request asks for its limit), the same for pod-level `spec.resources`,
//! the RuntimeClass admission controller's `spec.overhead` (the named RuntimeClass's
//! `overhead.podFixed`), and `status.qosClass` as the API server computes it at creation. Every pod the sim stores passes here: the controller's, one created
//! through the API (dry runs too), one a scenario gives.

use serde_json::Value;

/// The RuntimeClasses a pod may name, by name: the store answers (a trait, so admission never
/// reaches back into the store that calls it).
pub(crate) trait RuntimeClasses {
    fn runtime_class(&self, name: &str) -> Option<&Value>;
}

/// Default and admit `pod` as kube-apiserver would.
pub(crate) fn admit(store: &impl RuntimeClasses, pod: &mut Value) {
    defaults(store, pod);
    let qos = qos_class(pod.get("spec").unwrap_or(&Value::Null));
    if !pod.get("status").is_some_and(Value::is_object) {
        pod["status"] = serde_json::json!({});
    }
    pod["status"]["qosClass"] = Value::from(qos);
}

fn defaults(store: &impl RuntimeClasses, pod: &mut Value) {
    let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    for key in ["initContainers", "containers"] {
        if let Some(containers) = spec.get_mut(key).and_then(Value::as_array_mut) {
            for c in containers {
                if let Some(resources) = c.get_mut("resources") {
                    requests_from_limits(resources);
                }
            }
        }
    }
    if let Some(resources) = spec.get_mut("resources") {
        requests_from_limits(resources);
    }
    let class = spec.get("runtimeClassName").and_then(Value::as_str).unwrap_or("");
    if class.is_empty() {
        return;
    }
    // a class that is not there: admitted without overhead here; a pod created through the API
    // is refused before (`refusal`), as a real server refuses it, while the controller's pods
    // and a scenario's are not (the sim's scenarios name classes they do not define, and its
    // controller has no answer to a refusal)
    let overhead = store
        .runtime_class(class)
        .and_then(|rc| rc.pointer("/overhead/podFixed"))
        .filter(|o| o.as_object().is_some_and(|o| !o.is_empty()))
        .cloned();
    if let Some(overhead) = overhead {
        spec.insert("overhead".into(), overhead);
    }
}

/// `GetPodQOS` over the containers and init containers (requests already defaulted): no CPU or
/// memory request or limit anywhere is `BestEffort`; every container limiting both, with the
/// summed requests equal to the summed limits, is `Guaranteed`; anything else `Burstable`.
pub(crate) fn qos_class(spec: &Value) -> &'static str {
    use namzu_domain::quantities::parse_quantity;
    use std::collections::BTreeMap;
    let (mut requests, mut limits) = (BTreeMap::new(), BTreeMap::new());
    let mut guaranteed = true;
    let containers = ["containers", "initContainers"]
        .iter()
        .filter_map(|k| spec.get(*k).and_then(Value::as_array))
        .flatten();
    for c in containers {
        let mut limited = 0;
        for (which, sums) in [("requests", &mut requests), ("limits", &mut limits)] {
            let Some(list) = c.pointer(&format!("/resources/{which}")).and_then(Value::as_object) else {
                continue;
            };
            for name in ["cpu", "memory"] {
                let q = list
                    .get(name)
                    .and_then(Value::as_str)
                    .and_then(parse_quantity)
                    .unwrap_or(0);
                if q != 0 {
                    *sums.entry(name).or_insert(0) += q;
                    limited += usize::from(which == "limits");
                }
            }
        }
        if limited < 2 {
            guaranteed = false;
        }
    }
    if requests.is_empty() && limits.is_empty() {
        return "BestEffort";
    }
    if guaranteed && requests.len() == limits.len() && requests.iter().all(|(k, v)| limits.get(k) == Some(v)) {
        return "Guaranteed";
    }
    "Burstable"
}

/// Why the RuntimeClass admission controller refuses a pod created through the API: the
/// RuntimeClass it names does not exist.
pub(crate) fn refusal(store: &impl RuntimeClasses, pod: &Value) -> Option<String> {
    let class = pod.pointer("/spec/runtimeClassName").and_then(Value::as_str)?;
    if class.is_empty() || store.runtime_class(class).is_some() {
        return None;
    }
    Some(format!("pod rejected: RuntimeClass {class:?} not found"))
}

/// Each resource with a limit and no request gets its limit as its request.
fn requests_from_limits(resources: &mut Value) {
    let Some(limits) = resources.get("limits").and_then(Value::as_object).cloned() else {
        return;
    };
    if limits.is_empty() {
        return;
    }
    if !resources.get("requests").is_some_and(Value::is_object) {
        resources["requests"] = Value::Object(serde_json::Map::new());
    }
    let requests = resources["requests"].as_object_mut().expect("requests is an object");
    for (k, v) in limits {
        requests.entry(k).or_insert(v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;
    use serde_json::json;

    #[test]
    fn requests_default_to_limits_per_resource() {
        let store = Store::new();
        let mut pod = json!({"spec": {"containers": [
            {"name": "a", "resources": {"limits": {"cpu": "1", "memory": "2Gi"}, "requests": {"cpu": "250m"}}},
            {"name": "b", "resources": {"limits": {"memory": "8Gi"}}},
            {"name": "c"}
        ], "initContainers": [{"name": "i", "resources": {"limits": {"cpu": "2"}}}]}});
        admit(&store, &mut pod);
        assert_eq!(
            pod["spec"]["containers"][0]["resources"]["requests"],
            json!({"cpu": "250m", "memory": "2Gi"})
        );
        assert_eq!(
            pod["spec"]["containers"][1]["resources"]["requests"],
            json!({"memory": "8Gi"})
        );
        assert!(pod["spec"]["containers"][2].get("resources").is_none());
        assert_eq!(
            pod["spec"]["initContainers"][0]["resources"]["requests"],
            json!({"cpu": "2"})
        );
        assert_eq!(pod["status"]["qosClass"], "Burstable");
    }

    #[test]
    fn qos_classes() {
        let spec = |resources: Value| json!({"containers": [{"name": "a", "resources": resources}]});
        assert_eq!(qos_class(&json!({"containers": [{"name": "a"}]})), "BestEffort");
        let both = json!({"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "1", "memory": "1Gi"}});
        assert_eq!(qos_class(&spec(both)), "Guaranteed");
        let less = json!({"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "250m", "memory": "1Gi"}});
        assert_eq!(qos_class(&spec(less)), "Burstable");
        assert_eq!(
            qos_class(&spec(
                json!({"limits": {"memory": "1Gi"}, "requests": {"memory": "1Gi"}})
            )),
            "Burstable"
        );
    }
}
