//! Canonical JSON and `podTemplateHash`, byte-identical to JavaScript's
//! `JSON.stringify(canonical(JSON.parse(text)))` (docs/interop.md §6, tests/vectors/README.md).

use serde_json::{Map, Number, Value};
use sha2::{Digest, Sha256};
use std::cmp::Ordering;
use std::fmt::Write;

/// `sha256:` + lowercase hex over the canonical JSON of `value`.
pub fn pod_template_hash(value: &Value) -> String {
    let digest = Sha256::digest(canonical_json(value).as_bytes());
    let mut out = String::with_capacity(7 + 64);
    out.push_str("sha256:");
    for b in digest {
        let _ = write!(out, "{b:02x}");
    }
    out
}

/// Keys sorted by UTF-16 code units, recursively; then serialised as JS would enumerate them.
pub fn canonical_json(value: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, value);
    out
}

fn write_value(out: &mut String, value: &Value) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&js_number(n)),
        Value::String(s) => write_string(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(out, item);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (key, member)) in js_key_order(map).into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(out, key);
                out.push(':');
                write_value(out, member);
            }
            out.push('}');
        }
    }
}

/// A JS object enumerates array-index keys (canonical decimal ≤ 2^32−2) first, ascending
/// numerically, then the rest in insertion order — which canonicalisation made UTF-16 order.
fn js_key_order(map: &Map<String, Value>) -> Vec<(&String, &Value)> {
    let mut entries: Vec<_> = map.iter().collect();
    entries.sort_by(|(a, _), (b, _)| match (array_index(a), array_index(b)) {
        (Some(x), Some(y)) => x.cmp(&y),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => a.encode_utf16().cmp(b.encode_utf16()),
    });
    entries
}

fn array_index(key: &str) -> Option<u32> {
    let canonical = key == "0" || (!key.is_empty() && !key.starts_with('0') && key.bytes().all(|b| b.is_ascii_digit()));
    if !canonical || key.len() > 10 {
        return None;
    }
    key.parse::<u64>()
        .ok()
        .filter(|n| *n <= 4_294_967_294)
        .map(|n| n as u32)
}

/// `JSON.stringify`'s escaping: the short escapes, `\u00xx` below U+0020, everything else as is.
fn write_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// ECMAScript Number::toString of the double the JSON number parses to.
pub(crate) fn js_number(n: &Number) -> String {
    // JSON.parse reads every number as a double, integers beyond 2^53 included
    let x = n.as_f64().unwrap_or(f64::NAN);
    js_double(x)
}

fn js_double(x: f64) -> String {
    if !x.is_finite() {
        return "null".to_string(); // JSON.stringify of NaN/Infinity
    }
    if x == 0.0 {
        return "0".to_string(); // -0 too
    }
    // `{:e}` gives the shortest round-trip digits: "-1.5e-7"
    let sci = format!("{:e}", x.abs());
    let (mantissa, exp) = sci.split_once('e').expect("LowerExp has an exponent");
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let k = digits.len() as i32;
    let n = exp.parse::<i32>().expect("exponent is an integer") + 1;
    let mut out = String::new();
    if x < 0.0 {
        out.push('-');
    }
    if k <= n && n <= 21 {
        out.push_str(&digits);
        out.extend(std::iter::repeat_n('0', (n - k) as usize));
    } else if 0 < n && n <= 21 {
        out.push_str(&digits[..n as usize]);
        out.push('.');
        out.push_str(&digits[n as usize..]);
    } else if -6 < n && n <= 0 {
        out.push_str("0.");
        out.extend(std::iter::repeat_n('0', (-n) as usize));
        out.push_str(&digits);
    } else {
        out.push_str(&digits[..1]);
        if k > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        let e = n - 1;
        let _ = write!(out, "e{}{}", if e >= 0 { "+" } else { "-" }, e.abs());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_as_javascript_writes_them() {
        let cases = [
            (30.0, "30"),
            (1e3, "1000"),
            (1.5e-7, "1.5e-7"),
            (2.5e21, "2.5e+21"),
            (-0.0, "0"),
            (9007199254740993.0, "9007199254740992"),
            (0.000001, "0.000001"),
            (1e-7, "1e-7"),
            (1e21, "1e+21"),
            (1e20, "100000000000000000000"),
            (-12.5, "-12.5"),
            (0.1, "0.1"),
            (123.456, "123.456"),
        ];
        for (x, want) in cases {
            assert_eq!(js_double(x), want, "{x}");
        }
    }

    #[test]
    fn index_keys_first() {
        let v: Value = serde_json::from_str(r#"{"a":1,"10":2,"9":3,"01":4}"#).unwrap();
        assert_eq!(canonical_json(&v), r#"{"9":3,"10":2,"01":4,"a":1}"#);
        let big: Value = serde_json::from_str(r#"{"4294967295":1,"4294967294":2}"#).unwrap();
        assert_eq!(canonical_json(&big), r#"{"4294967294":2,"4294967295":1}"#);
    }

    #[test]
    fn escapes() {
        let v = Value::String("\"\\\u{8}\u{c}\n\r\t\u{1}\u{7f}\u{2028}é".into());
        assert_eq!(canonical_json(&v), "\"\\\"\\\\\\b\\f\\n\\r\\t\\u0001\u{7f}\u{2028}é\"");
    }
}
