//! YAML for people and for YAML 1.1 readers alike (kubectl among them): `-o yaml` and the
//! TUI's YAML view print every string that could be read as something else quoted.

use serde_json::Value;

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
        Value::String(s.to_string()).to_string()
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
}
