//! The words of `leaks --delete` (`ops/leaks.rs`): each context's typed confirmation, the line
//! per object deleted, the refusals, and the command's closing lines.

use crate::cluster::write::{LeakOutcome, LeakPlan};
use namzu_domain::counted;

/// A context's rules cannot be applied to its connection: nothing is sent.
pub(crate) fn unrulable(why: &str) -> String {
    format!("{why}: nothing sent")
}

/// A read-only context: its reason, and that nothing is sent there.
pub(crate) fn read_only(reason: &str) -> String {
    format!("{reason}: leaks --delete sends no write")
}

/// A typed confirmation the terminal cannot give.
pub(crate) const CANNOT_ASK: &str = "leaks --delete asks for the typed count (disks hold data; a context's confirm: typed): pass --yes (stdin is not a terminal, so it cannot ask)";

/// What a context's typed confirmation shows before it asks.
pub(crate) fn question(context: Option<&str>, objects: usize, disks: usize) -> String {
    let whose = context.map_or(String::new(), |c| format!(" in context {c}"));
    match (objects, disks) {
        (1, 1) => format!("1 disk{whose} would be deleted (its data is lost)."),
        (n, d) if n == d => format!("{}{whose} would be deleted (their data is lost).", counted(n, "disk")),
        (n, 0) => format!("{}{whose} would be deleted, none of them a disk.", counted(n, "object")),
        (n, d) => format!(
            "{}{whose} would be deleted, {} among them (their data is lost).",
            counted(n, "object"),
            counted(d, "disk")
        ),
    }
}

/// One object as a confirmation names it: `persistentvolumeclaim/x in agents`, and for a disk
/// what happens to its data.
pub fn named(plan: &LeakPlan) -> String {
    let data = match plan.target {
        crate::cluster::write::LeakTarget::Disk => {
            " (its data is kept on its volume where this tool may set the volume to Retain — restore re-binds it; else lost)"
        }
        crate::cluster::write::LeakTarget::Policy => "",
    };
    format!("{}/{} in {}{data}", plan.target_kind(), plan.name, plan.namespace)
}

/// What must be typed to delete `objects` objects.
pub(crate) fn word(objects: usize) -> String {
    format!("delete {objects}")
}

/// The prompt after [`question`].
pub(crate) fn prompt(word: &str) -> String {
    format!("Type \"{word}\" to delete them: ")
}

/// A context's confirmation not given.
pub fn cancelled(context: &str) -> String {
    format!("Cancelled: nothing deleted in {context}.")
}

/// The result's word.
pub(crate) fn result(o: &LeakOutcome) -> &'static str {
    match o {
        LeakOutcome::Deleted { .. } => "deleted",
        LeakOutcome::Quarantined { .. } => "quarantined",
        LeakOutcome::DryRun { .. } => "dry-run",
        LeakOutcome::AlreadyGone => "already-gone",
        LeakOutcome::Refused { .. } | LeakOutcome::ReadOnly => "refused",
        LeakOutcome::Failed(_) => "failed",
    }
}

/// Why, for a result that needs a why.
pub(crate) fn detail(o: &LeakOutcome) -> Option<String> {
    match o {
        LeakOutcome::Deleted { kept, .. } => kept.clone(),
        LeakOutcome::Refused { message } => Some(message.clone()),
        LeakOutcome::ReadOnly => Some("read-only mode: nothing sent".into()),
        LeakOutcome::Failed(e) => Some(e.to_string()),
        _ => None,
    }
}

/// One object's result line, `[done/total] ` before it when there are several.
pub(crate) fn line(plan: &LeakPlan, o: &LeakOutcome, done: usize, total: usize) -> String {
    let progress = if total > 1 {
        format!("[{done}/{total}] ")
    } else {
        String::new()
    };
    let what = format!("{}/{}", plan.target_kind(), plan.name);
    let ns = &plan.namespace;
    let result = result(o);
    match (o, detail(o)) {
        (LeakOutcome::DryRun { request: r }, _) => {
            format!(
                "{progress}{what} in {ns}: would send {} {} {}",
                r.method,
                r.path,
                super::yaml::compact_json(&r.body)
            )
        }
        (LeakOutcome::Deleted { .. }, _) if plan.server_dry_run => {
            format!("{progress}{what} in {ns}: {result} (server dry run)")
        }
        (_, Some(detail)) if !detail.is_empty() => format!("{progress}{what} in {ns}: {result}: {detail}"),
        _ => format!("{progress}{what} in {ns}: {result}"),
    }
}

/// The leaks found that `leaks --delete` does not delete.
pub fn not_deleted(skipped: usize) -> String {
    format!(
        "{skipped} others listed (in use, detached, stuck, expired or retained, claims, pools; or not named) are not deleted by leaks --delete: see their next step and checks in kubectl namzu leaks -o wide"
    )
}

/// Nothing found to delete.
pub const NOTHING_TO_DELETE: &str = "No leaks to delete.";

/// Some deletes failed.
pub fn failed(failed: usize, total: usize) -> String {
    format!("{failed} of {total} deletes failed")
}

/// Some deletes were refused.
pub fn refused(refused: usize, total: usize) -> String {
    // refused before the send, or sent and refused by its preconditions (409): none deleted
    format!("{refused} of {total} deletes were refused: nothing deleted by them")
}

/// The line after deletes stopped early (Ctrl-C, stdout closed, the audit log failing).
pub fn stopped(reason: &str, done: usize, total: usize, not_started: &[String]) -> String {
    format!(
        "stopped ({reason}) after {done} of {total} deletes; not started: {}",
        not_started.join(", ")
    )
}

/// The command's error after a stop.
pub fn stopped_error(reason: &str) -> String {
    format!("leaks --delete stopped before every planned delete was done ({reason})")
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_question_counts_what_it_deletes() {
        assert_eq!(
            super::question(None, 1, 1),
            "1 disk would be deleted (its data is lost)."
        );
        assert_eq!(
            super::question(Some("prod"), 1, 0),
            "1 object in context prod would be deleted, none of them a disk."
        );
        assert_eq!(
            super::question(None, 3, 2),
            "3 objects would be deleted, 2 disks among them (their data is lost)."
        );
    }
}
