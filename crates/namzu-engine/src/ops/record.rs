//! `record`: the flight recorder (issue 43). Every context of the fleet followed live with its
//! recording on — the inventory's watches, plus claims, warm pools, the workspaces' Events and
//! this machine's audit entries — until the front-end stops it; a context whose store another
//! recorder holds waits as its standby.

use crate::cluster::inventory::{Query, Scope};
use crate::cluster::live::{LiveOptions, RecordTo};
use crate::ops::fleet::Fleet;
use crate::ops::follow::{self, FollowContext, Following};
use namzu_recorder::Limits;
use std::path::PathBuf;

/// What to record and where.
pub struct Recording {
    pub root: PathBuf,
    pub limits: Limits,
    /// This machine's audit log (`None` with `--no-audit`).
    pub audit: Option<PathBuf>,
    pub all_namespaces: bool,
}

/// Start recording every context of `fleet`; its reports (warnings, a context that failed) come
/// out of the returned stream, which [`Following::finish`] ends cleanly.
pub fn record(fleet: &Fleet, recording: Recording) -> Following {
    let targets: Vec<FollowContext> = fleet
        .members
        .iter()
        .map(|m| FollowContext {
            context: fleet.row_context(m),
            conn: m.conn.clone(),
            scope: if recording.all_namespaces {
                Scope::All
            } else {
                Scope::Namespace(m.conn.namespace.clone())
            },
        })
        .collect();
    let options = LiveOptions {
        record: Some(RecordTo {
            root: recording.root,
            limits: recording.limits,
            standby: true,
            everything: true,
            audit: recording.audit,
        }),
        ..LiveOptions::default()
    };
    follow::follow(targets, &Query::default(), &Default::default(), &options)
}

/// The recorder's bounds from the rules file's `recording:` (the defaults where it says none).
pub fn limits(bounds: &namzu_domain::safety::RecordingBounds) -> Limits {
    let default = Limits::default();
    Limits {
        retention_days: bounds.retention_days.unwrap_or(default.retention_days),
        max_mb: bounds.max_mb.unwrap_or(default.max_mb),
    }
}
