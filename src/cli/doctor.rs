//! `kubectl namzu doctor`: can this tool work here, and if not, what to do about it.

use super::exit::Failure;
use super::globals::Globals;
use super::output;
use crate::cluster::access;
use crate::cluster::connect::Connection;
use crate::cluster::error::ClusterError;
use crate::cluster::resources::{self, SANDBOXES, TEMPLATES};
use crate::domain::naming::{is_workspace, template_label};
use crate::domain::rbac::VERBS;
use std::collections::BTreeSet;

fn qualified(group: &str, resource: &str) -> String {
    if group.is_empty() {
        resource.to_string()
    } else {
        format!("{resource}.{group}")
    }
}

pub async fn run(globals: &Globals) -> Result<(), Failure> {
    let mut todo: Vec<String> = Vec::new();
    let conn = Connection::open(&globals.connect_options(true)).await?;
    let ns = conn.namespace.clone();
    match conn.version().await {
        Ok(v) => crate::outln!(
            "✓ server        {} ({}), context {}",
            conn.server,
            output::printable(&v.git_version),
            conn.context
        ),
        Err(e) => {
            crate::outln!("✗ server        {}", output::printable(&e.to_string()));
            let what = match e {
                ClusterError::Unreachable { .. } | ClusterError::Tls { .. } | ClusterError::Timeout { .. } => {
                    "the API server cannot be reached"
                }
                ClusterError::Unauthorized { .. } | ClusterError::Auth(_) | ClusterError::Forbidden { .. } => {
                    "the API server refused these credentials"
                }
                _ => "the API server did not answer /version as a Kubernetes API server does",
            };
            return Err(Failure::error(format!("{what}: nothing else can be checked")));
        }
    }
    let (core, ext) = (
        conn.served_versions("agents.x-k8s.io").await?,
        conn.served_versions("extensions.agents.x-k8s.io").await?,
    );
    if core.iter().any(|v| v == "v1beta1") {
        crate::outln!("✓ agent-sandbox agents.x-k8s.io {}", core.join(", "));
    } else if core.is_empty() {
        crate::outln!("✗ agent-sandbox agents.x-k8s.io is not served");
        todo.push("install agent-sandbox v0.5.0 or later (the Sandbox CRD, agents.x-k8s.io/v1beta1)".into());
    } else {
        crate::outln!("✗ agent-sandbox agents.x-k8s.io {} (v1beta1 needed)", core.join(", "));
        todo.push("upgrade agent-sandbox to v0.5.0 or later (v1beta1)".into());
    }
    if ext.iter().any(|v| v == "v1beta1") {
        crate::outln!("✓ extensions    extensions.agents.x-k8s.io {}", ext.join(", "));
    } else {
        crate::outln!(
            "! extensions    extensions.agents.x-k8s.io v1beta1 is not served: drift and capacity cannot read templates, pools or claims"
        );
    }
    crate::outln!("Permissions in namespace {ns}:");
    for (verb, needs) in VERBS {
        let (mut missing, mut unknown) = (Vec::new(), Vec::new());
        for n in needs {
            match access::can(&conn, n.verb, n.group, n.resource, Some(&ns)).await {
                Ok(true) => {}
                Ok(false) => missing.push(format!("{} {}", n.verb, qualified(n.group, n.resource))),
                Err(e) => unknown.push(format!("{} {} ({e})", n.verb, qualified(n.group, n.resource))),
            }
        }
        // without watch the TUI and `list -w` still work, re-listing instead
        let optional = verb == "watch";
        if missing.is_empty() && unknown.is_empty() {
            crate::outln!("  ✓ {verb}");
        } else if !missing.is_empty() && optional {
            crate::outln!(
                "  ~ {verb} (optional): you may not {} in namespace {ns}; the TUI and `list -w` re-list every 2s instead",
                missing.join(", ")
            );
            continue;
        } else if !missing.is_empty() {
            crate::outln!("  ✗ {verb}: you may not {} in namespace {ns}", missing.join(", "));
        }
        // not being able to ask is not being refused: say which it is
        if !unknown.is_empty() {
            crate::outln!(
                "  ? {verb}: could not ask whether you may {}",
                output::printable(&unknown.join(", "))
            );
        }
        if !missing.is_empty() && todo.iter().all(|t| !t.contains("kubectl namzu rbac")) {
            todo.push(format!(
                "ask for the Role printed by `kubectl namzu rbac -n {ns}` (or `--read-only`)"
            ));
        }
    }
    // templates are counted by GET, as the inventory reads them (hosts often may not list them)
    match resources::list(&conn, &SANDBOXES, Some(&ns), None).await {
        Ok(all) => {
            let workspaces: Vec<_> = all.iter().filter(|s| is_workspace(s)).collect();
            let names: BTreeSet<&str> = workspaces.iter().filter_map(|s| template_label(s)).collect();
            let mut found = 0;
            for name in &names {
                if let Ok(Some(_)) = resources::get(&conn, &TEMPLATES, &ns, name).await {
                    found += 1;
                }
            }
            crate::outln!(
                "  {} workspaces in namespace {ns}; they use {} templates, {found} of which exist and can be read",
                workspaces.len(),
                names.len()
            );
        }
        Err(e) => crate::outln!("  workspaces in namespace {ns}: ? ({e})"),
    }
    if todo.is_empty() {
        crate::outln!("Everything kubectl-namzu needs is here.");
        return Ok(());
    }
    crate::outln!("What to do:");
    for t in &todo {
        crate::outln!("  - {t}");
    }
    Err(Failure::error(format!("{} problem(s) found", todo.len())))
}
