//! `kubectl namzu rbac [--read-only]`: the minimal Role (and a RoleBinding to fill in) that grants
//! exactly what the tool's verbs need. Also shipped as assets/rbac/*.yaml.

use super::exit::Failure;
use super::globals::Globals;
use namzu_domain::rbac::rules;
use serde_json::{Value, json};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Only what the read verbs need: no patch, no delete, and nothing that runs a command in a
    /// pod or connects into one (pods/exec, attach, portforward, proxy — with any verb).
    #[arg(long)]
    pub read_only: bool,
}

/// The Role and RoleBinding as a YAML stream.
pub(crate) fn manifest(namespace: &str, read_only: bool) -> String {
    let name = if read_only {
        "kubectl-namzu-read-only"
    } else {
        "kubectl-namzu"
    };
    let rules: Vec<Value> = rules(read_only)
        .into_iter()
        .map(|(g, r, verbs)| json!({"apiGroups": [g], "resources": [r], "verbs": verbs}))
        .collect();
    let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": {"name": name, "namespace": namespace}, "rules": rules});
    let binding = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": name, "namespace": namespace},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "REPLACE-WITH-YOUR-USER"}]});
    let what = if read_only {
        "the read verbs (list, inspect, drift, capacity) need"
    } else {
        "every verb needs"
    };
    format!(
        "# kubectl-namzu: the least RBAC {what} in namespace {namespace}.\n# For -A, make it a ClusterRole and ClusterRoleBinding.\n{}---\n{}",
        serde_saphyr::to_string(&role).expect("YAML"),
        serde_saphyr::to_string(&binding).expect("YAML")
    )
}

pub(crate) fn run(globals: &Globals, args: Args) -> Result<(), Failure> {
    let namespace = globals.namespace.clone().unwrap_or_else(|| "default".into());
    namzu_engine::out!("{}", manifest(&namespace, args.read_only));
    Ok(())
}
