//! The API resources the tool reads and writes: group, version, kind and plural of each.

use kube::api::{ApiResource, GroupVersionKind};
use namzu_domain::mirror::Kind;
use namzu_domain::projection::{self, Keep};

/// An API resource as the tool reads or writes it: its group, version, kind and plural, and
/// what of a listed object is kept. (The mirror's [`Kind`] says which of the watched kinds a
/// change is of; [`ApiKind::of`] is its resource.)
#[derive(Debug, Clone, Copy)]
pub struct ApiKind {
    pub group: &'static str,
    pub version: &'static str,
    pub kind: &'static str,
    pub plural: &'static str,
    /// What of a listed object is kept (docs/ARCHITECTURE.md, "One list").
    pub keep: Keep,
}

impl ApiKind {
    /// The resource a watched kind is read from.
    pub fn of(kind: Kind) -> &'static ApiKind {
        match kind {
            Kind::Sandboxes => &SANDBOXES,
            Kind::Pods => &PODS,
            Kind::Pvcs => &PVCS,
            Kind::Templates => &TEMPLATES,
            Kind::Policies => &CILIUM_POLICIES,
        }
    }

    pub(crate) fn api_resource(&self) -> ApiResource {
        ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(self.group, self.version, self.kind), self.plural)
    }
    /// `sandboxes.agents.x-k8s.io`, as kubectl names a resource.
    pub(crate) fn qualified(&self) -> String {
        if self.group.is_empty() {
            self.plural.to_string()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }
}

const fn kind(group: &'static str, version: &'static str, kind: &'static str, plural: &'static str) -> ApiKind {
    ApiKind {
        group,
        version,
        kind,
        plural,
        keep: Keep::All,
    }
}

/// A kind whose listed objects are pruned to what the derivation reads.
const fn projected(k: ApiKind, keep: Keep) -> ApiKind {
    ApiKind { keep, ..k }
}

pub const SANDBOXES: ApiKind = projected(
    kind("agents.x-k8s.io", "v1beta1", "Sandbox", "sandboxes"),
    projection::SANDBOX,
);
pub const TEMPLATES: ApiKind = kind(
    "extensions.agents.x-k8s.io",
    "v1beta1",
    "SandboxTemplate",
    "sandboxtemplates",
);
pub const CLAIMS: ApiKind = kind("extensions.agents.x-k8s.io", "v1beta1", "SandboxClaim", "sandboxclaims");
pub const WARM_POOLS: ApiKind = kind(
    "extensions.agents.x-k8s.io",
    "v1beta1",
    "SandboxWarmPool",
    "sandboxwarmpools",
);
pub const PODS: ApiKind = projected(kind("", "v1", "Pod", "pods"), projection::POD);
/// Sandboxes and pods as the pulse reads them (their conditions' transition times kept).
pub const PULSE_SANDBOXES: ApiKind = projected(
    kind("agents.x-k8s.io", "v1beta1", "Sandbox", "sandboxes"),
    projection::PULSE_SANDBOX,
);
pub const PULSE_PODS: ApiKind = projected(kind("", "v1", "Pod", "pods"), projection::PULSE_POD);
pub const PVCS: ApiKind = projected(
    kind("", "v1", "PersistentVolumeClaim", "persistentvolumeclaims"),
    projection::PVC,
);
pub const EVENTS: ApiKind = kind("", "v1", "Event", "events");
/// PersistentVolumes, cluster-scoped: the data a disk is bound to.
pub(crate) const PERSISTENT_VOLUMES: ApiKind = kind("", "v1", "PersistentVolume", "persistentvolumes");
/// Events as events.k8s.io/v1 serves them: the same objects as core/v1's, in another shape.
pub(crate) const EVENTS_V1: ApiKind = kind("events.k8s.io", "v1", "Event", "events");
pub const NAMESPACES: ApiKind = kind("", "v1", "Namespace", "namespaces");
/// Cilium's network policies: a per-sandbox egress grant is one (docs/interop.md §13.5).
pub const CILIUM_POLICIES: ApiKind = projected(
    kind("cilium.io", "v2", "CiliumNetworkPolicy", "ciliumnetworkpolicies"),
    projection::POLICY,
);
