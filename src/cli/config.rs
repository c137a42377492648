//! The per-context safety rules file: where it is, reading it, and `kubectl namzu config view`.

use super::exit::Failure;
use super::globals::Globals;
use super::output::{self, ReportFormat, Tone};
use namzu_domain::safety::{ContextRules, Loosens, SafetyConfig};
use serde_json::{Value, json};
use std::path::PathBuf;

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    pub command: ConfigCommand,
}

#[derive(Debug, clap::Subcommand)]
pub enum ConfigCommand {
    /// The rules in force for each context (those given with --context, else every context of the
    /// kubeconfig), after the flags' overrides.
    View {
        /// Output format.
        #[arg(short = 'o', long, value_enum, default_value = "table")]
        output: ReportFormat,
    },
}

/// Where the rules are read from, and whether the user named it (then it must exist).
pub(crate) fn path(globals: &Globals) -> Option<(PathBuf, bool)> {
    if let Some(p) = &globals.config {
        return Some((p.clone(), true));
    }
    if let Some(p) = std::env::var_os("KUBECTL_NAMZU_CONFIG").filter(|v| !v.is_empty()) {
        return Some((PathBuf::from(p), true));
    }
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))?;
    Some((base.join("kubectl-namzu").join("config.yaml"), false))
}

/// The rules file, parsed; none at the default path is no rules. A file that cannot be read or
/// parsed is one line and exit 2: no command runs under rules it cannot read.
pub(crate) fn load(globals: &Globals) -> Result<SafetyConfig, Failure> {
    let Some((path, named)) = path(globals) else {
        return Ok(SafetyConfig::default());
    };
    // rules must not fail open: whatever stands at the path (a dangling symlink at the default
    // path too) must be a file that reads; only nothing at all is no rules
    let odd = |why: &str| {
        Failure::usage(format!(
            "the config file {} {why}: no command runs under rules it cannot read",
            path.display()
        ))
    };
    match std::fs::symlink_metadata(&path) {
        Ok(m) if m.file_type().is_symlink() => match std::fs::metadata(&path) {
            Ok(target) if !target.is_file() => return Err(odd("is not a regular file")),
            Ok(_) => {}
            Err(_) => return Err(odd("is a symlink to nothing")),
        },
        Ok(m) if !m.is_file() => return Err(odd("is not a regular file")),
        _ => {}
    }
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && !named => return Ok(SafetyConfig::default()),
        Err(e) => {
            return Err(Failure::usage(format!(
                "cannot read the config file {}: {e}",
                path.display()
            )));
        }
    };
    let mut rules =
        SafetyConfig::parse(&text).map_err(|e| Failure::usage(format!("config file {}: {e}", path.display())))?;
    // every write's audit entries name the rules file in force (README, "Safety")
    rules.file = Some(path.display().to_string());
    Ok(rules)
}

/// The contexts the flags ask for, with the safety rules file loaded (`ops::fleet` opens them).
/// It lives here, beside `load`, so the flags (`globals`) never reach up into the rules file.
pub(crate) fn fleet_request(
    globals: &Globals,
    interactive_exec: bool,
) -> Result<namzu_engine::ops::fleet::Request, Failure> {
    Ok(namzu_engine::ops::fleet::Request {
        contexts: globals.context.clone(),
        all_contexts: globals.all_contexts,
        write: globals.write,
        cluster: globals.cluster.clone(),
        user: globals.user.clone(),
        connect: globals.connect_options(interactive_exec),
        rules: load(globals)?,
        overrides: globals.overrides(),
    })
}

pub(crate) fn run(globals: &Globals, args: Args) -> Result<(), Failure> {
    let ConfigCommand::View { output: format } = args.command;
    let rules = load(globals)?;
    let source = path(globals).filter(|(p, named)| *named || p.exists());
    let kubeconfig = namzu_engine::cluster::connect::load_kubeconfig(&globals.connect_options(false))?;
    let contexts: Vec<String> = if globals.context.is_empty() {
        kubeconfig.contexts.iter().map(|c| c.name.clone()).collect()
    } else {
        globals.context.clone()
    };
    // the flags loosen only the one context they are given with (the current one without
    // `--context`): the others show their own rules and what was not applied there
    let own = match globals.context.as_slice() {
        [one] => Some(one.clone()),
        [] => kubeconfig.current_context.clone(),
        _ => None,
    };
    let overrides = namzu_domain::safety::Overrides {
        loosens: own.map_or(Loosens::Nowhere, Loosens::Only),
        ..globals.overrides()
    };
    let effective: Vec<(String, ContextRules)> = contexts
        .into_iter()
        .map(|c| {
            let r = rules.for_context(&c, &overrides);
            (c, r)
        })
        .collect();
    match format {
        ReportFormat::Table => {
            match &source {
                Some((p, _)) => namzu_engine::outln!("Rules from {}", output::printable(&p.display().to_string())),
                None => namzu_engine::outln!("No config file: no rules (flags only)"),
            }
            namzu_engine::out!("{}", table(&effective));
            for (c, r) in &effective {
                if !r.dropped.is_empty() {
                    namzu_engine::outln!(
                        "{}: {} not applied (a flag loosens only the one context it is given with)",
                        output::printable(c),
                        r.dropped.join(", ")
                    );
                }
            }
        }
        structured => {
            let doc = json!({
                "configFile": source.map(|(p, _)| p.display().to_string()),
                "contexts": effective.iter().map(|(c, r)| structured_rules(c, r)).collect::<Vec<_>>(),
            });
            namzu_engine::out!("{}", output::structured(&doc, structured.format()));
        }
    }
    Ok(())
}

fn structured_rules(context: &str, r: &ContextRules) -> Value {
    json!({
        "context": context,
        "readOnly": r.read_only,
        "confirm": r.confirm.as_str(),
        "maxBulk": r.max_bulk,
        "label": r.badge.as_ref().map(|b| b.label.clone()),
        "colour": r.badge.as_ref().and_then(|b| b.colour).map(|c| c.as_str()),
        "matched": r.matched,
        "flagsNotApplied": r.dropped,
    })
}

fn table(effective: &[(String, ContextRules)]) -> String {
    let rows: Vec<Vec<(String, Tone)>> = effective
        .iter()
        .map(|(c, r)| {
            vec![
                (c.clone(), Tone::Plain),
                (
                    if r.read_only { "yes" } else { "no" }.into(),
                    if r.read_only { Tone::Busy } else { Tone::Plain },
                ),
                (r.confirm.as_str().into(), Tone::Plain),
                (r.max_bulk.map_or("-".into(), |m| m.to_string()), Tone::Plain),
                badge_cell(r),
                (
                    if r.matched.is_empty() {
                        "-".into()
                    } else {
                        r.matched.join(", ")
                    },
                    Tone::Plain,
                ),
            ]
        })
        .collect();
    output::table(
        &["CONTEXT", "READ-ONLY", "CONFIRM", "MAX-BULK", "BADGE", "RULES"],
        &rows,
        false,
        output::colour_enabled(),
    )
}

/// A badge as a table cell: its label in its colour.
pub(crate) fn badge_cell(r: &ContextRules) -> (String, Tone) {
    match &r.badge {
        Some(b) => (b.label.clone(), output::badge_tone(b.colour)),
        None => ("-".into(), Tone::Plain),
    }
}
