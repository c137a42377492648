//! The containers' logs: seeded at start, on a crash, and by a scenario.

use super::*;

impl Controller {
    /// A started container with no log yet gets the start-up lines an agent prints (and, while
    /// it runs, a line every couple of seconds when followed); one that ended (`ended`) gets the
    /// lines of a run that ran out of memory.
    pub(super) fn seed_logs(
        &mut self,
        pod: &Value,
        containers: &[String],
        image: &str,
        from: DateTime<Utc>,
        ended: Option<DateTime<Utc>>,
    ) {
        let (ns, name, uid) = (
            s(pod, "/metadata/namespace"),
            s(pod, "/metadata/name"),
            s(pod, "/metadata/uid"),
        );
        for c in containers {
            if self.logs.has_any(ns, name, uid, c) {
                continue;
            }
            let mut lines = logs::startup_lines(name, image);
            if ended.is_some() {
                lines.push("level=info msg=\"indexing workspace\" files=48213".to_string());
                lines.push("level=warn msg=\"memory pressure\" rss_mb=1996 limit_mb=2048".to_string());
            }
            let stamped: Vec<(DateTime<Utc>, String)> = lines
                .into_iter()
                .enumerate()
                .map(|(i, l)| (from + Duration::milliseconds(150 * i as i64), l))
                .collect();
            let log = self.logs.entry(ns, name, uid, c);
            log.chatty = ended.is_none();
            self.logs.set(ns, name, uid, c, stamped, false);
        }
    }
}

impl Controller {
    /// A crash loop's previous run: start-up lines ending in a fatal error, at the run's end.
    pub(super) fn seed_crash_logs(&mut self, pod: &Value, containers: &[String], image: &str) {
        let (ns, name, uid) = (
            s(pod, "/metadata/namespace"),
            s(pod, "/metadata/name"),
            s(pod, "/metadata/uid"),
        );
        for c in containers {
            if self.logs.has_any(ns, name, uid, c) {
                continue;
            }
            let Some(r) = self.restarts.get(&(uid.to_string(), c.clone())) else {
                continue;
            };
            let from = parse_time(r.last["startedAt"].as_str().unwrap_or(""));
            let Some(from) = from else { continue };
            let stamped: Vec<(DateTime<Utc>, String)> = logs::crash_lines(image)
                .into_iter()
                .enumerate()
                .map(|(i, l)| (from + Duration::seconds(i as i64), l))
                .collect();
            self.logs.set(ns, name, uid, c, stamped, true);
        }
    }
}

impl Controller {
    /// A scenario's log lines for a container, stamped a second apart: the current ones up to
    /// `now`, the previous ones up to the last run's end.
    #[allow(clippy::too_many_arguments)]
    pub fn scenario_logs(
        &mut self,
        store: &Store,
        ns: &str,
        pod: &str,
        uid: &str,
        container: &str,
        lines: &[String],
        previous: bool,
        now: DateTime<Utc>,
    ) {
        let end = if previous {
            store
                .get(&PODS, ns, pod)
                .and_then(|p| logs::container_status(p, container))
                .and_then(|c| c.pointer("/lastState/terminated/finishedAt"))
                .and_then(Value::as_str)
                .and_then(parse_time)
                .unwrap_or(now - Duration::minutes(1))
        } else {
            now
        };
        let n = lines.len() as i64;
        let stamped = lines
            .iter()
            .enumerate()
            .map(|(i, l)| (end - Duration::seconds(n - 1 - i as i64), l.clone()))
            .collect();
        self.logs.set(ns, pod, uid, container, stamped, previous);
    }
}
