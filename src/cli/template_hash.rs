//! `kubectl namzu template-hash -f FILE`: the `sha256:…` a workspace created from a template carries.

use super::exit::Failure;
use super::input::read_object;
use namzu_domain::drift::{Overlays, template_hash};
use namzu_domain::object::{at, str_at};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The SandboxTemplate, JSON or YAML (`-` for stdin).
    #[arg(short = 'f', long = "filename")]
    pub file: String,
    /// Template name for the template label (default: the file's metadata.name).
    #[arg(long)]
    pub template_name: Option<String>,
    #[command(flatten)]
    pub overlays: super::overlay::OverlayArgs,
}

pub(crate) fn run(args: Args) -> Result<(), Failure> {
    let template = read_object(&args.file)?;
    let file = &args.file;
    match str_at(&template, &["kind"]) {
        Some("SandboxTemplate") => {}
        other => {
            return Err(Failure::error(format!(
                "{file} is not a SandboxTemplate (kind: {})",
                other.unwrap_or("<none>")
            )));
        }
    }
    if !at(&template, &["spec", "podTemplate", "spec"]).is_some_and(|s| s.is_object()) {
        return Err(Failure::error(format!(
            "{file}: the SandboxTemplate has no spec.podTemplate.spec"
        )));
    }
    let template_name = args
        .template_name
        .or_else(|| str_at(&template, &["metadata", "name"]).map(str::to_string))
        .filter(|n| !n.is_empty())
        .ok_or_else(|| {
            Failure::error(format!(
                "{file}: the SandboxTemplate has no metadata.name; pass --template-name"
            ))
        })?;
    let overlays = Overlays {
        template_name,
        runtime_class_name: args.overlays.runtime_class,
        profile: args.overlays.egress_profile,
        profile_label_key: args.overlays.egress_profile_label_key,
        per_sandbox_label: None,
    };
    let hash = template_hash(&template, &overlays).expect("podTemplate checked above");
    namzu_engine::outln!("{hash}");
    Ok(())
}
