//! Reading one object from a file or stdin, as JSON or YAML.

use super::exit::Failure;
use serde_json::Value;
use std::io::Read;

/// Read `path` (`-` = stdin) and parse it as JSON, or else YAML (one document).
pub fn read_object(path: &str) -> Result<Value, Failure> {
    let text = if path == "-" {
        let mut s = String::new();
        std::io::stdin()
            .read_to_string(&mut s)
            .map_err(|e| Failure::error(format!("cannot read stdin: {e}")))?;
        s
    } else {
        std::fs::read_to_string(path).map_err(|e| Failure::error(format!("cannot read {path}: {e}")))?
    };
    // JSON first: YAML would read some JSON numbers (1e3) differently than JSON.parse does
    serde_json::from_str(&text).or_else(|_| {
        serde_saphyr::from_str::<Value>(&text)
            .map_err(|e| Failure::error(format!("{path} is neither JSON nor YAML: {e}")))
    })
}
