//! The resources the simulated API server serves, and how a request path names one.

/// One served resource type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Resource {
    pub group: &'static str,
    pub version: &'static str,
    pub plural: &'static str,
    pub kind: &'static str,
    pub namespaced: bool,
    /// With a status subresource, writes to the main resource leave `.status` alone.
    pub has_status: bool,
    pub short_names: &'static [&'static str],
}

impl Resource {
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.to_string()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }
    /// `sandboxes.agents.x-k8s.io`, or `pods` for the core group, as messages name it.
    pub fn qualified(&self) -> String {
        if self.group.is_empty() {
            self.plural.to_string()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }
    /// Served from a CustomResourceDefinition (its group is not a Kubernetes one).
    pub fn is_custom(&self) -> bool {
        self.group.contains('.') && !self.group.ends_with(".k8s.io")
    }
    /// `Sandbox.agents.x-k8s.io`, as conflict messages name it.
    pub fn kind_qualified(&self) -> String {
        if self.group.is_empty() {
            self.kind.to_string()
        } else {
            format!("{}.{}", self.kind, self.group)
        }
    }
}

pub(crate) const SANDBOX_GROUP: &str = "agents.x-k8s.io";
pub(crate) const EXT_GROUP: &str = "extensions.agents.x-k8s.io";

const fn res(
    group: &'static str,
    version: &'static str,
    plural: &'static str,
    kind: &'static str,
    namespaced: bool,
    has_status: bool,
    short_names: &'static [&'static str],
) -> Resource {
    Resource {
        group,
        version,
        plural,
        kind,
        namespaced,
        has_status,
        short_names,
    }
}

pub const NAMESPACES: Resource = res("", "v1", "namespaces", "Namespace", false, true, &["ns"]);
pub const PODS: Resource = res("", "v1", "pods", "Pod", true, true, &["po"]);
pub const PVCS: Resource = res(
    "",
    "v1",
    "persistentvolumeclaims",
    "PersistentVolumeClaim",
    true,
    true,
    &["pvc"],
);
/// Cluster-scoped: the volumes PVCs bind to (dynamically provisioned `pvc-<claim uid>`).
pub const PVS: Resource = res("", "v1", "persistentvolumes", "PersistentVolume", false, true, &["pv"]);
pub const EVENTS: Resource = res("", "v1", "events", "Event", true, false, &["ev"]);
/// Cluster-scoped `node.k8s.io/v1` RuntimeClasses: a pod naming one gets its `overhead.podFixed`
/// as `spec.overhead` at admission (`sim::admission`).
pub(crate) const RUNTIME_CLASSES: Resource =
    res("node.k8s.io", "v1", "runtimeclasses", "RuntimeClass", false, false, &[]);
/// The same Events through `events.k8s.io/v1` (converted on the way out, see `sim::events`).
pub(crate) const EVENTS_V1: Resource = res("events.k8s.io", "v1", "events", "Event", true, false, &["ev"]);
pub const SANDBOXES: Resource = res(
    SANDBOX_GROUP,
    "v1beta1",
    "sandboxes",
    "Sandbox",
    true,
    true,
    &["sandbox"],
);
pub const TEMPLATES: Resource = res(
    EXT_GROUP,
    "v1beta1",
    "sandboxtemplates",
    "SandboxTemplate",
    true,
    false,
    &["sandboxtemplate"],
);
pub const CLAIMS: Resource = res(
    EXT_GROUP,
    "v1beta1",
    "sandboxclaims",
    "SandboxClaim",
    true,
    true,
    &["sandboxclaim"],
);
pub const WARM_POOLS: Resource = res(
    EXT_GROUP,
    "v1beta1",
    "sandboxwarmpools",
    "SandboxWarmPool",
    true,
    true,
    &["swp"],
);
/// Served only when the sim is told to pose as agent-sandbox ≤ v0.4.
pub(crate) const SANDBOXES_V1ALPHA1: Resource = res(
    SANDBOX_GROUP,
    "v1alpha1",
    "sandboxes",
    "Sandbox",
    true,
    true,
    &["sandbox"],
);

/// Cilium's network policy (`cilium.io/v2`), served unless the sim poses as a cluster without
/// Cilium: @namzu/sandbox's per-sandbox egress grants are these.
pub const CILIUM_POLICIES: Resource = res(
    "cilium.io",
    "v2",
    "ciliumnetworkpolicies",
    "CiliumNetworkPolicy",
    true,
    true,
    &["cnp", "ciliumnp"],
);

/// Where garbage collection looks for dependents of a deleted owner.
pub(crate) const CASCADE: [Resource; 4] = [SANDBOXES, PODS, PVCS, CILIUM_POLICIES];

pub(crate) const CORE: [Resource; 6] = [NAMESPACES, PODS, PVCS, PVS, EVENTS, RUNTIME_CLASSES];
pub(crate) const EXTENSIONS: [Resource; 3] = [TEMPLATES, CLAIMS, WARM_POOLS];

/// What a request path addresses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Target {
    Version,
    CoreGroups,
    Groups,
    CoreResources,
    GroupVersions(String),
    GroupResources(String, String),
    SelfSubjectAccessReview,
    /// `/openapi/v3`: the index of group-version documents.
    OpenApiIndex,
    /// `/openapi/v2`: one document for everything.
    OpenApiV2,
    /// `/openapi/v3/api/v1` or `/openapi/v3/apis/<group>/<version>`.
    OpenApi(String, String),
    /// A collection (name `None`) or one object; namespace `None` = cluster scope.
    Objects {
        group: String,
        version: String,
        plural: String,
        namespace: Option<String>,
        name: Option<String>,
        subresource: Option<String>,
    },
}

/// Parse an API path; `None` is a 404.
pub(crate) fn parse_path(path: &str) -> Option<Target> {
    let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
    let objects = |group: &str, version: &str, rest: &[&str]| -> Option<Target> {
        let (namespace, rest) = match rest {
            ["namespaces", ns, tail @ ..] if !tail.is_empty() => (Some(ns.to_string()), tail),
            _ => (None, rest),
        };
        let (plural, name, subresource) = match rest {
            [plural] => (*plural, None, None),
            [plural, name] => (*plural, Some(name.to_string()), None),
            [plural, name, sub] => (*plural, Some(name.to_string()), Some(sub.to_string())),
            _ => return None,
        };
        Some(Target::Objects {
            group: group.to_string(),
            version: version.to_string(),
            plural: plural.to_string(),
            namespace,
            name,
            subresource,
        })
    };
    match segs.as_slice() {
        ["version"] => Some(Target::Version),
        ["openapi", "v3"] => Some(Target::OpenApiIndex),
        ["openapi", "v2"] => Some(Target::OpenApiV2),
        ["openapi", "v3", "api", "v1"] => Some(Target::OpenApi(String::new(), "v1".into())),
        ["openapi", "v3", "apis", group, version] => Some(Target::OpenApi(group.to_string(), version.to_string())),
        ["api"] => Some(Target::CoreGroups),
        ["apis"] => Some(Target::Groups),
        ["api", "v1"] => Some(Target::CoreResources),
        ["api", "v1", rest @ ..] => objects("", "v1", rest),
        ["apis", group] => Some(Target::GroupVersions(group.to_string())),
        ["apis", group, version] => Some(Target::GroupResources(group.to_string(), version.to_string())),
        ["apis", "authorization.k8s.io", "v1", "selfsubjectaccessreviews"] => Some(Target::SelfSubjectAccessReview),
        ["apis", group, version, rest @ ..] => objects(group, version, rest),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths() {
        assert_eq!(parse_path("/api/v1"), Some(Target::CoreResources));
        let t = parse_path("/apis/agents.x-k8s.io/v1beta1/namespaces/ns/sandboxes/namzu-ws-a").unwrap();
        assert!(matches!(t, Target::Objects { ref plural, ref name, ref namespace, .. }
            if plural == "sandboxes" && name.as_deref() == Some("namzu-ws-a") && namespace.as_deref() == Some("ns")));
        let all = parse_path("/apis/agents.x-k8s.io/v1beta1/sandboxes").unwrap();
        assert!(matches!(
            all,
            Target::Objects {
                namespace: None,
                name: None,
                ..
            }
        ));
        let ns = parse_path("/api/v1/namespaces/agents").unwrap();
        assert!(matches!(ns, Target::Objects { ref plural, namespace: None, .. } if plural == "namespaces"));
    }
}
