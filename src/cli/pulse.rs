//! `kubectl namzu pulse`: per context, namespace, template and warm pool — claims per minute,
//! warm-hit %, claim → Ready and resume → Ready latency (p50/p95/p99, nearest rank), the pool's
//! depth against demand, its refill and stale members — and every start above p95 with its
//! cause and evidence (`domain::pulse`; the read is `ops::pulse`).

use super::exit::Failure;
use super::globals::Globals;
use super::output::{self, ReportFormat, Tone};
use chrono::Duration;
use namzu_domain::pulse::{Group, Latency, Pulse};
use namzu_domain::select::parse_duration;
use namzu_engine::ops::fleet::Fleet;
use namzu_engine::ops::pulse::{Request, read};
use serde_json::{Value, json};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The window: starts requested in the last this long (e.g. 30m, 1h, 6h).
    #[arg(long, value_name = "DURATION", default_value = "1h", value_parser = parse_since)]
    pub since: Duration,
    /// Output format.
    #[arg(short = 'o', long, value_enum, default_value = "table")]
    pub output: ReportFormat,
}

fn parse_since(text: &str) -> Result<Duration, String> {
    let d = parse_duration(text)?;
    if d <= Duration::zero() {
        return Err(format!("invalid duration {text:?}: it must be longer than zero"));
    }
    Ok(d)
}

pub(crate) async fn run(globals: &Globals, args: Args) -> Result<(), Failure> {
    let fleet = Fleet::open(crate::cli::config::fleet_request(globals, true)?).await?;
    let (all_namespaces, since) = (globals.all_namespaces, args.since);
    let read = fleet
        .each::<_, Failure, _>(|member| {
            // each context in its own namespace, as `list` reads them
            let request = Request {
                namespace: (!all_namespaces).then(|| member.conn.namespace.clone()),
                since,
            };
            async move { Ok(read(&member.conn, &request).await?) }
        })
        .await?;
    let mut contexts = Vec::new();
    for (member, r) in read {
        for w in &r.warnings {
            fleet.warn(&member, w);
        }
        contexts.push((fleet.row_context(&member), r.pulse));
    }
    match args.output {
        ReportFormat::Json | ReportFormat::Yaml => {
            let v: Vec<Value> = contexts.iter().map(|(c, p)| structured(c.as_deref(), p)).collect();
            namzu_engine::out!("{}", output::structured(&json!(v), args.output.format()));
        }
        ReportFormat::Table => namzu_engine::out!("{}", text(&contexts, fleet.several_contexts)),
    }
    fleet.finish()
}

/// One context's pulse as `-o json` prints it (README: "pulse -o json").
fn structured(context: Option<&str>, p: &Pulse) -> Value {
    let mut v = serde_json::to_value(p).unwrap_or(Value::Null);
    v["context"] = json!(context);
    v["percentileMethod"] = json!("nearest-rank");
    v
}

fn secs(ms: Option<i64>) -> String {
    ms.map_or("-".into(), |ms| format!("{:.1}s", ms as f64 / 1000.0))
}

fn latency(l: &Latency) -> String {
    if l.count == 0 {
        return "-".into();
    }
    format!("{} / {} / {}", secs(l.p50_ms), secs(l.p95_ms), secs(l.p99_ms))
}

fn row(context: Option<&str>, several: bool, g: &Group) -> Vec<(String, Tone)> {
    let plain = |s: String| (s, Tone::Plain);
    let mut r: Vec<(String, Tone)> = Vec::new();
    if several {
        r.push(plain(context.unwrap_or("").to_string()));
    }
    let hit = g.warm_hit_percent.map_or("-".into(), |h| format!("{h:.0}%"));
    let hit_tone = match g.warm_hit_percent {
        Some(h) if h < 80.0 => Tone::Busy,
        Some(_) => Tone::Good,
        None => Tone::Plain,
    };
    let depth = g.depth.as_ref();
    r.extend([
        plain(g.namespace.clone()),
        plain(g.template.clone()),
        plain(g.pool.clone()),
        plain(format!("{:.2}", g.claims_per_minute)),
        (hit, hit_tone),
        plain(latency(&g.claim_to_ready)),
        plain(latency(&g.resume_to_ready)),
        plain(depth.map_or("-".into(), |d| format!("{}/{}", d.ready_members, d.members))),
        plain(depth.map_or("-".into(), |d| {
            d.seconds_to_empty
                .map_or("never".into(), namzu_domain::age::human_duration)
        })),
        plain(depth.map_or("-".into(), |d| format!("{:.2}", d.refill_per_minute))),
        (
            depth.map_or("-".into(), |d| d.stale_members.len().to_string()),
            if depth.is_some_and(|d| !d.stale_members.is_empty()) {
                Tone::Busy
            } else {
                Tone::Plain
            },
        ),
        (
            g.slow.len().to_string(),
            if g.slow.is_empty() { Tone::Plain } else { Tone::Bad },
        ),
    ]);
    r
}

fn text(contexts: &[(Option<String>, Pulse)], several: bool) -> String {
    let rows: Vec<Vec<(String, Tone)>> = contexts
        .iter()
        .flat_map(|(c, p)| p.groups.iter().map(move |g| row(c.as_deref(), several, g)))
        .collect();
    if rows.is_empty() {
        return "No claims, warm pools or resumes in the window.\n".into();
    }
    let headers = [
        "CONTEXT",
        "NAMESPACE",
        "TEMPLATE",
        "POOL",
        "CLAIMS/MIN",
        "WARM-HIT",
        "CLAIM→READY P50/P95/P99",
        "RESUME→READY P50/P95/P99",
        "READY/MEMBERS",
        "EMPTY-IN",
        "REFILL/MIN",
        "STALE",
        "SLOW",
    ];
    let mut s = output::table(
        &headers[usize::from(!several)..],
        &rows,
        false,
        output::colour_enabled(),
    );
    for (c, p) in contexts {
        for g in &p.groups {
            for b in &g.slow {
                let at = if several {
                    format!("{}/", c.as_deref().unwrap_or(""))
                } else {
                    String::new()
                };
                s.push_str(&format!(
                    "\nslow start {at}{}/{} ({}): {} after the request — {}\n",
                    g.namespace,
                    b.claim.as_deref().or(b.sandbox.as_deref()).unwrap_or("?"),
                    b.sandbox.as_deref().unwrap_or("no Sandbox"),
                    secs(Some(b.latency_ms)),
                    b.cause.as_str()
                ));
                for e in &b.evidence {
                    s.push_str(&format!("  {e}\n"));
                }
            }
        }
        if !p.events_read {
            s.push_str("\nnote: Events were not read: causes told by Events are unknown\n");
        }
    }
    s.push_str(&format!(
        "\nwindow {}; percentiles by nearest rank; above p95 each start is blamed (-o json for every start)\n",
        contexts
            .first()
            .map_or("?".into(), |(_, p)| namzu_domain::age::human_duration(p.window_seconds))
    ));
    s
}
