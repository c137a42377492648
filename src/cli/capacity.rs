//! `kubectl namzu capacity`: per warm pool ready/desired replicas, claims, update strategy,
//! members running a stale template and the last progress Event (`domain::pools`), pending
//! pods, and workspace counts by state.

use super::exit::Failure;
use super::globals::{Globals, scope};
use super::output::{self, ReportFormat, Tone};
use namzu_domain::annotations::WARM_POOL_SANDBOX;
use namzu_domain::capacity::{Held, PoolCapacity, hold, pools};
use namzu_domain::object::namespace;
use namzu_domain::pools::PoolHealth;
use namzu_domain::pools::health;
use namzu_domain::quantities::{Unit, format_quantity, human, list_json};
use namzu_domain::state::State;
use namzu_engine::cluster::connect::Connection;
use namzu_engine::cluster::error::ClusterError;
use namzu_engine::cluster::resources::{self, CLAIMS, SANDBOXES, WARM_POOLS};
use namzu_engine::ops::fleet::Fleet;
use namzu_engine::ops::inventory::{self, Query, Scope};
use serde_json::{Value, json};
use std::collections::BTreeMap;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Output format.
    #[arg(short = 'o', long, value_enum, default_value = "table")]
    pub output: ReportFormat,
    /// Answer from the flight recorder's recording at TIME (RFC 3339, or relative: -2h, -30m).
    #[arg(long, value_name = "TIME", allow_hyphen_values = true)]
    pub at: Option<String>,
}

struct NamespaceCapacity {
    /// Across contexts, the one it is in.
    context: Option<String>,
    namespace: String,
    pools: Vec<PoolCapacity>,
    /// Each pool's health, by pool name.
    health: BTreeMap<String, PoolHealth>,
    /// `None` when pods may not be listed.
    pending: Option<usize>,
    states: BTreeMap<State, usize>,
    /// What the workspaces of each state hold (requests of pods that run, disks).
    held: BTreeMap<State, Held>,
}

/// Pools or claims in scope; `None` when the extensions are not installed (404). Cluster-wide
/// when allowed, else per namespace the inventory covered; a forbidden namespace is skipped.
async fn extension_objects(
    conn: &Connection,
    kind: &resources::ApiKind,
    scope: &Scope,
    namespaces: &[String],
    warnings: &mut Vec<String>,
) -> Result<Option<Vec<Value>>, ClusterError> {
    let first = match scope {
        Scope::Namespace(n) => resources::list(conn, kind, Some(n), None).await,
        Scope::All => resources::list(conn, kind, None, None).await,
    };
    match first {
        Ok(v) => Ok(Some(v)),
        Err(e) if e.is_not_found() => Ok(None),
        Err(e) if e.is_forbidden() && *scope == Scope::All => {
            let mut out = Vec::new();
            for ns in namespaces {
                match resources::list(conn, kind, Some(ns), None).await {
                    Ok(v) => out.extend(v),
                    Err(e) if e.is_forbidden() => warnings.push(format!("warning: {e}; skipped")),
                    Err(e) => return Err(e),
                }
            }
            Ok(Some(out))
        }
        Err(e) => Err(e),
    }
}

pub(crate) async fn run(globals: &Globals, args: Args) -> Result<(), Failure> {
    let fleet = Fleet::open(crate::cli::config::fleet_request(globals, true)?).await?;
    let all_namespaces = globals.all_namespaces;
    let (source, now) = super::at::source(globals, args.at.as_deref(), fleet.clock.now())?;
    let read = fleet
        .each::<_, Failure, _>(|member| {
            let source = source.clone();
            async move { Ok(one_context(&member.conn, all_namespaces, &source, now).await?) }
        })
        .await?;
    let mut rows = Vec::new();
    for (member, (warnings, context_rows)) in read {
        for w in &warnings {
            fleet.warn(&member, w);
        }
        let context = fleet.row_context(&member);
        rows.extend(context_rows.into_iter().map(|r| NamespaceCapacity {
            context: context.clone(),
            ..r
        }));
    }
    match args.output {
        ReportFormat::Json | ReportFormat::Yaml => namzu_engine::out!(
            "{}",
            output::structured(
                &json!(rows.iter().map(|r| structured(r, now)).collect::<Vec<_>>()),
                args.output.format()
            )
        ),
        ReportFormat::Table => namzu_engine::out!("{}", text(&rows, fleet.several_contexts, now)),
    }
    fleet.finish()
}

/// The warm pools, claims and pools' members of `scope` in `ns` as `source` has them, and each
/// pool namespace's progress Events (`None`: not told).
struct PoolObjects {
    pools: Option<Vec<Value>>,
    claims: Option<Vec<Value>>,
    /// The recorded members and progress Events (with `--at`); live, they are listed per pool
    /// namespace.
    recorded: Option<(Vec<Value>, Option<Vec<Value>>)>,
}

async fn pool_objects(
    conn: &Connection,
    scope: &Scope,
    source: &inventory::Source,
    covered: &[String],
    warnings: &mut Vec<String>,
) -> Result<PoolObjects, ClusterError> {
    if let inventory::Source::At(at) = source {
        let recorded = namzu_engine::ops::replay::pools_at(at, &conn.context, scope)?;
        if recorded.events.is_none() {
            warnings.push("note: the recording holds no Events (kubectl namzu record records them): pools' last progress Event is not told".into());
        }
        return Ok(PoolObjects {
            pools: recorded.pools,
            claims: recorded.claims,
            recorded: Some((recorded.members, recorded.events)),
        });
    }
    let (mut pool_warnings, mut claim_warnings) = (Vec::new(), Vec::new());
    let (pools, claims) = tokio::join!(
        extension_objects(conn, &WARM_POOLS, scope, covered, &mut pool_warnings),
        extension_objects(conn, &CLAIMS, scope, covered, &mut claim_warnings),
    );
    warnings.extend(pool_warnings.into_iter().chain(claim_warnings));
    Ok(PoolObjects {
        pools: pools?,
        claims: claims?,
        recorded: None,
    })
}

/// One context's capacity per namespace, with the read's warnings and notes.
async fn one_context(
    conn: &Connection,
    all_namespaces: bool,
    source: &inventory::Source,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<(Vec<String>, Vec<NamespaceCapacity>), ClusterError> {
    let scope = scope(all_namespaces, &conn.namespace);
    let mut rows: BTreeMap<String, NamespaceCapacity> = BTreeMap::new();
    fn entry<'a>(rows: &'a mut BTreeMap<String, NamespaceCapacity>, ns: &str) -> &'a mut NamespaceCapacity {
        rows.entry(ns.to_string()).or_insert_with(|| NamespaceCapacity {
            context: None,
            namespace: ns.to_string(),
            pools: Vec::new(),
            health: BTreeMap::new(),
            pending: None,
            states: BTreeMap::new(),
            held: BTreeMap::new(),
        })
    }
    // each namespace counted as it is read, one Sandbox unpacked at a time
    let mut covered: Vec<String> = Vec::new();
    let mut warnings = inventory::read_packed(source, conn, &scope, &Query::default(), &mut |packed| {
        covered.push(packed.namespace.clone());
        let row = entry(&mut rows, &packed.namespace);
        row.pending = packed.pending_pods();
        packed.derive(&Default::default(), now, |w| {
            *row.states.entry(w.state).or_default() += 1;
            hold(row.held.entry(w.state).or_default(), &w);
        });
    })
    .await?;
    let PoolObjects {
        pools: pool_objs,
        claims: claim_objs,
        recorded,
    } = pool_objects(conn, &scope, source, &covered, &mut warnings).await?;
    if pool_objs.is_none() {
        warnings.push(match source {
            inventory::Source::Live => "note: the agent-sandbox extensions (warm pools, claims) are not installed".into(),
            inventory::Source::At(_) => {
                "note: the recording holds no warm pools (kubectl namzu record records them; list -w and the TUI do not)"
                    .into()
            }
        });
    }
    if let Scope::Namespace(ns) = &scope {
        entry(&mut rows, ns);
    }
    let (pool_objs, claim_objs) = (pool_objs.unwrap_or_default(), claim_objs.unwrap_or_default());
    let mut pool_ns: Vec<&str> = pool_objs.iter().map(namespace).collect();
    pool_ns.dedup();
    for ns in pool_ns {
        let in_ns = |list: &[Value]| list.iter().filter(|o| namespace(o) == ns).cloned().collect::<Vec<_>>();
        let here = in_ns(&pool_objs);
        // a pool's members (unclaimed: they carry the pool label) and its progress Events
        let (members, events) = match &recorded {
            Some((members, events)) => (Some(in_ns(members)), events.as_deref().map(in_ns)),
            None => {
                let members = match resources::list(conn, &SANDBOXES, Some(ns), Some(WARM_POOL_SANDBOX)).await {
                    Ok(v) => Some(v),
                    Err(e) if e.is_forbidden() || e.is_not_found() => {
                        warnings.push(format!("warning: {e}; warm pools' members are not told"));
                        None
                    }
                    Err(e) => return Err(e),
                };
                (
                    members,
                    namzu_engine::cluster::pools::events(conn, ns, &mut warnings).await?,
                )
            }
        };
        let row = entry(&mut rows, ns);
        row.pools = pools(&here, &in_ns(&claim_objs));
        row.health = here
            .iter()
            .map(|p| {
                let mut h = health(p, members.as_deref().unwrap_or(&[]), events.as_deref(), now);
                if members.is_none() {
                    h.stale_evidence = "unknown: the pool's Sandboxes are not readable".into();
                }
                (namzu_domain::object::name(p).to_string(), h)
            })
            .collect();
    }
    Ok((warnings, rows.into_values().collect()))
}

fn structured(n: &NamespaceCapacity, now: chrono::DateTime<chrono::Utc>) -> Value {
    let pool = |p: &PoolCapacity| {
        let mut v =
            json!({"name": p.name, "template": p.template, "ready": p.ready, "desired": p.desired, "claims": p.claims});
        if let Some(h) = n.health.get(&p.name) {
            v["updateStrategy"] = json!(h.strategy);
            v["updateStrategyDefaulted"] = json!(h.strategy_defaulted);
            v["members"] = json!(h.members);
            v["staleMembers"] = json!(h.stale);
            v["staleComparedWith"] = json!(
                h.reference
                    .as_ref()
                    .map(|(name, hash)| json!({"member": name, "hash": hash}))
            );
            v["staleEvidence"] = json!(h.stale_evidence);
            v["progress"] = json!(h.progress.as_ref().map(|e| json!({
                "reason": e.reason, "type": e.type_, "message": e.message,
                "at": e.at.map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)),
                "age": e.at.map(|t| namzu_domain::age::human_duration((now - t).num_seconds().max(0))),
            })));
            v["progressEventsRead"] = json!(h.events_read);
        }
        v
    };
    let mut out = json!({
        "namespace": n.namespace,
        "warmPools": n.pools.iter().map(pool).collect::<Vec<_>>(),
        "pendingPods": n.pending,
        "workspaces": n.states.iter().map(|(s, c)| (s.as_str().to_string(), json!(c))).collect::<serde_json::Map<_, _>>(),
        "holds": n.held.iter().map(|(s, h)| (s.as_str().to_string(), json!({
            "requests": list_json(&h.requests),
            "limits": list_json(&h.limits),
            "disks": format_quantity(h.disks, Unit::Bytes),
        }))).collect::<serde_json::Map<_, _>>(),
    });
    if let (Some(context), Some(fields)) = (&n.context, out.as_object_mut()) {
        fields.shift_insert(0, "context".into(), json!(context));
    }
    out
}

/// A pool's health cells: its update strategy, its stale members, its last progress event.
fn health_cells(h: Option<&PoolHealth>, now: chrono::DateTime<chrono::Utc>) -> [(String, Tone); 3] {
    [
        (h.map_or("-".into(), |h| h.strategy.clone()), Tone::Plain),
        (
            h.map_or("?".into(), |h| match h.reference {
                Some(_) => format!("{}/{}", h.stale.len(), h.members),
                None if h.members == 0 => "-".into(),
                None => "?".into(),
            }),
            if h.is_some_and(|h| !h.stale.is_empty()) {
                Tone::Busy
            } else {
                Tone::Plain
            },
        ),
        (
            h.map_or("?".into(), |h| match &h.progress {
                Some(e) => format!(
                    "{} {} ago",
                    e.reason,
                    e.at.map_or("?".into(), |t| namzu_domain::age::human_duration(
                        (now - t).num_seconds().max(0)
                    ))
                ),
                None if h.events_read => "none held".into(),
                None => "unknown".into(),
            }),
            if h.and_then(|h| h.progress.as_ref()).is_some_and(|e| e.not_progressing()) {
                Tone::Bad
            } else {
                Tone::Plain
            },
        ),
    ]
}

fn text(rows: &[NamespaceCapacity], several_contexts: bool, now: chrono::DateTime<chrono::Utc>) -> String {
    // across contexts each row starts with its context
    let lead = |n: &NamespaceCapacity| -> Vec<(String, Tone)> {
        let context = several_contexts.then(|| (n.context.clone().unwrap_or_default(), Tone::Plain));
        context
            .into_iter()
            .chain([(n.namespace.clone(), Tone::Plain)])
            .collect()
    };
    let skip = usize::from(!several_contexts);
    let pool_rows: Vec<Vec<(String, Tone)>> = rows
        .iter()
        .flat_map(|n| {
            n.pools.iter().map(move |p| {
                let short = if p.ready < p.desired { Tone::Busy } else { Tone::Good };
                let mut row = lead(n);
                row.extend([
                    (p.name.clone(), Tone::Plain),
                    (p.template.clone().unwrap_or_else(|| "-".into()), Tone::Plain),
                    (format!("{}/{}", p.ready, p.desired), short),
                    (p.claims.to_string(), Tone::Plain),
                ]);
                row.extend(health_cells(n.health.get(&p.name), now));
                row
            })
        })
        .collect();
    let mut s = if pool_rows.is_empty() {
        "No warm pools.\n".to_string()
    } else {
        output::table(
            &[
                "CONTEXT",
                "NAMESPACE",
                "WARM-POOL",
                "TEMPLATE",
                "READY",
                "CLAIMS",
                "STRATEGY",
                "STALE",
                "LAST-PROGRESS-EVENT",
            ][skip..],
            &pool_rows,
            false,
            output::colour_enabled(),
        )
    };
    s.push('\n');
    let ws_rows: Vec<Vec<(String, Tone)>> = rows
        .iter()
        .map(|n| {
            let counts = n
                .states
                .iter()
                .map(|(st, c)| format!("{} {c}", st.as_str()))
                .collect::<Vec<_>>()
                .join(", ");
            let mut row = lead(n);
            row.extend([
                (n.pending.map_or("?".into(), |p| p.to_string()), Tone::Plain),
                (n.states.values().sum::<usize>().to_string(), Tone::Plain),
                (if counts.is_empty() { "-".into() } else { counts }, Tone::Plain),
                (holds(&n.held), Tone::Plain),
            ]);
            row
        })
        .collect();
    s.push_str(&output::table(
        &[
            "CONTEXT",
            "NAMESPACE",
            "PENDING-PODS",
            "WORKSPACES",
            "BY STATE",
            "HOLDS",
        ][skip..],
        &ws_rows,
        false,
        output::colour_enabled(),
    ));
    s
}

/// What a namespace's workspaces hold, said short: the running pods' CPU and memory requests,
/// then the disks, Suspended ones' apart ("2.5 CPU, 4Gi mem; disks 120Gi, 40Gi of it Suspended").
fn holds(held: &BTreeMap<State, Held>) -> String {
    let mut requests = namzu_domain::quantities::List::new();
    let mut disks = 0;
    for h in held.values() {
        namzu_domain::quantities::add(&mut requests, &h.requests);
        disks += h.disks;
    }
    let suspended = held.get(&State::Suspended).map_or(0, |h| h.disks);
    let mut parts = Vec::new();
    if let Some(c) = requests.get("cpu").filter(|c| **c != 0) {
        parts.push(format!("{} CPU", human(*c, Unit::Cores)));
    }
    if let Some(m) = requests.get("memory").filter(|m| **m != 0) {
        parts.push(format!("{} mem", human(*m, Unit::Bytes)));
    }
    let mut s = if parts.is_empty() {
        "no pods".to_string()
    } else {
        parts.join(", ")
    };
    if disks > 0 {
        s.push_str(&format!("; disks {}", human(disks, Unit::Bytes)));
        if suspended > 0 {
            s.push_str(&format!(", {} of it Suspended", human(suspended, Unit::Bytes)));
        }
    }
    s
}
