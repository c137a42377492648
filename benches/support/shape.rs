//! The production-shaped cluster the list and live benchmarks share: workspaces in three
//! namespaces among many more pods and PVCs of unrelated apps.

/// `workspaces` workspaces (a quarter Suspended) and `background` other pods (and a fifth as many
/// PVCs) over 20 namespaces, as a scenario.
pub fn scenario(workspaces: usize, background: usize) -> String {
    let mut s = format!(
        "namespaces: [bench-a, bench-b, bench-c]\nbackground: {{pods: {background}, pvcs: {}, namespaces: 20}}\nworkspaces:\n",
        background / 5
    );
    s.push_str(&workspace_lines(0..workspaces));
    s
}

/// The scenario's workspaces `range`, one YAML line each.
fn workspace_lines(range: std::ops::Range<usize>) -> String {
    let namespaces = ["bench-a", "bench-b", "bench-c"];
    let mut s = String::new();
    for i in range {
        let ns = namespaces[i % 3];
        let mode = if i % 4 == 0 { "Suspended" } else { "Running" };
        s.push_str(&format!(
            "  - {{namespace: {ns}, id: w{i:05}, mode: {mode}, epoch: \"{}\", changedAt: \"{{{{now-{}h|ms}}}}\", podTemplate: {{metadata: {{labels: {{sandbox.namzu.ai/template: t{}}}}}, spec: {{containers: [{{name: agent, image: \"ghcr.io/x/agent:1.{}\"}}]}}}}}}\n",
            i % 9,
            i % 500,
            i % 5,
            i % 3
        ));
    }
    s
}

/// `NAMZU_BENCH_SHAPES` (`workspaces:background,…`), else `default`.
pub fn shapes(default: &str) -> Vec<(usize, usize)> {
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
pub fn start(
    rt: &tokio::runtime::Runtime,
    kubeconfig: &std::path::Path,
    workspaces: usize,
    background: usize,
    live: bool,
) -> kubectl_namzu::sim::Sim {
    use kubectl_namzu::sim::{Sim, SimConfig, scenario::Scenario};
    let mut config = SimConfig::for_tests(kubeconfig);
    config.strict = false;
    if live {
        config.manual_clock = None;
    }
    let now = config
        .manual_clock
        .unwrap_or_else(|| kubectl_namzu::clock::Clock::System.now());
    // the YAML parser bounds one document's nodes (250,000): the workspaces go in by chunks
    const CHUNK: usize = 4000;
    let mut scenario =
        Scenario::parse(&scenario(workspaces.min(CHUNK), background), now).expect("the bench scenario parses");
    for from in (CHUNK..workspaces).step_by(CHUNK) {
        let more = format!("workspaces:\n{}", workspace_lines(from..(from + CHUNK).min(workspaces)));
        let more = Scenario::parse(&more, now).expect("the bench scenario parses");
        scenario.workspaces.extend(more.workspaces);
    }
    let sim = rt.block_on(Sim::start(config, &scenario)).expect("the sim starts");
    if !live {
        sim.compact();
    }
    sim
}
