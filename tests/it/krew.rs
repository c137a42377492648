//! Packaging: `scripts/release.sh` packs the binary, LICENSE and README and writes the krew
//! manifest; the manifest passes krew-index's checks; kubectl finds and runs the installed plugin.

use crate::support::out;
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// krew-index's validation of a Plugin manifest, plus: each archive it names (found in `dir`)
/// has that sha256 and holds the binary and LICENSE.
fn validate(manifest_path: &Path, dir: Option<&Path>) -> Vec<(String, String)> {
    let text = std::fs::read_to_string(manifest_path).unwrap();
    let m: Value = serde_saphyr::from_str(&text).unwrap();
    assert_eq!(m["apiVersion"], "krew.googlecontainertools.github.com/v1alpha2");
    assert_eq!(m["kind"], "Plugin");
    let name = m["metadata"]["name"].as_str().unwrap();
    let file_stem = manifest_path.file_stem().unwrap().to_str().unwrap();
    assert!(
        file_stem == name || file_stem == ".krew",
        "name {name} matches the file {file_stem}"
    );
    assert!(
        !name.is_empty() && name.chars().all(|c| c.is_alphanumeric() || c == '_' || c == '-'),
        "^[\\w-]+$"
    );
    let spec = &m["spec"];
    let version = spec["version"].as_str().unwrap();
    let v = version.strip_prefix('v').expect("semver with a leading v");
    let core: Vec<&str> = v.split(['-', '+']).next().unwrap().split('.').collect();
    assert!(
        core.len() == 3
            && core
                .iter()
                .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit())),
        "{version}"
    );
    let short = spec["shortDescription"].as_str().unwrap();
    assert!(short.chars().count() <= 50, "shortDescription ≤ 50: {short}");
    let description = spec["description"].as_str().unwrap();
    assert!(description.lines().all(|l| l.chars().count() <= 80), "80 columns");
    assert!(
        !description.contains("kubectl namzu ") && !description.to_lowercase().contains("usage"),
        "no usage examples"
    );
    let mut seen = BTreeSet::new();
    let mut platforms = Vec::new();
    for p in spec["platforms"].as_array().unwrap() {
        let labels = &p["selector"]["matchLabels"];
        let (os, arch) = (
            labels["os"].as_str().unwrap().to_string(),
            labels["arch"].as_str().unwrap().to_string(),
        );
        assert!(
            seen.insert((os.clone(), arch.clone())),
            "one platform per os/arch: {os}/{arch}"
        );
        let sha = p["sha256"].as_str().unwrap();
        assert!(
            sha.len() == 64 && sha.chars().all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c)),
            "sha256: {sha}"
        );
        let bin = p["bin"].as_str().unwrap();
        assert_eq!(
            bin,
            if os == "windows" {
                "kubectl-namzu.exe"
            } else {
                "kubectl-namzu"
            }
        );
        let uri = p["uri"].as_str().unwrap();
        assert!(uri.starts_with("https://"), "{uri}");
        if let Some(dir) = dir {
            let archive = dir.join(uri.rsplit('/').next().unwrap());
            let sum = Command::new("sha256sum").arg(&archive).output().unwrap();
            assert_eq!(
                out(&sum).split_whitespace().next(),
                Some(sha),
                "the manifest's sha256 is the archive's"
            );
            let files = archive_listing(&archive);
            assert!(files.contains(bin) && files.contains("LICENSE"), "{files:?}");
        }
        platforms.push((os, arch));
    }
    platforms
}

/// The names an archive holds (.tar.gz by tar, .zip by Python's zipfile).
fn archive_listing(archive: &Path) -> BTreeSet<String> {
    let listing = if archive.extension().is_some_and(|e| e == "zip") {
        let list = "import sys, zipfile; print(*zipfile.ZipFile(sys.argv[1]).namelist(), sep='\\n')";
        Command::new("python3").args(["-c", list]).arg(archive).output()
    } else {
        Command::new("tar").arg("-tzf").arg(archive).output()
    };
    let listing = listing.unwrap();
    assert!(listing.status.success(), "{} lists", archive.display());
    out(&listing).lines().map(str::to_string).collect()
}

/// The platforms the issue asks for, in the template's order.
fn five_platforms() -> Vec<(String, String)> {
    [
        ("linux", "amd64"),
        ("linux", "arm64"),
        ("darwin", "amd64"),
        ("darwin", "arm64"),
        ("windows", "amd64"),
    ]
    .iter()
    .map(|(o, a)| (o.to_string(), a.to_string()))
    .collect()
}

/// `.krew.yaml` rendered as the release bot would for `version`, with placeholder sums.
fn render_template(version: &str, path: &Path) {
    let text = std::fs::read_to_string(root().join(".krew.yaml"))
        .unwrap()
        .replace("{{ .TagName }}", version);
    let rendered: String = text
        .lines()
        .map(|l| match l.trim().strip_prefix("{{addURIAndSha \"") {
            Some(rest) => format!(
                // quoted: 64 zeros alone would read as the number 0
                "    uri: {}\n    sha256: \"{}\"",
                rest.split('"').next().unwrap(),
                "0".repeat(64)
            ),
            None => l.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n");
    std::fs::write(path, rendered).unwrap();
}

fn uris(manifest: &Path) -> Vec<String> {
    let m: Value = serde_saphyr::from_str(&std::fs::read_to_string(manifest).unwrap()).unwrap();
    let platforms = m["spec"]["platforms"].as_array().unwrap();
    platforms
        .iter()
        .map(|p| p["uri"].as_str().unwrap().to_string())
        .collect()
}

/// `scripts/release.sh --binary` on a launcher of the binary under test: a two-line script that
/// runs it. The archive holds what the script is given byte for byte (its sha256 is checked), and
/// `gzip -9` on a debug build's 60 MB took most of this test's time.
fn release_into(dir: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let launcher = tempfile::tempdir().unwrap();
    let binary = launcher.path().join("kubectl-namzu");
    std::fs::write(&binary, format!("#!/bin/sh\nexec '{}' \"$@\"\n", crate::support::BIN)).unwrap();
    std::fs::set_permissions(&binary, std::fs::Permissions::from_mode(0o755)).unwrap();
    let o = Command::new("bash")
        .arg(root().join("scripts/release.sh"))
        .arg("--binary")
        .arg(&binary)
        .arg("--out")
        .arg(dir)
        .output()
        .expect("bash runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

#[test]
fn the_release_template_names_five_platforms() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("namzu.yaml");
    render_template("v0.1.0", &path);
    assert_eq!(validate(&path, None), five_platforms());
}

/// krew/namzu.yaml is what `scripts/release.sh --all` wrote for this version: valid, all five
/// platforms, the template's URIs. Its archives are checked too when KUBECTL_NAMZU_RELEASE_DIR
/// names the directory release.sh wrote them to (they are release assets, not in git).
#[test]
fn the_committed_manifest_is_this_versions_release() {
    let path = root().join("krew/namzu.yaml");
    let archives = std::env::var_os("KUBECTL_NAMZU_RELEASE_DIR").map(PathBuf::from);
    if archives.is_none() {
        eprintln!("krew/namzu.yaml: sums not checked against archives (KUBECTL_NAMZU_RELEASE_DIR unset)");
    }
    assert_eq!(validate(&path, archives.as_deref()), five_platforms());
    let dir = tempfile::tempdir().unwrap();
    let expected = dir.path().join("namzu.yaml");
    render_template(&format!("v{}", env!("CARGO_PKG_VERSION")), &expected);
    assert_eq!(
        uris(&path),
        uris(&expected),
        "krew/namzu.yaml is for another version: run scripts/release.sh --all"
    );
}

#[test]
fn release_script_packs_and_writes_a_valid_manifest_that_kubectl_installs() {
    let dist = tempfile::tempdir().unwrap();
    release_into(dist.path());
    let platforms = validate(&dist.path().join("namzu.yaml"), Some(dist.path()));
    assert_eq!(
        platforms,
        [("linux".to_string(), "amd64".to_string())],
        "this machine's target"
    );

    if crate::support::tool_missing("kubectl", "the install-through-kubectl check") {
        return;
    }
    // install: unpack into a directory on PATH, as krew does
    let bin_dir = tempfile::tempdir().unwrap();
    let archive = std::fs::read_dir(dist.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().ends_with(".tar.gz"))
        .unwrap();
    assert!(
        Command::new("tar")
            .arg("-xzf")
            .arg(&archive)
            .arg("-C")
            .arg(bin_dir.path())
            .status()
            .unwrap()
            .success()
    );
    let path = format!(
        "{}:{}",
        bin_dir.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let listed = Command::new("kubectl")
        .args(["plugin", "list", "--name-only"])
        .env("PATH", &path)
        .output()
        .unwrap();
    assert!(
        out(&listed).lines().any(|l| l.trim() == "kubectl-namzu"),
        "{}",
        out(&listed)
    );
    // kubectl runs the plugin: isolated as every run of it is
    let version = crate::support::isolate(&mut Command::new("kubectl"), &bin_dir.path().join("home"))
        .args(["namzu", "version"])
        .env("PATH", &path)
        .output()
        .unwrap();
    assert_eq!(
        out(&version).trim(),
        format!("kubectl-namzu {}", env!("CARGO_PKG_VERSION"))
    );
}
