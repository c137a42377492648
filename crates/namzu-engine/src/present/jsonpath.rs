//! kubectl's JSONPath templates (`-o jsonpath=…`) and custom columns (`-o custom-columns=…`),
//! written for this tool: no crate implements kubectl's dialect (its `{range}…{end}` blocks,
//! `{"\n"}` literals, escaped dots in keys, `[?(@.x=="y")]` filters, results joined by spaces).
//! A test runs the same templates through this module and through kubectl on the same objects.

use serde_json::Value;

/// A parsed template: literal text, expressions and `{range}` blocks.
#[derive(Debug, Clone, PartialEq)]
pub struct Template(Vec<Node>);

#[derive(Debug, Clone, PartialEq)]
enum Node {
    Text(String),
    Path(Vec<Step>),
    Range(Vec<Step>, Vec<Node>),
}

#[derive(Debug, Clone, PartialEq)]
enum Step {
    /// `$`: the whole document, even inside a range.
    Root,
    /// `.name`: one field.
    Child(String),
    /// `..name` or `..*`: every field of that name below, at any depth.
    Descend(Option<String>),
    /// `.*`: every value of an object or array.
    Wildcard,
    /// `[*]`: every element of an array (anything else is an error, as in kubectl).
    Elements,
    /// `[i]`, `[i,j]`: elements (negative counts from the end).
    Indices(Vec<i64>),
    /// `['a','b.c']`: a union of paths, each run over every value found so far.
    Union(Vec<Vec<Step>>),
    /// `[start:end:step]`.
    Slice(Option<i64>, Option<i64>, Option<i64>),
    /// `[?(@.path op literal)]` or `[?(@.path)]`.
    Filter(Vec<Step>, Option<(Op, Value)>),
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Op {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

/// The deepest a template nests: `{range}` blocks within each other, and filters or unions
/// within a path. Deeper is refused when parsed (parsing and running recurse that deep).
pub const MAX_DEPTH: usize = 64;

/// The most text one template run may produce: a template that would print more (a range over
/// every value within a range over every value) is an error, not gigabytes held in memory.
pub(crate) const MAX_OUTPUT: usize = 256 << 20;

/// Why a template cannot be parsed or run: kubectl's words, one line — the template and the
/// reason each cut to [`MAX_ECHO`] characters (a 192 KB template is not echoed whole).
fn bad(template: &str, why: impl std::fmt::Display) -> String {
    format!(
        "error parsing jsonpath {}, {}",
        elided(template),
        elided(&why.to_string())
    )
}

/// The most characters of a template (or of a part of it) an error echoes.
pub(crate) const MAX_ECHO: usize = 120;

/// `text` whole if it is short, else its first [`MAX_ECHO`] characters and how much was left out.
fn elided(text: &str) -> String {
    match text.char_indices().nth(MAX_ECHO) {
        None => text.to_string(),
        Some((cut, _)) => format!("{}… ({} more bytes)", &text[..cut], text.len() - cut),
    }
}

impl Template {
    /// Parse kubectl's template syntax.
    pub fn parse(template: &str) -> Result<Template, String> {
        let mut stack: Vec<(Option<Vec<Step>>, Vec<Node>)> = vec![(None, Vec::new())];
        let mut rest = template;
        while !rest.is_empty() {
            let Some(open) = rest.find('{') else {
                stack.last_mut().expect("a frame").1.push(Node::Text(rest.to_string()));
                break;
            };
            if open > 0 {
                stack
                    .last_mut()
                    .expect("a frame")
                    .1
                    .push(Node::Text(rest[..open].to_string()));
            }
            let inner_start = open + 1;
            let close = find_close(&rest[inner_start..]).ok_or_else(|| bad(template, "unclosed action"))? + inner_start;
            if rest[close..].starts_with('{') {
                return Err(bad(template, "unrecognized character in action: U+007B '{'"));
            }
            let action = rest[inner_start..close].trim();
            rest = &rest[close + 1..];
            if let Some(path) = action.strip_prefix("range ") {
                if stack.len() > MAX_DEPTH {
                    return Err(bad(template, format!("ranges nested deeper than {MAX_DEPTH}")));
                }
                stack.push((Some(parse_path(path.trim()).map_err(|e| bad(template, e))?), Vec::new()));
            } else if action == "end" {
                let (range, body) = stack.pop().expect("a frame");
                let Some(path) = range else {
                    return Err(bad(template, "not in range, nothing to end"));
                };
                stack
                    .last_mut()
                    .ok_or_else(|| bad(template, "not in range, nothing to end"))?
                    .1
                    .push(Node::Range(path, body));
            } else if action.starts_with('"') || action.starts_with('\'') {
                stack
                    .last_mut()
                    .expect("a frame")
                    .1
                    .push(Node::Text(unquote(action).map_err(|e| bad(template, e))?));
            } else {
                stack
                    .last_mut()
                    .expect("a frame")
                    .1
                    .push(Node::Path(parse_path(action).map_err(|e| bad(template, e))?));
            }
        }
        if stack.len() != 1 {
            return Err(bad(template, "range without an end"));
        }
        Ok(Template(stack.pop().expect("the root").1))
    }

    /// Run the template on `data`. A path that finds nothing prints nothing, unless
    /// `allow_missing` is false, when it is kubectl's "is not found" error.
    pub fn render(&self, data: &Value, allow_missing: bool) -> Result<String, String> {
        let mut out = String::new();
        render_nodes(&self.0, data, data, allow_missing, &mut out)?;
        if out.len() > MAX_OUTPUT {
            return Err(too_much());
        }
        Ok(out)
    }

    /// The values one `{path}` template finds (custom columns).
    pub(crate) fn values<'a>(&self, data: &'a Value) -> Vec<&'a Value> {
        match self.0.as_slice() {
            [Node::Path(steps)] => eval(steps, data, data).unwrap_or_default(),
            _ => Vec::new(),
        }
    }
}

/// The `}` closing an action, skipping quoted strings.
fn find_close(text: &str) -> Option<usize> {
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for (i, c) in text.char_indices() {
        match (quote, c) {
            (Some(_), '\\') if !escaped => escaped = true,
            (Some(q), c) if c == q && !escaped => quote = None,
            (Some(_), _) => escaped = false,
            (None, '"' | '\'') => quote = Some(c),
            (None, '}') => return Some(i),
            // a `{` inside an action ends it here, for the path parser to refuse
            (None, '{') => return Some(i),
            _ => {}
        }
    }
    None
}

/// A quoted literal with Go's escapes (`\n`, `\t`, `\"`, `\\`).
fn unquote(text: &str) -> Result<String, String> {
    let q = text.chars().next().unwrap_or('"');
    let inner = text
        .strip_prefix(q)
        .and_then(|t| t.strip_suffix(q))
        .ok_or_else(|| format!("unterminated string {text}"))?;
    let mut out = String::new();
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some(other) => out.push(other),
            None => out.push('\\'),
        }
    }
    Ok(out)
}

fn parse_path(text: &str) -> Result<Vec<Step>, String> {
    parse_path_in(text, 0)
}

/// A path `depth` filters or unions deep.
fn parse_path_in(text: &str, depth: usize) -> Result<Vec<Step>, String> {
    if depth > MAX_DEPTH {
        return Err(format!("filters nested deeper than {MAX_DEPTH}"));
    }
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    // `$` names the document, `@` the current item (what a path starts from anyway)
    let mut steps = Vec::new();
    match chars.first() {
        Some('$') => {
            steps.push(Step::Root);
            i = 1;
        }
        Some('@') => i = 1,
        _ => {}
    }
    while i < chars.len() {
        match chars[i] {
            '.' if chars.get(i + 1) == Some(&'.') => {
                i += 2;
                let (name, next) = read_name(&chars, i);
                i = next;
                steps.push(Step::Descend((name != "*" && !name.is_empty()).then_some(name)));
            }
            '.' => {
                let (name, next) = read_name(&chars, i + 1);
                i = next;
                match name.as_str() {
                    "" => {}
                    "*" => steps.push(Step::Wildcard),
                    _ => steps.push(Step::Child(name)),
                }
            }
            '[' => {
                let close = matching_bracket(&chars, i).ok_or_else(|| format!("unterminated array in {text}"))?;
                let inside: String = chars[i + 1..close].iter().collect();
                steps.push(parse_bracket(inside.trim(), depth)?);
                i = close + 1;
            }
            // a bare name is a field only where a path starts, as `{kind}`
            c if i == 0 && !c.is_whitespace() && !"{},".contains(c) => {
                let (name, next) = read_name(&chars, i);
                steps.push(Step::Child(name));
                i = next;
            }
            c if c.is_whitespace() => {
                let (word, _) = read_name(&chars, i + 1);
                return Err(if word.is_empty() {
                    "unrecognized character in action: U+0020 ' '".into()
                } else {
                    format!("unrecognized identifier {word}")
                });
            }
            c => return Err(format!("unrecognized character in action: U+{:04X} '{c}'", c as u32)),
        }
    }
    Ok(steps)
}

/// A field name up to the next `.`, `[` or end; `\.` is a dot inside the name.
fn read_name(chars: &[char], mut i: usize) -> (String, usize) {
    let mut name = String::new();
    while i < chars.len() {
        match chars[i] {
            '\\' if chars.get(i + 1) == Some(&'.') => {
                name.push('.');
                i += 2;
            }
            '.' | '[' | ',' | '{' | '}' => break,
            c if c.is_whitespace() => break,
            c => {
                name.push(c);
                i += 1;
            }
        }
    }
    (name, i)
}

fn matching_bracket(chars: &[char], open: usize) -> Option<usize> {
    let (mut depth, mut quote) = (0, None);
    for (i, c) in chars.iter().enumerate().skip(open) {
        match (quote, *c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(*c),
            (None, '[') => depth += 1,
            (None, ']') => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

fn parse_bracket(inside: &str, depth: usize) -> Result<Step, String> {
    if inside == "*" {
        return Ok(Step::Elements);
    }
    if let Some(filter) = inside.strip_prefix('?') {
        let expr = filter
            .trim()
            .strip_prefix('(')
            .and_then(|f| f.strip_suffix(')'))
            .ok_or_else(|| format!("unrecognized filter {inside}"))?;
        return parse_filter(expr.trim(), depth + 1);
    }
    if inside.starts_with('\'') {
        let paths = split_top(inside, ',')
            .iter()
            .map(|n| unquote(n.trim()).and_then(|name| parse_path_in(&format!(".{name}"), depth + 1)))
            .collect::<Result<Vec<_>, _>>()?;
        return Ok(Step::Union(paths));
    }
    if inside.contains(':') {
        let parts: Vec<&str> = inside.split(':').collect();
        let num = |s: &str| -> Result<Option<i64>, String> {
            let s = s.trim();
            if s.is_empty() {
                Ok(None)
            } else {
                s.parse().map(Some).map_err(|_| format!("invalid array index {s}"))
            }
        };
        let step = num(parts.get(2).copied().unwrap_or(""))?;
        if step.is_some_and(|s| s <= 0) {
            return Err("step must be > 0".into());
        }
        return Ok(Step::Slice(
            num(parts[0])?,
            num(parts.get(1).copied().unwrap_or(""))?,
            step,
        ));
    }
    inside
        .split(',')
        .map(|s| s.trim().parse::<i64>().map_err(|_| format!("invalid array index {s}")))
        .collect::<Result<Vec<_>, _>>()
        .map(Step::Indices)
}

/// Split at `sep` outside quotes.
fn split_top(text: &str, sep: char) -> Vec<String> {
    let (mut out, mut cur, mut quote) = (Vec::new(), String::new(), None);
    for c in text.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => {
                quote = None;
                cur.push(c);
            }
            (None, '\'' | '"') => {
                quote = Some(c);
                cur.push(c);
            }
            (None, c) if c == sep => out.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    out.push(cur);
    out
}

fn parse_filter(expr: &str, depth: usize) -> Result<Step, String> {
    for (token, op) in [
        ("==", Op::Eq),
        ("!=", Op::Ne),
        ("<=", Op::Le),
        (">=", Op::Ge),
        ("<", Op::Lt),
        (">", Op::Gt),
    ] {
        if let Some((left, right)) = expr.split_once(token) {
            let path = parse_path_in(left.trim(), depth)?;
            let right = right.trim();
            let literal = if right.starts_with('"') || right.starts_with('\'') {
                Value::String(unquote(right)?)
            } else {
                serde_json::from_str(right).map_err(|_| format!("invalid filter literal {right}"))?
            };
            return Ok(Step::Filter(path, Some((op, literal))));
        }
    }
    Ok(Step::Filter(parse_path_in(expr, depth)?, None))
}

fn eval<'a>(steps: &[Step], root: &'a Value, current: &'a Value) -> Result<Vec<&'a Value>, String> {
    let mut found = vec![current];
    for step in steps {
        let mut next = Vec::new();
        match step {
            Step::Root => next.push(root),
            // kubectl runs each member of a union over every value, one member after the other
            Step::Union(paths) => {
                for path in paths {
                    for v in &found {
                        next.extend(eval(path, root, v)?);
                    }
                }
            }
            _ => {
                for v in found {
                    apply(step, v, &mut next)?;
                }
            }
        }
        found = next;
    }
    Ok(found)
}

/// What kubectl calls a value in its errors.
fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Object(_) => "map",
        Value::Array(_) => "slice",
        Value::String(_) => "string",
        Value::Number(_) => "number",
        Value::Bool(_) => "bool",
        Value::Null => "nil",
    }
}

fn apply<'a>(step: &Step, v: &'a Value, out: &mut Vec<&'a Value>) -> Result<(), String> {
    let items = |v: &'a Value| match v {
        Value::Array(items) => Ok(items),
        other => Err(format!("{} is not array or slice", kind_of(other))),
    };
    match step {
        Step::Child(name) => out.extend(v.get(name)),
        Step::Wildcard => match v {
            Value::Array(items) => out.extend(items.iter()),
            Value::Object(map) => out.extend(map.values()),
            _ => {}
        },
        Step::Elements => out.extend(items(v)?.iter()),
        Step::Descend(name) => descend(v, name.as_deref(), out),
        Step::Union(_) | Step::Root => unreachable!("run over the whole set, in eval"),
        Step::Indices(indices) => {
            let list = items(v)?;
            let len = list.len() as i64;
            for i in indices {
                let at = if *i < 0 { len + i } else { *i };
                if !(0..len).contains(&at) {
                    return Err(format!("array index out of bounds: index {i}, length {len}"));
                }
                out.push(&list[at as usize]);
            }
        }
        Step::Slice(start, end, step) => {
            let list = items(v)?;
            let len = list.len() as i64;
            let clamp = |x: i64| if x < 0 { (len + x).max(0) } else { x.min(len) };
            let (from, to) = (clamp(start.unwrap_or(0)), clamp(end.unwrap_or(len)));
            let by = step.unwrap_or(1) as usize;
            if from < to {
                out.extend(list[from as usize..to as usize].iter().step_by(by));
            }
        }
        Step::Filter(path, test) => {
            let candidates: Vec<&Value> = match v {
                Value::Array(items) => items.iter().collect(),
                other => vec![other],
            };
            for item in candidates {
                let found = eval(path, item, item)?;
                let keep = match test {
                    // a null is no value, as client-go's filter reads it: `?(@.diagnosis)` keeps
                    // the rows that have one, not every row whose field is written as null
                    None => found.iter().any(|f| !f.is_null()),
                    Some((op, literal)) => {
                        let mut any = false;
                        for f in &found {
                            any |= compare(f, *op, literal)?;
                        }
                        any
                    }
                };
                if keep {
                    out.push(item);
                }
            }
        }
    }
    Ok(())
}

fn descend<'a>(v: &'a Value, name: Option<&str>, out: &mut Vec<&'a Value>) {
    match v {
        Value::Object(map) => {
            for (k, child) in map {
                if name.is_none_or(|n| n == k) {
                    out.push(child);
                }
                descend(child, name, out);
            }
        }
        Value::Array(items) => {
            for child in items {
                if name.is_none() {
                    out.push(child);
                }
                descend(child, name, out);
            }
        }
        _ => {}
    }
}

/// A filter's comparison, with kubectl's errors for values of different types (null included).
fn compare(left: &Value, op: Op, right: &Value) -> Result<bool, String> {
    use std::cmp::Ordering;
    let ordering = match (left, right) {
        (Value::Number(a), Value::Number(b)) => a.as_f64().partial_cmp(&b.as_f64()),
        (Value::String(a), Value::String(b)) => Some(a.cmp(b)),
        (Value::Bool(a), Value::Bool(b)) if matches!(op, Op::Eq | Op::Ne) => Some(a.cmp(b)),
        (a, b) if matches!(op, Op::Eq | Op::Ne) => {
            return Err(format!(
                "incompatible types for comparison: {} and {}",
                kind_of(a),
                kind_of(b)
            ));
        }
        (a, _) => return Err(format!("invalid type for comparison: {}", kind_of(a))),
    };
    Ok(match (op, ordering) {
        (Op::Eq, o) => o == Some(Ordering::Equal),
        (Op::Ne, o) => o != Some(Ordering::Equal),
        (Op::Lt, Some(o)) => o.is_lt(),
        (Op::Le, Some(o)) => o.is_le(),
        (Op::Gt, Some(o)) => o.is_gt(),
        (Op::Ge, Some(o)) => o.is_ge(),
        _ => false,
    })
}

/// A value as kubectl prints it in a template: strings raw, everything else as JSON.
pub(crate) fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        // Go's encoding/json, which kubectl prints with, sorts object keys
        other => namzu_domain::canonical::canonical_json(other),
    }
}

fn render_nodes(
    nodes: &[Node],
    root: &Value,
    current: &Value,
    allow_missing: bool,
    out: &mut String,
) -> Result<(), String> {
    for node in nodes {
        if out.len() > MAX_OUTPUT {
            return Err(too_much());
        }
        match node {
            Node::Text(t) => out.push_str(t),
            Node::Path(steps) => {
                let found = eval(steps, root, current)?;
                if found.is_empty() && !allow_missing && !steps.is_empty() {
                    return Err(format!("{} is not found", first_missing(steps, root, current)));
                }
                // each value straight into the output, none copied twice
                for (i, v) in found.iter().enumerate() {
                    if i > 0 {
                        out.push(' ');
                    }
                    match v {
                        Value::String(s) => out.push_str(s),
                        other => out.push_str(&text(other)),
                    }
                    if out.len() > MAX_OUTPUT {
                        return Err(too_much());
                    }
                }
            }
            Node::Range(steps, body) => {
                let found = eval(steps, root, current)?;
                if found.is_empty() && !allow_missing {
                    return Err(format!("{} is not found", first_missing(steps, root, current)));
                }
                for item in found {
                    render_nodes(body, root, item, allow_missing, out)?;
                }
            }
        }
    }
    Ok(())
}

fn too_much() -> String {
    format!("the output is larger than {} MiB: not printed", MAX_OUTPUT >> 20)
}

/// The first segment of `steps` that finds nothing, as kubectl names it in "X is not found"
/// (`{.metadata.nope.x}` → `nope`); a step that is not a name is named by the last name before it.
fn first_missing(steps: &[Step], root: &Value, current: &Value) -> String {
    (1..=steps.len())
        .find(|&i| eval(&steps[..i], root, current).is_ok_and(|found| found.is_empty()))
        .map_or_else(|| describe(steps), |i| describe(&steps[..i]))
}

fn describe(steps: &[Step]) -> String {
    steps
        .iter()
        .rev()
        .find_map(|s| match s {
            Step::Child(n) => Some(n.clone()),
            _ => None,
        })
        .unwrap_or_else(|| "the path".into())
}

/// `-o custom-columns=HEADER:PATH,…`: the headers and one template per column. A path is
/// kubectl's relaxed form: `.a.b`, `{.a.b}` or `a.b`.
pub fn parse_columns(spec: &str) -> Result<Vec<(String, Template)>, String> {
    let columns: Vec<&str> = spec.split(',').filter(|c| !c.is_empty()).collect();
    if columns.is_empty() {
        return Err("custom-columns format specified but no custom columns given".into());
    }
    columns
        .iter()
        .map(|c| {
            let (header, path) = c
                .split_once(':')
                .ok_or_else(|| format!("unexpected custom-columns spec: {c}, expected <header>:<json-path-expr>"))?;
            Ok((header.to_string(), relaxed(path)?))
        })
        .collect()
}

/// `-o custom-columns-file=FILE`: headers on the first line, paths on the second.
pub fn parse_columns_file(text: &str) -> Result<Vec<(String, Template)>, String> {
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let (Some(headers), Some(paths)) = (lines.next(), lines.next()) else {
        return Err("custom-columns file must have a line of headers and a line of paths".into());
    };
    let (headers, paths): (Vec<&str>, Vec<&str>) =
        (headers.split_whitespace().collect(), paths.split_whitespace().collect());
    if headers.len() != paths.len() {
        return Err(format!(
            "expected {} paths for {} headers, got {}",
            headers.len(),
            headers.len(),
            paths.len()
        ));
    }
    headers
        .iter()
        .zip(paths)
        .map(|(h, p)| Ok((h.to_string(), relaxed(p)?)))
        .collect()
}

fn relaxed(path: &str) -> Result<Template, String> {
    let inner = path.trim().trim_start_matches('{').trim_end_matches('}');
    let inner = if inner.starts_with('.') || inner.starts_with('$') {
        inner.to_string()
    } else {
        format!(".{inner}")
    };
    Template::parse(&format!("{{{inner}}}"))
}

/// One custom-columns cell: every value found, joined by commas; `<none>` when none is.
pub fn column_cell(template: &Template, item: &Value) -> String {
    let found = template.values(item);
    if found.is_empty() {
        "<none>".into()
    } else {
        found
            .iter()
            .map(|v| if v.is_null() { "<nil>".to_string() } else { text(v) })
            .collect::<Vec<_>>()
            .join(",")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(template: &str, data: &Value) -> String {
        Template::parse(template).unwrap().render(data, true).unwrap()
    }

    /// The examples of kubectl's JSONPath reference, on its own example document.
    #[test]
    fn kubectls_documented_examples() {
        let doc = json!({
          "kind": "List",
          "items":[
            {"kind":"None","metadata":{"name":"127.0.0.1","labels":{"kubernetes.io/hostname":"127.0.0.1"}},
             "status":{"capacity":{"cpu":"4"},"addresses":[{"type": "LegacyHostIP", "address":"127.0.0.1"}]}},
            {"kind":"None","metadata":{"name":"127.0.0.2"},
             "status":{"capacity":{"cpu":"8"},"addresses":[{"type": "LegacyHostIP", "address":"127.0.0.2"}, {"type": "another", "address":"127.0.0.3"}]}}
          ],
          "users":[{"name": "myself", "user": {}}, {"name": "e2e", "user": {"username": "admin", "password": "secret"}}]
        });
        assert_eq!(run("{.kind}", &doc), "List");
        assert_eq!(run("{['kind']}", &doc), "List");
        assert_eq!(run("{..name}", &doc), "127.0.0.1 127.0.0.2 myself e2e");
        assert_eq!(run("{.items[*].metadata.name}", &doc), "127.0.0.1 127.0.0.2");
        assert_eq!(run("{.users[0].name}", &doc), "myself");
        assert_eq!(run("{.users[-1:].name}", &doc), "e2e");
        assert_eq!(run("{.items[0]['metadata.name']}", &doc), "127.0.0.1");
        assert_eq!(run("{.items[0]['kind']}", &doc), "None");
        assert_eq!(run("{.users[?(@.name==\"e2e\")].user.password}", &doc), "secret");
        assert_eq!(
            run("{.items[*]['metadata.name', 'status.capacity']}", &doc),
            "127.0.0.1 127.0.0.2 {\"cpu\":\"4\"} {\"cpu\":\"8\"}"
        );
        assert_eq!(
            run("{range .items[*]}[{.metadata.name}, {.status.capacity}] {end}", &doc),
            "[127.0.0.1, {\"cpu\":\"4\"}] [127.0.0.2, {\"cpu\":\"8\"}] "
        );
        assert_eq!(
            run("{.items[0].metadata.labels.kubernetes\\.io/hostname}", &doc),
            "127.0.0.1"
        );
        assert_eq!(
            run("{range .items[*]}{.metadata.name}{\"\\t\"}{end}", &doc),
            "127.0.0.1\t127.0.0.2\t"
        );
        assert_eq!(
            run("{.items[*].status.addresses[?(@.type==\"another\")].address}", &doc),
            "127.0.0.3"
        );
    }

    #[test]
    fn missing_keys_and_bad_templates() {
        let t = Template::parse("{.nope}").unwrap();
        assert_eq!(t.render(&json!({}), true).unwrap(), "");
        assert_eq!(t.render(&json!({}), false).unwrap_err(), "nope is not found");
        // the first segment that finds nothing is named, as kubectl names it
        let deep = Template::parse("{.metadata.nope.x}").unwrap();
        assert_eq!(
            deep.render(&json!({"metadata": {"name": "a"}}), false).unwrap_err(),
            "nope is not found"
        );
        for bad in [
            "{.a",
            "{range .a}",
            "{end}",
            "{.a[x]}",
            "{.a b}",
            "{.a,b}",
            "{,}",
            "{{}",
            "{.a{.b}}",
            "{.a[::-1]}",
            "{.a[::0]}",
            r#"{.a["x","y"]}"#,
        ] {
            assert!(Template::parse(bad).is_err(), "{bad}");
        }
    }

    /// kubectl's execution errors: a missing key may be allowed, these never are.
    #[test]
    fn execution_errors_as_kubectl() {
        let doc = json!({"items": [{"n": 1, "s": "x", "m": {"a": 1}}, {"n": null}]});
        for (template, error) in [
            ("{.items[5].n}", "array index out of bounds: index 5, length 2"),
            ("{.items[0].m[*]}", "map is not array or slice"),
            ("{.items[0].s[0]}", "string is not array or slice"),
            ("{.items[?(@.n>0)].n}", "invalid type for comparison: nil"),
            (
                r#"{.items[?(@.n=="1")].n}"#,
                "incompatible types for comparison: number and string",
            ),
        ] {
            assert_eq!(
                Template::parse(template).unwrap().render(&doc, true).unwrap_err(),
                error,
                "{template}"
            );
        }
        assert_eq!(run("{.items[0].m}", &doc), r#"{"a":1}"#);
        assert_eq!(run("{.items[0].*}", &doc), r#"1 x {"a":1}"#);
        assert_eq!(run("{range .items[0:1]}{.s}/{$.items[1].n}{end}", &doc), "x/null");
    }

    #[test]
    fn custom_columns() {
        let columns = parse_columns("ID:.id,EPOCH:{.holderEpoch.value},NODE:pod.node").unwrap();
        let item = json!({"id": "alpha", "holderEpoch": {"value": 7}});
        let cells: Vec<String> = columns.iter().map(|(_, t)| column_cell(t, &item)).collect();
        assert_eq!(cells, ["alpha", "7", "<none>"]);
        assert!(parse_columns("ID").is_err());
        let file = parse_columns_file("ID STATE\n.id .state\n").unwrap();
        assert_eq!(file.len(), 2);
    }
}
