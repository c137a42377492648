//! `kubectl namzu list`: the inventory as a table, JSON, YAML or names.

use super::exit::Failure;
use super::globals::{Globals, scope};
use super::output::{self, Format, Printer, Tone};
use super::overlay::OverlayArgs;
use super::schema;
use super::selection::SelectionArgs;
use chrono::{DateTime, Utc};
use namzu_domain::columns::{Column, cell, columns};
use namzu_domain::drift::DriftState;
use namzu_domain::naming::{WorkspaceId, WorkspaceKey};
use namzu_domain::safety::Badge;
use namzu_domain::select::{Filter, SortKey, sort};
use namzu_domain::state::State;
use namzu_domain::workspace::Workspace;
use namzu_engine::cluster::pack::{Pack, Packed};
use namzu_engine::ops::fleet::Fleet;
use namzu_engine::ops::inventory::{self, Query};
use serde_json::Value;
use std::collections::BTreeMap;

fn parse_sort(text: &str) -> Result<SortKey, String> {
    SortKey::parse_any(text).ok_or_else(|| {
        let all: Vec<&str> = SortKey::ALL.iter().map(|(n, _)| *n).collect();
        format!(
            "unknown sort key {text:?}; one of: {}, or a JSONPath such as {{.createdAt}}",
            all.join(", ")
        )
    })
}

#[derive(Debug, clap::Args)]
#[command(after_help = EXAMPLES)]
pub struct Args {
    /// Only these workspaces (ID, namzu-ws-ID or what `-o name` prints), in the order given, as
    /// `kubectl get NAME…`; one with `-o json|yaml` prints the object itself, not a list.
    #[arg(value_name = "ID")]
    pub ids: Vec<WorkspaceId>,
    /// Output format: table, wide, json, yaml, name, jsonpath=TEMPLATE, jsonpath-file=FILE,
    /// custom-columns=HEADER:PATH,… or custom-columns-file=FILE (paths into the `-o json` schema;
    /// a template sees `{"kind": "List", "items": [...]}`, as kubectl's do).
    #[arg(short = 'o', long, default_value = "table", value_parser = output::parse_printer)]
    pub output: Printer,
    /// With a template: a path that finds nothing prints nothing (false: it is an error).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, value_name = "BOOL")]
    pub allow_missing_template_keys: bool,
    /// A LABELS column with the Sandbox's labels.
    #[arg(long)]
    pub show_labels: bool,
    /// A column per label key (comma-separated); `pod-template:KEY` is a pod-template label.
    #[arg(short = 'L', long, value_delimiter = ',', value_name = "KEY")]
    pub label_columns: Vec<String>,
    /// Omit the header row.
    #[arg(long)]
    pub no_headers: bool,
    /// name, age, mode-changed, epoch, state or drift, or kubectl's JSONPath form
    /// ({.metadata.creationTimestamp}, .createdAt, .operatingModeChangedAt, .drift.state, …).
    #[arg(long, default_value = "name", value_parser = parse_sort)]
    pub sort_by: SortKey,
    /// After the list, print each change as it happens (`-o json`: one object per line) until
    /// Ctrl-C.
    #[arg(short = 'w', long)]
    pub watch: bool,
    /// Print only the changes, not the list first.
    #[arg(long)]
    pub watch_only: bool,
    /// With a watch: each change as {"type": ADDED|MODIFIED|DELETED, "object": …}.
    #[arg(long)]
    pub output_watch_events: bool,
    /// Answer from the flight recorder's recording at TIME (RFC 3339, or relative: -2h, -30m):
    /// the list as it was then; stderr says the instant and what the recording holds around it.
    #[arg(long, value_name = "TIME", allow_hyphen_values = true, conflicts_with_all = ["watch", "watch_only"])]
    pub at: Option<String>,
    #[command(flatten)]
    pub selection: SelectionArgs,
    #[command(flatten)]
    pub overlays: OverlayArgs,
}

pub(crate) const EXAMPLES: &str = "Examples:
  # Every workspace in the current namespace, then in every namespace
  kubectl namzu list
  kubectl namzu list -A
  # One or two workspaces by id (what `-o name` prints works too); one as YAML
  kubectl namzu get alpha bravo
  kubectl namzu get alpha -o yaml
  # Running workspaces, oldest first, as names for a pipeline
  kubectl namzu list --state Running --sort-by age -o name
  # Suspended for more than 30 days; running for more than 12 hours
  kubectl namzu list --suspended-for 30d
  kubectl namzu list --running-for 12h
  # One field per line, as kubectl's JSONPath
  kubectl namzu list -o jsonpath='{range .items[*]}{.id}{\"\\t\"}{.state}{\"\\n\"}{end}'";

pub(crate) async fn run(globals: &Globals, args: Args) -> Result<(), Failure> {
    if !args.ids.is_empty() {
        globals.one_namespace_for_names()?;
        if args.watch || args.watch_only {
            return Err(Failure::usage(
                "--watch follows the whole list: drop the ids, or select with -l",
            ));
        }
    }
    let fleet = Fleet::open(crate::cli::config::fleet_request(globals, true)?).await?;
    let several_namespaces = fleet
        .members
        .iter()
        .any(|m| m.conn.namespace != fleet.members[0].conn.namespace);
    if matches!(args.output, Printer::Plain(Format::Name))
        && let Some(refusal) = output::name_pipe_refusal(
            "list",
            globals.all_namespaces || several_namespaces,
            fleet.several_contexts,
        )
    {
        return Err(refusal);
    }
    if fleet.several_contexts && !args.ids.is_empty() {
        return Err(Failure::usage(
            "workspace ids name workspaces in one context: pass one --context",
        ));
    }
    let query = Query {
        selector: args.selection.selector.clone(),
        per_sandbox_label_key: globals.per_sandbox_label_key.clone(),
    };
    if args.watch || args.watch_only {
        return watch(globals, &args, &fleet, query).await;
    }
    let (source, now) = super::at::source(globals, args.at.as_deref(), fleet.clock.now())?;
    let (filter, flags) = (args.selection.filter(), globals.overlay_flags(&args.overlays));
    let several_contexts = fleet.several_contexts;
    let all_namespaces = globals.all_namespaces;
    if args.ids.is_empty() && args.sort_by == SortKey::Name && matches!(args.output, Printer::Plain(Format::Json)) {
        return json_by_name(&fleet, all_namespaces, (&source, &query), &filter, &flags, now).await;
    }
    // each context read and derived on its own task, one Sandbox unpacked at a time: the output
    // is built from the rows
    let read = fleet
        .each::<_, Failure, _>(|member| {
            let (query, filter, flags, source) = (query.clone(), filter.clone(), flags.clone(), source.clone());
            async move {
                let conn = &member.conn;
                let scope = scope(all_namespaces, &conn.namespace);
                let context = several_contexts.then(|| conn.context.clone());
                let mut rows = Vec::new();
                let warnings = inventory::read_packed(&source, conn, &scope, &query, &mut |packed| {
                    packed.derive(&flags, now, |mut w| {
                        if filter.matches(&w, now) {
                            w.context = context.clone();
                            rows.push(w);
                        }
                    })
                })
                .await?;
                Ok((warnings, rows))
            }
        })
        .await?;
    let mut workspaces = Vec::new();
    for (member, (warnings, rows)) in read {
        for w in &warnings {
            fleet.warn(&member, w);
        }
        workspaces.extend(rows);
    }
    sort(&mut workspaces, args.sort_by, false);
    if !args.ids.is_empty() {
        return named(&args, globals, &fleet, workspaces, now).await;
    }
    // an empty list prints nothing on stdout and says so on stderr, as kubectl does
    let said_empty =
        workspaces.is_empty() && matches!(args.output, Printer::Plain(Format::Table | Format::Wide | Format::Name));
    if !said_empty {
        print(&args, globals, &fleet, &workspaces, now)?;
    }
    if said_empty {
        match (&fleet.members[..], globals.all_namespaces) {
            ([one], false) if !fleet.several_contexts => {
                namzu_engine::errln!("No resources found in {} namespace.", one.conn.namespace)
            }
            _ => namzu_engine::errln!("No resources found."),
        }
    }
    fleet.finish()
}

/// `list -o json` in name order, the common case, without holding rows: each context's
/// namespaces arrive in name order, so each namespace's rows, sorted by id as they derive, are
/// that context's next items; they wait packed (a fraction of a row's memory, or of its text)
/// until the context's pass has ended, and the contexts print in name order, as the sort puts
/// them.
async fn json_by_name(
    fleet: &Fleet,
    all_namespaces: bool,
    (source, query): (&inventory::Source, &Query),
    filter: &namzu_domain::select::Filter,
    flags: &namzu_domain::drift::OverlayFlags,
    now: DateTime<Utc>,
) -> Result<(), Failure> {
    let several_contexts = fleet.several_contexts;
    let mut read = fleet
        .each::<_, Failure, _>(|member| {
            let (query, filter, flags, source) = (query.clone(), filter.clone(), flags.clone(), source.clone());
            async move {
                let conn = &member.conn;
                let scope = scope(all_namespaces, &conn.namespace);
                let context = several_contexts.then(|| conn.context.clone());
                let mut items = JsonItems::default();
                let warnings = inventory::read_packed(&source, conn, &scope, &query, &mut |packed| {
                    // this namespace's items, packed as they derive, then in id order
                    let start = items.items.len();
                    let mut ids: Vec<String> = Vec::new();
                    packed.derive(&flags, now, |mut w| {
                        if filter.matches(&w, now) {
                            w.context = context.clone();
                            ids.push(w.id.clone());
                            items.push(&schema::workspace(&w));
                        }
                    });
                    items.sort_from(start, &ids);
                })
                .await?;
                Ok((warnings, context, items))
            }
        })
        .await?;
    for (member, (warnings, _, _)) in &read {
        for w in warnings {
            fleet.warn(member, w);
        }
    }
    read.sort_by(|a, b| (a.1).1.cmp(&(b.1).1));
    let mut buffer = String::with_capacity(OUTPUT_CHUNK);
    buffer.push_str(output::LIST_HEAD);
    let mut empty = true;
    for (_, (_, _, items)) in read {
        for text in items.texts() {
            buffer.push_str(if empty { "\n" } else { ",\n" });
            empty = false;
            buffer.push_str(&text);
            if buffer.len() >= OUTPUT_CHUNK {
                output::write_stdout(&buffer);
                buffer.clear();
            }
        }
    }
    buffer.push_str(output::list_tail(empty));
    output::write_stdout(&buffer);
    fleet.finish()
}

/// Array items waiting for their turn to print, packed (`cluster::pack`: a fraction of their
/// JSON text), in order.
#[derive(Default)]
struct JsonItems {
    pack: Pack,
    items: Vec<Packed>,
}

impl JsonItems {
    fn push(&mut self, item: &Value) {
        self.items.push(self.pack.pack(item));
    }

    /// The items from `start` on put in the order of `keys` (one per item), ties as they came.
    fn sort_from(&mut self, start: usize, keys: &[String]) {
        let mut order: Vec<usize> = (0..keys.len()).collect();
        order.sort_by(|a, b| keys[*a].cmp(&keys[*b]));
        let mut tail: Vec<Option<Packed>> = self.items.drain(start..).map(Some).collect();
        self.items.extend(order.into_iter().filter_map(|i| tail[i].take()));
    }

    /// Each item's text as `output::write_json_list` prints it, without the separator.
    fn texts(self) -> impl Iterator<Item = String> {
        let JsonItems { pack, items } = self;
        items
            .into_iter()
            .map(move |p| output::list_item(&pack.unpack(&p).unwrap_or_default()))
    }
}

/// `get ID…`: those rows in the order given (one with `-o json|yaml`: the object); each id
/// without a workspace says why on stderr (absent, or a Sandbox that is not a workspace), exit 4.
async fn named(
    args: &Args,
    globals: &Globals,
    fleet: &Fleet,
    workspaces: Vec<Workspace>,
    now: DateTime<Utc>,
) -> Result<(), Failure> {
    let Some(member) = fleet.members.first() else {
        return fleet.finish();
    };
    let conn = &member.conn;
    let mut seen = std::collections::BTreeSet::new();
    let mut rows = Vec::new();
    let mut missing = Vec::new();
    for id in args.ids.iter().filter(|id| seen.insert(*id)) {
        match workspaces
            .iter()
            .find(|w| w.id == id.as_str() && w.namespace == conn.namespace)
        {
            Some(w) => rows.push(w.clone()),
            None => missing.push(super::exit::absent(conn, id).await),
        }
    }
    match (&args.output, rows.as_slice(), args.ids.len()) {
        (Printer::Plain(format @ (Format::Json | Format::Yaml)), [one], 1) => {
            namzu_engine::out!("{}", output::structured(&schema::workspace(one), *format));
        }
        // a template sees the object itself, as `kubectl get NAME -o jsonpath=…` does
        (template, [one], 1) if !matches!(template, Printer::Plain(_)) => {
            let object = schema::workspace(one);
            let text = template
                .render_template(
                    &object,
                    std::slice::from_ref(&object),
                    args.no_headers,
                    args.allow_missing_template_keys,
                )
                .map_err(Failure::error)?;
            namzu_engine::out!("{text}");
        }
        _ if rows.is_empty() => {}
        _ => print(args, globals, fleet, &rows, now)?,
    }
    let Some(first) = missing.first() else {
        return fleet.finish();
    };
    for m in &missing[1..] {
        namzu_engine::errln!("{}", m.message);
    }
    Err(Failure {
        code: first.code,
        message: first.message.clone(),
    })
}

/// The rows in the format asked for.
fn print(
    args: &Args,
    globals: &Globals,
    fleet: &Fleet,
    workspaces: &[Workspace],
    now: DateTime<Utc>,
) -> Result<(), Failure> {
    let format = match &args.output {
        Printer::Plain(format) => *format,
        template => {
            let items: Vec<Value> = workspaces.iter().map(schema::workspace).collect();
            let list = serde_json::json!({"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": items});
            let text = template
                .render_template(&list, &items, args.no_headers, args.allow_missing_template_keys)
                .map_err(Failure::error)?;
            namzu_engine::out!("{text}");
            return Ok(());
        }
    };
    if format == Format::Json {
        // printed as it is built: thousands of workspaces never sit in memory twice
        let mut buffer = String::with_capacity(OUTPUT_CHUNK);
        output::write_json_list(workspaces.iter().map(schema::workspace), |piece| {
            buffer.push_str(piece);
            if buffer.len() >= OUTPUT_CHUNK {
                output::write_stdout(&buffer);
                buffer.clear();
            }
        });
        output::write_stdout(&buffer);
        return Ok(());
    }
    let shape = Shape::of(args, globals, fleet);
    namzu_engine::out!("{}", render(workspaces, format, &shape, args.no_headers, now));
    Ok(())
}

/// How much JSON is gathered before it is written.
const OUTPUT_CHUNK: usize = 64 * 1024;

/// `list -w`: the table (unless `--watch-only`), then one line per change, from the live
/// inventory (watches; the same rows the TUI shows), of every context at once. Ctrl-C ends it
/// with exit 0 (1 when a context failed on the way).
async fn watch(globals: &Globals, args: &Args, fleet: &Fleet, query: Query) -> Result<(), Failure> {
    use namzu_engine::cluster::live::{LiveEvent, LiveOptions};
    use namzu_engine::ops::follow::{self, FollowContext, Followed, Turn, Turns};
    let targets = fleet.members.iter().map(|member| FollowContext {
        context: fleet.row_context(member),
        conn: member.conn.clone(),
        scope: scope(globals.all_namespaces, &member.conn.namespace),
    });
    // what the watches see goes into the recording too, at no extra request, unless a
    // recorder already holds the context's store
    let options = LiveOptions {
        record: globals.recording_tap(),
        ..LiveOptions::default()
    };
    let mut events = follow::follow(targets, &query, &args.overlays.flags(), &options);
    let termination = namzu_engine::signals::Termination::listen().received();
    tokio::pin!(termination);
    let filter = args.selection.filter();
    let shape = Shape::of(args, globals, fleet);
    let mut seen = Seen::default();
    let mut header_due = !args.no_headers;
    let mut turns = Turns::default();
    // one line on stderr, after its context's name across several
    let stderr_line = |context: &Option<String>, text: &str| match context {
        Some(c) => namzu_engine::errln!("context \"{}\": {}", output::printable(c), output::printable(text)),
        None => namzu_engine::errln!("{}", output::printable(text)),
    };
    loop {
        let Followed { context, event } = tokio::select! {
            _ = &mut termination => return fleet.finish(),
            e = events.next() => match e {
                Some(e) => e,
                None => return Err(Failure::error("the watch ended")),
            },
        };
        let now = fleet.clock.now();
        let mut lines: Vec<(&'static str, Workspace)> = Vec::new();
        match event {
            LiveEvent::Warning(w) => stderr_line(&context, &w),
            LiveEvent::Failed(why) => match &context {
                // across contexts one that fails is left out; the others go on
                Some(c) => fleet.fail(c, &why),
                None => return Err(Failure::error(why)),
            },
            LiveEvent::Status { stream, status } => match turns.turn(&context, &stream, &status) {
                Some(Turn::Reconnecting { stream, why }) => stderr_line(
                    &context,
                    &format!("warning: the watch of {stream} is reconnecting: {why}"),
                ),
                Some(Turn::LiveAgain { stream }) => {
                    stderr_line(&context, &format!("the watch of {stream} is live again"))
                }
                None => {}
            },
            // nothing prints before a context's first full state, which derives these again
            // `list -w` never asks for the pulse
            LiveEvent::Provisional(_) | LiveEvent::Pulse { .. } => {}
            LiveEvent::Synced { .. } => {
                let rows = seen.synced(&context, &filter, args.sort_by, now);
                if !args.watch_only {
                    lines.extend(rows.into_iter().map(|w| ("ADDED", w)));
                }
            }
            LiveEvent::Rows(changes) => seen.rows_changed(&context, changes, &filter, now, &mut lines),
        }
        if lines.is_empty() {
            continue;
        }
        let text = watch_text(args, &shape, lines, &mut header_due, now)?;
        output::write_stdout(&text);
        if output::stdout_closed() {
            return fleet.finish();
        }
        if let Some(why) = output::stdout_failure() {
            return Err(Failure::error(why));
        }
    }
}

/// What `list -w` has seen, per workspace.
#[derive(Default)]
struct Seen {
    /// The last row printed per workspace: a change that leaves it the same prints nothing.
    shown: BTreeMap<WorkspaceKey, Workspace>,
    /// The contexts whose first list is in: their changes print from then on.
    synced: std::collections::BTreeSet<Option<String>>,
    /// The workspaces the filter selects, as last printed.
    selected: std::collections::BTreeSet<WorkspaceKey>,
}

impl Seen {
    /// A context's first full state: its rows the filter selects, sorted (once per context).
    fn synced(
        &mut self,
        context: &Option<String>,
        filter: &Filter,
        sort_by: SortKey,
        now: DateTime<Utc>,
    ) -> Vec<Workspace> {
        if !self.synced.insert(context.clone()) {
            return Vec::new();
        }
        let mut rows: Vec<Workspace> = self
            .shown
            .iter()
            .filter(|(k, w)| k.context == *context && filter.matches(w, now))
            .map(|(_, w)| w.clone())
            .collect();
        sort(&mut rows, sort_by, false);
        self.selected.extend(
            rows.iter()
                .map(|w| WorkspaceKey::new(context.as_deref(), &w.namespace, &w.id)),
        );
        rows
    }

    /// Rows changed in a context: the lines they print, as a watch with a selector would.
    fn rows_changed(
        &mut self,
        context: &Option<String>,
        changes: Vec<namzu_domain::mirror::RowChange>,
        filter: &Filter,
        now: DateTime<Utc>,
        lines: &mut Vec<(&'static str, Workspace)>,
    ) {
        use namzu_domain::mirror::RowChange;
        for change in changes {
            match change {
                RowChange::Upsert(w) => {
                    let w = *w;
                    let key = WorkspaceKey::new(context.as_deref(), &w.namespace, &w.id);
                    if self.shown.get(&key) == Some(&w) {
                        continue;
                    }
                    self.shown.insert(key.clone(), w.clone());
                    if !self.synced.contains(context) {
                        continue;
                    }
                    // as a watch with a selector: a row entering the selection is ADDED,
                    // one leaving it DELETED
                    match (filter.matches(&w, now), self.selected.contains(&key)) {
                        (true, true) => lines.push(("MODIFIED", w)),
                        (true, false) => {
                            self.selected.insert(key);
                            lines.push(("ADDED", w));
                        }
                        (false, true) => {
                            self.selected.remove(&key);
                            lines.push(("DELETED", w));
                        }
                        (false, false) => {}
                    }
                }
                RowChange::Remove(key) => {
                    let key = WorkspaceKey {
                        context: context.clone(),
                        ..key
                    };
                    if let Some(w) = self.shown.remove(&key)
                        && self.selected.remove(&key)
                    {
                        lines.push(("DELETED", w));
                    }
                }
            }
        }
    }
}

/// The text of one turn's lines in the format asked for (a table's header once).
fn watch_text(
    args: &Args,
    shape: &Shape,
    lines: Vec<(&'static str, Workspace)>,
    header_due: &mut bool,
    now: DateTime<Utc>,
) -> Result<String, Failure> {
    Ok(match &args.output {
        Printer::Plain(Format::Json) => lines
            .iter()
            .map(|(kind, w)| {
                let object = schema::workspace(w);
                let value = if args.output_watch_events {
                    serde_json::json!({"type": kind, "object": object})
                } else {
                    object
                };
                format!("{}\n", output::compact_json(&value))
            })
            .collect(),
        Printer::Plain(table @ (Format::Table | Format::Wide)) => {
            let rows: Vec<Workspace> = lines.into_iter().map(|(_, w)| w).collect();
            let text = render(&rows, *table, shape, !*header_due, now);
            *header_due = false;
            text
        }
        Printer::Plain(other) => {
            let rows: Vec<Workspace> = lines.into_iter().map(|(_, w)| w).collect();
            let text = render(&rows, *other, shape, true, now);
            if *other == Format::Yaml {
                format!("---\n{text}")
            } else {
                text
            }
        }
        template => {
            let mut text = String::new();
            for (_, w) in lines {
                let items = vec![schema::workspace(&w)];
                let list = serde_json::json!({"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": items});
                text.push_str(
                    &template
                        .render_template(&list, &items, true, args.allow_missing_template_keys)
                        .map_err(Failure::error)?,
                );
            }
            text
        }
    })
}

fn tone(w: &Workspace, c: Column) -> Tone {
    match c {
        Column::State => match w.state {
            State::Running => Tone::Good,
            State::Starting | State::Suspending => Tone::Busy,
            State::Suspended => Tone::Calm,
            State::Failed | State::Error => Tone::Bad,
            State::Expired | State::Deleting => Tone::Odd,
        },
        Column::Drift => match w.drift.state {
            DriftState::Drifted => Tone::Busy,
            DriftState::NoTemplate => Tone::Bad,
            _ => Tone::Plain,
        },
        Column::Diagnosis if w.diagnosis.is_some() => Tone::Bad,
        Column::Epoch if w.epoch.epoch.is_none() => Tone::Bad,
        _ => Tone::Plain,
    }
}

/// A row's context, its badge beside it in its colour.
fn context_cell(w: &Workspace, badges: &BTreeMap<String, Badge>) -> (String, Tone) {
    let name = w.context.clone().unwrap_or_else(|| "-".into());
    match w.context.as_ref().and_then(|c| badges.get(c)) {
        Some(b) => (format!("{name} [{}]", b.label), output::badge_tone(b.colour)),
        None => (name, Tone::Plain),
    }
}

/// Label columns after the table's own: `-L` keys and `--show-labels`.
pub(crate) struct LabelColumns<'a> {
    pub show: bool,
    pub keys: &'a [String],
}

/// The prefix that names a pod-template label in `-L`.
pub(crate) const POD_TEMPLATE_LABEL: &str = "pod-template:";

impl LabelColumns<'_> {
    /// kubectl's header for `-L KEY`: the key's last segment, upper-cased.
    fn headers(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .keys
            .iter()
            .map(|k| {
                let key = k.strip_prefix(POD_TEMPLATE_LABEL);
                let last = key.unwrap_or(k).rsplit('/').next().unwrap_or(k).to_uppercase();
                // a pod-template label says so: its last segment may be a column's own name
                if key.is_some() {
                    format!("POD-TEMPLATE:{last}")
                } else {
                    last
                }
            })
            .collect();
        if self.show {
            out.push("LABELS".into());
        }
        out
    }

    fn cells(&self, w: &Workspace) -> Vec<String> {
        let mut out: Vec<String> = self
            .keys
            .iter()
            .map(|k| match k.strip_prefix(POD_TEMPLATE_LABEL) {
                Some(key) => w.template_labels.get(key).cloned().unwrap_or_default(),
                None => w.labels.get(k).cloned().unwrap_or_default(),
            })
            .collect();
        if self.show {
            let all: Vec<String> = w.labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
            out.push(if all.is_empty() { "<none>".into() } else { all.join(",") });
        }
        out
    }
}

/// What a table shows besides the workspace's own columns.
pub(crate) struct Shape<'a> {
    /// Across contexts: a CONTEXT column first, each context's badge beside its name.
    pub contexts: Option<BTreeMap<String, Badge>>,
    pub all_namespaces: bool,
    pub labels: LabelColumns<'a>,
}

impl Shape<'_> {
    /// What `list`'s flags and the fleet ask the table to show.
    fn of<'a>(args: &'a Args, globals: &Globals, fleet: &Fleet) -> Shape<'a> {
        // contexts read in namespaces of their own need the NAMESPACE column, as -A does
        let namespaces: std::collections::BTreeSet<&str> =
            fleet.members.iter().map(|m| m.conn.namespace.as_str()).collect();
        Shape {
            contexts: fleet.several_contexts.then(|| fleet.badges()),
            all_namespaces: globals.all_namespaces || namespaces.len() > 1,
            labels: LabelColumns {
                show: args.show_labels,
                keys: &args.label_columns,
            },
        }
    }
}

pub(crate) fn render(
    workspaces: &[Workspace],
    format: Format,
    shape: &Shape,
    no_headers: bool,
    now: DateTime<Utc>,
) -> String {
    match format {
        Format::Json => output::json_list(workspaces.iter().map(schema::workspace)),
        Format::Yaml => {
            let items: Vec<Value> = workspaces.iter().map(schema::workspace).collect();
            output::structured(&output::kubectl_list(items), format)
        }
        Format::Name => workspaces
            .iter()
            .map(|w| format!("sandbox.agents.x-k8s.io/{}\n", w.sandbox_name))
            .collect(),
        Format::Table | Format::Wide => {
            let labels = &shape.labels;
            let cols = columns(shape.contexts.is_some(), shape.all_namespaces, format == Format::Wide);
            let label_headers = labels.headers();
            let headers: Vec<&str> = cols
                .iter()
                .map(|c| c.header())
                .chain(label_headers.iter().map(String::as_str))
                .collect();
            let rows: Vec<Vec<(String, Tone)>> = workspaces
                .iter()
                .map(|w| {
                    let mut row: Vec<(String, Tone)> = cols
                        .iter()
                        .map(|c| match (c, &shape.contexts) {
                            (Column::Context, Some(badges)) => context_cell(w, badges),
                            _ => (cell(w, *c, now), tone(w, *c)),
                        })
                        .collect();
                    row.extend(labels.cells(w).into_iter().map(|c| (c, Tone::Plain)));
                    row
                })
                .collect();
            output::table(&headers, &rows, no_headers, output::colour_enabled())
        }
    }
}
