//! Several kube contexts at once (`--context a,b`, `--all-contexts`): each context is opened and
//! read on its own — its credentials, its timeout, its safety rules — at most [`CONCURRENT`] at a
//! time. Across several, one that fails costs one warning line and its rows, never the others',
//! and the command exits 1 at the end, as kubectl does after a partial failure. With one context
//! its failure is the command's, exactly as before.

use super::exit::{self, Failure};
use super::globals::Globals;
use super::output;
use crate::clock::Clock;
use crate::cluster::connect::{self, Connection};
use crate::domain::safety::{Badge, ContextRules};
use futures::StreamExt;
use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Mutex;

/// At most this many contexts are read at once.
pub const CONCURRENT: usize = 8;

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
    pub labelled: bool,
    /// Ages and filters read this clock (the members share it).
    pub clock: Clock,
    /// The contexts that failed so far, and why.
    failed: Mutex<Vec<(String, String)>>,
}

impl Fleet {
    /// Open the contexts the flags select; across several, a context that cannot be opened is a
    /// warning and is left out.
    pub async fn open(globals: &Globals, interactive_exec: bool) -> Result<Fleet, Failure> {
        let rules = super::config::load(globals)?;
        let overrides = globals.overrides();
        // each connection decides the rules it is written under (`SafetyConfig::for_connection`)
        let opts = connect::ConnectOptions {
            safety: Some(std::sync::Arc::new((rules, overrides))),
            ..globals.connect_options(interactive_exec)
        };
        let clock = match &opts.clock {
            Some(c) => c.clone(),
            None => Clock::from_env().map_err(Failure::error)?,
        };
        // `--write` lifts the rule of the context the user names, never of whichever is current
        if globals.write && globals.context.is_empty() {
            return Err(Failure::usage(
                "--write lifts the readOnly rule of one context: name that one with --context",
            ));
        }
        // each context once, in the order given: `--context a,a` is one context
        let mut seen = std::collections::BTreeSet::new();
        let given: Vec<String> = globals.context.iter().filter(|n| seen.insert(*n)).cloned().collect();
        if !globals.all_contexts && given.len() <= 1 {
            let opts = connect::ConnectOptions {
                context: given.first().cloned(),
                ..opts
            };
            let conn = Connection::open(&opts).await?;
            return Ok(Fleet {
                members: vec![Member {
                    rules: conn.rules.clone(),
                    conn,
                }],
                labelled: false,
                clock,
                failed: Default::default(),
            });
        }
        if globals.cluster.is_some() || globals.user.is_some() {
            return Err(Failure::usage(
                "--cluster and --user override one context's cluster and user: not with several contexts",
            ));
        }
        if globals.write {
            return Err(Failure::usage(
                "--write lifts the readOnly rule of one context: name that one with --context",
            ));
        }
        let kubeconfig = connect::load_kubeconfig(&opts)?;
        let mut names: Vec<String> = if globals.all_contexts {
            kubeconfig.contexts.iter().map(|c| c.name.clone()).collect()
        } else {
            given
        };
        let mut seen = std::collections::BTreeSet::new();
        names.retain(|n| seen.insert(n.clone()));
        if names.is_empty() {
            return Err(Failure::error("the kubeconfig has no contexts"));
        }
        let opened: Vec<(String, Result<Connection, _>)> = futures::stream::iter(names)
            .map(|name| {
                let opts = connect::ConnectOptions {
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
            labelled: true,
            clock,
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

    /// One context failed: one warning line, and the command will exit 1.
    pub fn fail(&self, context: &str, why: &str) {
        crate::errln!(
            "warning: context \"{}\": {}; its workspaces are left out",
            output::printable(context),
            output::printable(why)
        );
        self.failed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((context.to_string(), why.to_string()));
    }

    /// A warning of one context's read, naming the context when there are several.
    pub fn warn(&self, member: &Member, text: &str) {
        if self.labelled {
            crate::errln!(
                "context \"{}\": {}",
                output::printable(&member.conn.context),
                output::printable(text)
            );
        } else {
            crate::errln!("{}", output::printable(text));
        }
    }

    /// Run `work` for every context, each on its own task (at most [`CONCURRENT`] at once),
    /// results in the members' order. With one context its error is returned; across several a
    /// context's error is its warning line and the context is left out.
    pub async fn each<T, Fut>(&self, work: impl Fn(Member) -> Fut) -> Result<Vec<(Member, T)>, Failure>
    where
        T: Send + 'static,
        Fut: Future<Output = Result<T, Failure>> + Send + 'static,
    {
        let results: Vec<_> = futures::stream::iter(self.members.iter().cloned())
            .map(|m| {
                let task = tokio::spawn(work(m.clone()));
                async move {
                    let result = task
                        .await
                        .unwrap_or_else(|e| Err(Failure::error(format!("internal error: {e}"))));
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
                Err(e) if !self.labelled => return Err(e),
                Err(e) => self.fail(&member.conn.context, &e.message),
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

    /// The command's end: exit 1 when any context failed (its warning already said why).
    pub fn finish(&self) -> Result<(), Failure> {
        if self.failed().is_empty() {
            Ok(())
        } else {
            Err(Failure::quiet(exit::ERROR))
        }
    }

    /// The context a row carries: its name across several, none with one.
    pub fn row_context(&self, member: &Member) -> Option<String> {
        self.labelled.then(|| member.conn.context.clone())
    }
}
