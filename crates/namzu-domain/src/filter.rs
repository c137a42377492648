//! The TUI's filter grammar: words that match any visible column, and field terms that mean
//! what the CLI's selectors mean (`state:Error` is `--state Error`, `drift:drifted` is
//! `--drift drifted`, `diag:crash-loop` is `--diagnosis crash-loop`), plus `ctx:` and `ns:` globs;
//! `!` before a term negates it. Every term must hold. Pure: the caller gives the clock.
//!
//! Grammar (terms separated by spaces):
//! - `word` — any visible column contains it (case-insensitive): workspace, namespace, context,
//!   mode, state, template, drift, diagnosis, epoch, and the labels (`key=value`).
//! - `state:V[,V…]`, `drift:V[,V…]`, `diag:V[,V…]` — the CLI's values; a value that is no exact
//!   name stands for every name it starts with (`diag:crash` is `crash-loop`, `state:sus` is
//!   Suspended and Suspending).
//! - `mode:V`, `tmpl:V` — the mode or template contains V.
//! - `ctx:GLOB`, `ns:GLOB` — the context or namespace matches (`*` any run, `?` one character).
//! - `!term` — the term does not hold.

use super::columns::{Column, cell};
use super::diagnosis::DiagnosisKind;
use super::drift::DriftState;
use super::select::Filter;
pub use super::select::is_problem;
use super::state::State;
use super::workspace::Workspace;
use chrono::{DateTime, Utc};

/// One term of a query.
#[derive(Debug, Clone, PartialEq)]
enum Test {
    /// Any visible column contains it (lower-cased).
    Text(String),
    /// The CLI's own filter: states, drifts, diagnoses.
    Select(Filter),
    Mode(String),
    Template(String),
    Context(String),
    Namespace(String),
}

#[derive(Debug, Clone, PartialEq)]
struct Term {
    negate: bool,
    test: Test,
}

/// A parsed filter: every term must hold; an empty query shows every row.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Query {
    terms: Vec<Term>,
}

/// Names that start with `value` (or the one equal to it, ignoring case).
fn named<T: Copy>(value: &str, all: &[T], name: impl Fn(T) -> &'static str, what: &str) -> Result<Vec<T>, String> {
    let mut out = Vec::new();
    for v in value.split(',').filter(|v| !v.is_empty()) {
        let lower = v.to_lowercase();
        let exact: Vec<T> = all
            .iter()
            .copied()
            .filter(|t| name(*t).to_lowercase() == lower)
            .collect();
        let found = if exact.is_empty() {
            all.iter()
                .copied()
                .filter(|t| name(*t).to_lowercase().starts_with(&lower))
                .collect()
        } else {
            exact
        };
        if found.is_empty() {
            let names: Vec<&str> = all.iter().map(|t| name(*t)).collect();
            return Err(format!("unknown {what} {v:?}; one of: {}", names.join(", ")));
        }
        out.extend(found);
    }
    if out.is_empty() {
        return Err(format!("{what}: needs a value"));
    }
    Ok(out)
}

impl Query {
    /// The query `text` says; a field term with a value no name fits is an error, in words.
    pub fn parse(text: &str) -> Result<Query, String> {
        let mut terms = Vec::new();
        for word in text.split_whitespace() {
            let (negate, word) = match word.strip_prefix('!') {
                Some(rest) => (true, rest),
                None => (false, word),
            };
            if word.is_empty() {
                continue;
            }
            let test = match word.split_once(':') {
                Some(("state", v)) => Test::Select(Filter {
                    states: named(v, &State::ALL, State::as_str, "state")?,
                    ..Default::default()
                }),
                Some(("drift", v)) => Test::Select(Filter {
                    drifts: named(v, &DriftState::ALL, DriftState::as_str, "drift")?,
                    ..Default::default()
                }),
                Some(("diag" | "diagnosis", v)) => Test::Select(Filter {
                    diagnoses: named(v, &DiagnosisKind::ALL, DiagnosisKind::as_str, "diagnosis")?,
                    ..Default::default()
                }),
                Some(("mode", v)) => Test::Mode(v.to_lowercase()),
                Some(("tmpl" | "template", v)) => Test::Template(v.to_lowercase()),
                Some(("ctx" | "context", v)) => Test::Context(v.to_string()),
                Some(("ns" | "namespace", v)) => Test::Namespace(v.to_string()),
                _ => Test::Text(word.to_lowercase()),
            };
            terms.push(Term { negate, test });
        }
        Ok(Query { terms })
    }

    /// Every term holds for `w`; `context_shown`: rows name their context (a fleet), so a word
    /// matches it too.
    pub fn matches(&self, w: &Workspace, now: DateTime<Utc>, context_shown: bool) -> bool {
        self.terms
            .iter()
            .all(|t| t.test.holds(w, now, context_shown) != t.negate)
    }
}

impl Test {
    fn holds(&self, w: &Workspace, now: DateTime<Utc>, context_shown: bool) -> bool {
        match self {
            Test::Text(needle) => {
                // cell by cell, the first that holds the word ends it: a filter typed over
                // 50,000 rows is a pass per key
                const COLUMNS: [Column; 8] = [
                    Column::Workspace,
                    Column::Namespace,
                    Column::Mode,
                    Column::State,
                    Column::Epoch,
                    Column::Template,
                    Column::Drift,
                    Column::Diagnosis,
                ];
                let context = context_shown.then_some(Column::Context);
                COLUMNS
                    .iter()
                    .chain(context.iter())
                    .any(|c| contains_folded(&cell(w, *c, now), needle))
                    || w.labels
                        .iter()
                        .any(|(k, v)| contains_folded(&format!("{k}={v}"), needle))
            }
            Test::Select(f) => f.matches(w, now),
            Test::Mode(v) => w.mode.as_str().to_lowercase().contains(v),
            Test::Template(v) => w.template.as_deref().unwrap_or("").to_lowercase().contains(v),
            Test::Context(g) => glob(g, w.context.as_deref().unwrap_or("")),
            Test::Namespace(g) => glob(g, &w.namespace),
        }
    }
}

/// `hay` holds `needle` (already lower case), ignoring case; ASCII (every cell but a label's
/// value, mostly) is compared in place, without a lower-cased copy.
fn contains_folded(hay: &str, needle: &str) -> bool {
    if hay.is_ascii() && needle.is_ascii() {
        let (h, n) = (hay.as_bytes(), needle.as_bytes());
        n.is_empty() || h.windows(n.len()).any(|win| win.eq_ignore_ascii_case(n))
    } else {
        hay.to_lowercase().contains(needle)
    }
}

/// `*` any run of characters, `?` one; the rest literally (ignoring case).
pub(crate) fn glob(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.to_lowercase().chars().collect();
    let t: Vec<char> = text.to_lowercase().chars().collect();
    let (mut pi, mut ti) = (0, 0);
    let (mut star, mut mark) = (None, 0);
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ti;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ti = mark;
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|c| *c == '*')
}

/// `text`'s characters appear in `candidate` in order (ignoring case): a fuzzy match, scored
/// lower for a tighter one; `None` when they do not.
pub(crate) fn fuzzy(text: &str, candidate: &str) -> Option<usize> {
    let c: Vec<char> = candidate.to_lowercase().chars().collect();
    let mut at = 0;
    let mut first = None;
    let mut last = 0;
    for ch in text.to_lowercase().chars() {
        let found = c[at..].iter().position(|x| *x == ch)? + at;
        first.get_or_insert(found);
        last = found;
        at = found + 1;
    }
    let spread = last.saturating_sub(first.unwrap_or(0));
    // a prefix beats a match inside; a tight match beats a loose one
    Some(first.unwrap_or(0) * 2 + spread + usize::from(c.len() != text.chars().count()))
}

/// The best fuzzy match of `text` among `candidates`: an exact name first, then the tightest.
pub fn best<'a>(text: &str, candidates: &'a [String]) -> Option<&'a String> {
    if let Some(exact) = candidates.iter().find(|c| c.eq_ignore_ascii_case(text)) {
        return Some(exact);
    }
    candidates
        .iter()
        .filter_map(|c| fuzzy(text, c).map(|s| (s, c)))
        .min_by_key(|(s, c)| (*s, c.len()))
        .map(|(_, c)| c)
}

/// The candidates `text` fuzzily matches, the best first (ties keep their order); every one
/// for an empty text.
pub fn ranked<'a>(text: &str, candidates: &'a [String]) -> Vec<&'a String> {
    let mut scored: Vec<(usize, usize, &String)> = candidates
        .iter()
        .enumerate()
        .filter_map(|(i, c)| {
            let exact = c.eq_ignore_ascii_case(text);
            fuzzy(text, c).map(|s| (if exact { 0 } else { s + 1 }, i, c))
        })
        .collect();
    scored.sort_by_key(|(s, i, _)| (*s, *i));
    scored.into_iter().map(|(_, _, c)| c).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranked_keeps_only_fuzzy_matches_best_first() {
        let names: Vec<String> = ["kind-staging", "kind-prod", "prod-eu"].map(String::from).to_vec();
        assert_eq!(ranked("", &names).len(), 3);
        assert_eq!(ranked("prod", &names), vec!["prod-eu", "kind-prod"]);
        assert_eq!(ranked("kstg", &names), vec!["kind-staging"]);
        assert!(ranked("zz", &names).is_empty());
    }

    #[test]
    fn globs() {
        assert!(glob("prod-*", "prod-eu-west"));
        assert!(glob("*west", "prod-eu-west"));
        assert!(glob("st?ging", "staging"));
        assert!(!glob("prod-*", "staging"));
        assert!(glob("*", ""));
    }

    #[test]
    fn field_terms_take_the_cli_names_and_their_prefixes() {
        let q = Query::parse("diag:crash !state:Error ctx:prod-*").unwrap();
        assert_eq!(q.terms.len(), 3);
        assert!(q.terms[1].negate);
        let Test::Select(f) = &q.terms[0].test else { panic!() };
        assert_eq!(f.diagnoses, [DiagnosisKind::CrashLoop]);
        let Test::Select(f) = &Query::parse("state:sus").unwrap().terms[0].test else {
            panic!()
        };
        assert_eq!(f.states.len(), 2);
        let e = Query::parse("drift:bogus").unwrap_err();
        assert!(e.contains("unknown drift \"bogus\"") && e.contains("drifted"), "{e}");
        assert!(Query::parse("").unwrap().terms.is_empty());
    }

    #[test]
    fn fuzzy_prefers_exact_then_tight() {
        let names: Vec<String> = ["agents", "research", "research-archive"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(best("research", &names).map(String::as_str), Some("research"));
        assert_eq!(best("rsch", &names).map(String::as_str), Some("research"));
        assert_eq!(best("agt", &names).map(String::as_str), Some("agents"));
        assert_eq!(best("zz", &names), None);
    }
}
