//! Rendering: a pure function of the state, generic over the ratatui backend.

mod confirm;
mod header;
mod popups;
mod table;

use confirm::*;
use header::*;
use popups::*;
use table::*;

use super::app::{
    App, Confirm, ContextView, Focus, Health, Popup, SORTS, STALE_AFTER, footer_keys, key_of, leaks_text, leaks_title,
    pulse_text, pulse_title, replay_words, sort_name, time_bar,
};
use chrono::{DateTime, Utc};
use namzu_domain::age::age;
use namzu_domain::columns::{Column, cell, columns};
use namzu_domain::drift::DriftState;
use namzu_domain::fence::Verb;
use namzu_domain::safety::{Badge, Colour};
use namzu_domain::state::State;
use namzu_domain::workspace::Workspace;
use namzu_engine::cluster::inventory::Scope;
use namzu_engine::cluster::live::StreamStatus;
use namzu_engine::cluster::write::Outcome;
use namzu_engine::present::layout::{cut, width, wrap};
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span, Text};
use ratatui::widgets::{Block, Borders, Cell, Clear, Paragraph, Row, Table, TableState};
use std::collections::{BTreeMap, BTreeSet};

/// Colours off under NO_COLOR (decided once by the caller).
#[derive(Debug, Clone, Copy)]
pub struct Theme {
    pub colour: bool,
}

impl Theme {
    fn fg(&self, c: Color) -> Style {
        if self.colour {
            Style::default().fg(c)
        } else {
            Style::default()
        }
    }
}

pub fn render(frame: &mut Frame, app: &App, theme: Theme) {
    let [header, body, footer] =
        Layout::vertical([Constraint::Length(2), Constraint::Min(3), Constraint::Length(2)]).areas(frame.area());
    render_header(frame, header, app, theme);
    render_table(frame, body, app, theme);
    render_footer(frame, footer, app, theme);
    if let Some(top) = app.popups.last() {
        render_popup(frame, app, top, theme);
    }
}

/// Compact JSON with a space after every `,` and `:` between tokens (never inside a string), so
/// word wrapping breaks a long patch operation only where JSON allows whitespace.
pub(crate) fn spaced_json(v: &serde_json::Value) -> String {
    use serde_json::Value;
    match v {
        Value::Array(items) => format!("[{}]", items.iter().map(spaced_json).collect::<Vec<_>>().join(", ")),
        Value::Object(map) => format!(
            "{{{}}}",
            map.iter()
                .map(|(k, v)| format!("{}: {}", Value::String(k.clone()), spaced_json(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        scalar => scalar.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::spaced_json;
    use serde_json::json;

    #[test]
    fn spaced_json_is_the_same_value_with_breaks_between_tokens() {
        let op = json!({"op": "add", "path": "/metadata/annotations", "value": {"a, b": "x: y", "n": [1, true, null]}});
        let text = spaced_json(&op);
        assert_eq!(
            text,
            r#"{"op": "add", "path": "/metadata/annotations", "value": {"a, b": "x: y", "n": [1, true, null]}}"#
        );
        assert_eq!(serde_json::from_str::<serde_json::Value>(&text).unwrap(), op);
    }

    #[test]
    fn the_help_explains_every_column_and_every_diagnosis_word() {
        let legend = super::legend(78);
        for kind in namzu_domain::diagnosis::DiagnosisKind::ALL {
            let line = legend.iter().find(|l| l.starts_with(&format!("{} ", kind.as_str())));
            assert!(line.is_some_and(|l| l.len() > kind.as_str().len() + 4), "{kind:?}");
        }
        for column in [
            "WORKSPACE",
            "MODE-CHANGED",
            "EPOCH",
            "DRIFT",
            "DIAGNOSIS",
            "CONTEXT",
            "CPU",
        ] {
            assert!(legend.iter().any(|l| l.starts_with(&format!("{column} "))), "{column}");
        }
        assert!(legend.iter().all(|l| super::width(l) <= 78), "{legend:#?}");
    }

    #[test]
    fn the_sorted_column_is_never_the_one_dropped() {
        use namzu_domain::columns::Column;
        let plain = super::fitting(false, true, false, 120, Column::Workspace);
        assert!(!plain.contains(&Column::ModeChanged), "{plain:?}");
        let sorted = super::fitting(false, true, false, 120, Column::ModeChanged);
        assert!(sorted.contains(&Column::ModeChanged), "{sorted:?}");
        assert!(
            !sorted.contains(&Column::Template),
            "the next one goes in its place: {sorted:?}"
        );
        for (width, sort) in [
            (80, Column::Namespace),
            (80, Column::Age),
            (80, Column::Mode),
            (80, Column::Template),
        ] {
            assert!(
                super::fitting(false, true, false, width, sort).contains(&sort),
                "{sort:?} at {width}"
            );
        }
    }
}
