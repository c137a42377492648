//! YAML for people and for YAML 1.1 readers alike (kubectl among them): `-o yaml` and the
//! TUI's YAML view print every string that could be read as something else quoted. And the JSON
//! every `-o json` prints: both escape what a reader or a terminal would choke on.

use serde_json::Value;

/// What `-o json` and `-o yaml` never print raw, beyond the C0 controls both escape anyway: DEL,
/// the C1 controls (a terminal acts on them), the line and paragraph separators, the byte-order
/// mark and the noncharacters U+FFFE/U+FFFF — a YAML reader refuses each of them raw, and
/// JavaScript before ES2019 refuses U+2028/U+2029 in a string.
pub(crate) fn escaped_in_data(c: char) -> bool {
    matches!(
        c,
        '\u{7f}'..='\u{9f}' | '\u{2028}' | '\u{2029}' | '\u{feff}' | '\u{fffe}' | '\u{ffff}'
    )
}

/// JSON text (as serde_json writes it) with every [`escaped_in_data`] character as `\uXXXX`.
/// Such a character can only stand inside a string there, where the escape means the same.
pub(crate) fn escape_json_text(json: String) -> String {
    if !json.chars().any(escaped_in_data) {
        return json;
    }
    let mut out = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        if escaped_in_data(c) {
            out.push_str(&format!("\\u{:04x}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    out
}

/// A value as `-o json` prints it: pretty, two spaces, [`escaped_in_data`] characters escaped.
pub fn pretty_json(value: &Value) -> String {
    escape_json_text(serde_json::to_string_pretty(value).unwrap_or_else(|_| "null".into()))
}

/// A value as one line of JSON (a watch's NDJSON), escaped as [`pretty_json`] is.
pub fn compact_json(value: &Value) -> String {
    escape_json_text(value.to_string())
}

/// YAML as kubectl prints it, with every string that a YAML 1.1 or 1.2 reader could take for
/// something else (`no`, `2026-01-01`, `1e3`, `0x1f`, `~`, an RFC 3339 time) double-quoted, so
/// `-o yaml` carries exactly the strings `-o json` does.
pub fn yaml(value: &Value) -> String {
    let mut out = String::new();
    yaml_block(value, 0, &mut out);
    if !out.ends_with('\n') {
        out.push('\n');
    }
    out
}

fn yaml_block(value: &Value, indent: usize, out: &mut String) {
    let pad = " ".repeat(indent);
    match value {
        Value::Object(map) if !map.is_empty() => {
            for (k, v) in map {
                out.push_str(&format!("{pad}{}:", yaml_scalar_str(k)));
                yaml_child(v, indent + 2, out);
            }
        }
        Value::Array(items) if !items.is_empty() => {
            for v in items {
                out.push_str(&format!("{pad}-"));
                match v {
                    Value::Object(m) if !m.is_empty() => {
                        // the first key on the dash's line, the rest aligned under it
                        let mut inner = String::new();
                        yaml_block(v, indent + 2, &mut inner);
                        out.push(' ');
                        out.push_str(&inner[indent + 2..]);
                    }
                    _ => yaml_child(v, indent + 2, out),
                }
            }
        }
        scalar => {
            out.push_str(&format!("{pad}{}\n", yaml_scalar(scalar)));
        }
    }
}

/// After `key:` or `-`: a scalar on the same line, a collection below (lists at the key's indent).
fn yaml_child(v: &Value, indent: usize, out: &mut String) {
    match v {
        Value::Object(m) if !m.is_empty() => {
            out.push('\n');
            yaml_block(v, indent, out);
        }
        Value::Array(a) if !a.is_empty() => {
            out.push('\n');
            yaml_block(v, indent - 2, out);
        }
        scalar => out.push_str(&format!(" {}\n", yaml_scalar(scalar))),
    }
}

fn yaml_scalar(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => yaml_scalar_str(s),
        Value::Array(_) => "[]".into(),
        Value::Object(_) => "{}".into(),
    }
}

/// A string plain where no reader can mistake it, else a JSON string (valid YAML double-quoted).
fn yaml_scalar_str(s: &str) -> String {
    const WORDS: &[&str] = &["y", "n", "yes", "no", "on", "off", "true", "false", "null", "~"];
    let plain = s
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '/' || c == '_')
        && s.chars().all(|c| c.is_ascii_alphanumeric() || "-_./".contains(c))
        && !WORDS.contains(&s.to_ascii_lowercase().as_str())
        && !s.ends_with('.');
    if plain {
        s.to_string()
    } else {
        // a JSON string is a YAML double-quoted one; `\uXXXX` means the same in both
        compact_json(&Value::String(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn yaml_keeps_every_string_a_string() {
        let v = json!({
            "metadata": {"name": "namzu-ws-a", "annotations": {"a/b": "no", "d": "2026-01-01", "t": "2026-11-29T12:00:00Z",
                "n": "7", "e": "1e3", "y": "Y", "empty": "", "nl": "a\nb", "esc": "\u{1b}[31m"},
                "labels": {}},
            "items": [{"a": 1, "b": [true, null]}, "x", [], {"k": {"deep": [1.5]}}],
            "list": ["on", "plain-word"],
        });
        let text = yaml(&v);
        assert!(
            text.contains("a/b: \"no\"") && text.contains("d: \"2026-01-01\"") && text.contains("\"y\": \"Y\""),
            "{text}"
        );
        assert!(
            text.contains("name: namzu-ws-a\n") && text.contains("- plain-word\n"),
            "{text}"
        );
        let back: Value = serde_saphyr::from_str(&text).expect("valid YAML");
        assert_eq!(back, v, "{text}");
    }

    #[test]
    fn json_and_yaml_escape_what_readers_and_terminals_refuse() {
        let raw = "a\u{7f}b\u{85}c\u{9b}d\u{2028}e\u{2029}f\u{feff}g\u{fffe}h\u{ffff}i";
        let v = json!({raw: raw, "plain": "é ü \u{202e}"});
        let text = yaml(&v);
        assert!(!text.chars().any(escaped_in_data), "{text:?}");
        assert!(
            text.contains(r#""a\u007fb\u0085c\u009bd\u2028e\u2029f\ufeffg\ufffeh\uffffi""#),
            "{text}"
        );
        let back: Value = serde_saphyr::from_str(&text).expect("valid YAML");
        assert_eq!(back, v, "{text}");
        for text in [pretty_json(&v), compact_json(&v)] {
            assert!(!text.chars().any(escaped_in_data), "{text:?}");
            assert!(text.contains("é ü"), "{text}");
            let back: Value = serde_json::from_str(&text).expect("valid JSON");
            assert_eq!(back, v, "{text}");
        }
    }
}
