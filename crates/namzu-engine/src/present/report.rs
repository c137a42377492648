//! The words of a bulk write's report around its result lines (the lines themselves are
//! `present/outcome.rs`'s): the typed confirmation's question, the cost notes, the stop, the
//! dry run's count and the command's closing failure. Both front-ends may say them; the CLI
//! prints them.

use namzu_domain::fence::Verb;
use namzu_domain::patch::Mode;

/// What a typed confirmation shows before it asks: the workspace, where (its context always,
/// with the context's badge), its mode and holder epoch, and what the write costs.
pub(crate) fn question(
    name: &str,
    namespace: &str,
    (context, badge): (&str, Option<&str>),
    mode: Mode,
    epoch: &str,
    verb: Verb,
) -> String {
    let whose = match badge {
        Some(b) => format!(" (context {context} [{b}])"),
        None => format!(" (context {context})"),
    };
    let cost = cost(verb);
    format!(
        "{name} in {namespace}{whose} is {} (holder epoch {epoch}). {cost}",
        mode.as_str()
    )
}

/// The prompt after [`question`].
pub fn prompt(id: &str, verb: Verb) -> String {
    format!("Type the workspace id ({id}) to {} it: ", verb.as_str())
}

/// A typed id that did not match.
pub fn cancelled(key: &str) -> String {
    format!("{key}: cancelled (the id typed did not match): nothing sent")
}

/// What a write costs, in one sentence: the typed question, the TUI's confirmation and the note
/// before a bulk write all say this one.
pub fn cost(verb: Verb) -> &'static str {
    match verb {
        Verb::Suspend => {
            "Suspending stops the pod: its agent sessions, terminals and detached commands end; its disks are kept."
        }
        Verb::Delete => {
            "Deleting destroys the Sandbox, its pod, its agent sessions and its disks (PVCs); it cannot be undone."
        }
        Verb::Resume => "Resuming starts a pod again on the disks it kept.",
    }
}

/// What a refresh (`resume --refresh-template`, the TUI's `F`) costs, in one sentence.
pub const REFRESH_COST: &str = "Refreshing resumes the workspace (it wakes up) onto its SandboxTemplate as it is now: the pod template changes as the field diff below shows.";

/// What a write costs, said once before a bulk write (a single one says it on success); `yes`:
/// a delete's typed confirmation was skipped (it says the cost itself).
pub fn cost_note(verb: Verb, yes: bool) -> Option<String> {
    match verb {
        Verb::Suspend => Some(format!("note: {}", cost(verb))),
        Verb::Delete if yes => Some(format!("note: {}", cost(verb))),
        _ => None,
    }
}

/// A bulk write stopped before its last workspace.
pub fn stopped(reason: &str, done: usize, total: usize, not_started: &[String]) -> String {
    format!(
        "stopped ({reason}) after {done} of {total} workspaces; not started: {}",
        not_started.join(", ")
    )
}

/// A dry run's count: what it would do, never what it did not.
pub fn would(server: bool, verb: Verb, would: usize, of: usize) -> String {
    format!(
        "dry run ({}): would {} {would} of {of}",
        if server { "server" } else { "client" },
        verb.as_str()
    )
}

/// The command's closing line when a write was sent but its outcome could not be recorded.
pub fn audit_lost(why: &str) -> String {
    format!("{why}: the write above was sent but its outcome is not in the audit log")
}

/// The command's closing line after a stop.
pub fn stopped_before_done(verb: Verb, reason: &str) -> String {
    format!(
        "{} stopped before every selected workspace was done ({reason})",
        verb.as_str()
    )
}

/// The command's closing line when typed ids did not match.
pub fn cancelled_at_confirmation(cancelled: usize, total: usize, verb: Verb) -> String {
    format!(
        "{cancelled} of {total} workspaces were not {}: cancelled at the confirmation",
        verb.past()
    )
}

/// What a batch with failures comes to, in one line.
pub struct Failures {
    pub total: usize,
    /// Not done (or, in a dry run, would not be done).
    pub not_done: usize,
    /// Landed, but the wait did not confirm the transition.
    pub unconfirmed: usize,
    /// Contexts left out (each one's warning said why).
    pub left_out: usize,
    pub dry_run: bool,
}

/// A batch's closing line: which failed how (a write that landed but was not confirmed is not
/// a write that failed).
pub fn failures(verb: Verb, f: &Failures) -> String {
    let (total, not_done, unconfirmed, left_out) = (f.total, f.not_done, f.unconfirmed, f.left_out);
    let mut parts = Vec::new();
    if f.dry_run && not_done > 0 {
        parts.push(format!(
            "dry run: {not_done} of {total} workspaces would not be {}",
            verb.past()
        ));
    } else if not_done > 0 {
        parts.push(format!("{not_done} of {total} workspaces were not {}", verb.past()));
    }
    if unconfirmed > 0 {
        parts.push(format!(
            "{unconfirmed} of {total} workspaces were {} but the transition was not confirmed",
            verb.past()
        ));
    }
    if left_out > 0 {
        parts.push(format!(
            "{left_out} context{} left out",
            if left_out == 1 { " was" } else { "s were" }
        ));
    }
    parts.join("; ")
}
