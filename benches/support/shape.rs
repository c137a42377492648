//! The production-shaped cluster the list and live benchmarks share: workspaces in three
//! namespaces among many more pods and PVCs of unrelated apps.

// the sim (and a follow run in process) allocates as it does where it ships (the binary's
// `demo`): with jemalloc; glibc's malloc took half of a 20,000-workspace load's time
#[cfg(not(target_env = "msvc"))]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// `workspaces` workspaces (a quarter Suspended) and `background` other pods (and a fifth as many
/// PVCs) over 20 namespaces, as a scenario.
pub(crate) fn scenario(workspaces: usize, background: usize) -> String {
    let mut s = format!(
        "namespaces: [bench-a, bench-b, bench-c]\nbackground: {{pods: {background}, pvcs: {}, namespaces: 20}}\nworkspaces:\n",
        background / 5
    );
    for i in 0..workspaces {
        s.push_str(&workspace(i));
    }
    s
}

/// The scenario line of workspace `i`.
fn workspace(i: usize) -> String {
    let namespaces = ["bench-a", "bench-b", "bench-c"];
    let ns = namespaces[i % 3];
    let mode = if i.is_multiple_of(4) { "Suspended" } else { "Running" };
    format!(
        "  - {{namespace: {ns}, id: w{i:05}, mode: {mode}, epoch: \"{}\", changedAt: \"{{{{now-{}h|ms}}}}\", podTemplate: {{metadata: {{labels: {{sandbox.namzu.ai/template: t{}}}}}, spec: {{containers: [{{name: agent, image: \"ghcr.io/x/agent:1.{}\"}}]}}}}}}\n",
        i % 9,
        i % 500,
        i % 5,
        i % 3
    )
}

/// Workspaces per parse: the scenario parser bounds one document's size (250,000 nodes, some
/// 9,000 of these workspaces), so a larger shape is parsed in parts.
const PER_PARSE: usize = 2000;

/// `NAMZU_BENCH_SHAPES` (`workspaces:background,…`), else `default`.
pub(crate) fn shapes(default: &str) -> Vec<(usize, usize)> {
    std::env::var("NAMZU_BENCH_SHAPES")
        .unwrap_or_else(|_| default.into())
        .split(',')
        .filter_map(|s| {
            let (w, b) = s.split_once(':')?;
            Some((w.parse().ok()?, b.parse().ok()?))
        })
        .collect()
}

/// A non-strict sim serving [`scenario`]`(workspaces, background)`, its kubeconfig at `kubeconfig`:
/// on a manual clock, its history compacted (a one-shot read's server), or on the real clock
/// (`live`: a watched server whose controller moves with time).
pub(crate) fn start(
    rt: &tokio::runtime::Runtime,
    kubeconfig: &std::path::Path,
    workspaces: usize,
    background: usize,
    live: bool,
) -> namzu_sim::Sim {
    start_with(rt, kubeconfig, workspaces, background, live, "")
}

/// [`start`]'s sim with the namespaces, objects and pulses of the scenario `extra` too.
pub(crate) fn start_with(
    rt: &tokio::runtime::Runtime,
    kubeconfig: &std::path::Path,
    workspaces: usize,
    background: usize,
    live: bool,
    extra: &str,
) -> namzu_sim::Sim {
    use namzu_sim::{Sim, SimConfig, scenario::Scenario};
    let mut config = SimConfig::for_tests(kubeconfig);
    config.strict = false;
    if live {
        config.manual_clock = None;
    }
    let now = config.manual_clock.unwrap_or_else(|| namzu_clock::Clock::System.now());
    let mut scenario =
        Scenario::parse(&scenario(workspaces.min(PER_PARSE), background), now).expect("the bench scenario parses");
    for from in (PER_PARSE..workspaces).step_by(PER_PARSE) {
        let part: String = (from..workspaces.min(from + PER_PARSE)).map(workspace).collect();
        let part = Scenario::parse(&format!("workspaces:\n{part}"), now).expect("the bench scenario parses");
        scenario.workspaces.extend(part.workspaces);
    }
    if !extra.is_empty() {
        let extra = Scenario::parse(extra, now).expect("the extra scenario parses");
        scenario.namespaces.extend(extra.namespaces);
        scenario.objects.extend(extra.objects);
        scenario.pulse.extend(extra.pulse);
    }
    let sim = rt.block_on(Sim::start(config, &scenario)).expect("the sim starts");
    if !live {
        sim.compact();
    }
    sim
}
