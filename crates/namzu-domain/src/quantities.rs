//! What a workspace holds: its pod's requests and limits summed as the scheduler sums them, and
//! its disks; Kubernetes quantities read and written exactly (`250m`, `1Gi`, `1.5`, `2e3`).
//!
//! The scheduler's rule (`resourcehelper.PodRequests`): the app containers are summed, sidecars
//! (init containers with `restartPolicy: Always`) run beside them and are added; each ordinary
//! init container runs alone with the sidecars started before it, and the pod needs the largest
//! of those moments; pod-level `spec.resources` replaces that sum for each resource it names;
//! `spec.overhead` (set from the RuntimeClass at admission) is added on top. Limits follow the
//! same rule. A resource with a limit and no request asks for its limit, as the API server
//! defaults it at admission.
//!
//! A workspace's figures are its pod's as admitted when it has one of its own (what the node
//! holds: requests defaulted, the RuntimeClass's overhead), else its pod template's (what a pod
//! would ask for; a RuntimeClass's overhead is not known from the template). Pure: no I/O.

use serde_json::{Map, Value, json};
use std::collections::BTreeMap;

/// A quantity in thousandths of its unit (`250m` = 250, `1Gi` = 1073741824000): exact for every
/// quantity the API server accepts down to the milli-unit; smaller ones round up, as the API
/// server's `MilliValue` does.
pub(crate) type Milli = i128;

/// Read a Kubernetes quantity (`resource.Quantity` syntax); `None` for anything else.
pub fn parse_quantity(text: &str) -> Option<Milli> {
    let text = text.trim();
    let (negative, body) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    let number_end = body
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(body.len());
    let (number, suffix) = body.split_at(number_end);
    if number.is_empty() || number == "." || number.matches('.').count() > 1 {
        return None;
    }
    let (whole, frac) = number.split_once('.').unwrap_or((number, ""));
    // the value as digits × 10^-scale
    let digits: String = format!("{whole}{frac}");
    if digits.len() > 30 {
        return None;
    }
    let mantissa: i128 = if digits.is_empty() { 0 } else { digits.parse().ok()? };
    let scale = frac.len() as i32;
    // value × 1000 = mantissa × base^power × 10^(3 - scale)
    let (binary, exp10): (u32, i32) = match suffix {
        "" => (0, 0),
        "Ki" => (10, 0),
        "Mi" => (20, 0),
        "Gi" => (30, 0),
        "Ti" => (40, 0),
        "Pi" => (50, 0),
        "Ei" => (60, 0),
        "n" => (0, -9),
        "u" => (0, -6),
        "m" => (0, -3),
        "k" => (0, 3),
        "M" => (0, 6),
        "G" => (0, 9),
        "T" => (0, 12),
        "P" => (0, 15),
        "E" => (0, 18),
        s if s.starts_with(['e', 'E']) => (0, s[1..].parse::<i32>().ok().filter(|e| e.abs() <= 18)?),
        _ => return None,
    };
    let shifted = mantissa.checked_mul(1i128.checked_shl(binary)?)?;
    let exp = exp10 + 3 - scale;
    let milli = if exp >= 0 {
        shifted.checked_mul(10i128.checked_pow(exp as u32)?)?
    } else {
        let div = 10i128.checked_pow((-exp) as u32)?;
        // rounded up to the next milli-unit, as the API server does
        (shifted + div - 1) / div
    };
    Some(if negative { -milli } else { milli })
}

/// What a quantity measures, which says how it is written back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// CPU: whole cores, else millicores (`2`, `250m`).
    Cores,
    /// Bytes (memory, storage): the largest binary suffix that is exact (`1Gi`, `1536Mi`).
    Bytes,
    /// Counts (GPUs, pods): the plain number, millis where not whole.
    Count,
}

impl Unit {
    pub(crate) fn of(resource: &str) -> Unit {
        match resource {
            "cpu" => Unit::Cores,
            "memory" | "storage" | "ephemeral-storage" => Unit::Bytes,
            r if r.starts_with("hugepages-") => Unit::Bytes,
            _ => Unit::Count,
        }
    }
}

/// Write a quantity back in the canonical form of its unit.
pub fn format_quantity(milli: Milli, unit: Unit) -> String {
    if milli % 1000 != 0 {
        return format!("{milli}m");
    }
    let whole = milli / 1000;
    match unit {
        Unit::Bytes if whole != 0 => {
            for (shift, suffix) in [(60, "Ei"), (50, "Pi"), (40, "Ti"), (30, "Gi"), (20, "Mi"), (10, "Ki")] {
                let base = 1i128 << shift;
                if whole % base == 0 {
                    return format!("{}{suffix}", whole / base);
                }
            }
            whole.to_string()
        }
        _ => whole.to_string(),
    }
}

/// A short human figure for tables: `2.5` cores, `1.5Gi`, `10Gi`.
pub fn human(milli: Milli, unit: Unit) -> String {
    match unit {
        Unit::Cores | Unit::Count => {
            if milli % 1000 == 0 {
                (milli / 1000).to_string()
            } else if milli < 1000 {
                format!("{milli}m")
            } else {
                trim(milli as f64 / 1000.0)
            }
        }
        Unit::Bytes => {
            let bytes = milli as f64 / 1000.0;
            for (shift, suffix) in [(50, "Pi"), (40, "Ti"), (30, "Gi"), (20, "Mi"), (10, "Ki")] {
                let base = (1u64 << shift) as f64;
                if bytes >= base {
                    return format!("{}{suffix}", trim(bytes / base));
                }
            }
            format!("{}", bytes.round())
        }
    }
}

fn trim(x: f64) -> String {
    let s = format!("{x:.1}");
    s.strip_suffix(".0").map(str::to_string).unwrap_or(s)
}

/// Quantities by resource name (`cpu`, `memory`, `nvidia.com/gpu`).
pub type List = BTreeMap<String, Milli>;

/// One disk of a workspace.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Disk {
    /// The PVC's name.
    pub claim: String,
    /// What the bound PVC holds (`status.capacity.storage`), else what it or its
    /// `volumeClaimTemplates` entry asks for; `None` when neither says.
    pub size: Option<Milli>,
}

/// Where a workspace's requests and limits were read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Source {
    /// Its pod as the API server admitted it.
    Pod,
    /// Its Sandbox's pod template (no pod of its own).
    #[default]
    Template,
}

impl Source {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Source::Pod => "pod",
            Source::Template => "template",
        }
    }
}

/// What one workspace holds or asks for.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Resources {
    pub requests: List,
    pub limits: List,
    pub disks: Vec<Disk>,
    pub source: Source,
}

impl Resources {
    /// `{"source":"pod","requests":{"cpu":"250m"},"limits":{…},"disks":[{"claim":…,"size":"10Gi"}]}`.
    pub fn to_json(&self) -> Value {
        json!({
            "source": self.source.as_str(),
            "requests": list_json(&self.requests),
            "limits": list_json(&self.limits),
            "disks": self.disks.iter().map(|d| json!({
                "claim": d.claim,
                "size": d.size.map(|s| format_quantity(s, Unit::Bytes)),
            })).collect::<Vec<_>>(),
        })
    }

    /// The disks' total (sizes not known count nothing).
    pub(crate) fn disk_total(&self) -> Milli {
        self.disks.iter().filter_map(|d| d.size).sum()
    }
}

pub fn list_json(list: &List) -> Value {
    Value::Object(
        list.iter()
            .map(|(k, v)| (k.clone(), json!(format_quantity(*v, Unit::of(k)))))
            .collect::<Map<_, _>>(),
    )
}

/// Add `b` into `a`, resource by resource.
pub fn add(a: &mut List, b: &List) {
    for (k, v) in b {
        *a.entry(k.clone()).or_default() += v;
    }
}

fn max_into(a: &mut List, b: &List) {
    for (k, v) in b {
        let e = a.entry(k.clone()).or_default();
        *e = (*e).max(*v);
    }
}

/// A container's (or the pod's own) `resources.<which>` (unreadable quantities count nothing);
/// `requests` with each limit that has no request, as the API server defaults them.
fn container_list(container: &Value, which: &str) -> List {
    let mut out = quantities(container, which);
    if which == "requests" {
        for (k, v) in quantities(container, "limits") {
            out.entry(k).or_insert(v);
        }
    }
    out
}

fn quantities(container: &Value, which: &str) -> List {
    container
        .pointer(&format!("/resources/{which}"))
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| {
                    let q = match v {
                        Value::String(s) => parse_quantity(s)?,
                        n => n.as_i64()? as Milli * 1000,
                    };
                    Some((k.clone(), q))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// A pod spec's effective `which` (`requests` or `limits`) as the scheduler computes it.
pub(crate) fn pod_sum(spec: &Value, which: &str) -> List {
    let containers = |key: &str| {
        spec.get(key)
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or(&[])
    };
    let mut total = List::new();
    for c in containers("containers") {
        add(&mut total, &container_list(c, which));
    }
    let (mut sidecars, mut init_max) = (List::new(), List::new());
    for c in containers("initContainers") {
        let own = container_list(c, which);
        if c.get("restartPolicy").and_then(Value::as_str) == Some("Always") {
            add(&mut sidecars, &own);
            // a sidecar starting runs beside the ones before it
            max_into(&mut init_max, &sidecars);
        } else {
            let mut moment = sidecars.clone();
            add(&mut moment, &own);
            max_into(&mut init_max, &moment);
        }
    }
    add(&mut total, &sidecars);
    max_into(&mut total, &init_max);
    // pod-level resources stand for the containers' sum of each resource they name
    total.extend(container_list(spec, which));
    // the overhead is added to every request, and to a limit only where there is one (a
    // resource without a limit stays unlimited)
    if let Some(overhead) = spec.get("overhead").and_then(Value::as_object) {
        for (k, v) in overhead {
            if let Some(q) = v.as_str().and_then(parse_quantity)
                && (which == "requests" || total.get(k).is_some_and(|l| *l != 0))
            {
                *total.entry(k.clone()).or_default() += q;
            }
        }
    }
    total.retain(|_, v| *v != 0);
    total
}

/// The storage a `volumeClaimTemplates` entry or PVC asks for.
pub(crate) fn requested_storage(claim_or_entry: &Value) -> Option<Milli> {
    claim_or_entry
        .pointer("/spec/resources/requests/storage")
        .and_then(Value::as_str)
        .and_then(parse_quantity)
}

/// What a bound PVC holds.
pub(crate) fn capacity(pvc: &Value) -> Option<Milli> {
    pvc.pointer("/status/capacity/storage")
        .and_then(Value::as_str)
        .and_then(parse_quantity)
}

/// What a Sandbox holds: its pod template's sums and one disk per `volumeClaimTemplates` entry,
/// sized by its PVC (`pvc(name)`) where that is read, else by the entry.
pub(crate) fn of_sandbox<'a>(sandbox: &Value, pvc: impl Fn(&str) -> Option<&'a Value>) -> Resources {
    let spec = sandbox
        .pointer("/spec/podTemplate/spec")
        .cloned()
        .unwrap_or(Value::Null);
    let name = sandbox.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("");
    let disks = sandbox
        .pointer("/spec/volumeClaimTemplates")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
        .iter()
        .filter_map(|entry| {
            let entry_name = entry.pointer("/metadata/name")?.as_str()?;
            let claim = format!("{entry_name}-{name}");
            let read = pvc(&claim);
            let size = read
                .and_then(capacity)
                .or_else(|| read.and_then(requested_storage))
                .or_else(|| requested_storage(entry));
            Some(Disk { claim, size })
        })
        .collect();
    Resources {
        requests: pod_sum(&spec, "requests"),
        limits: pod_sum(&spec, "limits"),
        disks,
        source: Source::Template,
    }
}

/// What a workspace holds: its own pod's requests and limits as admitted when `pod` is given
/// (the pod the Sandbox owns), else its template's ([`of_sandbox`]); its disks either way.
pub fn of_workspace<'a>(sandbox: &Value, pod: Option<&Value>, pvc: impl Fn(&str) -> Option<&'a Value>) -> Resources {
    let template = of_sandbox(sandbox, pvc);
    match pod.and_then(|p| p.get("spec")) {
        Some(spec) => Resources {
            requests: pod_sum(spec, "requests"),
            limits: pod_sum(spec, "limits"),
            source: Source::Pod,
            ..template
        },
        None => template,
    }
}

/// The what-if of `verb` over its targets (each as its fresh read's mode and what it holds): a
/// suspend or delete frees the requests of those running, a resume starts holding those of the
/// suspended; their disks stay (or go, with a delete). The CLI's bulk dry run and the UI's bulk
/// confirmation both end with it.
pub fn what_if_of<'a>(
    verb: super::fence::Verb,
    targets: impl IntoIterator<Item = (super::patch::Mode, &'a Resources)>,
) -> String {
    use super::fence::Verb;
    let (mut freed, mut started, mut disks) = (List::new(), List::new(), 0);
    for (mode, read) in targets {
        let running = mode == super::patch::Mode::Running;
        match verb {
            Verb::Suspend | Verb::Delete if running => add(&mut freed, &read.requests),
            Verb::Resume if !running => add(&mut started, &read.requests),
            _ => {}
        }
        disks += read.disk_total();
    }
    what_if(&freed, &started, disks, verb == Verb::Delete)
}

/// A what-if's line: what the writes would free or start holding, e.g. "would free 24 CPU,
/// 96Gi memory; disks stay: 480Gi". `freed` is what stops running, `started` what starts.
pub(crate) fn what_if(freed: &List, started: &List, disks: Milli, deleted_disks: bool) -> String {
    let figures = |l: &List| -> String {
        let mut parts: Vec<String> = Vec::new();
        if let Some(c) = l.get("cpu").filter(|v| **v != 0) {
            parts.push(format!("{} CPU", human(*c, Unit::Cores)));
        }
        if let Some(m) = l.get("memory").filter(|v| **v != 0) {
            parts.push(format!("{} memory", human(*m, Unit::Bytes)));
        }
        for (k, v) in l {
            if k != "cpu" && k != "memory" && *v != 0 {
                parts.push(format!("{} {k}", human(*v, Unit::of(k))));
            }
        }
        parts.join(", ")
    };
    let mut out = Vec::new();
    let (f, s) = (figures(freed), figures(started));
    if !f.is_empty() {
        out.push(format!("would free {f} (requests)"));
    }
    if !s.is_empty() {
        out.push(format!("would start holding {s} (requests)"));
    }
    if out.is_empty() {
        out.push("would free no CPU or memory".into());
    }
    let disk = human(disks, Unit::Bytes);
    let tail = if deleted_disks {
        format!("disks deleted: {disk}")
    } else {
        format!("disks stay: {disk}")
    };
    format!("{}; {tail}", out.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities_parse_exactly() {
        let cases = [
            ("250m", 250),
            ("1", 1000),
            ("1.5", 1500),
            ("0.1", 100),
            ("1Ki", 1024 * 1000),
            ("1Gi", (1i128 << 30) * 1000),
            ("1.5Gi", (3i128 << 29) * 1000),
            ("1k", 1_000_000),
            ("1M", 1_000_000_000),
            ("2e3", 2_000_000),
            ("1E", 1_000_000_000_000_000_000_000),
            ("100n", 1),
            ("1u", 1),
            ("-1", -1000),
            (".5", 500),
        ];
        for (text, want) in cases {
            assert_eq!(parse_quantity(text), Some(want), "{text}");
        }
        for bad in ["", "Gi", "1.2.3", "1X", "one", "1e99", "."] {
            assert_eq!(parse_quantity(bad), None, "{bad}");
        }
    }

    #[test]
    fn quantities_format_canonically() {
        assert_eq!(format_quantity(250, Unit::Cores), "250m");
        assert_eq!(format_quantity(2000, Unit::Cores), "2");
        assert_eq!(format_quantity((1i128 << 30) * 1000, Unit::Bytes), "1Gi");
        assert_eq!(format_quantity((3i128 << 29) * 1000, Unit::Bytes), "1536Mi");
        assert_eq!(format_quantity(1_000_000, Unit::Bytes), "1000");
        assert_eq!(format_quantity(1000, Unit::Count), "1");
        for text in ["250m", "2", "1Gi", "1536Mi", "10Gi"] {
            let unit = if text.ends_with('i') { Unit::Bytes } else { Unit::Cores };
            assert_eq!(format_quantity(parse_quantity(text).unwrap(), unit), text);
        }
        assert_eq!(human((3i128 << 29) * 1000, Unit::Bytes), "1.5Gi");
        assert_eq!(human(2500, Unit::Cores), "2.5");
    }

    #[test]
    fn pod_sums_follow_the_scheduler() {
        let spec = json!({
            "initContainers": [
                {"name": "setup", "resources": {"requests": {"cpu": "2", "memory": "64Mi"}}},
                {"name": "proxy", "restartPolicy": "Always", "resources": {"requests": {"cpu": "100m", "memory": "32Mi"}}},
                {"name": "late", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}
            ],
            "containers": [
                {"name": "a", "resources": {"requests": {"cpu": "250m", "memory": "256Mi"}, "limits": {"nvidia.com/gpu": "1"}}},
                {"name": "b", "resources": {"requests": {"cpu": "250m", "memory": "256Mi"}}}
            ],
            "overhead": {"cpu": "50m"}
        });
        let requests = pod_sum(&spec, "requests");
        // cpu: max(0.5 + 0.1, 2, 0.1 + 1) + 0.05 = 2.05
        assert_eq!(requests["cpu"], 2050);
        // memory: max(512Mi + 32Mi, 64Mi, 32Mi + 1Gi) = 1056Mi
        assert_eq!(requests["memory"], (1056i128 << 20) * 1000);
        assert_eq!(pod_sum(&spec, "limits")["nvidia.com/gpu"], 1000);
        assert!(pod_sum(&json!({}), "requests").is_empty());
    }

    #[test]
    fn pod_level_resources_and_defaults() {
        let spec = json!({
            "containers": [
                {"name": "a", "resources": {"limits": {"cpu": "1", "memory": "2Gi"}, "requests": {"cpu": "250m"}}},
                {"name": "b", "resources": {"requests": {"cpu": "250m"}}}
            ],
            "overhead": {"memory": "120Mi"}
        });
        let requests = pod_sum(&spec, "requests");
        assert_eq!(requests["cpu"], 500);
        // memory defaulted from a's limit, the overhead on top
        assert_eq!(requests["memory"], (2168i128 << 20) * 1000);
        let mut pod_level = spec.clone();
        pod_level["resources"] = json!({"limits": {"cpu": "4"}});
        assert_eq!(pod_sum(&pod_level, "requests")["cpu"], 4000);
        assert_eq!(pod_sum(&pod_level, "limits")["cpu"], 4000);
        assert_eq!(pod_sum(&pod_level, "requests")["memory"], requests["memory"]);
    }

    #[test]
    fn a_sandbox_holds_its_template_and_disks() {
        let sbx = json!({"metadata": {"name": "namzu-ws-a"}, "spec": {
            "podTemplate": {"spec": {"containers": [{"name": "agent", "resources": {"requests": {"cpu": "500m"}}}]}},
            "volumeClaimTemplates": [{"metadata": {"name": "disk"}, "spec": {"resources": {"requests": {"storage": "10Gi"}}}}]}});
        let pvc = json!({"status": {"capacity": {"storage": "20Gi"}}});
        let r = of_sandbox(&sbx, |_| None);
        assert_eq!(
            r.to_json()["disks"],
            json!([{"claim": "disk-namzu-ws-a", "size": "10Gi"}])
        );
        assert_eq!(r.to_json()["requests"], json!({"cpu": "500m"}));
        assert_eq!(of_sandbox(&sbx, |_| Some(&pvc)).disks[0].size, parse_quantity("20Gi"));
    }

    #[test]
    fn what_if_says_what_moves() {
        let freed: List = [
            ("cpu".to_string(), 24_000),
            ("memory".to_string(), (96i128 << 30) * 1000),
        ]
        .into();
        assert_eq!(
            what_if(&freed, &List::new(), (480i128 << 30) * 1000, false),
            "would free 24 CPU, 96Gi memory (requests); disks stay: 480Gi"
        );
    }

    #[test]
    fn what_if_of_counts_what_each_verb_moves() {
        use crate::fence::Verb;
        use crate::patch::Mode;
        let ws = Resources {
            requests: [("cpu".to_string(), 250), ("memory".to_string(), (1i128 << 30) * 1000)].into(),
            limits: List::new(),
            disks: vec![Disk {
                claim: "d".into(),
                size: Some((10i128 << 30) * 1000),
            }],
            source: Source::Template,
        };
        let targets = [(Mode::Running, &ws), (Mode::Running, &ws), (Mode::Suspended, &ws)];
        assert_eq!(
            what_if_of(Verb::Suspend, targets),
            "would free 500m CPU, 2Gi memory (requests); disks stay: 30Gi"
        );
        assert_eq!(
            what_if_of(Verb::Resume, targets),
            "would start holding 250m CPU, 1Gi memory (requests); disks stay: 30Gi"
        );
        assert!(what_if_of(Verb::Delete, targets).ends_with("disks deleted: 30Gi"));
    }
}
