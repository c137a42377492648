//! `kubectl namzu demo`: the whole tool against a built-in simulated cluster, no cluster needed.

use super::exit::Failure;
use super::globals::Globals;
use super::list;
use namzu_sim::controller::Timing;
use namzu_sim::discovery::AgentSandbox;
use namzu_sim::scenario::{Scenario, fleet_name};
use namzu_sim::{SIM_CONTEXT, Sim, SimConfig, write_fleet_kubeconfig};
use std::path::{Path, PathBuf};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// A scenario file (YAML or JSON) instead of the built-in demo; with --clusters, every
    /// cluster loads it.
    #[arg(long, value_name = "FILE")]
    pub scenario: Option<PathBuf>,
    /// Only serve the simulated cluster, until Ctrl-C, for kubectl and kubectl namzu in another terminal.
    #[arg(long)]
    pub serve: bool,
    /// N simulated clusters, each with workspaces of its own, in one kubeconfig with a context
    /// each: prod-eu-west (current), prod-us-east, staging, cluster-4, … (default: 3 to look at,
    /// 1 to serve; 1 is the single cluster of context namzu-sim).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub clusters: Option<u16>,
    /// Port to serve on (0 = any free port); with --clusters, cluster i (from 0) serves on PORT+i.
    #[arg(long, default_value_t = 0)]
    pub port: u16,
    /// Where to write the kubeconfig (default: a file in the temp directory).
    #[arg(long, value_name = "PATH")]
    pub kubeconfig_out: Option<PathBuf>,
    /// Refuse blind writes (merge patches, unconditional deletes of Sandboxes) as the tests do.
    #[arg(long)]
    pub strict: bool,
    /// A round trip per request (e.g. 30ms): every answer of the simulated clusters comes that
    /// much later, as from a cluster far away (a scenario's `server: {latency: 30ms}`).
    #[arg(long, value_name = "DURATION", value_parser = parse_latency)]
    pub latency: Option<std::time::Duration>,
}

fn parse_latency(text: &str) -> Result<std::time::Duration, String> {
    namzu_sim::scenario::parse_duration(text)?
        .to_std()
        .map_err(|e| e.to_string())
}

/// How many clusters the demo shows when not told: a fleet to show its view off.
pub(crate) const SHOWN_CLUSTERS: u16 = 3;

/// The demo fleet's safety rules, written where `show` reads them.
pub(crate) const SAFETY_RULES: &str = include_str!("../../assets/demo-config.yaml");

pub(crate) async fn run(outer: &Globals, args: Args) -> Result<(), Failure> {
    let clusters = args.clusters.unwrap_or(if args.serve { 1 } else { SHOWN_CLUSTERS });
    let mut fleet = start_fleet(
        usize::from(clusters),
        args.scenario.as_deref(),
        args.strict,
        args.port,
        args.kubeconfig_out.as_deref(),
    )
    .await?;
    if let Some(latency) = args.latency {
        for (_, sim) in &fleet.sims {
            sim.set_latency(latency);
        }
    }
    if args.serve {
        return serve(&fleet).await;
    }
    let audit = std::env::temp_dir().join(format!("kubectl-namzu-demo-{}.audit.jsonl", std::process::id()));
    let result = show(&mut fleet, outer.read_only, &audit).await;
    let _ = std::fs::remove_file(&audit);
    result
}

/// The simulated clusters of a demo and the one kubeconfig with a context for each. Dropping it
/// stops the servers and removes the files it wrote to the temp directory.
pub(crate) struct Fleet {
    /// By context name; the first is the kubeconfig's current context.
    pub sims: Vec<(String, Sim)>,
    pub kubeconfig: PathBuf,
    /// The sims' own kubeconfigs, and the fleet's unless its path was given.
    scratch: Vec<PathBuf>,
}

impl Drop for Fleet {
    fn drop(&mut self) {
        for path in &self.scratch {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// Start `n` simulated clusters, each on its own port (`port + i`, or any free one for 0), with
/// the demo fleet's scenarios ([`Scenario::demo_fleet`]) or all with the `scenario` file, and
/// write one kubeconfig for them at `kubeconfig_out` (default: in the temp directory). One
/// cluster is the demo as it always was: its context is `namzu-sim`.
pub(crate) async fn start_fleet(
    n: usize,
    scenario: Option<&Path>,
    strict: bool,
    port: u16,
    kubeconfig_out: Option<&Path>,
) -> Result<Fleet, Failure> {
    if n == 0 {
        return Err(Failure::usage("--clusters must be at least 1"));
    }
    if port != 0 && usize::from(port) + n - 1 > usize::from(u16::MAX) {
        return Err(Failure::usage(format!(
            "--port {port} with --clusters {n} goes past port 65535"
        )));
    }
    // the demo's clusters start at this machine's now: the one clock a demo has
    let now = namzu_clock::Clock::System.now();
    let members = match scenario {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| Failure::error(format!("cannot read {}: {e}", path.display())))?;
            let scenario =
                Scenario::parse(&text, now).map_err(|e| Failure::error(format!("{}: {e}", path.display())))?;
            (0..n).map(|i| (fleet_name(i), scenario.clone())).collect()
        }
        None => Scenario::demo_fleet(now, n),
    };
    let temp =
        |name: &str| std::env::temp_dir().join(format!("kubectl-namzu-demo-{}{name}.kubeconfig", std::process::id()));
    let kubeconfig = kubeconfig_out.map_or_else(|| temp(""), Path::to_path_buf);
    let mut fleet = Fleet {
        sims: Vec::with_capacity(n),
        scratch: kubeconfig_out
            .is_none()
            .then(|| kubeconfig.clone())
            .into_iter()
            .collect(),
        kubeconfig,
    };
    for (i, (name, scenario)) in members.into_iter().enumerate() {
        let name = if n == 1 { SIM_CONTEXT.to_string() } else { name };
        // checked above: PORT+i fits
        let port = if port == 0 { 0 } else { port + i as u16 };
        let own = temp(&format!("-{name}"));
        fleet.scratch.push(own.clone());
        let config = SimConfig {
            strict,
            manual_clock: None,
            timing: Timing::default(),
            users: Vec::new(),
            agent_sandbox: AgentSandbox::Current,
            cilium: true,
            port,
            kubeconfig: own,
            namespace: "agents".into(),
        };
        let sim = Sim::start(config, &scenario)
            .await
            .map_err(|e| Failure::error(format!("cannot start the simulated cluster {name}: {e}")))?;
        fleet.sims.push((name, sim));
    }
    let members: Vec<(&str, &Sim)> = fleet.sims.iter().map(|(name, sim)| (name.as_str(), sim)).collect();
    write_fleet_kubeconfig(&fleet.kubeconfig, &members)
        .map_err(|e| Failure::error(format!("cannot write {}: {e}", fleet.kubeconfig.display())))?;
    Ok(fleet)
}

async fn serve(fleet: &Fleet) -> Result<(), Failure> {
    let kc = fleet.kubeconfig.display().to_string();
    let (first, _) = &fleet.sims[0];
    match fleet.sims.as_slice() {
        [(_, sim)] => namzu_engine::outln!("Simulated agent-sandbox cluster serving at {}", sim.url()),
        sims => {
            namzu_engine::outln!("{} simulated agent-sandbox clusters serving:", sims.len());
            let width = sims.iter().map(|(name, _)| name.len()).max().unwrap_or(0);
            for (name, sim) in sims {
                namzu_engine::outln!("  {name:<width$}  {}", sim.url());
            }
        }
    }
    namzu_engine::outln!("kubeconfig: {kc}");
    namzu_engine::outln!("Try, in another terminal:");
    if fleet.sims.len() == 1 {
        namzu_engine::outln!("  kubectl --kubeconfig {kc} get sandboxes.agents.x-k8s.io -A");
        namzu_engine::outln!("  kubectl namzu --kubeconfig {kc} list -A");
    } else {
        namzu_engine::outln!("  kubectl --kubeconfig {kc} get sandboxes.agents.x-k8s.io -A --context {first}");
        namzu_engine::outln!("  kubectl namzu --kubeconfig {kc} list -A --all-contexts");
    }
    // SIGTERM and SIGHUP end it as Ctrl-C does: the fleet is dropped, its scratch files removed
    let termination = namzu_engine::signals::Termination::listen();
    namzu_engine::outln!("Press Ctrl-C to stop.");
    termination.received().await;
    Ok(())
}

/// The main experience against the simulated clusters: the TUI on a terminal, else the list;
/// a fleet of every context, under the demo's safety rules. Its writes are audited to a file of
/// its own, removed when the demo ends (with the rules' file).
async fn show(fleet: &mut Fleet, read_only: bool, audit: &std::path::Path) -> Result<(), Failure> {
    use std::io::IsTerminal;
    let several = fleet.sims.len() > 1;
    let config = if several {
        let path = std::env::temp_dir().join(format!("kubectl-namzu-demo-{}.config.yaml", std::process::id()));
        fleet.scratch.push(path.clone());
        std::fs::write(&path, SAFETY_RULES)
            .map_err(|e| Failure::error(format!("cannot write {}: {e}", path.display())))?;
        Some(path)
    } else {
        None
    };
    let globals = Globals {
        kubeconfig: Some(fleet.kubeconfig.clone()),
        context: Vec::new(),
        all_contexts: several,
        config,
        max_bulk: None,
        confirm: None,
        cluster: None,
        user: None,
        namespace: None,
        all_namespaces: true,
        request_timeout: super::globals::RequestTimeout(Some(std::time::Duration::from_secs(30))),
        verbose: false,
        read_only,
        write: false,
        audit_log: Some(audit.to_path_buf()),
        no_audit: false,
        recording: None,
        chunk_size: namzu_engine::cluster::connect::DEFAULT_CHUNK_SIZE,
        per_sandbox_label_key: None,
    };
    if std::io::stdout().is_terminal() && std::io::stdin().is_terminal() {
        return super::terminal::open(&globals, std::time::Duration::from_secs(2)).await;
    }
    let args = list::Args {
        ids: Vec::new(),
        output: super::output::Printer::Plain(super::output::Format::Table),
        allow_missing_template_keys: true,
        show_labels: false,
        label_columns: Vec::new(),
        no_headers: false,
        sort_by: namzu_domain::select::SortKey::Name,
        watch: false,
        watch_only: false,
        output_watch_events: false,
        at: None,
        selection: Default::default(),
        overlays: Default::default(),
    };
    list::run(&globals, args).await
}

#[cfg(test)]
mod tests {
    use namzu_domain::safety::{Colour, ConfirmRule, SafetyConfig};

    /// The demo's rules parse, and give the fleet's production contexts a red PROD badge and
    /// typed confirmations, staging a badge only.
    #[test]
    fn the_demo_fleets_rules_mark_production() {
        let rules = SafetyConfig::parse(super::SAFETY_RULES).unwrap();
        let flags = Default::default();
        for prod in ["prod-eu-west", "prod-us-east"] {
            let r = rules.for_context(prod, &flags);
            let badge = r.badge.unwrap();
            assert_eq!((badge.label.as_str(), badge.colour), ("PROD", Some(Colour::Red)));
            assert_eq!((r.confirm, r.read_only), (ConfirmRule::Typed, false));
        }
        let staging = rules.for_context("staging", &flags);
        assert_eq!(staging.confirm, ConfirmRule::Default);
        assert_eq!(staging.badge.unwrap().label, "STG");
    }
}
