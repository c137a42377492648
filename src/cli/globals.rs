//! kubectl's global flags, parsed by the plugin itself (kubectl passes them through untouched).

use namzu_domain::naming::validate_namespace;
use namzu_domain::safety::{ConfirmRule, Overrides};
use namzu_domain::select::parse_duration;
use namzu_engine::cluster::connect::ConnectOptions;
use namzu_engine::ops::inventory::Scope;
use std::path::PathBuf;
use std::time::Duration;

/// kubectl's global flags; every verb's `--help` lists them under their own heading, after the
/// verb's own.
#[derive(Debug, Clone, clap::Args)]
#[command(next_help_heading = "Global options")]
pub struct Globals {
    /// Path to the kubeconfig file (default: $KUBECONFIG, merged, or ~/.kube/config).
    #[arg(long, global = true, value_name = "PATH")]
    pub kubeconfig: Option<PathBuf>,
    /// The kubeconfig context to use; several (comma-separated or repeated) read them all at
    /// once, each row labelled with its context.
    #[arg(long, global = true, value_delimiter = ',', value_parser = parse_context, value_name = "NAME")]
    pub context: Vec<String>,
    /// Every context of the kubeconfig at once.
    #[arg(long, global = true, conflicts_with = "context")]
    pub all_contexts: bool,
    /// The kubeconfig cluster to use.
    #[arg(long, global = true)]
    pub cluster: Option<String>,
    /// The kubeconfig user to use.
    #[arg(long, global = true)]
    pub user: Option<String>,
    /// Namespace (default: the context's).
    #[arg(short = 'n', long, global = true, value_parser = parse_namespace)]
    pub namespace: Option<String>,
    /// Every namespace.
    #[arg(short = 'A', long, global = true)]
    pub all_namespaces: bool,
    /// Bound on each API request, e.g. 5s or 1m; 0 = no bound.
    #[arg(long, global = true, default_value = "30s", value_parser = parse_timeout)]
    pub request_timeout: RequestTimeout,
    /// Objects per LIST page, as kubectl's --chunk-size; 0 = one request for everything.
    #[arg(long, global = true, default_value_t = namzu_engine::cluster::connect::DEFAULT_CHUNK_SIZE, value_name = "N")]
    pub chunk_size: u32,
    /// Log every API request to stderr.
    #[arg(short = 'v', long, global = true)]
    pub verbose: bool,
    /// Refuse every write (suspend, resume, delete); reads still work.
    #[arg(long, global = true, env = "KUBECTL_NAMZU_READ_ONLY", value_parser = parse_switch, action = clap::ArgAction::SetTrue)]
    pub read_only: bool,
    /// Lift the config file's readOnly rule of the one context named, for this command only (a
    /// flag, never the environment: no shell setting turns a rule off).
    #[arg(long, global = true, conflicts_with = "read_only")]
    pub write: bool,
    /// The most workspaces one bulk write may select per context (overrides the config file's maxBulk).
    #[arg(long, global = true, value_parser = clap::value_parser!(u32).range(1..), value_name = "N")]
    pub max_bulk: Option<u32>,
    /// typed: every write asks for the workspace id typed, suspend and resume too; default: only
    /// delete does (overrides the config file's confirm).
    #[arg(long, global = true, value_parser = parse_confirm, value_name = "typed|default")]
    pub confirm: Option<ConfirmRule>,
    /// The per-context safety rules file (default $KUBECTL_NAMZU_CONFIG, else
    /// $XDG_CONFIG_HOME/kubectl-namzu/config.yaml).
    #[arg(long, global = true, value_name = "PATH")]
    pub config: Option<PathBuf>,
    /// Audit log path (default $KUBECTL_NAMZU_AUDIT_LOG, else $XDG_STATE_HOME/kubectl-namzu/audit.jsonl).
    #[arg(long, global = true, value_name = "PATH")]
    pub audit_log: Option<PathBuf>,
    /// The flight recorder's directory (a store per context under it; default `recordings/`
    /// beside the audit log): where `record` writes and `--at` reads.
    #[arg(long, global = true, value_name = "DIR")]
    pub recording: Option<PathBuf>,
    /// Send writes without recording them in the audit log (by default a write that cannot be
    /// recorded is not sent).
    #[arg(long, global = true)]
    pub no_audit: bool,
    /// The hosts' per-sandbox egress label key on a workspace's pod template (default
    /// sandbox.namzu.ai/per-sandbox-egress); its value is the Sandbox's name.
    #[arg(long, global = true, value_name = "KEY", value_parser = parse_label_key)]
    pub per_sandbox_label_key: Option<String>,
}

/// A label key as Kubernetes accepts one: an optional DNS-subdomain prefix and `/`, then a name of
/// 1–63 alphanumerics, `-`, `_` or `.`, starting and ending with an alphanumeric.
fn parse_label_key(text: &str) -> Result<String, String> {
    let (prefix, name) = match text.rsplit_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, text),
    };
    let b = name.as_bytes();
    let name_ok = (1..=63).contains(&b.len())
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'));
    let prefix_ok = prefix.is_none_or(namzu_domain::naming::is_path_safe_name);
    if name_ok && prefix_ok {
        Ok(text.to_string())
    } else {
        Err(format!(
            "invalid label key {text:?}: [prefix/]name, the prefix a DNS subdomain, the name 1-63 letters, digits, '-', '_' or '.'"
        ))
    }
}

fn parse_namespace(text: &str) -> Result<String, String> {
    validate_namespace(text).map_err(|e| e.to_string())?;
    Ok(text.to_string())
}

/// A context name as it reaches the kubeconfig lookup: not empty, no control characters.
fn parse_context(text: &str) -> Result<String, String> {
    if text.is_empty() || text.chars().any(char::is_control) {
        return Err(format!("invalid context name {text:?}"));
    }
    Ok(text.to_string())
}

fn parse_confirm(text: &str) -> Result<ConfirmRule, String> {
    match text {
        "typed" => Ok(ConfirmRule::Typed),
        "default" => Ok(ConfirmRule::Default),
        _ => Err(format!("{text:?}: typed or default")),
    }
}

/// A boolean switch from a flag or the environment: empty means unset (false), as a shell's
/// `VAR=` reads; otherwise kubectl's words for true and false. False only leaves read-only off:
/// it never lifts a rule of the config file.
fn parse_switch(text: &str) -> Result<bool, String> {
    match text.trim().to_ascii_lowercase().as_str() {
        "" | "0" | "false" | "no" | "off" | "n" | "f" => Ok(false),
        "1" | "true" | "yes" | "on" | "y" | "t" => Ok(true),
        _ => Err(format!(
            "{text:?} is not a boolean (--read-only or KUBECTL_NAMZU_READ_ONLY): use true or false"
        )),
    }
}

/// A bound on each request; `None` = unbounded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestTimeout(pub Option<Duration>);

/// kubectl's `--request-timeout`: `0` (none), a bare number of seconds, or a duration.
/// kubectl's `--request-timeout`: a bare number of seconds, a duration (`500ms`, `5s`, `1m`), and
/// zero in any form for none.
fn parse_timeout(text: &str) -> Result<RequestTimeout, String> {
    let bound = if let Ok(secs) = text.parse::<u64>() {
        Duration::from_secs(secs)
    } else if let Some(ms) = text.strip_suffix("ms").and_then(|m| m.parse::<u64>().ok()) {
        Duration::from_millis(ms)
    } else {
        parse_duration(text)?
            .to_std()
            .map_err(|_| format!("invalid timeout {text:?}"))?
    };
    Ok(RequestTimeout((!bound.is_zero()).then_some(bound)))
}

impl Globals {
    pub(crate) fn connect_options(&self, interactive_exec: bool) -> ConnectOptions {
        ConnectOptions {
            kubeconfig: self.kubeconfig.clone(),
            context: self.context.first().cloned(),
            cluster: self.cluster.clone(),
            user: self.user.clone(),
            namespace: self.namespace.clone(),
            request_timeout: self.request_timeout.0,
            verbose: self.verbose,
            interactive_exec,
            clock: None,
            chunk_size: Some(self.chunk_size),
            safety: None,
        }
    }

    /// What the flags say over the config file's rules.
    pub(crate) fn overrides(&self) -> Overrides {
        Overrides {
            read_only: match (self.read_only, self.write) {
                (true, _) => Some(true),
                (false, true) => Some(false),
                (false, false) => None,
            },
            confirm: self.confirm,
            max_bulk: self.max_bulk,
            // the one context a session opens first; `ops::fleet` narrows it for the others
            loosens: Default::default(),
        }
    }

    /// The write policy of one context: its read-only rule, the shared audit log.
    pub(crate) fn write_policy(&self, read_only: bool) -> namzu_engine::cluster::write::WritePolicy {
        namzu_engine::cluster::write::WritePolicy {
            read_only,
            audit: self.audit(),
            throttle: Default::default(),
            per_sandbox_label_key: self.per_sandbox_label_key.clone(),
        }
    }

    /// The overlay flags of a verb with the global per-sandbox label key.
    pub(crate) fn overlay_flags(
        &self,
        overlays: &crate::cli::overlay::OverlayArgs,
    ) -> namzu_domain::drift::OverlayFlags {
        namzu_domain::drift::OverlayFlags {
            per_sandbox_label_key: self.per_sandbox_label_key.clone(),
            ..overlays.flags()
        }
    }

    pub(crate) fn audit(&self) -> namzu_engine::cluster::audit::AuditLog {
        namzu_engine::cluster::audit::AuditLog {
            path: if self.no_audit {
                None
            } else {
                self.audit_log
                    .clone()
                    .or_else(namzu_engine::cluster::audit::default_path)
            },
            session: None,
            failure: Default::default(),
        }
    }

    /// The recordings' directory: `--recording`, else `recordings/` beside the audit log.
    pub(crate) fn recording_root(&self) -> Result<PathBuf, crate::cli::exit::Failure> {
        if let Some(dir) = &self.recording {
            return Ok(dir.clone());
        }
        let log = self
            .audit_log
            .clone()
            .or_else(namzu_engine::cluster::audit::default_path)
            .ok_or_else(|| {
                crate::cli::exit::Failure::error(
                    "no state directory for the recording (set XDG_STATE_HOME or HOME, or pass --recording DIR)",
                )
            })?;
        Ok(log.parent().unwrap_or(std::path::Path::new(".")).join("recordings"))
    }

    /// What a live view records into (`list -w`, the TUI): the recordings' directory under the
    /// rules file's bounds, only what its watches see (no extra request), and nothing while a
    /// `record` holds the context's store. `None`: no directory could be named.
    pub(crate) fn recording_tap(&self) -> Option<namzu_engine::cluster::live::RecordTo> {
        let root = self.recording_root().ok()?;
        // the rules file was read once already (it parses); its bounds, else the defaults
        let bounds = crate::cli::config::load(self).map(|r| r.recording).unwrap_or_default();
        Some(namzu_engine::cluster::live::RecordTo {
            root,
            limits: namzu_engine::ops::record::limits(&bounds),
            standby: false,
            everything: false,
            audit: None,
        })
    }

    /// A verb that reads one workspace reads it in one context: several are refused, not
    /// silently narrowed to the first.
    pub(crate) fn one_context(&self, verb: &str) -> Result<(), crate::cli::exit::Failure> {
        let distinct: std::collections::BTreeSet<&String> = self.context.iter().collect();
        if self.all_contexts || distinct.len() > 1 {
            return Err(crate::cli::exit::Failure::usage(format!(
                "{verb} reads one context: pass one --context (list, capacity, doctor and the writes span several)"
            )));
        }
        Ok(())
    }

    /// A workspace is named in one namespace: a name with `-A` is refused, as kubectl refuses it.
    pub(crate) fn one_namespace_for_names(&self) -> Result<(), crate::cli::exit::Failure> {
        if self.all_namespaces {
            return Err(crate::cli::exit::Failure::usage(
                "a workspace cannot be named across all namespaces: drop -A, or name its namespace with -n",
            ));
        }
        Ok(())
    }

    pub(crate) fn scope(&self, default_namespace: &str) -> Scope {
        scope(self.all_namespaces, default_namespace)
    }
}

/// Every namespace with `-A`, else one context's namespace (`-n`, or the context's own).
pub(crate) fn scope(all_namespaces: bool, namespace: &str) -> Scope {
    if all_namespaces {
        Scope::All
    } else {
        Scope::Namespace(namespace.to_string())
    }
}
