//! The one inventory read every front-end goes through (`list`, `capacity`, `drift`, shell
//! completion, a `logs` selection, a bulk write's selection): the CLI and the TUI parse and
//! render, this reads. A read's [`Source`] is where its objects come from — the live cluster (the
//! inventory pass, `cluster/inventory/`) or, with `--at`, a recording at an instant (issue 43) —
//! and the caller's callback sees the same [`PackedNamespace`]s either way, so a replayed answer
//! has the shape of a live one by construction.

use crate::cluster::connect::Connection;
use crate::cluster::error::ClusterError;
use crate::cluster::inventory::{self, Inventory, NamespaceData};
use chrono::{DateTime, Utc};
use namzu_domain::drift::OverlayFlags;
use namzu_domain::naming::WorkspaceId;
use namzu_domain::workspace::Workspace;

pub use crate::cluster::inventory::{Entry, PackedNamespace, Query, Scope};

/// Where a read's objects come from.
#[derive(Debug, Clone, Default)]
pub enum Source {
    /// The cluster, now.
    #[default]
    Live,
    /// The flight recorder's store at an instant (`--at`): what the watches had recorded by then.
    At(At),
}

pub use super::replay::At;

/// Read `scope` from `source`, each namespace handed to `each` still packed, in ascending
/// namespace order. Returns the read's warnings (one line each, for stderr or a status line).
pub async fn read_packed(
    source: &Source,
    conn: &Connection,
    scope: &Scope,
    query: &Query,
    each: &mut (impl FnMut(PackedNamespace) + Send),
) -> Result<Vec<String>, ClusterError> {
    match source {
        Source::Live => inventory::read_packed(conn, scope, query, each).await,
        Source::At(at) => super::replay::read(at, conn, scope, query, each),
    }
}

/// [`read_packed`], each namespace parsed whole (for a caller that needs the Sandbox and
/// template each workspace was derived from, as `drift` does).
pub async fn read_each(
    source: &Source,
    conn: &Connection,
    scope: &Scope,
    query: &Query,
    each: &mut (impl FnMut(NamespaceData) + Send),
) -> Result<Vec<String>, ClusterError> {
    read_packed(source, conn, scope, query, &mut |packed| each(packed.unpack())).await
}

/// The whole read at once.
pub async fn read(source: &Source, conn: &Connection, scope: &Scope, query: &Query) -> Result<Inventory, ClusterError> {
    let mut namespaces = Vec::new();
    let warnings = read_each(source, conn, scope, query, &mut |data| namespaces.push(data)).await?;
    Ok(Inventory { namespaces, warnings })
}

/// The workspaces a selection picks, as (namespace, id), in namespace then list order; a
/// Sandbox named `namzu-ws-<not an id>` is skipped with a warning after the read's own.
pub async fn select(
    source: &Source,
    conn: &Connection,
    scope: &Scope,
    query: &Query,
    flags: &OverlayFlags,
    now: DateTime<Utc>,
    keep: &(impl Fn(&Workspace) -> bool + Sync),
) -> Result<(Vec<String>, Vec<(String, WorkspaceId)>), ClusterError> {
    let (mut targets, mut skipped) = (Vec::new(), Vec::new());
    let mut warnings = read_packed(source, conn, scope, query, &mut |packed| {
        packed.derive(flags, now, |w| {
            if keep(&w) {
                match WorkspaceId::parse(&w.id) {
                    Ok(id) => targets.push((w.namespace, id)),
                    Err(e) => skipped.push(format!("skipped: {e}")),
                }
            }
        })
    })
    .await?;
    warnings.extend(skipped);
    Ok((warnings, targets))
}
