//! Command-line surface: clap definitions and one file per verb. Verbs render and dispatch only.

pub(crate) mod at;
pub(crate) mod audit;
pub(crate) mod capacity;
pub(crate) mod complete;
pub(crate) mod config;
#[cfg_attr(not(feature = "demo"), path = "no_demo.rs")]
pub(crate) mod demo;
pub(crate) mod doctor;
pub(crate) mod drift;
pub mod examples;
pub mod exec;
pub mod exit;
pub(crate) mod globals;
pub(crate) mod history;
pub(crate) mod input;
pub(crate) mod inspect;
pub(crate) mod leaks;
pub(crate) mod list;
pub(crate) mod logs;
mod logs_many;
pub mod output;
pub(crate) mod overlay;
pub(crate) mod port_forward;
pub(crate) mod pulse;
pub(crate) mod rbac;
pub(crate) mod reconcile;
pub(crate) mod record;
pub(crate) mod restore;
pub(crate) mod schema;
pub(crate) mod selection;
pub(crate) mod template_hash;
pub(crate) mod terminal;
pub(crate) mod write;

use clap::{CommandFactory, Parser, Subcommand};

/// Inventory and fenced suspend/resume/delete of @namzu/sandbox workspaces on agent-sandbox.
#[derive(Debug, Parser)]
#[command(name = "kubectl-namzu", version, about, long_about = None, after_help = exit::HELP)]
pub struct Cli {
    #[command(flatten)]
    pub globals: globals::Globals,
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// List workspaces with state, drift, holder epoch and diagnosis.
    #[command(visible_aliases = ["ls", "get"])]
    List(list::Args),
    /// Everything known about one workspace, like kubectl describe.
    #[command(visible_alias = "describe", after_help = examples::INSPECT)]
    Inspect(inspect::Args),
    /// Field-level template drift of one workspace, or of every drifted one.
    #[command(after_help = examples::DRIFT)]
    Drift(drift::Args),
    /// The log of a workspace's own pod (kubectl logs' flags; -f follows across restarts).
    Logs(logs::Args),
    /// Run a command (or a shell) in a workspace's own pod, through kubectl exec.
    Exec(exec::Args),
    /// Forward a local port to a workspace's own pod, following it across restarts, pod
    /// replacement and suspend/resume.
    PortForward(port_forward::Args),
    /// One timeline of a workspace: events, mode changes, pod transitions, this machine's writes,
    /// and where its start-up time went.
    History(history::Args),
    /// Warm-pool capacity, pending pods and workspace counts by state.
    #[command(after_help = examples::CAPACITY)]
    Capacity(capacity::Args),
    /// How fast workspaces start: claims per minute, warm-hit %, claim and resume → Ready
    /// p50/p95/p99, pool depth against demand, and the cause of every start above p95.
    Pulse(pulse::Args),
    /// What the fleet left behind (orphaned disks and policies, stuck and expired Sandboxes, …);
    /// --delete deletes the disks and policies, fenced by uid and resourceVersion.
    Leaks(leaks::Args),
    /// Undo `leaks --delete`: re-create a disk (on its retained volume) or a policy from its tombstone.
    Restore(restore::Args),
    /// Is a retained workspace still there? live, suspended, absent (exit 4) or replaced (exit 6).
    #[command(after_help = examples::RECONCILE)]
    Reconcile(reconcile::Args),
    /// Suspend workspaces (pod deleted, disk kept) under the holder-epoch fence.
    #[command(after_help = examples::SUSPEND)]
    Suspend(write::ModeArgs),
    /// Resume suspended workspaces under the holder-epoch fence (--refresh-template: onto the current template).
    #[command(after_help = examples::RESUME)]
    Resume(write::ResumeArgs),
    /// Delete workspaces and their disks, with a resourceVersion precondition.
    #[command(after_help = examples::DELETE)]
    Delete(write::DeleteArgs),
    /// The flight recorder: record what the watches see until stopped; `--at TIME` reads it back.
    Record(record::Args),
    /// The per-context safety rules (`config view`: the rules in force for each context).
    #[command(after_help = examples::CONFIG)]
    Config(config::Args),
    /// The writes this machine sent (the audit log); --context picks those contexts' writes.
    #[command(after_help = examples::AUDIT)]
    Audit(audit::Args),
    /// Print the pod-template hash a workspace created from a SandboxTemplate would carry.
    #[command(after_help = examples::TEMPLATE_HASH)]
    TemplateHash(template_hash::Args),
    /// Try everything against a built-in simulated cluster (no cluster needed).
    #[command(after_help = examples::DEMO)]
    Demo(demo::Args),
    /// Check the cluster, agent-sandbox and your permissions for every verb.
    #[command(after_help = examples::DOCTOR)]
    Doctor,
    /// Print the minimal Role (and a RoleBinding to fill in) the tool needs.
    #[command(after_help = examples::RBAC)]
    Rbac(rbac::Args),
    /// The full-screen inventory (also what `kubectl namzu` alone opens on a terminal).
    #[command(after_help = examples::TUI)]
    Tui(TuiArgs),
    /// Print a shell completion script (bash, zsh, fish, powershell).
    #[command(after_help = examples::COMPLETION)]
    Completion {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the version.
    #[command(after_help = examples::VERSION)]
    Version,
    /// Completion candidates in cobra's protocol (for the kubectl_complete-namzu shim).
    #[command(name = "__complete", hide = true)]
    Complete {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
}

#[derive(Debug, Clone, clap::Args)]
pub struct TuiArgs {
    /// How often a kind you may list but not watch is re-listed instead (a warning names it). Every
    /// other kind is kept current by watches and never re-listed on a timer.
    #[arg(long, default_value = "2s", value_parser = parse_interval)]
    pub refresh_interval: std::time::Duration,
}

fn parse_interval(text: &str) -> Result<std::time::Duration, String> {
    let d = namzu_domain::select::parse_duration(text)?;
    d.to_std()
        .ok()
        .filter(|d| !d.is_zero())
        .ok_or_else(|| format!("invalid interval {text:?}: it must be longer than zero"))
}

impl Default for TuiArgs {
    fn default() -> Self {
        TuiArgs {
            refresh_interval: std::time::Duration::from_secs(2),
        }
    }
}

/// `kubectl namzu` when run through kubectl (argv[0] is `kubectl-namzu`), else the binary's name.
pub fn display_name(argv0: &str) -> String {
    let file = std::path::Path::new(argv0)
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_else(|| "kubectl-namzu".into());
    match file.strip_prefix("kubectl-") {
        Some(plugin) => format!("kubectl {}", plugin.trim_end_matches(".exe")),
        None => file,
    }
}

/// Run the parsed command; the error is one line for stderr and its exit code.
pub async fn run(cli: Cli, name: &str) -> Result<(), exit::Failure> {
    use std::io::IsTerminal;
    let Some(command) = cli.command else {
        if std::io::stdout().is_terminal() && std::io::stdin().is_terminal() {
            return terminal::open(&cli.globals, TuiArgs::default().refresh_interval).await;
        }
        let _ = Cli::command().bin_name(name).print_help();
        return Ok(());
    };
    match command {
        Command::Doctor => doctor::run(&cli.globals).await,
        Command::Rbac(args) => rbac::run(&cli.globals, args),
        Command::Tui(args) => terminal::open(&cli.globals, args.refresh_interval).await,
        Command::List(args) => list::run(&cli.globals, args).await,
        Command::Inspect(args) => inspect::run(&cli.globals, args).await,
        Command::Drift(args) => drift::run(&cli.globals, args).await,
        // one workspace's one container as kubectl logs reads it; several, or a selection, at once
        Command::Logs(args) if args.many() => logs_many::run(&cli.globals, args).await,
        Command::Logs(args) => logs::run(&cli.globals, args).await,
        Command::Exec(args) => exec::run(&cli.globals, args).await,
        Command::PortForward(args) => port_forward::run(&cli.globals, args).await,
        Command::History(args) => history::run(&cli.globals, args).await,
        Command::Capacity(args) => capacity::run(&cli.globals, args).await,
        Command::Pulse(args) => pulse::run(&cli.globals, args).await,
        Command::Leaks(args) => leaks::run(&cli.globals, args).await,
        Command::Restore(args) => restore::run(&cli.globals, args).await,
        Command::Reconcile(args) => reconcile::run(&cli.globals, args).await,
        Command::Suspend(args) => write::suspend(&cli.globals, args).await,
        Command::Resume(args) => write::resume(&cli.globals, args).await,
        Command::Delete(args) => write::delete(&cli.globals, args).await,
        Command::Audit(args) => audit::run(&cli.globals, args),
        Command::Record(_) => record::run(&cli.globals).await,
        Command::Config(args) => config::run(&cli.globals, args),
        Command::TemplateHash(args) => template_hash::run(args),
        Command::Demo(args) => demo::run(&cli.globals, args).await,
        Command::Completion { shell } => {
            let mut cmd = Cli::command();
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut cmd, name.replace(' ', "-"), &mut script);
            output::write_stdout(&String::from_utf8_lossy(&script));
            Ok(())
        }
        Command::Complete { args } => {
            complete::run(Cli::command(), &cli.globals, args).await;
            Ok(())
        }
        Command::Version => {
            namzu_engine::outln!("kubectl-namzu {}", env!("CARGO_PKG_VERSION"));
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clap_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn usage_name_follows_argv0() {
        assert_eq!(display_name("/usr/local/bin/kubectl-namzu"), "kubectl namzu");
        assert_eq!(display_name("kubectl-namzu.exe"), "kubectl namzu");
        assert_eq!(display_name("./target/debug/namzu"), "namzu");
    }
}
