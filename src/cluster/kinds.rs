//! The API resources the tool reads and writes: group, version, kind and plural of each.

use crate::domain::projection::{self, Keep};
use kube::api::{ApiResource, GroupVersionKind};

#[derive(Debug, Clone, Copy)]
pub struct Kind {
    pub group: &'static str,
    pub version: &'static str,
    pub kind: &'static str,
    pub plural: &'static str,
    /// What of a listed object is kept (docs/ARCHITECTURE.md, "One list").
    pub keep: Keep,
}

impl Kind {
    pub fn api_resource(&self) -> ApiResource {
        ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(self.group, self.version, self.kind), self.plural)
    }
    /// `sandboxes.agents.x-k8s.io`, as kubectl names a resource.
    pub fn qualified(&self) -> String {
        if self.group.is_empty() {
            self.plural.to_string()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }
}

const fn kind(group: &'static str, version: &'static str, kind: &'static str, plural: &'static str) -> Kind {
    Kind {
        group,
        version,
        kind,
        plural,
        keep: Keep::All,
    }
}

/// A kind whose listed objects are pruned to what the derivation reads.
const fn projected(k: Kind, keep: Keep) -> Kind {
    Kind { keep, ..k }
}

pub const SANDBOXES: Kind = projected(
    kind("agents.x-k8s.io", "v1beta1", "Sandbox", "sandboxes"),
    projection::SANDBOX,
);
pub const TEMPLATES: Kind = kind(
    "extensions.agents.x-k8s.io",
    "v1beta1",
    "SandboxTemplate",
    "sandboxtemplates",
);
pub const CLAIMS: Kind = kind("extensions.agents.x-k8s.io", "v1beta1", "SandboxClaim", "sandboxclaims");
pub const WARM_POOLS: Kind = kind(
    "extensions.agents.x-k8s.io",
    "v1beta1",
    "SandboxWarmPool",
    "sandboxwarmpools",
);
pub const PODS: Kind = projected(kind("", "v1", "Pod", "pods"), projection::POD);
pub const PVCS: Kind = projected(
    kind("", "v1", "PersistentVolumeClaim", "persistentvolumeclaims"),
    projection::PVC,
);
pub const EVENTS: Kind = kind("", "v1", "Event", "events");
/// Events as events.k8s.io/v1 serves them: the same objects as core/v1's, in another shape.
pub const EVENTS_V1: Kind = kind("events.k8s.io", "v1", "Event", "events");
pub const NAMESPACES: Kind = kind("", "v1", "Namespace", "namespaces");
/// Cilium's network policies: a per-sandbox egress grant is one (docs/interop.md §13.5).
pub const CILIUM_POLICIES: Kind = projected(
    kind("cilium.io", "v2", "CiliumNetworkPolicy", "ciliumnetworkpolicies"),
    projection::POLICY,
);
