//! Shared helpers: the built binary and the vector files copied into the checkout.

use serde_json::Value;
use std::path::PathBuf;
use std::process::{Command, Output};

/// The vectors computed with @namzu/sandbox's own code, copied into `tests/vectors/`.
pub fn vector_cases(file: &str) -> Vec<Value> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/vectors")
        .join(file);
    let text = std::fs::read_to_string(&path).expect("vector file in the checkout");
    let doc: Value = serde_json::from_str(&text).expect("vector file is JSON");
    let cases = doc["cases"].as_array().expect("cases").clone();
    assert!(!cases.is_empty(), "{file} has no cases");
    cases
}

/// Run the real binary with `args` and optional stdin.
pub fn run_bin(args: &[&str], stdin: Option<&str>) -> Output {
    use std::io::Write;
    use std::process::Stdio;
    let mut child = Command::new(env!("CARGO_BIN_EXE_kubectl-namzu"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn kubectl-namzu");
    let mut pipe = child.stdin.take().expect("stdin");
    if let Some(text) = stdin {
        pipe.write_all(text.as_bytes()).expect("write stdin");
    }
    drop(pipe);
    child.wait_with_output().expect("wait")
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}
