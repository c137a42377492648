//! Annotation and label keys owned by @namzu/sandbox (docs/interop.md §2).

/// Pod-template label naming the SandboxTemplate a workspace pod came from.
pub const TEMPLATE_LABEL: &str = "sandbox.namzu.ai/template";
/// When the backend last changed `spec.operatingMode`, in JS `toISOString()` form.
pub const CHANGED_AT: &str = "sandbox.namzu.ai/operating-mode-changed-at";
/// The holder-epoch fence, a decimal string.
pub const HOLDER_EPOCH: &str = "sandbox.namzu.ai/holder-epoch";
/// `sha256:<hex>` of the pod template the workspace was created or refreshed from.
pub const POD_TEMPLATE_HASH: &str = "sandbox.namzu.ai/pod-template-hash";
/// Default label key of the egress profile overlay (the host can change it).
pub const EGRESS_PROFILE_LABEL: &str = "sandbox.namzu.ai/egress-profile";
/// Left by writes through agent-sandbox's deprecated v1alpha1; hidden from views.
pub const V1ALPHA1_STATE: &str = "api.agents.x-k8s.io/v1alpha1-sandbox-state";

/// agent-sandbox's controller labels every pod and PVC it makes for a Sandbox with this key
/// (the value hashes the Sandbox's name); `status.selector` selects on it.
pub const SANDBOX_NAME_HASH: &str = "agents.x-k8s.io/sandbox-name-hash";
/// The legacy annotation naming a Sandbox's pod, where it is not named after the Sandbox.
pub const POD_NAME_ANNOTATION: &str = "agents.x-k8s.io/pod-name";
