//! Several kube contexts at once (`--context a,b`, `--all-contexts`): each context is opened and
//! read on its own — its credentials, its timeout, its safety rules — at most [`CONCURRENT`] at a
//! time. Across several, one that fails costs one warning line and its rows, never the others',
//! and the command fails at the end, as kubectl does after a partial failure. With one context
//! its failure is the command's, exactly as before.
//!
//! The front-end says what it was asked for in a [`Request`]; the errors are a [`FleetError`]
//! (or the front-end's own, for the work it runs in each context: [`ContextError`]).

use crate::cluster::connect::{self, ConnectOptions, Connection};
use crate::cluster::error::ClusterError;
use crate::console::printable;
use futures::StreamExt;
use namzu_clock::Clock;
use namzu_domain::safety::{Badge, ContextRules, Loosens, Overrides, SafetyConfig};
use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Mutex;

/// At most this many contexts are read at once.
pub const CONCURRENT: usize = 8;

/// What a front-end asks the fleet for: the contexts, the overrides, the rules loaded.
#[derive(Clone)]
pub struct Request {
    /// The contexts named (`--context a,b`), in the order given; empty for the current one.
    pub contexts: Vec<String>,
    /// Every context of the kubeconfig (`--all-contexts`).
    pub all_contexts: bool,
    /// `--write`: lift the readOnly rule of the one context named.
    pub write: bool,
    /// `--cluster`/`--user`: one context's cluster and user overridden.
    pub cluster: Option<String>,
    pub user: Option<String>,
    /// How each context is connected to (its `safety` is set from `rules` and `overrides`).
    pub connect: ConnectOptions,
    /// The safety rules file, loaded.
    pub rules: SafetyConfig,
    /// What the flags say over the file.
    pub overrides: Overrides,
}

/// Why a fleet could not open (or, from [`Fleet::finish`], why it ends in failure).
#[derive(Debug)]
pub enum FleetError {
    /// `--write` without the one context it lifts the rule of (or with several).
    WriteNeedsOneContext,
    /// `--cluster`/`--user` with several contexts.
    OverridesNeedOneContext,
    /// A flag would loosen the safety rules of a context among several (why, in one line).
    LoosensOneContext(String),
    /// `--all-contexts` on a kubeconfig without contexts.
    NoContexts,
    /// The clock the ages read could not be set up.
    Clock(String),
    /// The one context (or the kubeconfig) could not be opened.
    Cluster(ClusterError),
    /// A context's work could not be run (its task ended abnormally).
    Internal(String),
    /// Some contexts failed along the way; each one's warning said why.
    LeftOut,
}

impl FleetError {
    /// The user asked for something that cannot be (a usage error, not a failure of a cluster).
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            FleetError::WriteNeedsOneContext | FleetError::OverridesNeedOneContext | FleetError::LoosensOneContext(_)
        )
    }
}

impl std::fmt::Display for FleetError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FleetError::WriteNeedsOneContext => {
                f.write_str("--write lifts the readOnly rule of one context: name that one with --context")
            }
            FleetError::OverridesNeedOneContext => {
                f.write_str("--cluster and --user override one context's cluster and user: not with several contexts")
            }
            FleetError::LoosensOneContext(why) => f.write_str(why),
            FleetError::NoContexts => f.write_str("the kubeconfig has no contexts"),
            FleetError::Clock(why) => f.write_str(why),
            FleetError::Cluster(e) => write!(f, "{e}"),
            FleetError::Internal(why) => write!(f, "internal error: {why}"),
            FleetError::LeftOut => Ok(()),
        }
    }
}

impl From<ClusterError> for FleetError {
    fn from(e: ClusterError) -> Self {
        FleetError::Cluster(e)
    }
}

/// A front-end's error for the work it runs in each context: the fleet words a failed context's
/// warning with [`ContextError::why`], and makes its own errors through `From<FleetError>`.
pub trait ContextError: From<FleetError> + Send + 'static {
    fn why(&self) -> String;
}

/// One context: its connection and the safety rules in force there.
#[derive(Clone)]
pub struct Member {
    pub conn: Connection,
    pub rules: ContextRules,
}

pub struct Fleet {
    /// The contexts opened, in the order asked for (the kubeconfig's with `--all-contexts`).
    pub members: Vec<Member>,
    /// Several contexts were asked for: every row and report names its context.
    pub several_contexts: bool,
    /// Ages and filters read this clock (the members share it).
    pub clock: Clock,
    /// What the flags said over the rules file (`--read-only` names itself as a read-only reason).
    pub overrides: Overrides,
    /// The contexts that failed so far, and why.
    failed: Mutex<Vec<(String, String)>>,
}

/// How a single-context session opens the kubeconfig's other contexts: its connect options and
/// rules, but `--write` (which lifts one named context's rule) and `--cluster`/`--user` (one
/// context's overrides) left out.
pub struct Others {
    pub connect: ConnectOptions,
    /// The kubeconfig's contexts (more than one).
    pub contexts: Vec<String>,
}

impl Request {
    /// The connect options with the rules each connection decides its own from
    /// (`SafetyConfig::for_connection`).
    fn options(&self) -> ConnectOptions {
        ConnectOptions {
            safety: Some(std::sync::Arc::new((self.rules.clone(), self.overrides.clone()))),
            ..self.connect.clone()
        }
    }

    /// How the kubeconfig's other contexts are opened from a session on `own`: `None` when it
    /// lists no other context. The flags loosen `own`'s rules only (`--write` among them).
    pub fn others(&self, own: &str) -> Option<Others> {
        let overrides = Overrides {
            loosens: Loosens::Only(own.to_string()),
            ..self.overrides.clone()
        };
        let connect = ConnectOptions {
            safety: Some(std::sync::Arc::new((self.rules.clone(), overrides))),
            cluster: None,
            user: None,
            interactive_exec: false,
            ..self.connect.clone()
        };
        let kubeconfig = connect::load_kubeconfig(&connect).ok()?;
        let contexts: Vec<String> = kubeconfig.contexts.iter().map(|c| c.name.clone()).collect();
        (contexts.len() > 1).then_some(Others { connect, contexts })
    }
}

impl Fleet {
    /// A fleet of one context already open (a front-end's own connection, e.g. the TUI's), under
    /// its rules; `read_only_flag`: `--read-only` was given.
    pub fn of_one(member: Member, clock: Clock, read_only_flag: bool) -> Fleet {
        Fleet {
            members: vec![member],
            several_contexts: false,
            clock,
            overrides: Overrides {
                read_only: read_only_flag.then_some(true),
                ..Default::default()
            },
            failed: Default::default(),
        }
    }

    /// Open the contexts asked for; across several, a context that cannot be opened is a
    /// warning and is left out.
    pub async fn open(request: Request) -> Result<Fleet, FleetError> {
        let opts = request.options();
        let clock = match &opts.clock {
            Some(c) => c.clone(),
            None => Clock::from_env().map_err(FleetError::Clock)?,
        };
        // `--write` lifts the rule of the context the user names, never of whichever is current
        if request.write && request.contexts.is_empty() {
            return Err(FleetError::WriteNeedsOneContext);
        }
        // each context once, in the order given: `--context a,a` is one context
        let mut seen = std::collections::BTreeSet::new();
        let given: Vec<String> = request.contexts.iter().filter(|n| seen.insert(*n)).cloned().collect();
        let overrides = request.overrides.clone();
        if !request.all_contexts && given.len() <= 1 {
            let opts = ConnectOptions {
                context: given.first().cloned(),
                ..opts
            };
            let conn = Connection::open(&opts).await?;
            return Ok(Fleet {
                members: vec![Member {
                    rules: conn.rules.clone(),
                    conn,
                }],
                several_contexts: false,
                clock,
                overrides,
                failed: Default::default(),
            });
        }
        if request.cluster.is_some() || request.user.is_some() {
            return Err(FleetError::OverridesNeedOneContext);
        }
        if request.write {
            return Err(FleetError::WriteNeedsOneContext);
        }
        let kubeconfig = connect::load_kubeconfig(&opts)?;
        let mut names: Vec<String> = if request.all_contexts {
            kubeconfig.contexts.iter().map(|c| c.name.clone()).collect()
        } else {
            given
        };
        let mut seen = std::collections::BTreeSet::new();
        names.retain(|n| seen.insert(n.clone()));
        if names.is_empty() {
            return Err(FleetError::NoContexts);
        }
        // across several contexts no flag was given for one: a flag that would loosen a
        // context's rules is refused before anything is read, never applied or silently dropped
        let overrides = Overrides {
            loosens: Loosens::Nowhere,
            ..overrides
        };
        if let Some(why) = names
            .iter()
            .find_map(|n| request.rules.for_context(n, &overrides).dropped_reason(n))
        {
            return Err(FleetError::LoosensOneContext(printable(&why)));
        }
        let opts = ConnectOptions {
            safety: Some(std::sync::Arc::new((request.rules.clone(), overrides.clone()))),
            ..opts
        };
        let opened: Vec<(String, Result<Connection, _>)> = futures::stream::iter(names)
            .map(|name| {
                let opts = ConnectOptions {
                    context: Some(name.clone()),
                    clock: Some(clock.clone()),
                    // several credential plugins asking at once would interleave their prompts
                    // on one terminal: across contexts none may ask (log in to each first)
                    interactive_exec: false,
                    ..opts.clone()
                };
                let kubeconfig = kubeconfig.clone();
                async move {
                    let conn = Connection::open_with(kubeconfig, &opts).await;
                    (name, conn)
                }
            })
            .buffered(CONCURRENT)
            .collect()
            .await;
        let mut fleet = Fleet {
            members: Vec::new(),
            several_contexts: true,
            clock,
            overrides,
            failed: Default::default(),
        };
        for (name, conn) in opened {
            match conn {
                Ok(conn) => fleet.members.push(Member {
                    rules: conn.rules.clone(),
                    conn,
                }),
                Err(e) => fleet.fail(&name, &e.to_string()),
            }
        }
        Ok(fleet)
    }

    /// One context failed: one warning line, and the command will fail at its end.
    pub fn fail(&self, context: &str, why: &str) {
        crate::errln!(
            "warning: context \"{}\": {}; its workspaces are left out",
            printable(context),
            printable(why)
        );
        self.failed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((context.to_string(), why.to_string()));
    }

    /// A warning of one context's read, naming the context when there are several.
    pub fn warn(&self, member: &Member, text: &str) {
        if self.several_contexts {
            crate::errln!("context \"{}\": {}", printable(&member.conn.context), printable(text));
        } else {
            crate::errln!("{}", printable(text));
        }
    }

    /// Run `work` for every context, each on its own task (at most [`CONCURRENT`] at once),
    /// results in the members' order. With one context its error is returned; across several a
    /// context's error is its warning line and the context is left out.
    pub async fn each<T, E, Fut>(&self, work: impl Fn(Member) -> Fut) -> Result<Vec<(Member, T)>, E>
    where
        T: Send + 'static,
        E: ContextError,
        Fut: Future<Output = Result<T, E>> + Send + 'static,
    {
        let results: Vec<_> = futures::stream::iter(self.members.iter().cloned())
            .map(|m| {
                let task = tokio::spawn(work(m.clone()));
                async move {
                    let result = task
                        .await
                        .unwrap_or_else(|e| Err(FleetError::Internal(e.to_string()).into()));
                    (m, result)
                }
            })
            .buffered(CONCURRENT)
            .collect()
            .await;
        let mut out = Vec::with_capacity(results.len());
        for (member, result) in results {
            match result {
                Ok(t) => out.push((member, t)),
                Err(e) if !self.several_contexts => return Err(e),
                Err(e) => self.fail(&member.conn.context, &e.why()),
            }
        }
        Ok(out)
    }

    /// Each context's badge, for the CONTEXT column.
    pub fn badges(&self) -> BTreeMap<String, Badge> {
        self.members
            .iter()
            .filter_map(|m| Some((m.conn.context.clone(), m.rules.badge.clone()?)))
            .collect()
    }

    /// The contexts that failed, and why.
    pub fn failed(&self) -> Vec<(String, String)> {
        self.failed.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The command's end: [`FleetError::LeftOut`] when any context failed (its warning already
    /// said why).
    pub fn finish<E: From<FleetError>>(&self) -> Result<(), E> {
        if self.failed().is_empty() {
            Ok(())
        } else {
            Err(FleetError::LeftOut.into())
        }
    }

    /// The context a row carries: its name across several, none with one.
    pub fn row_context(&self, member: &Member) -> Option<String> {
        self.several_contexts.then(|| member.conn.context.clone())
    }

    /// `--read-only` (or its environment variable) is what makes every context read-only.
    pub fn read_only_flag(&self) -> bool {
        self.overrides.read_only == Some(true)
    }

    /// Why a context refuses every write: its read-only rule, from the flag or the config file.
    pub fn read_only_reason(&self, member: &Member) -> String {
        member.rules.why_read_only(&member.conn.context, self.read_only_flag())
    }
}
