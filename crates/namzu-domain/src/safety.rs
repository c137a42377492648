//! Per-context safety rules (README "Safety rules per context"): which contexts refuse writes,
//! ask for typed ids, cap bulk writes, and what badge marks them. The file is parsed here; where
//! it lives and the flags that override it are the CLI's.
//!
//! Every rule whose `context` (a name or a glob of `*` and `?`) matches applies, in file order, a
//! later rule overriding the fields it sets — as `.gitattributes` reads: general globs first,
//! exceptions after.

use serde::Deserialize;

/// How a write is confirmed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum ConfirmRule {
    /// As without rules: delete asks for the typed id, suspend and resume do not.
    #[default]
    Default,
    /// Every write asks for the workspace id typed, suspend and resume too.
    Typed,
}

impl ConfirmRule {
    pub fn as_str(self) -> &'static str {
        match self {
            ConfirmRule::Default => "default",
            ConfirmRule::Typed => "typed",
        }
    }
}

/// A badge's colour: the five every terminal has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Colour {
    Red,
    Yellow,
    Green,
    Blue,
    Magenta,
}

impl Colour {
    pub fn as_str(self) -> &'static str {
        match self {
            Colour::Red => "red",
            Colour::Yellow => "yellow",
            Colour::Green => "green",
            Colour::Blue => "blue",
            Colour::Magenta => "magenta",
        }
    }
}

/// A short label shown beside a context's name (e.g. a red PROD).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Badge {
    pub label: String,
    pub colour: Option<Colour>,
}

/// One entry of the file.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Rule {
    /// A context name, or a glob (`*` any run of characters, `?` one).
    pub context: String,
    pub read_only: Option<bool>,
    pub confirm: Option<ConfirmRule>,
    pub max_bulk: Option<u32>,
    pub label: Option<String>,
    #[serde(alias = "color")]
    pub colour: Option<Colour>,
    /// How many days old a detached disk must be before `leaks --delete --include-detached`
    /// deletes it (default `domain::leaks::DETACHED_AFTER_DAYS`).
    pub detached_after_days: Option<u32>,
    /// When set, `leaks --delete` deletes only objects `leaks --quarantine` marked at least this
    /// many days ago and untouched since.
    pub quarantine_days: Option<u32>,
}

/// The keys an action of the TUI's list is moved to (`keys:`): one key, or several.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum KeyNames {
    One(String),
    Several(Vec<String>),
}

impl KeyNames {
    pub fn names(&self) -> Vec<&str> {
        match self {
            KeyNames::One(k) => vec![k.as_str()],
            KeyNames::Several(ks) => ks.iter().map(String::as_str).collect(),
        }
    }
}

/// The whole file: `contexts:` and its rules, and `keys:`, the TUI's list keys moved (each
/// action's name to its keys; which names and keys there are is the TUI's key table's to say).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SafetyConfig {
    #[serde(default)]
    pub contexts: Vec<Rule>,
    /// The flight recorder's bounds (`recording: {retentionDays, maxMB}`, issue 43).
    #[serde(default)]
    pub recording: RecordingBounds,
    #[serde(default)]
    pub keys: std::collections::BTreeMap<String, KeyNames>,
    /// The file the rules were read from (set by whoever read it; not a field of the file).
    #[serde(skip)]
    pub file: Option<String>,
}

/// How long and how large a context's recording may grow: segments older than `retentionDays`
/// (default 7) and, past `maxMB` (default 500, 10^6 bytes), the oldest are dropped.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecordingBounds {
    #[serde(rename = "retentionDays")]
    pub retention_days: Option<u32>,
    #[serde(rename = "maxMB")]
    pub max_mb: Option<u64>,
}

/// The longest badge label: it sits in a table column and a header.
pub const MAX_LABEL: usize = 12;

impl SafetyConfig {
    /// Parse the file's text (YAML or JSON); the error is one line, naming the rule at fault.
    pub fn parse(text: &str) -> Result<SafetyConfig, String> {
        if text.trim().is_empty() {
            return Ok(SafetyConfig::default());
        }
        let config: SafetyConfig = serde_saphyr::from_str(text).map_err(|e| one_line(&e.to_string()))?;
        if config.recording.retention_days == Some(0) || config.recording.max_mb == Some(0) {
            return Err("recording.retentionDays and recording.maxMB must be at least 1".to_string());
        }
        for (i, rule) in config.contexts.iter().enumerate() {
            let at = format!("contexts[{i}]");
            if rule.context.is_empty() {
                return Err(format!("{at}.context is empty: give a context name or a glob"));
            }
            if rule.max_bulk == Some(0) {
                return Err(format!("{at}.maxBulk is 0: give at least 1 (or readOnly: true)"));
            }
            if let Some(label) = &rule.label {
                let n = label.chars().count();
                if n == 0 || n > MAX_LABEL || label.chars().any(|c| c.is_control() || c.is_whitespace() && c != ' ') {
                    return Err(format!("{at}.label {label:?}: 1 to {MAX_LABEL} printable characters"));
                }
            }
            if rule.colour.is_some() && rule.label.is_none() {
                return Err(format!("{at}.colour needs a label to colour"));
            }
        }
        Ok(config)
    }

    /// The rules for `context`, the flags' overrides applied last.
    pub fn for_context(&self, context: &str, flags: &Overrides) -> ContextRules {
        let mut out = ContextRules {
            file: self.file.clone(),
            ..ContextRules::default()
        };
        for rule in self.contexts.iter().filter(|r| glob_matches(&r.context, context)) {
            out.matched.push(rule.context.clone());
            out.read_only = rule.read_only.unwrap_or(out.read_only);
            out.confirm = rule.confirm.unwrap_or(out.confirm);
            out.max_bulk = rule.max_bulk.or(out.max_bulk);
            out.detached_after_days = rule.detached_after_days.or(out.detached_after_days);
            out.quarantine_days = rule.quarantine_days.or(out.quarantine_days);
            if let Some(label) = &rule.label {
                out.badge = Some(Badge {
                    label: label.clone(),
                    colour: rule.colour,
                });
            }
        }
        flags.apply(context, &mut out);
        out
    }

    /// THE rules a connection is written under — every front-end's and the write path's. They
    /// are `context`'s rules, unless `--cluster`/`--user` made the connection reach another
    /// cluster or user than the context's (`overridden`): then, with any rule in the file, the
    /// rules written for the context cannot be known to fit what is reached, and every write is
    /// refused with the reason (no flag lifts it; without rules there is nothing to misapply).
    pub fn for_connection(&self, context: &str, overridden: bool, flags: &Overrides) -> ContextRules {
        let mut out = self.for_context(context, flags);
        if overridden && !self.contexts.is_empty() {
            out.read_only = true;
            out.refusal = Some(format!(
                "--cluster/--user reach a cluster other than context \"{context}\"'s: its safety rules cannot be applied; name the context whose cluster and user they are"
            ));
        }
        out
    }
}

/// What the command line says over the file.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Overrides {
    pub read_only: Option<bool>,
    pub confirm: Option<ConfirmRule>,
    pub max_bulk: Option<u32>,
    /// Where the flags may loosen the file's rules; they tighten every context.
    pub loosens: Loosens,
}

/// Where a flag may loosen a rule of the file (lift `readOnly`, drop a typed confirmation, raise
/// `maxBulk`): only in the one context it was given with. A flag typed for staging must not
/// lift production's rules when the session reaches production too.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum Loosens {
    /// In the one context a single-context command opens: the flags were given for it.
    #[default]
    TheContextOpened,
    /// Only in this context: a session's own, when it opens the kubeconfig's others.
    Only(String),
    /// Nowhere: several contexts at once (a front-end refuses such flags first).
    Nowhere,
}

impl Overrides {
    /// Apply the flags to `context`'s rules from the file: each flag that tightens applies, each
    /// that loosens applies only where [`Loosens`] allows, and is named in `dropped` elsewhere.
    fn apply(&self, context: &str, out: &mut ContextRules) {
        let may_loosen = match &self.loosens {
            Loosens::TheContextOpened => true,
            Loosens::Only(own) => own == context,
            Loosens::Nowhere => false,
        };
        let loosen = |flag: String, out: &mut ContextRules| {
            if !may_loosen {
                out.dropped.push(flag);
            }
            may_loosen
        };
        match self.read_only {
            Some(true) => out.read_only = true,
            Some(false) if out.read_only => out.read_only = !loosen("--write".into(), out),
            _ => {}
        }
        // (a loosening is asked only where it would loosen: `loosen` names what it drops)
        match self.confirm {
            Some(ConfirmRule::Typed) => out.confirm = ConfirmRule::Typed,
            Some(ConfirmRule::Default)
                if out.confirm == ConfirmRule::Typed && loosen("--confirm default".into(), out) =>
            {
                out.confirm = ConfirmRule::Default;
            }
            _ => {}
        }
        match (self.max_bulk, out.max_bulk) {
            (Some(flag), Some(file)) if flag > file => {
                let raised = loosen(format!("--max-bulk {flag}"), out);
                out.max_bulk = Some(if raised { flag } else { file });
            }
            (Some(flag), _) => out.max_bulk = Some(flag),
            (None, _) => {}
        }
    }
}

/// The rules in force for one context.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ContextRules {
    pub read_only: bool,
    pub confirm: ConfirmRule,
    /// The most workspaces one bulk write may select in this context.
    pub max_bulk: Option<u32>,
    /// How old a detached disk must be before it may be deleted (days).
    pub detached_after_days: Option<u32>,
    /// Only what was quarantined this many days ago may be deleted (days).
    pub quarantine_days: Option<u32>,
    pub badge: Option<Badge>,
    /// The file's patterns that matched, in order.
    pub matched: Vec<String>,
    /// The rules file in force, named in every write's audit entries.
    pub file: Option<String>,
    /// Why no write may be sent whatever the flags say (see [`SafetyConfig::for_connection`]).
    pub refusal: Option<String>,
    /// The flags that would have loosened this context's rules but were not given for it
    /// ([`Loosens`]), e.g. `--confirm default`.
    pub dropped: Vec<String>,
}

impl ContextRules {
    /// Why the flags in [`ContextRules::dropped`] do not apply in `context`, in one line.
    pub fn dropped_reason(&self, context: &str) -> Option<String> {
        (!self.dropped.is_empty()).then(|| {
            format!(
                "{} would loosen context \"{context}\"'s safety rules: a flag loosens only the one context it is given with (--context {context})",
                self.dropped.join(" and ")
            )
        })
    }

    /// Why this context refuses every write by the config file's rule: its name and the
    /// patterns that matched.
    pub(crate) fn read_only_reason(&self, context: &str) -> String {
        if let Some(why) = &self.refusal {
            return why.clone();
        }
        let rules: Vec<String> = self.matched.iter().map(|m| format!("\"{m}\"")).collect();
        format!(
            "read-only mode (context \"{context}\", config rule {})",
            rules.join(", ")
        )
    }

    /// Why this context refuses every write, in the words both front-ends use: `--read-only`
    /// (`flag`) first, else its rule.
    pub fn why_read_only(&self, context: &str, flag: bool) -> String {
        if flag {
            "read-only mode (--read-only or KUBECTL_NAMZU_READ_ONLY)".into()
        } else {
            self.read_only_reason(context)
        }
    }

    /// Whether a write here asks for a typed confirmation: one that destroys data (a delete of
    /// a workspace, `Verb::destroys_data`, or of a leaked disk) always, every write where the
    /// rules say `confirm: typed`. The one rule every front-end asks, through
    /// `ops::write::rules::{asks_typed, asks_typed_when}` (which add `--yes`, dry runs and
    /// read-only).
    pub fn asks_typed_when(&self, destroys_data: bool) -> bool {
        destroys_data || self.confirm == ConfirmRule::Typed
    }

    /// Whether it is this context's `confirm: typed` rule (not the verb) that asks.
    pub fn typed_by_rule(&self) -> bool {
        self.confirm == ConfirmRule::Typed
    }

    /// Why a write of `selected` objects (`noun`: a workspace, a leaked object) in `context` may
    /// not start, if it may not.
    pub fn refuse_bulk(&self, context: &str, selected: usize, noun: &str) -> Option<String> {
        let max = self.max_bulk?;
        (selected > 1 && selected > max as usize).then(|| {
            format!(
                "context \"{context}\": {} selected, more than its maxBulk of {max}: nothing sent (narrow the selection, or pass --max-bulk)",
                super::counted(selected, noun)
            )
        })
    }
}

/// Shell-style glob: `*` any run of characters (none too), `?` exactly one, anything else itself.
pub(crate) fn glob_matches(pattern: &str, text: &str) -> bool {
    let (p, t): (Vec<char>, Vec<char>) = (pattern.chars().collect(), text.chars().collect());
    // the classic two-pointer match: on a mismatch, let the last `*` swallow one more character
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        match p.get(pi) {
            Some('*') => {
                star = Some((pi, ti));
                pi += 1;
            }
            Some(c) if *c == '?' || *c == t[ti] => {
                pi += 1;
                ti += 1;
            }
            _ => match star {
                Some((sp, st)) => {
                    pi = sp + 1;
                    ti = st + 1;
                    star = Some((sp, st + 1));
                }
                None => return false,
            },
        }
    }
    p[pi..].iter().all(|c| *c == '*')
}

/// The YAML parser's message on one line (it may carry the position and a snippet on more).
fn one_line(message: &str) -> String {
    message.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = r#"
contexts:
  - context: "prod-*"
    label: PROD
    colour: red
    confirm: typed
    maxBulk: 20
  - context: prod-eu-audit
    readOnly: true
    label: AUDIT
  - context: staging
    label: STG
    color: yellow
"#;

    #[test]
    fn later_rules_override_the_fields_they_set() {
        let c = SafetyConfig::parse(FILE).unwrap();
        let eu = c.for_context("prod-eu-west", &Overrides::default());
        assert_eq!(
            (eu.read_only, eu.confirm, eu.max_bulk),
            (false, ConfirmRule::Typed, Some(20))
        );
        assert_eq!(eu.badge.unwrap().colour, Some(Colour::Red));
        let audit = c.for_context("prod-eu-audit", &Overrides::default());
        assert!(audit.read_only);
        assert_eq!(audit.confirm, ConfirmRule::Typed, "the glob's confirm still holds");
        assert_eq!(
            audit.badge,
            Some(Badge {
                label: "AUDIT".into(),
                colour: None
            })
        );
        assert_eq!(audit.matched, vec!["prod-*", "prod-eu-audit"]);
        assert_eq!(c.for_context("dev", &Overrides::default()), ContextRules::default());
    }

    #[test]
    fn an_overridden_cluster_or_user_refuses_writes_when_there_are_rules() {
        let c = SafetyConfig::parse(FILE).unwrap();
        let lifted = Overrides {
            read_only: Some(false),
            ..Default::default()
        };
        let r = c.for_connection("staging", true, &lifted);
        assert!(r.read_only, "--write does not lift it");
        assert!(
            r.read_only_reason("staging")
                .contains("--cluster/--user reach a cluster other than context \"staging\"'s")
        );
        assert_eq!(
            c.for_connection("staging", false, &lifted),
            c.for_context("staging", &lifted)
        );
        let none = SafetyConfig::default().for_connection("staging", true, &Overrides::default());
        assert_eq!(none, ContextRules::default(), "no rules: nothing to misapply");
    }

    #[test]
    fn flags_override_the_file() {
        let c = SafetyConfig::parse(FILE).unwrap();
        let flags = Overrides {
            read_only: Some(false),
            confirm: Some(ConfirmRule::Default),
            max_bulk: Some(500),
            loosens: Loosens::TheContextOpened,
        };
        let audit = c.for_context("prod-eu-audit", &flags);
        assert_eq!(
            (audit.read_only, audit.confirm, audit.max_bulk),
            (false, ConfirmRule::Default, Some(500))
        );
    }

    #[test]
    fn flags_loosen_only_the_context_they_were_given_with() {
        let c = SafetyConfig::parse(FILE).unwrap();
        let loose = Overrides {
            read_only: Some(false),
            confirm: Some(ConfirmRule::Default),
            max_bulk: Some(500),
            loosens: Loosens::Only("staging".into()),
        };
        let audit = c.for_context("prod-eu-audit", &Overrides::default());
        let kept = c.for_context("prod-eu-audit", &loose);
        assert_eq!(
            (kept.read_only, kept.confirm, kept.max_bulk),
            (audit.read_only, audit.confirm, audit.max_bulk),
            "nothing loosened outside staging"
        );
        assert_eq!(kept.dropped.len(), 3, "{:?}", kept.dropped);
        assert!(
            kept.dropped_reason("prod-eu-audit")
                .unwrap()
                .contains("--confirm default")
        );
        // tightening applies everywhere, and names nothing dropped
        let tight = Overrides {
            read_only: Some(true),
            confirm: Some(ConfirmRule::Typed),
            max_bulk: Some(1),
            loosens: Loosens::Nowhere,
        };
        let r = c.for_context("dev", &tight);
        assert_eq!(
            (r.read_only, r.confirm, r.max_bulk),
            (true, ConfirmRule::Typed, Some(1))
        );
        assert!(r.dropped.is_empty());
        // a larger --max-bulk than the file's is a loosening; a smaller one is not
        let prod = c.for_context("prod-eu-west", &Overrides::default());
        if let Some(file) = prod.max_bulk {
            let mut smaller = tight.clone();
            smaller.max_bulk = Some(file.saturating_sub(1).max(1));
            assert!(
                c.for_context("prod-eu-west", &smaller)
                    .dropped
                    .iter()
                    .all(|d| !d.starts_with("--max-bulk"))
            );
        }
    }

    #[test]
    fn a_bad_file_is_one_line_naming_the_rule() {
        for (text, says) in [
            ("contexts:\n  - context: a\n    maxBulk: 0\n", "contexts[0].maxBulk"),
            (
                "contexts:\n  - context: a\n    readonly: true\n",
                "unknown field `readonly`",
            ),
            (
                "contexts:\n  - context: a\n    colour: purple\n",
                "unknown variant `purple`",
            ),
            (
                "contexts:\n  - context: a\n    label: WAY-TOO-LONG-A-LABEL\n",
                "contexts[0].label",
            ),
            ("contexts:\n  - context: ''\n", "contexts[0].context is empty"),
            ("context: [\n", ""),
            ("contexts:\n  - context: a\n    colour: red\n", "needs a label"),
        ] {
            let e = SafetyConfig::parse(text).unwrap_err();
            assert!(e.contains(says), "{text:?} → {e}");
            assert!(!e.contains('\n'), "{e}");
        }
        assert_eq!(SafetyConfig::parse("# nothing yet\n").unwrap(), SafetyConfig::default());
    }

    #[test]
    fn globs() {
        for (p, t, yes) in [
            ("prod-*", "prod-eu", true),
            ("prod-*", "prod-", true),
            ("prod-*", "staging", false),
            ("*-eu-*", "prod-eu-west", true),
            ("?rod", "prod", true),
            ("?rod", "rod", false),
            ("a*b*c", "axxbyyc", true),
            ("a*b*c", "axxbyy", false),
            ("*", "", true),
            ("exact", "exact", true),
            ("exact", "exactly", false),
        ] {
            assert_eq!(glob_matches(p, t), yes, "{p} ~ {t}");
        }
    }

    #[test]
    fn max_bulk_refuses_only_bulk_writes_over_it() {
        let rules = ContextRules {
            max_bulk: Some(2),
            ..Default::default()
        };
        assert!(rules.refuse_bulk("p", 2, "workspace").is_none());
        assert!(rules.refuse_bulk("p", 3, "workspace").unwrap().contains("maxBulk of 2"));
        let one = ContextRules {
            max_bulk: Some(1),
            ..Default::default()
        };
        assert!(
            one.refuse_bulk("p", 1, "workspace").is_none(),
            "one named workspace is not a bulk write"
        );
    }
}
