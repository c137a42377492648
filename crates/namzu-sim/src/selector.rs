//! `labelSelector` (`=`, `==`, `!=`, `in`, `notin`, exists, `!`exists) and `fieldSelector`.

use serde_json::Value;

#[derive(Debug, Clone, PartialEq)]
enum Req {
    Eq(String, String),
    Ne(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    NotExists(String),
}

/// A parsed label or field selector: all requirements must hold.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Selector(Vec<Req>);

/// Split on commas that are not inside `( … )`.
fn split_top(text: &str) -> Vec<&str> {
    let (mut out, mut depth, mut start) = (Vec::new(), 0, 0);
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&text[start..]);
    out
}

impl Selector {
    pub(crate) fn parse(text: &str) -> Result<Selector, String> {
        let mut reqs = Vec::new();
        for part in split_top(text).into_iter().map(str::trim).filter(|p| !p.is_empty()) {
            reqs.push(parse_req(part).ok_or_else(|| format!("unable to parse requirement: {part:?}"))?);
        }
        Ok(Selector(reqs))
    }

    /// Match against a label map (or a field map for field selectors).
    pub(crate) fn matches(&self, get: impl Fn(&str) -> Option<String>) -> bool {
        self.0.iter().all(|r| match r {
            Req::Eq(k, v) => get(k).as_deref() == Some(v.as_str()),
            Req::Ne(k, v) => get(k).as_deref() != Some(v.as_str()),
            Req::In(k, vs) => get(k).is_some_and(|x| vs.contains(&x)),
            Req::NotIn(k, vs) => get(k).is_none_or(|x| !vs.contains(&x)),
            Req::Exists(k) => get(k).is_some(),
            Req::NotExists(k) => get(k).is_none(),
        })
    }

    pub(crate) fn matches_labels(&self, obj: &Value) -> bool {
        let labels = obj.pointer("/metadata/labels");
        self.matches(|k| labels?.get(k)?.as_str().map(str::to_string))
    }

    /// Field selectors the sim supports: `metadata.name`, `metadata.namespace`,
    /// `involvedObject.*` (events), `status.phase`, `spec.nodeName`.
    pub(crate) fn matches_fields(&self, obj: &Value) -> bool {
        self.matches(|k| {
            let pointer = format!("/{}", k.replace('.', "/"));
            obj.pointer(&pointer).and_then(|v| match v {
                Value::String(s) => Some(s.clone()),
                Value::Null => None,
                other => Some(other.to_string()),
            })
        })
    }
}

fn set_values(text: &str) -> Option<Vec<String>> {
    let inner = text.trim().strip_prefix('(')?.strip_suffix(')')?;
    Some(
        inner
            .split(',')
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect(),
    )
}

fn parse_req(part: &str) -> Option<Req> {
    if let Some(key) = part.strip_prefix('!') {
        return Some(Req::NotExists(key.trim().to_string()));
    }
    if let Some((k, v)) = part.split_once("!=") {
        return Some(Req::Ne(k.trim().into(), v.trim().into()));
    }
    if let Some((k, v)) = part.split_once("==").or_else(|| part.split_once('=')) {
        return Some(Req::Eq(k.trim().into(), v.trim().into()));
    }
    if let Some((k, rest)) = part.split_once(" notin ") {
        return Some(Req::NotIn(k.trim().into(), set_values(rest)?));
    }
    if let Some((k, rest)) = part.split_once(" in ") {
        return Some(Req::In(k.trim().into(), set_values(rest)?));
    }
    let key = part.trim();
    (!key.contains(char::is_whitespace)).then(|| Req::Exists(key.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn label_operators() {
        let obj = json!({"metadata":{"labels":{"app":"a","tier":"web"}}});
        let m = |s: &str| Selector::parse(s).unwrap().matches_labels(&obj);
        assert!(m("app=a"));
        assert!(m("app==a,tier!=db"));
        assert!(m("tier in (web, db)"));
        assert!(!m("tier notin (web)"));
        assert!(m("app"));
        assert!(m("!missing"));
        assert!(!m("missing"));
        assert!(m("missing notin (x)"));
        assert!(!m("missing in (x)"));
        assert!(m(""));
    }

    #[test]
    fn fields() {
        let obj = json!({"metadata":{"name":"n"},"involvedObject":{"name":"x","kind":"Pod"}});
        assert!(
            Selector::parse("involvedObject.name=x,metadata.name=n")
                .unwrap()
                .matches_fields(&obj)
        );
        assert!(
            !Selector::parse("involvedObject.kind=Sandbox")
                .unwrap()
                .matches_fields(&obj)
        );
    }
}
