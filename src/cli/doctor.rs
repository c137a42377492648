//! `kubectl namzu doctor`: can this tool work here, and if not, what to do about it.

use super::exit::Failure;
use super::globals::Globals;
use super::output;
use namzu_domain::naming::{is_workspace, template_label};
use namzu_domain::rbac::VERBS;
use namzu_engine::cluster::access;
use namzu_engine::cluster::connect::Connection;
use namzu_engine::cluster::error::ClusterError;
use namzu_engine::cluster::resources::{self, SANDBOXES, TEMPLATES};
use namzu_engine::ops::fleet::Fleet;
use std::collections::BTreeSet;

fn qualified(group: &str, resource: &str) -> String {
    if group.is_empty() {
        resource.to_string()
    } else {
        format!("{resource}.{group}")
    }
}

pub(crate) async fn run(globals: &Globals) -> Result<(), Failure> {
    // a kubeconfig that cannot be read is the first thing diagnosed, not the way doctor fails
    if let Err(e) = namzu_engine::cluster::connect::load_kubeconfig(&globals.connect_options(false)) {
        namzu_engine::outln!("✗ kubeconfig    {}", output::printable(&e.to_string()));
        namzu_engine::outln!(
            "  fix: point KUBECONFIG (or --kubeconfig) at a readable kubeconfig (`kubectl config view` shows what kubectl reads); `kubectl namzu demo` needs none"
        );
        return Err(Failure::error("no usable kubeconfig: nothing else can be checked"));
    }
    let fleet = Fleet::open(crate::cli::config::fleet_request(globals, true)?).await?;
    let several_contexts = fleet.several_contexts;
    let reports = fleet
        .each::<_, Failure, _>(|member| async move { Ok(check(member.conn).await) })
        .await?;
    let mut problems = 0;
    for (i, (member, report)) in reports.iter().enumerate() {
        if several_contexts {
            if i > 0 {
                namzu_engine::outln!();
            }
            namzu_engine::outln!("Context {}:", output::printable(&member.conn.context));
        }
        namzu_engine::out!("{}", report.text);
        match &report.end {
            Ok(()) => {}
            Err(e) if !several_contexts => return Err(Failure::error(e.clone())),
            Err(e) => {
                namzu_engine::errln!(
                    "context \"{}\": {}",
                    output::printable(&member.conn.context),
                    output::printable(e)
                );
                problems += 1;
            }
        }
    }
    // a context that could not be opened has a problem too (its warning said which)
    let unopened = fleet.failed().len();
    if problems > 0 {
        return Err(Failure::error(format!(
            "{} of {} contexts have problems",
            problems + unopened,
            reports.len() + unopened
        )));
    }
    fleet.finish()
}

/// One context's checks: what they printed, and the one-line verdict when something is wrong.
struct Checked {
    text: String,
    end: Result<(), String>,
}

/// `writeln!` into the report (a `String` cannot fail to take it).
macro_rules! say {
    ($out:expr) => { $out.push('\n') };
    ($out:expr, $($arg:tt)*) => {{ $out.push_str(&format!($($arg)*)); $out.push('\n'); }};
}

async fn check(conn: Connection) -> Checked {
    let mut out = String::new();
    let end = checks(&conn, &mut out).await;
    Checked { text: out, end }
}

/// The server answers /version as a Kubernetes API server does; else nothing else is checked.
async fn check_server(conn: &Connection, out: &mut String) -> Result<(), String> {
    match conn.version().await {
        // `{}` parses (every field defaults): an answer without a version is not one
        Ok(v) if v.git_version.trim().is_empty() => {
            say!(
                out,
                "✗ server        {} answered /version without a gitVersion",
                conn.server
            );
            return Err(
                "the API server did not answer /version as a Kubernetes API server does: nothing else can be checked"
                    .into(),
            );
        }
        Ok(v) => say!(
            out,
            "✓ server        {} ({}), context {}",
            conn.server,
            output::printable(&v.git_version),
            conn.context
        ),
        Err(e) => {
            say!(out, "✗ server        {}", output::printable(&e.to_string()));
            let what = match e {
                ClusterError::Unreachable { .. } | ClusterError::Tls { .. } | ClusterError::Timeout { .. } => {
                    "the API server cannot be reached"
                }
                ClusterError::Unauthorized { .. } | ClusterError::Auth(_) | ClusterError::Forbidden { .. } => {
                    "the API server refused these credentials"
                }
                _ => "the API server did not answer /version as a Kubernetes API server does",
            };
            return Err(format!("{what}: nothing else can be checked"));
        }
    }
    Ok(())
}

/// What the user may do in the namespace, per verb of this tool (optional ones said as such).
async fn check_permissions(conn: &Connection, ns: &str, out: &mut String, todo: &mut Vec<String>) {
    say!(out, "Permissions in namespace {ns}:");
    for (verb, needs) in VERBS {
        let (mut missing, mut unknown) = (Vec::new(), Vec::new());
        for n in needs {
            match access::can(conn, n.verb, n.group, n.resource, Some(ns)).await {
                Ok(true) => {}
                Ok(false) => missing.push(format!("{} {}", n.verb, qualified(n.group, n.resource))),
                Err(e) => unknown.push(format!("{} {} ({e})", n.verb, qualified(n.group, n.resource))),
            }
        }
        // without watch the TUI and `list -w` still work, re-listing instead; without pods/log or
        // pods/exec or pods/portforward everything but `logs`/`exec`/`port-forward` (and the TUI's l,
        // s) does
        let instead = match verb {
            "watch" => Some("the TUI and `list -w` re-list every 2s instead"),
            "logs" => Some("`logs` and the TUI's l are unavailable (the server's refusal says so)"),
            "exec" => Some("`exec` and the TUI's s are unavailable (the server's refusal says so)"),
            "port-forward" => Some("`port-forward` is unavailable (the server's refusal says so)"),
            _ => None,
        };
        let optional = instead.is_some();
        if missing.is_empty() && unknown.is_empty() {
            say!(out, "  ✓ {verb}");
        } else if !missing.is_empty() && optional {
            say!(
                out,
                "  ~ {verb} (optional): you may not {} in namespace {ns}; {}",
                missing.join(", "),
                instead.unwrap_or_default()
            );
            continue;
        } else if !missing.is_empty() {
            say!(out, "  ✗ {verb}: you may not {} in namespace {ns}", missing.join(", "));
        }
        // not being able to ask is not being refused: say which it is
        if !unknown.is_empty() {
            say!(
                out,
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
}

async fn checks(conn: &Connection, out: &mut String) -> Result<(), String> {
    let mut todo: Vec<String> = Vec::new();
    let conn = conn.clone();
    let ns = conn.namespace.clone();
    check_server(&conn, out).await?;
    let served = |e: ClusterError| e.to_string();
    let (core, ext) = (
        conn.served_versions("agents.x-k8s.io").await.map_err(served)?,
        conn.served_versions("extensions.agents.x-k8s.io")
            .await
            .map_err(served)?,
    );
    if core.iter().any(|v| v == "v1beta1") {
        say!(out, "✓ agent-sandbox agents.x-k8s.io {}", core.join(", "));
    } else if core.is_empty() {
        say!(out, "✗ agent-sandbox agents.x-k8s.io is not served");
        todo.push("install agent-sandbox v0.5.0 or later (the Sandbox CRD, agents.x-k8s.io/v1beta1)".into());
    } else {
        say!(
            out,
            "✗ agent-sandbox agents.x-k8s.io {} (v1beta1 needed)",
            core.join(", ")
        );
        todo.push("upgrade agent-sandbox to v0.5.0 or later (v1beta1)".into());
    }
    if ext.iter().any(|v| v == "v1beta1") {
        say!(out, "✓ extensions    extensions.agents.x-k8s.io {}", ext.join(", "));
    } else {
        say!(
            out,
            "! extensions    extensions.agents.x-k8s.io v1beta1 is not served: drift and capacity cannot read templates, pools or claims"
        );
    }
    check_permissions(&conn, &ns, out, &mut todo).await;
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
            say!(
                out,
                "  {} workspaces in namespace {ns}; they use {} templates, {found} of which exist and can be read",
                workspaces.len(),
                names.len()
            );
        }
        Err(e) => say!(out, "  workspaces in namespace {ns}: ? ({e})"),
    }
    if todo.is_empty() {
        say!(out, "Everything kubectl-namzu needs is here.");
        return Ok(());
    }
    say!(out, "What to do:");
    for t in &todo {
        say!(out, "  - {t}");
    }
    Err(format!("{} problem(s) found", todo.len()))
}
