//! The layers of docs/ARCHITECTURE.md, held two ways: between crates by their manifests (each
//! crate depends only on the crates and libraries its layer may use, so an upward import is a
//! compile error), and inside `namzu-engine`, whose three modules share a crate, by the source.

use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`.
fn sources(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(d) = pending.pop() {
        for entry in std::fs::read_dir(&d).unwrap().map(Result::unwrap) {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Each package of the workspace and the names of its normal (not dev) dependencies.
fn dependencies() -> Vec<(String, BTreeSet<String>)> {
    let out = std::process::Command::new(env!("CARGO"))
        .args(["metadata", "--format-version", "1", "--no-deps", "--offline"])
        .current_dir(root())
        .output()
        .expect("cargo metadata runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let meta: Value = serde_json::from_slice(&out.stdout).unwrap();
    meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let deps = p["dependencies"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|d| d["kind"].is_null())
                .map(|d| d["name"].as_str().unwrap().to_string())
                .collect();
            (p["name"].as_str().unwrap().to_string(), deps)
        })
        .collect()
}

/// What each crate may depend on: its layer's crates below it and the libraries its job needs.
/// A dependency not listed here fails the test, so a new one is a decision, written down.
const ALLOWED: [(&str, &[&str]); 7] = [
    // a leaf: the one reader of the system clock
    ("namzu-clock", &["chrono"]),
    // pure rules: no I/O, no async, no terminal, no kube, and no clock (time is passed in);
    // litemap: a row's small string maps
    (
        "namzu-domain",
        &[
            "chrono",
            "serde",
            "serde_json",
            "serde-saphyr",
            "sha2",
            "thiserror",
            "litemap",
        ],
    ),
    // the simulated API server stands alone: never the engine, the TUI or kube's client
    (
        "namzu-sim",
        &[
            "namzu-clock",
            "namzu-domain",
            "chrono",
            "serde",
            "serde_json",
            "serde-saphyr",
            "json-patch",
            "hyper",
            "hyper-util",
            "http-body-util",
            "bytes",
            "futures",
            "tokio",
            "tokio-tungstenite",
            "http",
        ],
    ),
    // the flight recorder's store: local files only (no cluster, no clock: times are passed in);
    // crc32fast checksums each frame, flate2 compresses a sealed segment, std's File::lock is the
    // advisory lock
    (
        "namzu-recorder",
        &["namzu-domain", "chrono", "serde", "serde_json", "crc32fast", "flate2"],
    ),
    // I/O and the use cases: never a terminal, a front-end or the simulator
    (
        "namzu-engine",
        &[
            "namzu-clock",
            "namzu-domain",
            "namzu-recorder",
            "chrono",
            "serde",
            "serde_json",
            "serde-saphyr",
            "json-patch",
            // with its `ws` feature: `pods/portforward` over WebSocket (cluster/portforward.rs)
            // is kube-rs's own `Api::<Pod>::portforward`, no WebSocket crate of the engine's
            "kube",
            "k8s-openapi",
            "tokio",
            "futures",
            "hyper",
            "hyper-util",
            "http",
            "tower",
            "thiserror",
            "libc",
        ],
    ),
    // the terminal UI: the engine's use cases, never the CLI, kube or the simulator
    (
        "namzu-tui",
        &[
            "namzu-clock",
            "namzu-domain",
            "namzu-engine",
            "ratatui",
            "base64",
            "chrono",
            "futures",
            "serde_json",
            "tokio",
        ],
    ),
    // the binary: the command line over everything, the simulator only behind `demo`
    (
        "kubectl-namzu",
        &[
            "namzu-clock",
            "namzu-domain",
            "namzu-engine",
            "namzu-tui",
            "namzu-sim",
            "clap",
            "clap_complete",
            "tokio",
            "chrono",
            "serde_json",
            "serde-saphyr",
            "futures",
            // the allocator and its one setting (a background thread hands freed memory back)
            "tikv-jemallocator",
            "tikv-jemalloc-ctl",
        ],
    ),
];

#[test]
fn each_crate_depends_only_on_what_its_layer_may_use() {
    let packages = dependencies();
    assert_eq!(packages.len(), ALLOWED.len(), "a crate without a rule: {packages:?}");
    for (name, deps) in packages {
        let allowed: BTreeSet<&str> = ALLOWED
            .iter()
            .find(|(n, _)| *n == name)
            .unwrap_or_else(|| panic!("no rule for crate {name}"))
            .1
            .iter()
            .copied()
            .collect();
        let extra: Vec<&String> = deps.iter().filter(|d| !allowed.contains(d.as_str())).collect();
        assert!(
            extra.is_empty(),
            "{name} depends on {extra:?}, which its layer may not use"
        );
    }
}

/// The simulator is optional in the binary: `--no-default-features` builds a plugin without it.
#[test]
fn the_simulated_server_is_behind_the_demo_feature() {
    let manifest = std::fs::read_to_string(root().join("Cargo.toml")).unwrap();
    assert!(manifest.contains("namzu-sim = { workspace = true, optional = true }"));
    assert!(manifest.contains("demo = [\"dep:namzu-sim\"]"));
}

/// The places in `layer` (a module of namzu-engine) that name one of `above`, as `file:line`.
fn naming(layer: &str, above: &[&str]) -> Vec<String> {
    let src = root().join("crates/namzu-engine/src");
    let mut found = Vec::new();
    for file in sources(&src.join(layer)) {
        let text = std::fs::read_to_string(&file).unwrap();
        for (n, line) in text.lines().enumerate() {
            if above.iter().any(|m| {
                line.contains(&format!("crate::{m}::"))
                    || line.contains(&format!("crate::{m};"))
                    || line.contains(&format!("crate::{{{m}"))
            }) {
                found.push(format!("{}:{}: {}", file.display(), n + 1, line.trim()));
            }
        }
    }
    found
}

#[test]
fn inside_the_engine_cluster_names_neither_ops_nor_present() {
    let rules: [(&str, &[&str]); 2] = [("cluster", &["ops", "present"]), ("present", &["ops"])];
    for (layer, above) in rules {
        let found = naming(layer, above);
        assert!(
            found.is_empty(),
            "namzu-engine's {layer}/ names a module above it:\n{}",
            found.join("\n")
        );
    }
}

/// No source file grows past 900 lines (issue 29): a file that does is split along its
/// concerns, as `cluster/live/` and `cluster/inventory/` were.
#[test]
fn no_source_file_is_over_900_lines() {
    let mut dirs = vec![root().join("src")];
    for entry in std::fs::read_dir(root().join("crates")).unwrap().map(Result::unwrap) {
        dirs.push(entry.path().join("src"));
    }
    let long: Vec<String> = dirs
        .iter()
        .flat_map(|d| sources(d))
        .filter_map(|f| {
            let lines = std::fs::read_to_string(&f).unwrap().lines().count();
            (lines > 900).then(|| format!("{}: {lines} lines", f.display()))
        })
        .collect();
    assert!(
        long.is_empty(),
        "split these along their concerns:\n{}",
        long.join("\n")
    );
}
