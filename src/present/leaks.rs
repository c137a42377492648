//! The words of `leaks --delete` (`ops/leaks.rs`): each context's typed confirmation, the line
//! per object deleted, the refusals, and the command's closing lines.

use crate::cluster::write::{LeakOutcome, LeakPlan};

/// A context's rules cannot be applied to its connection: nothing is sent.
pub fn unrulable(why: &str) -> String {
    format!("{why}: nothing sent")
}

/// A read-only context: its reason, and that nothing is sent there.
pub fn read_only(reason: &str) -> String {
    format!("{reason}: leaks --delete sends no write")
}

/// A typed confirmation the terminal cannot give.
pub const CANNOT_ASK: &str =
    "leaks --delete deletes disks (their data is lost): pass --yes (stdin is not a terminal, so it cannot ask)";

/// What a context's typed confirmation shows before it asks.
pub fn question(context: Option<&str>, objects: usize, disks: usize) -> String {
    let whose = context.map_or(String::new(), |c| format!(" in context {c}"));
    format!("{objects} objects{whose} would be deleted, {disks} of them disks (their data is lost).")
}

/// What must be typed to delete `objects` objects.
pub fn word(objects: usize) -> String {
    format!("delete {objects}")
}

/// The prompt after [`question`].
pub fn prompt(word: &str) -> String {
    format!("Type \"{word}\" to delete them: ")
}

/// A context's confirmation not given.
pub fn cancelled(context: &str) -> String {
    format!("Cancelled: nothing deleted in {context}.")
}

/// The result's word.
pub fn result(o: &LeakOutcome) -> &'static str {
    match o {
        LeakOutcome::Deleted { .. } => "deleted",
        LeakOutcome::DryRun { .. } => "dry-run",
        LeakOutcome::AlreadyGone => "already-gone",
        LeakOutcome::Refused { .. } | LeakOutcome::ReadOnly => "refused",
        LeakOutcome::Failed(_) => "failed",
    }
}

/// Why, for a result that needs a why.
pub fn detail(o: &LeakOutcome) -> Option<String> {
    match o {
        LeakOutcome::Refused { message } => Some(message.clone()),
        LeakOutcome::ReadOnly => Some("read-only mode: nothing sent".into()),
        LeakOutcome::Failed(e) => Some(e.to_string()),
        _ => None,
    }
}

/// One object's result line, `[done/total] ` before it when there are several.
pub fn line(plan: &LeakPlan, o: &LeakOutcome, done: usize, total: usize) -> String {
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
        "{skipped} other leaks (stuck, expired, claims, pools) are not deleted by leaks --delete: see their next step in kubectl namzu leaks -o wide"
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
    format!("{refused} of {total} deletes were refused: nothing sent for them")
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
