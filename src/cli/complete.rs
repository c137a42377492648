//! `kubectl-namzu __complete ARGS…`: completion in cobra's protocol, which kubectl (≥ 1.26) speaks
//! to a `kubectl_complete-namzu` shim on PATH. Candidates one per line, then `:4` (no file names).
//!
//! What completes: verbs; flags (`-…`, the verb's and the global ones); the values of flags
//! (`-o`, `--sort-by`, `--state`, `--drift`, `--diagnosis`, `--dry-run`, `--confirm`, from their
//! definitions; `-n` the cluster's namespaces; `--context` the kubeconfig's contexts), both as the
//! next word and as `--flag=VALUE`; and workspace ids after every verb that takes one.

use super::globals::Globals;
use clap::{Arg, Command};
use namzu_domain::diagnosis::DiagnosisKind;
use namzu_domain::drift::DriftState;
use namzu_domain::select::SortKey;
use namzu_domain::state::State;
use namzu_engine::cluster::connect::{Connection, load_kubeconfig};
use namzu_engine::cluster::resources::{self, NAMESPACES};
use namzu_engine::ops::inventory::{self, Query};

/// Verbs (and aliases) whose positional arguments are workspace ids.
pub(crate) const TAKES_IDS: [&str; 15] = [
    "inspect",
    "describe",
    "drift",
    "suspend",
    "resume",
    "delete",
    "rm",
    "reconcile",
    "logs",
    "exec",
    "port-forward",
    "history",
    "list",
    "get",
    "ls",
];

/// `-o` of `list` and `inspect` (a free-form printer: its kinds, as kubectl completes them).
const PRINTERS: [&str; 9] = [
    "table",
    "wide",
    "json",
    "yaml",
    "name",
    "jsonpath=",
    "jsonpath-file=",
    "custom-columns=",
    "custom-columns-file=",
];

/// What the word being completed is.
enum Want {
    Verbs,
    Flags,
    /// The value of the flag named by its long name; `prefix` goes before each candidate.
    Value {
        flag: String,
        prefix: String,
    },
    Ids,
    Nothing,
}

/// `root` is the command line's definition (`Cli::command()`): the caller hands it down, so this
/// module never names the parent's type.
pub(crate) async fn run(mut root: Command, globals: &Globals, args: Vec<String>) {
    let (done, partial) = match args.split_last() {
        Some((last, rest)) => (rest.to_vec(), last.clone()),
        None => (Vec::new(), String::new()),
    };
    root.build();
    let (verb, pending, given) = walk(&root, &done);
    // the cluster flags among the words typed pick where ids, namespaces and contexts come from
    let globals = &with_flags(globals, &given);
    let want = what(&root, verb.as_ref(), pending, &partial);
    let (prefix, mut candidates) = match want {
        Want::Verbs => (
            String::new(),
            root.get_subcommands()
                .filter(|c| !c.is_hide_set())
                .map(|c| c.get_name().to_string())
                .collect(),
        ),
        Want::Flags => (String::new(), flags(&root, verb.as_ref())),
        Want::Value { flag, prefix } => (prefix, values(globals, &root, verb.as_ref(), &flag).await),
        Want::Ids => (String::new(), workspace_ids(globals).await),
        Want::Nothing => (String::new(), Vec::new()),
    };
    let typed = partial.strip_prefix(&prefix).unwrap_or(&partial).to_string();
    candidates.retain(|c| c.starts_with(&typed));
    candidates.dedup();
    for c in candidates {
        namzu_engine::outln!("{prefix}{c}");
    }
    // cobra's ShellCompDirectiveNoFileComp
    namzu_engine::outln!(":4");
}

/// The flags typed (by id) with their values.
type Given = Vec<(String, String)>;

/// The verb among the words already typed (flag values skipped), the flag whose value the
/// next word is, if the last word was one awaiting it, and the flags given with their values.
fn walk(root: &Command, done: &[String]) -> (Option<Command>, Option<Arg>, Given) {
    let mut verb: Option<Command> = None;
    let mut pending: Option<Arg> = None;
    let mut given = Given::new();
    for word in done {
        if let Some(flag) = pending.take() {
            given.push((flag.get_id().to_string(), word.clone()));
            continue;
        }
        if word.starts_with('-') && word.len() > 1 {
            match word.split_once('=') {
                Some((name, value)) => {
                    if let Some(flag) = find_flag(root, verb.as_ref(), name) {
                        given.push((flag.get_id().to_string(), value.to_string()));
                    }
                }
                None => match find_flag(root, verb.as_ref(), word) {
                    Some(flag) if takes_value(&flag) => pending = Some(flag),
                    Some(flag) => given.push((flag.get_id().to_string(), String::new())),
                    None => {}
                },
            }
            continue;
        }
        if verb.is_none() {
            verb = root
                .get_subcommands()
                .find(|c| c.get_name() == word || c.get_all_aliases().any(|a| a == word))
                .cloned();
        }
    }
    (verb, pending, given)
}

/// `globals` with the cluster flags typed on the command line being completed.
fn with_flags(globals: &Globals, given: &Given) -> Globals {
    let mut g = globals.clone();
    for (id, value) in given {
        match id.as_str() {
            "kubeconfig" => g.kubeconfig = Some(value.into()),
            "context" => g.context = vec![value.clone()],
            "namespace" if namzu_domain::naming::validate_namespace(value).is_ok() => g.namespace = Some(value.clone()),
            "all_namespaces" => g.all_namespaces = true,
            "cluster" => g.cluster = Some(value.clone()),
            "user" => g.user = Some(value.clone()),
            _ => {}
        }
    }
    g
}

fn what(root: &Command, verb: Option<&Command>, pending: Option<Arg>, partial: &str) -> Want {
    if let Some(flag) = pending {
        return Want::Value {
            flag: flag.get_id().to_string(),
            prefix: String::new(),
        };
    }
    if let Some((name, _)) = partial.split_once('=').filter(|_| partial.starts_with('-')) {
        return match find_flag(root, verb, name).filter(|f| f.get_action().takes_values()) {
            Some(flag) => Want::Value {
                flag: flag.get_id().to_string(),
                prefix: format!("{name}="),
            },
            None => Want::Nothing,
        };
    }
    if partial.starts_with('-') {
        return Want::Flags;
    }
    match verb {
        None => Want::Verbs,
        Some(v) if TAKES_IDS.contains(&v.get_name()) || v.get_all_aliases().any(|a| TAKES_IDS.contains(&a)) => {
            Want::Ids
        }
        Some(_) => Want::Nothing,
    }
}

fn takes_value(arg: &Arg) -> bool {
    arg.get_action().takes_values() && arg.get_num_args().is_none_or(|n| n.min_values() > 0)
}

/// The verb's flags and the global ones.
fn all_args<'a>(root: &'a Command, verb: Option<&'a Command>) -> impl Iterator<Item = &'a Arg> {
    verb.into_iter()
        .flat_map(|v| v.get_arguments())
        .chain(root.get_arguments())
}

/// `--name` or `-x` among the verb's and the global flags.
fn find_flag(root: &Command, verb: Option<&Command>, word: &str) -> Option<Arg> {
    all_args(root, verb)
        .find(|a| match word.strip_prefix("--") {
            Some(long) => a.get_long() == Some(long) || a.get_all_aliases().is_some_and(|al| al.contains(&long)),
            None => {
                let short = word.strip_prefix('-').and_then(|s| s.chars().next());
                short.is_some() && a.get_short() == short
            }
        })
        .cloned()
}

fn flags(root: &Command, verb: Option<&Command>) -> Vec<String> {
    let mut out: Vec<String> = all_args(root, verb)
        .filter(|a| !a.is_hide_set())
        .filter_map(|a| a.get_long().map(|l| format!("--{l}")))
        .collect();
    out.push("--help".into());
    out.sort();
    out.dedup();
    out
}

/// The candidates for one flag's value.
async fn values(globals: &Globals, root: &Command, verb: Option<&Command>, flag: &str) -> Vec<String> {
    let names = |all: &[&str]| all.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    match flag {
        "namespace" => namespaces(globals).await,
        "context" => contexts(globals),
        "sort_by" => SortKey::ALL.iter().map(|(n, _)| n.to_string()).collect(),
        "state" => State::ALL.iter().map(|s| s.as_str().to_string()).collect(),
        "drift" => DriftState::ALL.iter().map(|s| s.as_str().to_string()).collect(),
        "diagnosis" => DiagnosisKind::ALL.iter().map(|s| s.as_str().to_string()).collect(),
        "confirm" => names(&["typed", "default"]),
        "read_only" => names(&["true", "false"]),
        _ => {
            let Some(arg) = all_args(root, verb).find(|a| a.get_id() == flag) else {
                return Vec::new();
            };
            let possible: Vec<String> = arg
                .get_possible_values()
                .iter()
                .filter(|p| !p.is_hide_set())
                .map(|p| p.get_name().to_string())
                .collect();
            if possible.is_empty() && flag == "output" {
                names(&PRINTERS)
            } else {
                possible
            }
        }
    }
}

/// The kubeconfig's context names; nothing when it cannot be read.
fn contexts(globals: &Globals) -> Vec<String> {
    match load_kubeconfig(&globals.connect_options(false)) {
        Ok(k) => {
            let mut names: Vec<String> = k.contexts.into_iter().map(|c| c.name).collect();
            names.sort();
            names
        }
        Err(_) => Vec::new(),
    }
}

/// A connection for completion: short-bounded, and nothing (never an error) when it fails.
async fn quick(globals: &Globals) -> Option<Connection> {
    let mut opts = globals.connect_options(false);
    opts.request_timeout = Some(std::time::Duration::from_secs(3));
    Connection::open(&opts).await.ok()
}

/// The cluster's namespaces; when they may not be listed, those holding workspaces.
async fn namespaces(globals: &Globals) -> Vec<String> {
    let Some(conn) = quick(globals).await else {
        return Vec::new();
    };
    let mut names: Vec<String> = match resources::list(&conn, &NAMESPACES, None, None).await {
        Ok(items) => items
            .iter()
            .map(|n| namzu_domain::object::name(n).to_string())
            .collect(),
        Err(_) => match inventory::read(
            &inventory::Source::Live,
            &conn,
            &inventory::Scope::All,
            &Query::default(),
        )
        .await
        {
            Ok(inv) => inv
                .workspaces(&Default::default(), conn.clock.now())
                .into_iter()
                .map(|w| w.namespace)
                .collect(),
            Err(_) => Vec::new(),
        },
    };
    names.sort();
    names.dedup();
    names
}

/// The workspace ids in the current namespace; nothing (never an error) when the cluster is away.
async fn workspace_ids(globals: &Globals) -> Vec<String> {
    let Some(conn) = quick(globals).await else {
        return Vec::new();
    };
    let scope = globals.scope(&conn.namespace);
    match inventory::read(&inventory::Source::Live, &conn, &scope, &Query::default()).await {
        Ok(inv) => inv
            .workspaces(&Default::default(), conn.clock.now())
            .into_iter()
            .map(|w| w.id)
            .collect(),
        Err(_) => Vec::new(),
    }
}
