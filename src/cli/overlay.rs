//! Overlay flags shared by `list`, `inspect` and `drift`: host config that is not on the object.

use namzu_domain::drift::OverlayFlags;

#[derive(Debug, Clone, Default, clap::Args)]
pub struct OverlayArgs {
    /// The hosts' configured runtimeClassName overlay (when not given: inferred from each Sandbox; template-hash: none).
    #[arg(long)]
    pub runtime_class: Option<String>,
    /// The hosts' configured egress profile overlay (when not given: inferred; template-hash: none).
    #[arg(long)]
    pub egress_profile: Option<String>,
    /// The egress profile label key (default sandbox.namzu.ai/egress-profile).
    #[arg(long)]
    pub egress_profile_label_key: Option<String>,
}

impl OverlayArgs {
    pub(crate) fn flags(&self) -> OverlayFlags {
        OverlayFlags {
            runtime_class_name: self.runtime_class.clone(),
            profile: self.egress_profile.clone(),
            profile_label_key: self.egress_profile_label_key.clone(),
            // a global flag (list, inspect, resume and the TUI all read it): see Globals
            per_sandbox_label_key: None,
        }
    }
}
