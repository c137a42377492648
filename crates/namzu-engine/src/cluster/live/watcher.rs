//! One watch's task: its first state (a streaming list, else a LIST), the watch resumed from
//! the newest resourceVersion, a list again on 410, a reconnect with jittered backoff when the
//! watch or the probe fails, and re-listing where the user may list but not watch.

use super::{Cut, Feed, LiveOptions, StreamName, StreamStatus};
use crate::cluster::connect::Connection;
use crate::cluster::error::ClusterError;
use crate::cluster::inventory;
use crate::cluster::resources::{self, Watched};
use chrono::{DateTime, Utc};
use futures::StreamExt;
use namzu_domain::mirror::{Kind, Listed, ObjectKey};
use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::sync::mpsc::UnboundedSender;
use tokio::sync::watch;

/// The longest wait between reconnection attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(8);
/// When the API server answers again after an outage, the waiting watches reconnect within
/// this (each at a moment of its own).
const WAKE_SPREAD: Duration = Duration::from_millis(400);

/// One watch's task.
pub(super) struct Watcher {
    pub(super) conn: Connection,
    pub(super) name: StreamName,
    pub(super) selector: Option<String>,
    pub(super) feed: UnboundedSender<Feed>,
    pub(super) cuts: watch::Receiver<Cut>,
    pub(super) wakes: watch::Receiver<u64>,
    pub(super) streaming: Arc<AtomicBool>,
    pub(super) options: LiveOptions,
    /// When the watch last opened, and whether anything came on it since: a watch that ends at
    /// once with nothing on it is trouble (backoff), not a normal end.
    pub(super) live_since: Option<std::time::Instant>,
    pub(super) saw_event: bool,
}

/// `d` less up to half of it, at random: the watches of many clients (and of one client's kinds
/// and namespaces) that failed together do not come back in step.
fn jittered(d: Duration) -> Duration {
    use std::hash::{BuildHasher, Hasher};
    let random = std::collections::hash_map::RandomState::new().build_hasher().finish();
    d - d.mul_f64((random % 1000) as f64 / 2000.0)
}

/// A watch that stayed open this long was healthy, whatever ended it.
const HEALTHY_AFTER: Duration = Duration::from_secs(5);

/// How a watch ended without an error.
enum Ended {
    /// The server closed it (its timeout): watch again from the last resourceVersion.
    Closed,
    /// 410: the resourceVersion expired; list again.
    Gone,
    /// The probe failed: reconnect.
    Cut(Cut),
}

impl Watcher {
    fn send(&self, f: Feed) {
        let _ = self.feed.send(f);
    }

    fn live(&mut self) {
        self.live_since = Some(std::time::Instant::now());
        self.send(Feed::Status(self.name.clone(), StreamStatus::Live));
    }

    fn kind(&self) -> &'static resources::ApiKind {
        resources::ApiKind::of(self.name.kind)
    }

    pub(super) async fn run(mut self) {
        let mut version: Option<String> = None;
        let mut trouble: Option<DateTime<Utc>> = None;
        let mut backoff = Duration::from_millis(500);
        // watches in a row that ended within HEALTHY_AFTER though they delivered events
        let mut streak = 0u32;
        // a resume from a resourceVersion kept over trouble was refused (410): listed again at
        // once, without a word; a second 410 in a row is trouble
        let mut relisted_at_once = false;
        loop {
            let result = match version.clone() {
                None => self.first_state(&mut version).await,
                Some(from) => self.resume(&from, &mut version).await,
            };
            let opened = self.live_since.take();
            let lasted = opened.is_some_and(|t| t.elapsed() >= HEALTHY_AFTER);
            let delivered = std::mem::take(&mut self.saw_event);
            // a watch that stayed open a while was healthy, whatever ended it; one that ended
            // quickly, events or not, counts toward a streak: the first reconnects at once, the
            // ones after back off (a server answering one event then 410 would otherwise be
            // asked again at once, forever)
            if lasted {
                (trouble, backoff, streak) = (None, Duration::from_millis(500), 0);
            } else if opened.is_some() && delivered {
                streak += 1;
            }
            let healthy = opened.is_some() && (lasted || (delivered && streak <= 1));
            // an expired resourceVersion refused when the watch opens is the same as inside it
            let result = match result {
                Err(ClusterError::Api { code: 410, .. }) => Ok(Ended::Gone),
                other => other,
            };
            if healthy {
                relisted_at_once = false;
            }
            let why = match result {
                // a fresh resume after trouble (an API server restart: its watch cache starts at
                // the current resourceVersion, so every resumed watch gets 410): list again now
                Ok(Ended::Gone) if !delivered && !relisted_at_once && version.is_some() => {
                    version = None;
                    relisted_at_once = true;
                    continue;
                }
                Ok(Ended::Closed) if healthy => continue,
                Ok(Ended::Gone) if healthy => {
                    version = None;
                    continue;
                }
                Ok(Ended::Closed) if delivered => {
                    format!("the API server ended the watch {streak} times in a row within seconds")
                }
                Ok(Ended::Gone) if delivered => {
                    version = None;
                    format!("the API server expired the resourceVersion (410) {streak} times in a row within seconds")
                }
                Ok(Ended::Closed) => "the API server ended the watch at once".to_string(),
                Ok(Ended::Gone) => {
                    version = None;
                    "the API server expired the resourceVersion (410) again".to_string()
                }
                Ok(Ended::Cut(cut)) => {
                    trouble.get_or_insert(cut.since);
                    cut.why
                }
                Err(ClusterError::Forbidden { op, .. }) if op.verb == "watch" => return self.poll().await,
                Err(e @ ClusterError::Forbidden { .. }) => {
                    return self.forbidden(&e);
                }
                // CiliumNetworkPolicies without Cilium, SandboxTemplates without the extensions
                Err(e) if matches!(self.name.kind, Kind::Policies | Kind::Templates) && e.is_not_found() => {
                    return self.send(Feed::NotServed(self.name.clone()));
                }
                Err(e) if self.name.kind == Kind::Sandboxes && e.is_not_found() => {
                    let e = inventory::explain_missing(&self.conn, e).await;
                    return self.send(Feed::Fatal(e.to_string()));
                }
                Err(e) => e.to_string(),
            };
            let since = *trouble.get_or_insert_with(|| self.conn.clock.now());
            self.send(Feed::Status(
                self.name.clone(),
                StreamStatus::Reconnecting { since, why },
            ));
            self.wakes.borrow_and_update();
            tokio::select! {
                _ = tokio::time::sleep(jittered(backoff)) => {}
                _ = self.cuts.changed() => {}
                // the API server answers again: reconnect within a moment (each watch at its
                // own, not every watch of every context at once), and start the backoff over
                _ = self.wakes.changed() => {
                    tokio::time::sleep(jittered(WAKE_SPREAD)).await;
                    backoff = Duration::from_millis(250);
                }
            }
            backoff = (backoff * 2).min(MAX_BACKOFF);
            if self.feed.is_closed() {
                return;
            }
        }
    }

    /// The first state (again): a streaming list where served, else a LIST; then the watch.
    async fn first_state(&mut self, version: &mut Option<String>) -> Result<Ended, ClusterError> {
        let ns = self.name.namespace.clone();
        if self.streaming.load(Ordering::Relaxed) {
            let opened = resources::watch(
                &self.conn,
                self.kind(),
                ns.as_deref(),
                self.selector.as_deref(),
                "",
                true,
                self.options.watch_seconds,
            )
            .await;
            match opened {
                Ok(events) => {
                    self.send(Feed::Listing(self.name.clone()));
                    return self.consume(events, version, true).await;
                }
                // a server without streaming lists refuses the parameters: LIST instead, for good
                Err(ClusterError::Api { code: 400 | 422, .. }) => self.streaming.store(false, Ordering::Relaxed),
                Err(e) => return Err(e),
            }
        }
        let (objects, rv) =
            resources::list_versioned(&self.conn, self.kind(), ns.as_deref(), self.selector.as_deref()).await?;
        *version = Some(rv.clone());
        // the list's state goes with the watch's status (live, or why it is not)
        let opened = self.open(&rv).await;
        if opened.is_ok() {
            self.live();
        }
        self.send(Feed::Reset(self.name.clone(), objects));
        self.consume(opened?, version, false).await
    }

    async fn resume(&mut self, from: &str, version: &mut Option<String>) -> Result<Ended, ClusterError> {
        let events = self.open(from).await?;
        self.live();
        self.consume(events, version, false).await
    }

    /// The watch from resourceVersion `from`.
    async fn open(
        &self,
        from: &str,
    ) -> Result<impl futures::Stream<Item = Result<Watched, ClusterError>> + use<>, ClusterError> {
        resources::watch(
            &self.conn,
            self.kind(),
            self.name.namespace.as_deref(),
            self.selector.as_deref(),
            from,
            false,
            self.options.watch_seconds,
        )
        .await
    }

    /// Read a watch until it ends. `initial`: a streaming list, whose objects are applied as
    /// they come (never held twice) and whose initial-events-end bookmark says which are all.
    async fn consume(
        &mut self,
        events: impl futures::Stream<Item = Result<Watched, ClusterError>>,
        version: &mut Option<String>,
        initial: bool,
    ) -> Result<Ended, ClusterError> {
        let mut listed: Option<BTreeSet<ObjectKey>> = initial.then(BTreeSet::new);
        let key = ObjectKey::of;
        futures::pin_mut!(events);
        loop {
            let next = tokio::select! {
                _ = self.cuts.changed() => return Ok(Ended::Cut(self.cuts.borrow().clone())),
                next = events.next() => next,
            };
            match next {
                None => return Ok(Ended::Closed),
                Some(Err(ClusterError::Api { code: 410, .. })) => return Ok(Ended::Gone),
                Some(Err(e)) => return Err(e),
                Some(Ok(Watched::Applied(v, at))) => {
                    self.saw_event = true;
                    match &mut listed {
                        Some(set) => {
                            set.insert(key(&v));
                        }
                        // a watch that ends resumes after the last change it delivered
                        None if !at.is_empty() => *version = Some(at),
                        None => {}
                    }
                    self.send(Feed::Applied(self.name.clone(), Listed::of(&v)));
                }
                Some(Ok(Watched::Deleted(v, at))) => {
                    self.saw_event = true;
                    match &mut listed {
                        Some(set) => {
                            set.remove(&key(&v));
                        }
                        None if !at.is_empty() => *version = Some(at),
                        None => {}
                    }
                    self.send(Feed::Deleted(self.name.clone(), v));
                }
                Some(Ok(Watched::Bookmark {
                    resource_version,
                    initial_events_end,
                })) => {
                    self.saw_event = true;
                    // a bookmark without a resourceVersion says nothing of where to resume: it
                    // must not reset the resume point to "now"
                    if !resource_version.is_empty() {
                        *version = Some(resource_version);
                    }
                    // the watch says it is live before its first state is complete: the
                    // first full screen comes with every watch's status
                    if initial_events_end && let Some(set) = listed.take() {
                        self.live();
                        self.send(Feed::Listed(self.name.clone(), set));
                    }
                }
            }
        }
    }

    fn forbidden(&self, e: &ClusterError) {
        let warning = match self.name.kind {
            Kind::Sandboxes => e.to_string(),
            Kind::Templates => format!(
                "warning: {e}; templates there are read once by name (needs RBAC list and watch on sandboxtemplates)"
            ),
            Kind::Pods => format!("warning: {e}; POD, NODE and DIAGNOSIS show ? (needs RBAC list on pods)"),
            Kind::Pvcs => format!("warning: {e}; disk diagnosis shows ? (needs RBAC list on persistentvolumeclaims)"),
            Kind::Policies => {
                let ns = self.name.namespace.as_deref().unwrap_or("all namespaces");
                crate::cluster::policies::warning(&[ns], 0).unwrap_or_else(|| e.to_string())
            }
        };
        self.send(Feed::Forbidden(self.name.clone(), warning));
    }

    /// The user may list but not watch: re-list every interval.
    async fn poll(self) {
        let kind = self.kind();
        let scope = match &self.name.namespace {
            Some(ns) => format!("in namespace {ns}"),
            None => "cluster-wide".into(),
        };
        self.send(Feed::Warning(format!(
            "warning: you may not watch {} {scope}; re-listing every {}s instead (needs RBAC watch on {})",
            kind.plural,
            self.options.poll_every.as_secs_f64(),
            kind.plural
        )));
        let mut trouble: Option<DateTime<Utc>> = None;
        loop {
            let listed = resources::list_into(
                &self.conn,
                kind,
                self.name.namespace.as_deref(),
                self.selector.as_deref(),
                Vec::new(),
            )
            .await;
            match listed {
                Ok(objects) => {
                    trouble = None;
                    self.send(Feed::Status(self.name.clone(), StreamStatus::Polling));
                    self.send(Feed::Reset(self.name.clone(), objects));
                }
                Err(e @ ClusterError::Forbidden { .. }) => return self.forbidden(&e),
                Err(e) => {
                    let since = *trouble.get_or_insert_with(|| self.conn.clock.now());
                    self.send(Feed::Status(
                        self.name.clone(),
                        StreamStatus::Reconnecting {
                            since,
                            why: e.to_string(),
                        },
                    ));
                }
            }
            if self.feed.is_closed() {
                return;
            }
            tokio::time::sleep(self.options.poll_every).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every reconnect draws its own pause: 50 contexts × 5 kinds failing together come back
    /// spread over the whole window, not in step.
    #[test]
    fn every_reconnect_draws_its_own_pause() {
        for backoff in [Duration::from_millis(500), MAX_BACKOFF] {
            let pauses: Vec<Duration> = (0..250).map(|_| jittered(backoff)).collect();
            assert!(
                pauses
                    .iter()
                    .all(|p| *p > backoff / 2 - Duration::from_millis(1) && *p <= backoff)
            );
            let distinct: BTreeSet<Duration> = pauses.iter().copied().collect();
            assert!(distinct.len() > 150, "only {} distinct pauses of 250", distinct.len());
            let (min, max) = (pauses.iter().min(), pauses.iter().max());
            assert!(
                max.zip(min).is_some_and(|(max, min)| *max - *min > backoff / 3),
                "the pauses span the window: {min:?}..{max:?}"
            );
        }
    }

    /// Watches on other threads (each context's tasks run wherever the runtime puts them) draw
    /// other pauses too.
    #[test]
    fn threads_draw_other_pauses() {
        let draws: Vec<Vec<Duration>> = (0..4)
            .map(|_| std::thread::spawn(|| (0..20).map(|_| jittered(MAX_BACKOFF)).collect()))
            .map(|t| t.join().unwrap_or_default())
            .collect();
        for (i, a) in draws.iter().enumerate() {
            for b in &draws[i + 1..] {
                assert_ne!(a, b, "two threads drew the same pauses");
            }
        }
    }
}
