//! The visible order: the rows that pass the filter, in sort order, cached and mended as
//! watch events change a few rows (a frame never sorts 50,000 rows for a handful of changes).

use super::*;

/// More moved rows than this are merged into the order in one pass rather than each put in
/// its place by a binary search (which moves the order's tail each time).
const MERGE_FROM: usize = 32;

/// The order of no rows (what [`App::ordered`] lends when its cache is empty).
static EMPTY_ORDER: Vec<usize> = Vec::new();

impl App {
    /// Rows after the filter, in sort order.
    pub fn visible(&self) -> Vec<&Workspace> {
        let order = self.ordered();
        let rows = self.inventory.rows();
        order.iter().map(|&i| &*rows[i]).collect()
    }

    /// The visible rows' indices in order: computed again only when the rows, the filter or
    /// the sort changed since the last call (mended when only a few rows changed in place).
    pub(super) fn ordered(&self) -> std::cell::Ref<'_, Vec<usize>> {
        let key = OrderKey {
            view: ViewChoices {
                filter: format!("{}\u{0}{}", self.view.filter, self.view.pins),
                context: self.view.context.clone(),
                sort: self.view.sort,
                reverse: self.view.reverse,
                problems: self.view.problems,
            },
            generation: self.inventory.generation,
        };
        {
            let mut cache = self.order.borrow_mut();
            let fresh = match cache.take() {
                Some((k, order)) if k == key => order,
                // only rows replaced in place since: move those, keep the rest of the order
                Some((k, order)) if k.view == key.view => match self.inventory.moved_since(k.generation) {
                    Some(moved) => {
                        let query = self.query();
                        let rows = self.inventory.rows();
                        self.mend(order, &moved, &|m| self.passes(&rows[m], &query), true)
                    }
                    None => self.order_rows(),
                },
                _ => self.order_rows(),
            };
            *cache = Some((key, fresh));
        }
        std::cell::Ref::map(self.order.borrow(), |c| c.as_ref().map_or(&EMPTY_ORDER, |(_, o)| o))
    }

    pub(super) fn ordering(&self, a: usize, b: usize) -> std::cmp::Ordering {
        let rows = self.inventory.rows();
        let o = compare(&rows[a], &rows[b], self.view.sort);
        if self.view.reverse { o.reverse() } else { o }
    }

    pub(super) fn order_rows(&self) -> Vec<usize> {
        let query = self.query();
        let rows = self.inventory.rows();
        let mut order: Vec<usize> = self
            .sorted_rows()
            .iter()
            .copied()
            .filter(|&i| self.passes(&rows[i], &query))
            .collect();
        // the rows an action was just sent to, back where they were when it was sent
        for (place, key) in &self.view.places {
            if let Some(i) = order.iter().position(|&r| key_of(&rows[r]) == *key) {
                let r = order.remove(i);
                order.insert((*place).min(order.len()), r);
            }
        }
        order
    }

    /// The rows were swapped for others (a replay, the live rows back): no order cached for
    /// the ones before is taken for these.
    pub(crate) fn forget_order(&mut self) {
        self.order.replace(None);
        self.sorted.replace(None);
    }

    /// Every row in sort order: sorted again only when the sort changed or too many rows did.
    fn sorted_rows(&self) -> std::cell::Ref<'_, Vec<usize>> {
        let key = (self.view.sort, self.view.reverse, self.inventory.generation);
        {
            let mut cache = self.sorted.borrow_mut();
            let fresh = match cache.take() {
                Some((k, order)) if k == key => order,
                Some((k, order)) if (k.0, k.1) == (key.0, key.1) => match self.inventory.moved_since(k.2) {
                    Some(moved) => self.mend(order, &moved, &|_| true, false),
                    None => self.sort_all(),
                },
                _ => self.sort_all(),
            };
            *cache = Some((key, fresh));
        }
        std::cell::Ref::map(self.sorted.borrow(), |c| c.as_ref().map_or(&EMPTY_ORDER, |(_, o)| o))
    }

    fn sort_all(&self) -> Vec<usize> {
        let mut order: Vec<usize> = (0..self.inventory.rows().len()).collect();
        order.sort_by(|&a, &b| self.ordering(a, b));
        order
    }

    /// The order with the `moved` rows (changed in place or added) taken out and merged back
    /// where they now sort: a pass over the order, not a sort of it. `compare` breaks ties by
    /// name, so this is exactly the order a full sort gives — but for the rows an action was
    /// just sent to (pinned): they stay where they were, so the rows do not jump under the
    /// cursor after a write, until the filter or the sort changes.
    fn mend(&self, mut order: Vec<usize>, moved: &[usize], keep: &dyn Fn(usize) -> bool, pins: bool) -> Vec<usize> {
        let rows = self.inventory.rows();
        // pinned rows stay where they are, and being out of their sort place they are never
        // what a moved row is placed against
        let held = |i: usize| self.view.pinned.contains(&key_of(&rows[i]));
        let shown: BTreeSet<usize> = if !pins || self.view.pinned.is_empty() {
            BTreeSet::new()
        } else {
            order.iter().copied().filter(|&i| held(i)).collect()
        };
        let moved: BTreeSet<usize> = moved.iter().copied().filter(|m| !shown.contains(m)).collect();
        order.retain(|i| !moved.contains(i));
        let mut incoming: Vec<usize> = moved.into_iter().filter(|&m| keep(m)).collect();
        // (a binary search would meet the pinned rows, out of their sort places: merge then)
        if incoming.len() <= MERGE_FROM && shown.is_empty() {
            // a few: each put where a binary search says
            for m in incoming {
                let at = order.partition_point(|&i| self.ordering(i, m) != std::cmp::Ordering::Greater);
                order.insert(at, m);
            }
            return order;
        }
        // many (a page of a first list): sorted, then merged in one pass over the order
        incoming.sort_by(|&a, &b| self.ordering(a, b));
        let mut merged = Vec::with_capacity(order.len() + incoming.len());
        let mut incoming = incoming.into_iter().peekable();
        for i in order {
            // a moved row goes after every row that sorts with it or before it
            while let Some(&m) = incoming.peek()
                && !shown.contains(&i)
                && self.ordering(m, i) == std::cmp::Ordering::Less
            {
                merged.push(m);
                incoming.next();
            }
            merged.push(i);
        }
        merged.extend(incoming);
        merged
    }
}
