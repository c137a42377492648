//! The table: which columns fit, each cell's style, the context column.

use super::*;

pub(super) fn state_colour(s: State) -> Color {
    match s {
        State::Running => Color::Green,
        State::Starting | State::Suspending => Color::Yellow,
        State::Suspended => Color::Blue,
        State::Failed | State::Error => Color::Red,
        State::Expired | State::Deleting => Color::Magenta,
    }
}

pub(super) fn badge_colour(c: Colour) -> Color {
    match c {
        Colour::Red => Color::Red,
        Colour::Yellow => Color::Yellow,
        Colour::Green => Color::Green,
        Colour::Blue => Color::Blue,
        Colour::Magenta => Color::Magenta,
    }
}

/// A context's badge as shown beside its name: `[PROD]`, bold in its colour.
pub(super) fn badge_span(b: &Badge, theme: Theme) -> Span<'static> {
    let style = b.colour.map_or(Style::default(), |c| theme.fg(badge_colour(c)));
    Span::styled(format!("[{}]", b.label), style.add_modifier(Modifier::BOLD))
}

pub(super) fn cell_style(w: &Workspace, c: Column, theme: Theme) -> Style {
    match c {
        Column::State => theme.fg(state_colour(w.state)),
        Column::Drift if w.drift.state == DriftState::Drifted => theme.fg(Color::Yellow),
        Column::Drift if w.drift.state == DriftState::NoTemplate => theme.fg(Color::Red),
        Column::Diagnosis if w.diagnosis.is_some() => theme.fg(Color::Red),
        Column::Epoch if w.epoch.epoch.is_none() => theme.fg(Color::Red),
        _ => Style::default(),
    }
}

/// The columns that fit: narrow terminals drop MODE-CHANGED, then TEMPLATE, MODE, AGE and
/// NAMESPACE, in that order, until the rest fit — never the `sorted` one (the next goes in its
/// place); the columns the tool exists for (STATE, DRIFT, DIAGNOSIS, EPOCH) and the workspace
/// always stay. A fleet's CONTEXT counts as its short room.
pub(super) fn fitting(fleet: bool, all_namespaces: bool, resources: bool, width: u16, sorted: Column) -> Vec<Column> {
    let mut cols = columns(fleet, all_namespaces, false);
    // `u`: what each workspace holds, after the columns the tool exists for
    if resources {
        cols.extend([Column::Cpu, Column::Mem, Column::Disk]);
    }
    let need = |cols: &[Column]| -> usize {
        cols.iter()
            .map(|c| match c {
                Column::Context => 12,
                Column::Workspace => 12,
                other => fixed_width(*other) as usize,
            })
            .sum::<usize>()
            + cols.len()
            + 2
    };
    for drop in [
        Column::ModeChanged,
        Column::Template,
        Column::Mode,
        Column::Age,
        Column::Namespace,
    ] {
        if need(&cols) <= width as usize {
            break;
        }
        if drop != sorted {
            cols.retain(|c| *c != drop);
        }
    }
    cols
}

/// The columns' widths: each its fixed width, then — where the terminal has room left (after
/// `reserve` columns for RESULT) — grown to its longest cell in `window` (and its header), so a
/// wide terminal shows `foreign-egress-policy` whole instead of cut; the room goes to the
/// columns in the order they show (the sorted one's header has its ▲ too).
fn grown(
    cols: &[Column],
    base: Vec<u16>,
    window: &[&Workspace],
    now: DateTime<Utc>,
    room: usize,
    sorted: Column,
) -> Vec<u16> {
    let used: usize = base.iter().map(|w| *w as usize).sum::<usize>() + cols.len() + 1;
    let mut free = room.saturating_sub(used);
    let mut out = base;
    for (i, c) in cols.iter().enumerate() {
        if free == 0 {
            break;
        }
        if matches!(c, Column::Workspace | Column::Context) {
            continue;
        }
        let longest = window
            .iter()
            .map(|w| width(&cell(w, *c, now)))
            .chain(std::iter::once(width(c.header()) + usize::from(*c == sorted)))
            .max()
            .unwrap_or(0);
        let more = longest.saturating_sub(out[i] as usize).min(free);
        out[i] += more as u16;
        free -= more;
    }
    out
}

pub(super) fn render_table(frame: &mut Frame, area: Rect, app: &App, theme: Theme) {
    let all = app.scope == Scope::All || app.mixed_namespaces();
    let (sort_name, sorted) = sort_name(app.view.sort);
    let cols = fitting(app.several_contexts, all, app.view.resources, area.width, sorted);
    let rows_visible = app.visible();
    // build only the rows that fit: a frame costs the same at 10 or 10,000 workspaces
    let height = area.height.saturating_sub(2) as usize;
    let start = if app.view.selected >= height {
        app.view.selected + 1 - height
    } else {
        0
    };
    let window = &rows_visible[start.min(rows_visible.len())..(start + height).min(rows_visible.len())];
    let arrow = if app.view.reverse { "▼" } else { "▲" };
    // RESULT takes room only once an action has a result to show
    let results = area.width >= 110 && !app.notes.is_empty();
    let header = header_cells(&cols, sorted, arrow, results);
    let sized = column_widths(app, &cols, window, area.width, sorted, results);
    let mut widths: Vec<Constraint> = vec![Constraint::Length(1)];
    widths.extend(sized.iter().map(|w| Constraint::Length(*w)));
    // the room left goes to RESULT, or to nothing (the columns keep their widths)
    widths.push(Constraint::Fill(1));
    // each cell cut to its column with `…` (the table itself would cut it without a mark)
    let fitted: Vec<usize> = Layout::horizontal(widths.clone())
        .flex(ratatui::layout::Flex::Start)
        .spacing(1)
        .split(Rect::new(0, 0, area.width, 1))
        .iter()
        .map(|r| r.width as usize)
        .collect();
    let fit = |i: usize, text: String| cut(&text, fitted.get(i).copied().unwrap_or(usize::MAX));
    // rows whose context's data is older than STALE_AFTER stay, dimmed
    let stale: BTreeSet<&str> = app
        .contexts
        .iter()
        .filter(|c| c.stale_since().is_some_and(|t| app.now - t > STALE_AFTER))
        .map(|c| c.name.as_str())
        .collect();
    let rows: Vec<Row> = window
        .iter()
        .map(|w| {
            let key = key_of(w);
            let mark = if app.view.marks.contains(&key) { "✓" } else { " " };
            let mut cells = vec![Cell::from(mark)];
            cells.extend(cols.iter().enumerate().map(|(i, c)| match c {
                Column::Context => {
                    let room = fitted.get(i + 1).copied().unwrap_or(usize::MAX);
                    Cell::from(context_text(app, w, room)).style(context_style(app, w, theme))
                }
                _ => Cell::from(fit(i + 1, cell(w, *c, app.now))).style(cell_style(w, *c, theme)),
            }));
            if results {
                let note = app.notes.get(&key);
                let style = match note {
                    Some(n) if !n.ok => theme.fg(Color::Red),
                    _ => Style::default(),
                };
                let text = note.map_or(String::new(), |n| n.text.clone());
                cells.push(Cell::from(fit(cols.len() + 1, text)).style(style));
            }
            let row_style = if stale.contains(key.context_name()) {
                Style::default().add_modifier(Modifier::DIM)
            } else {
                Style::default()
            };
            Row::new(cells).style(row_style)
        })
        .collect();
    let mut title = table_title(app, rows_visible.len());
    title.push_str(&format!("· sort: {sort_name} {arrow} "));
    let table = Table::new(rows, widths)
        .header(Row::new(header).style(Style::default().add_modifier(Modifier::BOLD)))
        .block(Block::default().borders(Borders::TOP).title(title))
        .row_highlight_style(Style::default().add_modifier(Modifier::REVERSED))
        .column_spacing(1);
    let mut state =
        TableState::default().with_selected(app.view.selected.checked_sub(start).filter(|_| !window.is_empty()));
    frame.render_stateful_widget(table, area, &mut state);
}

/// Each column's width for the rows in `window`: WORKSPACE as its longest id, CONTEXT what the
/// others leave (up to its longest name and badge), the rest their fixed widths, then grown into
/// the room left ([`grown`]).
fn column_widths(
    app: &App,
    cols: &[Column],
    window: &[&Workspace],
    area_width: u16,
    sorted: Column,
    results: bool,
) -> Vec<u16> {
    // as wide as the longest id on screen (a Min column would take the room RESULT needs)
    // room for WORKSPACE's sort mark when it is the sorted column
    let id_min = if sorted == Column::Workspace { 10 } else { 9 };
    let id_width = window.iter().map(|w| width(&w.id)).max().unwrap_or(0).clamp(id_min, 40) as u16;
    // CONTEXT takes what the others leave, up to its longest name and badge
    let others: usize = cols
        .iter()
        .map(|c| match c {
            Column::Context => 0,
            Column::Workspace => id_width as usize,
            other => fixed_width(*other) as usize,
        })
        .sum::<usize>()
        + cols.len()
        + 1;
    let context_width = window
        .iter()
        .map(|w| width(&context_text(app, w, usize::MAX)))
        .max()
        .unwrap_or(0)
        .min((area_width as usize).saturating_sub(others))
        .max(7) as u16;
    let base: Vec<u16> = cols
        .iter()
        .map(|c| match c {
            Column::Workspace => id_width,
            Column::Context => context_width,
            other => fixed_width(*other),
        })
        .collect();
    // RESULT keeps room for its words where it shows
    let reserve = if results { 24 } else { 0 };
    grown(
        cols,
        base,
        window,
        app.now,
        (area_width as usize).saturating_sub(reserve),
        sorted,
    )
}

/// The header: the sorted column says so, and which way; RESULT when there are results.
fn header_cells(cols: &[Column], sorted: Column, arrow: &str, results: bool) -> Vec<Cell<'static>> {
    let mut header: Vec<Cell> = vec![Cell::from(" ")];
    header.extend(cols.iter().map(|c| {
        if *c == sorted {
            Cell::from(format!("{}{arrow}", c.header()))
        } else {
            Cell::from(c.header())
        }
    }));
    if results {
        header.push(Cell::from("RESULT"));
    }
    header
}

/// The table's title: how many rows show of how many, and the filter as it is typed.
fn table_title(app: &App, shown: usize) -> String {
    // with a context picked, the rows in view are that context's
    let (in_view, of_context) = match &app.view.context {
        Some(c) => (
            app.inventory.per_context().get(c.as_str()).copied().unwrap_or(0),
            format!(" in {c}"),
        ),
        None => (app.inventory.rows().len(), String::new()),
    };
    let problems = if app.view.problems { " · problems only" } else { "" };
    let bad = app.query().err().map_or(String::new(), |e| format!(" — {e}"));
    match (app.view.filter_editing, app.view.filter.is_empty()) {
        (true, _) => format!(" filter: {}█{bad} ", app.view.filter),
        (false, false) => format!(
            " filter: {} ({} of {}{of_context}){problems}{bad} ",
            app.view.filter, shown, in_view
        ),
        (false, true) if app.view.problems => {
            format!(" {} of {in_view} workspaces{of_context}{problems} ", shown)
        }
        (false, true) => format!(" {in_view} workspaces{of_context} "),
    }
}

/// The width of a column whose width does not depend on the rows.
pub(super) fn fixed_width(c: Column) -> u16 {
    match c {
        Column::Namespace | Column::Mode | Column::State => 10,
        Column::Age => 6,
        Column::ModeChanged => 12,
        Column::Epoch => 8,
        Column::Template | Column::Drift => 11,
        Column::Diagnosis => 19,
        Column::Cpu => 6,
        Column::Mem | Column::Disk => 9,
        _ => 12,
    }
}

/// A row's CONTEXT cell in `room` columns: its context, and the context's badge; where both do
/// not fit (a narrow terminal) the badge's label alone, which says what the context is, unless
/// another context has the same label.
pub(super) fn context_text(app: &App, w: &Workspace, room: usize) -> String {
    let name = w.context.as_deref().unwrap_or("-");
    match app.context_view(name).and_then(|c| c.rules.badge.as_ref()) {
        Some(b) => {
            let badge = format!(" [{}]", b.label);
            let label = format!("[{}]", b.label);
            // two contexts of one label keep their names: the label alone would not tell them apart
            let shared = app
                .contexts
                .iter()
                .filter(|c| c.rules.badge.as_ref().is_some_and(|o| o.label == b.label))
                .count()
                > 1;
            if !shared && width(name) + width(&badge) > room && width(&label) <= room {
                return label;
            }
            let kept = room.saturating_sub(width(&badge)).max(3);
            cut(&format!("{}{badge}", cut(name, kept)), room)
        }
        None => cut(name, room),
    }
}

pub(super) fn context_style(app: &App, w: &Workspace, theme: Theme) -> Style {
    let badge = w
        .context
        .as_deref()
        .and_then(|name| app.context_view(name))
        .and_then(|c| c.rules.badge.as_ref());
    match badge.and_then(|b| b.colour) {
        Some(c) => theme.fg(badge_colour(c)),
        None => Style::default(),
    }
}
