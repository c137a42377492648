//! The layers of docs/ARCHITECTURE.md ("Which module may import which"), held by the source:
//! each layer names no module above it.

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

/// The places in `layer` that name one of `above` (`crate::<module>`), as `file:line`.
fn naming(layer: &str, above: &[&str]) -> Vec<String> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut found = Vec::new();
    for file in sources(&src.join(layer)) {
        let text = std::fs::read_to_string(&file).unwrap();
        for (n, line) in text.lines().enumerate() {
            if above.iter().any(|m| {
                let at = format!("crate::{m}::");
                line.contains(&at) || line.contains(&format!("crate::{m};")) || line.contains(&format!("crate::{{{m}"))
            }) {
                found.push(format!("{}:{}: {}", file.display(), n + 1, line.trim()));
            }
        }
    }
    found
}

#[test]
fn each_layer_names_no_module_above_it() {
    let rules: [(&str, &[&str]); 6] = [
        ("domain", &["cli", "tui", "ops", "present", "cluster", "sim"]),
        ("cluster", &["cli", "tui", "ops", "present", "sim"]),
        ("present", &["cli", "tui", "ops", "sim"]),
        // the use cases: never a front-end
        ("ops", &["cli", "tui", "sim"]),
        // the TUI knows nothing of the CLI (`cli/terminal.rs` starts it, not the reverse)
        ("tui", &["cli", "sim"]),
        // the simulator stands alone (its one domain/ import is domain/age.rs, below)
        ("sim", &["cli", "tui", "ops", "present", "cluster"]),
    ];
    for (layer, above) in rules {
        let found = naming(layer, above);
        assert!(
            found.is_empty(),
            "src/{layer}/ names a module above it:\n{}",
            found.join("\n")
        );
    }
}

/// No room of `src/` grows past 900 lines (issue 29): a file that does is split along its
/// concerns, as `cluster/live/` and `cluster/inventory/` were.
#[test]
fn no_source_file_is_over_900_lines() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let long: Vec<String> = sources(&src)
        .into_iter()
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
