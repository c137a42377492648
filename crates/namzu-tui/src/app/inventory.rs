//! The rows as the cluster said them (and the watches keep them), their notes, and the table's sort and scroll.

use super::*;

/// The result of an action on one row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowNote {
    pub text: String,
    pub ok: bool,
}

/// What the cluster said, as of the last good refresh (or as the watches keep it).
#[derive(Debug, Clone, Default)]
pub struct Inventory {
    /// Boxed: a watch's row comes boxed and is kept so (a `Workspace` is ~1.3 KB inline; a
    /// vector of them, grown by doubling, held up to twice 50,000 of them, and each was copied
    /// in and its box freed).
    #[expect(clippy::vec_box, reason = "a row is large and comes boxed from the watch")]
    pub(super) rows: Vec<Box<Workspace>>,
    /// Where each row is in `rows`.
    pub(super) index: HashMap<WorkspaceKey, usize>,
    /// A new one on every change of the rows (unique across inventories): the visible order
    /// is computed again after it.
    pub(super) generation: u64,
    /// Since this generation every change replaced rows in place or added them; `moved` are
    /// their indices, each with the generation that moved it. The visible order of an older
    /// generation is then mended (the rows moved since put back in), not sorted again.
    pub(super) in_place_since: u64,
    pub(super) moved: Vec<(u64, usize)>,
    /// Namespaces the switch cycles through (every context's).
    pub namespaces: Vec<String>,
    /// Per context whose new Follow has not synced: the rows it has brought back (the others of
    /// that context go then).
    pub(super) unconfirmed: BTreeMap<String, BTreeSet<WorkspaceKey>>,
}

/// A generation no inventory had before: the orders cached for one inventory are never taken
/// for another's (the replay sets the live rows aside and shows others).
fn next_generation() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// More rows changed than this (or than half the rows) since the order was computed: sort again
/// rather than mend it.
pub(super) const MENDED_AT_MOST: usize = 256;

/// Data older than this shows dim.
pub(crate) const STALE_AFTER: chrono::TimeDelta = chrono::TimeDelta::seconds(10);

impl Inventory {
    pub fn rows(&self) -> &[Box<Workspace>] {
        &self.rows
    }

    /// A whole new set of rows (a re-list).
    pub fn replace(&mut self, rows: Vec<Workspace>) {
        self.rows = rows.into_iter().map(Box::new).collect();
        self.reindex();
    }

    pub(super) fn reindex(&mut self) {
        self.index = self.rows.iter().enumerate().map(|(i, w)| (key_of(w), i)).collect();
        self.generation = next_generation();
        (self.in_place_since, self.moved) = (self.generation, Vec::new());
    }

    /// Rows replaced in place since generation `g`, when every change since was in place.
    pub(super) fn moved_since(&self, g: u64) -> Option<Vec<usize>> {
        let from = self.moved.partition_point(|(at, _)| *at <= g);
        (self.in_place_since..=self.generation)
            .contains(&g)
            .then(|| self.moved[from..].iter().map(|(_, i)| *i).collect())
    }

    /// Rows a context's watch changed: replaced in place, added at the end, removed.
    pub fn apply(&mut self, context: &str, changes: Vec<RowChange>) {
        let mut removed = false;
        let mut moved = Vec::new();
        for change in changes {
            match change {
                RowChange::Upsert(w) => {
                    let w = tagged(w, context);
                    let key = key_of(&w);
                    if let Some(seen) = self.unconfirmed.get_mut(context) {
                        seen.insert(key.clone());
                    }
                    match self.index.get(&key) {
                        Some(&i) => {
                            self.rows[i] = w;
                            moved.push(i);
                        }
                        // a row added is placed as a row moved is: it is not in the order yet
                        None => {
                            self.index.insert(key, self.rows.len());
                            moved.push(self.rows.len());
                            self.rows.push(w);
                        }
                    }
                }
                RowChange::Remove(key) => {
                    let key = WorkspaceKey {
                        context: Some(context.into()),
                        ..key
                    };
                    if let Some(i) = self.index.remove(&key) {
                        self.rows[i].id.clear();
                        removed = true;
                    }
                }
            }
        }
        if removed {
            self.rows.retain(|w| !w.id.is_empty());
            self.reindex();
        } else if self.moved.len() + moved.len() > MENDED_AT_MOST.max(self.rows.len() / 2) {
            self.generation = next_generation();
            (self.in_place_since, self.moved) = (self.generation, Vec::new());
        } else {
            self.generation = next_generation();
            let at = self.generation;
            self.moved.extend(moved.into_iter().map(|i| (at, i)));
        }
    }

    /// A context's new Follow has synced: its rows the Follow did not bring back are gone.
    pub(super) fn confirm_context(&mut self, context: &str) {
        if let Some(seen) = self.unconfirmed.remove(context) {
            let rows = std::mem::take(&mut self.rows);
            self.rows = rows
                .into_iter()
                .filter(|w| w.context.as_deref() != Some(context) || seen.contains(&key_of(w)))
                .collect();
            self.reindex();
        }
    }

    /// How many rows each context has.
    pub fn per_context(&self) -> BTreeMap<&str, usize> {
        let mut out = BTreeMap::new();
        for w in &self.rows {
            *out.entry(w.context.as_deref().unwrap_or_default()).or_insert(0) += 1;
        }
        out
    }
}

/// A row as its context reported it, named after that context.
pub(super) fn tagged(mut w: Box<Workspace>, context: &str) -> Box<Workspace> {
    if w.context.as_deref() != Some(context) {
        w.context = Some(context.to_string());
    }
    w
}

/// How the user looks at the rows: filter, order, cursor, marks.
#[derive(Debug, Clone)]
pub struct TableView {
    pub filter: String,
    pub filter_editing: bool,
    pub sort: SortKey,
    pub reverse: bool,
    pub selected: usize,
    pub marks: BTreeSet<WorkspaceKey>,
    /// The context picked (`c`): only its rows show; `None` shows every context's.
    pub context: Option<String>,
    /// Only the problem rows (`p`).
    pub problems: bool,
    /// The CPU, MEM and DISK columns show (`u`).
    pub resources: bool,
    /// The command line being typed (`:`), if it is open.
    pub command: Option<String>,
    /// The user moved the cursor: until then it stays on the first row as rows arrive.
    pub touched: bool,
    /// Rows an action was just sent to: they stay in view, where they were, whatever the filter
    /// says of them now, until the filter changes.
    pub pinned: BTreeSet<WorkspaceKey>,
    /// Where each pinned row was in the order when the action was sent: it stays there, though
    /// its new state sorts it elsewhere (nothing jumps under the cursor).
    pub places: Vec<(usize, WorkspaceKey)>,
    /// Bumped whenever `pinned` changes (the visible order is computed again).
    pub pins: u64,
}

impl TableView {
    /// The filter (or what it shows) changed: the rows acted on need not stay any more.
    pub(super) fn unpin(&mut self) {
        if !self.pinned.is_empty() {
            self.pinned.clear();
            self.places.clear();
            self.pins += 1;
        }
    }
}

/// The sorts the table offers (`o`), in the picker's order: each names its column.
pub(crate) const SORTS: [(&str, SortKey, Column); 11] = [
    ("name", SortKey::Name, Column::Workspace),
    ("context", SortKey::Context, Column::Context),
    ("namespace", SortKey::Namespace, Column::Namespace),
    ("mode", SortKey::Mode, Column::Mode),
    ("state", SortKey::State, Column::State),
    ("age", SortKey::Age, Column::Age),
    ("mode-changed", SortKey::ModeChanged, Column::ModeChanged),
    ("epoch", SortKey::Epoch, Column::Epoch),
    ("template", SortKey::Template, Column::Template),
    ("drift", SortKey::Drift, Column::Drift),
    ("diagnosis", SortKey::Diagnosis, Column::Diagnosis),
];

/// The sort's name and column.
pub(crate) fn sort_name(key: SortKey) -> (&'static str, Column) {
    SORTS
        .iter()
        .find(|(_, k, _)| *k == key)
        .map_or(("name", Column::Workspace), |(n, _, c)| (*n, *c))
}
