//! `kubectl namzu demo`: the whole tool against a built-in simulated cluster, no cluster needed.

use super::exit::Failure;
use super::globals::Globals;
use super::list;
use crate::sim::controller::Timing;
use crate::sim::discovery::AgentSandbox;
use crate::sim::scenario::Scenario;
use crate::sim::{Sim, SimConfig};
use chrono::Utc;
use std::path::PathBuf;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// A scenario file (YAML or JSON) instead of the built-in demo.
    #[arg(long, value_name = "FILE")]
    pub scenario: Option<PathBuf>,
    /// Only serve the simulated cluster, until Ctrl-C, for kubectl and kubectl namzu in another terminal.
    #[arg(long)]
    pub serve: bool,
    /// Port to serve on (0 = any free port).
    #[arg(long, default_value_t = 0)]
    pub port: u16,
    /// Where to write the kubeconfig (default: a file in the temp directory).
    #[arg(long, value_name = "PATH")]
    pub kubeconfig_out: Option<PathBuf>,
    /// Refuse blind writes (merge patches, unconditional deletes of Sandboxes) as the tests do.
    #[arg(long)]
    pub strict: bool,
}

pub async fn run(outer: &Globals, args: Args) -> Result<(), Failure> {
    let now = Utc::now();
    let scenario = match &args.scenario {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| Failure::error(format!("cannot read {}: {e}", path.display())))?;
            Scenario::parse(&text, now).map_err(|e| Failure::error(format!("{}: {e}", path.display())))?
        }
        None => Scenario::demo(now),
    };
    let default_path = std::env::temp_dir().join(format!("kubectl-namzu-demo-{}.kubeconfig", std::process::id()));
    let kubeconfig = args.kubeconfig_out.clone().unwrap_or_else(|| default_path.clone());
    let config = SimConfig {
        strict: args.strict,
        manual_clock: None,
        timing: Timing::default(),
        users: Vec::new(),
        agent_sandbox: AgentSandbox::Current,
        cilium: true,
        port: args.port,
        kubeconfig: kubeconfig.clone(),
        namespace: "agents".into(),
    };
    let sim = Sim::start(config, &scenario)
        .await
        .map_err(|e| Failure::error(format!("cannot start the simulated cluster: {e}")))?;
    let audit = std::env::temp_dir().join(format!("kubectl-namzu-demo-{}.audit.jsonl", std::process::id()));
    let result = if args.serve {
        serve(&sim).await
    } else {
        show(&sim, outer.read_only, &audit).await
    };
    let _ = std::fs::remove_file(&audit);
    if args.kubeconfig_out.is_none() {
        let _ = std::fs::remove_file(&default_path);
    }
    result
}

async fn serve(sim: &Sim) -> Result<(), Failure> {
    let kc = sim.kubeconfig().display().to_string();
    crate::outln!("Simulated agent-sandbox cluster serving at {}", sim.url());
    crate::outln!("kubeconfig: {kc}");
    crate::outln!("Try, in another terminal:");
    crate::outln!("  kubectl --kubeconfig {kc} get sandboxes.agents.x-k8s.io -A");
    crate::outln!("  kubectl namzu --kubeconfig {kc} list -A");
    crate::outln!("Press Ctrl-C to stop.");
    tokio::signal::ctrl_c()
        .await
        .map_err(|e| Failure::error(format!("cannot wait for Ctrl-C: {e}")))?;
    Ok(())
}

/// The main experience against the simulated cluster: the TUI on a terminal, else the list.
/// Its writes are audited to a file of its own, removed when the demo ends.
async fn show(sim: &Sim, read_only: Option<super::globals::Switch>, audit: &std::path::Path) -> Result<(), Failure> {
    use std::io::IsTerminal;
    let globals = Globals {
        kubeconfig: Some(sim.kubeconfig().to_path_buf()),
        context: Vec::new(),
        all_contexts: false,
        config: None,
        max_bulk: None,
        confirm: None,
        cluster: None,
        user: None,
        namespace: None,
        all_namespaces: true,
        request_timeout: super::globals::RequestTimeout(Some(std::time::Duration::from_secs(30))),
        verbose: false,
        read_only,
        audit_log: Some(audit.to_path_buf()),
        no_audit: false,
        chunk_size: crate::cluster::connect::DEFAULT_CHUNK_SIZE,
        per_sandbox_label_key: None,
    };
    if std::io::stdout().is_terminal() && std::io::stdin().is_terminal() {
        return super::terminal::open(&globals, std::time::Duration::from_secs(2)).await;
    }
    let args = list::Args {
        output: super::output::Printer::Plain(super::output::Format::Table),
        allow_missing_template_keys: true,
        show_labels: false,
        label_columns: Vec::new(),
        no_headers: false,
        sort_by: crate::domain::select::SortKey::Name,
        watch: false,
        watch_only: false,
        output_watch_events: false,
        selection: Default::default(),
        overlays: Default::default(),
    };
    list::run(&globals, args).await
}
