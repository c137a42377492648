//! `kubectl namzu exec ID -- CMD…`: a command in the workspace's own pod. The pod and container
//! are found and checked as `logs` finds them (by identity; a Suspended workspace is refused with
//! the `resume` to run first); then `kubectl exec` runs with the same kubeconfig, context and
//! namespace — the familiar path k9s takes, with kubectl's own streams, TTY and exit codes.
//! A command in a pod is a write for the context's safety rules: read-only refuses it and
//! `confirm: typed` asks for the id (`ops::write::rules::exec_gate`). A pod being deleted, or one
//! of a Suspended workspace, runs nothing (`domain::triage::command_target`); the pod is read
//! again once kubectl has started (a replaced one stops it) and when it ends (said).

use super::exit::{self, Failure};
use super::globals::Globals;
use super::input;
use super::logs::target;
use namzu_domain::naming::WorkspaceId;
use namzu_domain::triage::{Purpose, kubectl_exec_args};
use namzu_engine::cluster::connect::Connection;
use namzu_engine::console::printable;
use namzu_engine::ops::fleet::{Fleet, Member};
use namzu_engine::ops::write::rules::{self, ExecGate};
use std::io::IsTerminal;

#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  # a shell in the workspace's pod
  kubectl namzu exec alpha -it -- sh

  # one command, its output on stdout, its exit code the command's
  kubectl namzu exec alpha -- ls /workspace

  # in another container of the pod
  kubectl namzu exec alpha -c sidecar -- env")]
pub struct Args {
    /// The workspace id (the Sandbox is namzu-ws-<id>).
    pub id: WorkspaceId,
    /// The container (default: the pod's kubectl.kubernetes.io/default-container, else its first).
    #[arg(short = 'c', long)]
    pub container: Option<String>,
    /// Pass stdin to the command.
    #[arg(short = 'i', long)]
    pub stdin: bool,
    /// Stdin is a TTY.
    #[arg(short = 't', long)]
    pub tty: bool,
    /// Run without asking for the workspace id typed where the context's rules ask
    /// (`confirm: typed`): a command in a pod is a write for the safety rules.
    #[arg(short = 'y', long)]
    pub yes: bool,
    /// The command and its arguments, after `--`.
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

pub(crate) async fn run(globals: &Globals, args: Args) -> Result<(), Failure> {
    globals.one_namespace_for_names()?;
    globals.one_context("exec")?;
    if args.command.is_empty() {
        return Err(Failure::usage(format!(
            "give the command after --, e.g. kubectl namzu exec {} -it -- sh",
            args.id
        )));
    }
    // a command in a pod is a write for the context's safety rules (`ops::write::rules`)
    let question = format!("Run {} in workspace {}", printable(&args.command.join(" ")), args.id);
    let asked = Asked {
        id: &args.id,
        yes: args.yes,
        question: &question,
        verb: "run it",
        refused: "not confirmed: nothing run",
    };
    let conn = gated(globals, rules::exec_gate, &asked).await?;
    let (pod, container) = target(&conn, &args.id, args.container.as_deref(), Purpose::Exec).await?;
    let argv = kubectl_exec_args(
        &conn.kubectl_flags,
        &conn.namespace,
        namzu_domain::object::name(&pod),
        &container,
        args.stdin,
        args.tty,
        &args.command,
    );
    // kubectl execs by name: the pod checked above may be replaced before its connection opens.
    // It is read again once kubectl has started — a pod replaced by then stops kubectl — and
    // again when it ends, to say so if the command may have run in another pod.
    let (pod_name, checked) = (
        namzu_domain::object::name(&pod).to_string(),
        namzu_domain::object::uid(&pod).unwrap_or_default().to_string(),
    );
    let mut child = spawn_kubectl(&argv)?;
    if let Some(now) = replaced(&conn, &pod_name, &checked).await {
        let _ = child.kill();
        let _ = child.wait();
        return Err(Failure::error(format!(
            "pod {pod_name} was replaced after it was checked (uid {checked} is now {now}): kubectl exec was stopped; run it again"
        )));
    }
    let status = tokio::task::spawn_blocking(move || child.wait())
        .await
        .map_err(|e| Failure::error(e.to_string()))?
        .map_err(|e| Failure::error(format!("cannot wait for kubectl: {e}")))?;
    if let Some(now) = replaced(&conn, &pod_name, &checked).await {
        namzu_engine::errln!(
            "warning: pod {pod_name} was replaced while kubectl exec ran (uid {checked} is now {now}): the command may have run in the new pod"
        );
    }
    match status.code().unwrap_or(exit::ERROR) {
        0 => Ok(()),
        // the command's own exit code, as kubectl exec passes it on: kubectl said why already
        n => Err(Failure::quiet(n)),
    }
}

/// The uid now standing under `pod`'s name when it is not `checked` (`gone` when none is);
/// `None` while it is the pod checked, or when it cannot be read (kubectl says its own error).
async fn replaced(conn: &Connection, pod: &str, checked: &str) -> Option<String> {
    match namzu_engine::cluster::resources::get(conn, &namzu_engine::cluster::kinds::PODS, &conn.namespace, pod).await {
        Ok(Some(now)) => {
            let uid = namzu_domain::object::uid(&now).unwrap_or_default();
            (uid != checked).then(|| uid.to_string())
        }
        Ok(None) => Some("gone".into()),
        Err(_) => None,
    }
}

/// Start kubectl with `argv` on this terminal (it owns it until it ends).
fn spawn_kubectl(argv: &[String]) -> Result<std::process::Child, Failure> {
    std::process::Command::new("kubectl").args(argv).spawn().map_err(|e| {
        Failure::error(match e.kind() {
            std::io::ErrorKind::NotFound => {
                "kubectl is not on PATH: exec runs `kubectl exec` (install kubectl, or run it yourself)".to_string()
            }
            _ => format!("cannot run kubectl: {e}"),
        })
    })
}

/// What a command into a pod asks before it runs: its words, and what a refusal says.
pub(crate) struct Asked<'a> {
    pub(crate) id: &'a WorkspaceId,
    /// `--yes`: the typed id answered up front.
    pub(crate) yes: bool,
    /// What it does, in words (`Run ls in workspace alpha`).
    pub(crate) question: &'a str,
    /// The prompt's verb (`run it`, `forward`).
    pub(crate) verb: &'a str,
    /// What a wrong id says.
    pub(crate) refused: &'a str,
}

/// The one context's connection once its rules let a command into a pod go (`exec`,
/// `port-forward`): read-only refuses, `confirm: typed` asks for the id (or `--yes`), one
/// that cannot ask is refused.
pub(crate) async fn gated(
    globals: &Globals,
    gate: fn(&namzu_domain::safety::ContextRules, &str, bool, bool) -> ExecGate,
    asked: &Asked<'_>,
) -> Result<namzu_engine::cluster::connect::Connection, Failure> {
    let fleet = Fleet::open(crate::cli::config::fleet_request(globals, true)?).await?;
    let read_only_flag = fleet.read_only_flag();
    let Some(Member { conn, rules }) = fleet.members.into_iter().next() else {
        return Err(Failure::error("no context was opened".to_string()));
    };
    match gate(&rules, &conn.context, read_only_flag, asked.yes) {
        ExecGate::Go => {}
        ExecGate::Refused(why) => return Err(Failure::error(why)),
        ExecGate::AskTyped if !std::io::stdin().is_terminal() => {
            return Err(Failure::usage(format!(
                "context \"{}\" asks for typed ids (confirm: typed): pass --yes (stdin is not a terminal, so it cannot ask)",
                printable(&conn.context)
            )));
        }
        ExecGate::AskTyped => {
            let question = format!(
                "{} of context \"{}\" (its rules ask for the id typed)?",
                asked.question,
                printable(&conn.context)
            );
            let prompt = format!("Type {} to {}: ", asked.id, asked.verb);
            let typed = input::typed_answer(&question, &prompt, asked.id.as_str())
                .await
                .map_err(Failure::error)?;
            if !typed {
                return Err(Failure::error(asked.refused.to_string()));
            }
        }
    }
    Ok(conn)
}
