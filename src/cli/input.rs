//! Reading one object from a file or stdin, as JSON or YAML; a typed confirmation's answer.

use super::exit::Failure;
use serde_json::Value;
use std::io::Read;

/// Read `path` (`-` = stdin) and parse it as JSON, or else YAML (one document).
pub(crate) fn read_object(path: &str) -> Result<Value, Failure> {
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

/// Ask on the terminal: `question` and `prompt` on stderr, then one line read from stdin (off the
/// runtime's threads). True only when the line typed, trimmed, is `word`.
pub(crate) async fn typed_answer(question: &str, prompt: &str, word: &str) -> Result<bool, String> {
    use std::io::{BufRead, Write};
    namzu_engine::errln!("{question}");
    namzu_engine::errw!("{prompt}");
    let _ = std::io::stderr().flush();
    let mut line = String::new();
    let answer = tokio::task::spawn_blocking(move || std::io::stdin().lock().read_line(&mut line).map(|_| line))
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| format!("cannot read the confirmation: {e}"))?;
    Ok(answer.trim() == word)
}
