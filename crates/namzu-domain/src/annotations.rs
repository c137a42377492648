//! Annotation and label keys owned by @namzu/sandbox (docs/interop.md §2).

/// Pod-template label naming the SandboxTemplate a workspace pod came from.
pub const TEMPLATE_LABEL: &str = "sandbox.namzu.ai/template";
/// When the backend last changed `spec.operatingMode`, in JS `toISOString()` form.
pub const CHANGED_AT: &str = "sandbox.namzu.ai/operating-mode-changed-at";
/// The holder-epoch fence, a decimal string.
pub(crate) const HOLDER_EPOCH: &str = "sandbox.namzu.ai/holder-epoch";
/// `sha256:<hex>` of the pod template the workspace was created or refreshed from.
pub const POD_TEMPLATE_HASH: &str = "sandbox.namzu.ai/pod-template-hash";
/// Default label key of the egress profile overlay (the host can change it).
pub(crate) const EGRESS_PROFILE_LABEL: &str = "sandbox.namzu.ai/egress-profile";
/// Default pod-template label key of per-sandbox egress (host configuration, 28.0.0): its value
/// is the Sandbox's own name, and a per-sandbox CiliumNetworkPolicy selects on it.
pub const PER_SANDBOX_LABEL: &str = "sandbox.namzu.ai/per-sandbox-egress";
/// Every key under this prefix belongs to @namzu/sandbox: shown and preserved, never an error.
pub(crate) const NAMZU_PREFIX: &str = "sandbox.namzu.ai/";
/// The annotation keys the tool reads itself (docs/interop.md §2); any other key under
/// [`NAMZU_PREFIX`] is the library's too (28.0.0's allocation annotations, say) and is shown as stored.
pub const KNOWN_ANNOTATIONS: [&str; 3] = [HOLDER_EPOCH, CHANGED_AT, POD_TEMPLATE_HASH];
/// A per-sandbox CiliumNetworkPolicy is `namzu-sbx-<owner uid>`.
pub(crate) const PER_SANDBOX_POLICY_PREFIX: &str = "namzu-sbx-";
/// Left by writes through agent-sandbox's deprecated v1alpha1; hidden from views.
pub const V1ALPHA1_STATE: &str = "api.agents.x-k8s.io/v1alpha1-sandbox-state";

/// agent-sandbox's controller labels every pod and PVC it makes for a Sandbox with this key
/// (the value hashes the Sandbox's name); `status.selector` selects on it.
pub const SANDBOX_NAME_HASH: &str = "agents.x-k8s.io/sandbox-name-hash";
/// The uid of the SandboxClaim that owns a Sandbox, on it and on what is made for it.
pub(crate) const CLAIM_UID: &str = "agents.x-k8s.io/claim-uid";
/// How agent-sandbox v1.0.3 started a Sandbox: `warm` (adopted from a warm pool) or `cold`.
pub const LAUNCH_TYPE: &str = "agents.x-k8s.io/launch-type";
/// On an unclaimed warm-pool member only: the pool's name hash (removed on adoption).
pub const WARM_POOL_SANDBOX: &str = "agents.x-k8s.io/warm-pool-sandbox";
/// The hash agent-sandbox's pool controller stamps on each member of the pod template it was
/// made from (the name is deprecated for `sandbox-template-hash`; v1.0.3 still writes it).
pub(crate) const POOL_TEMPLATE_HASH: &str = "agents.x-k8s.io/sandbox-pod-template-hash";
/// The legacy annotation naming a Sandbox's pod. agent-sandbox v1.0 no longer writes it: the pod
/// is the one named after the Sandbox, and an annotation naming another pod is only flagged.
pub const POD_NAME_ANNOTATION: &str = "agents.x-k8s.io/pod-name";
