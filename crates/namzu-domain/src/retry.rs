//! What a refused send means, and what comes next: the library's retry rules
//! (docs/interop.md §5, and a refresh's, §14) as pure decisions, one on the status alone, one on
//! the re-read.

use super::epoch::Reading;
use super::fence::{Verb, moved, shows};
use super::object::uid;
use super::patch::Mode;
use serde_json::Value;

/// The library's cap on sends of one fenced write.
pub(crate) const MAX_SENDS: u32 = 3;

/// After a send failed with `status` (`None`: no answer at all).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnStatus {
    /// A delete whose object is gone (404/410): what was asked, perhaps by an earlier send.
    AlreadyGone,
    /// A failed condition (422, 409), or a 404 that a landed-then-retried write can answer: look
    /// at the object again before saying what happened.
    Reread,
    /// Anything else: an error, reported as it is.
    Failed,
}

/// `unanswered`: no answer came at all (a timeout, a dropped connection) — the write may have
/// landed, so look before saying anything.
pub fn on_status(verb: Verb, status: Option<u16>, unanswered: bool) -> OnStatus {
    if unanswered {
        return OnStatus::Reread;
    }
    match status {
        Some(404 | 410) if verb == Verb::Delete => OnStatus::AlreadyGone,
        Some(422 | 404 | 409) => OnStatus::Reread,
        _ => OnStatus::Failed,
    }
}

/// What the re-read after a refused send says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnReread {
    /// A delete's object is gone.
    AlreadyGone,
    /// A mode change's object is gone.
    NotFound,
    /// Another object (another uid) stands under the name: never written.
    Replaced,
    /// The object already shows the write: it landed and the client's retry was refused.
    Landed,
    /// A 422 with nothing moved since the read: the body is wrong for this object; no retry.
    NotApplied,
    /// Still changing after the last send allowed.
    Conflict,
    /// Moved under us: decide again on the re-read (which may refuse, sending nothing) and send again.
    Resend,
    /// A refresh whose mode test lost: another process resumed the workspace first. Not written
    /// again; it runs off-template.
    Raced,
    /// No answer came and the object does not show the write: it did not land (as far as a
    /// read can tell); reported as the failure it was, not retried.
    Unanswered,
}

/// The facts the decision reads.
#[derive(Debug, Clone, Copy)]
pub struct Reread<'a> {
    pub verb: Verb,
    pub status: Option<u16>,
    /// No answer came at all (see [`on_status`]).
    pub unanswered: bool,
    /// Sends made so far, this one included.
    pub sends: u32,
    /// The uid the write is about.
    pub identity: Option<&'a str>,
    /// The object the refused body was built from.
    pub before: &'a Value,
    /// The object now; `None` when it is gone.
    pub after: Option<&'a Value>,
    pub carried: u64,
}

/// The object re-read, or what its absence or another uid under the name means.
fn still_there<'a>(r: &Reread<'a>) -> Result<&'a Value, OnReread> {
    let Some(after) = r.after else {
        return Err(if r.verb == Verb::Delete {
            OnReread::AlreadyGone
        } else {
            OnReread::NotFound
        });
    };
    if r.identity.is_some_and(|id| uid(after) != Some(id)) {
        return Err(OnReread::Replaced);
    }
    Ok(after)
}

pub fn on_reread(r: Reread<'_>) -> OnReread {
    let after = match still_there(&r) {
        Ok(after) => after,
        Err(verdict) => return verdict,
    };
    if shows(after, r.verb, r.carried) && r.status != Some(422) {
        return OnReread::Landed;
    }
    if r.unanswered {
        return OnReread::Unanswered;
    }
    // a delete's 409 is re-read and retried as it stands (the library's rule)
    if r.verb != Verb::Delete && !moved(r.before, after) {
        return OnReread::NotApplied;
    }
    if r.sends >= MAX_SENDS {
        return OnReread::Conflict;
    }
    OnReread::Resend
}

/// The re-read after a refused refresh (`writeRefreshedPodTemplate`, docs/interop.md §14) that
/// wrote `hash`: gone and replaced as for a mode change; landed when the object shows the wake, the
/// epoch and the hash. Then the fence (a higher stored epoch: the decision on the re-read
/// refuses); a workspace no longer Suspended lost the race to another resume and is not written
/// again; still Suspended, the moved/unmoved rule and the send cap.
pub fn on_refresh_reread(r: Reread<'_>, hash: &str) -> OnReread {
    let after = match still_there(&r) {
        Ok(after) => after,
        Err(verdict) => return verdict,
    };
    let landed = shows(after, Verb::Resume, r.carried) && super::drift::stored_hash(after) == Some(hash);
    if landed && r.status != Some(422) {
        return OnReread::Landed;
    }
    if r.unanswered {
        return OnReread::Unanswered;
    }
    if !Reading::of(after).allows(r.carried) {
        return OnReread::Resend;
    }
    if Mode::of_sandbox(after) != Mode::Suspended {
        return OnReread::Raced;
    }
    if !moved(r.before, after) {
        return OnReread::NotApplied;
    }
    if r.sends >= MAX_SENDS {
        return OnReread::Conflict;
    }
    OnReread::Resend
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sbx(uid: &str, rv: &str, mode: &str, epoch: &str) -> Value {
        json!({"metadata": {"uid": uid, "resourceVersion": rv,
            "annotations": {"sandbox.namzu.ai/holder-epoch": epoch}}, "spec": {"operatingMode": mode}})
    }

    fn reread<'a>(verb: Verb, status: u16, sends: u32, before: &'a Value, after: Option<&'a Value>) -> Reread<'a> {
        Reread {
            verb,
            status: Some(status),
            unanswered: false,
            sends,
            identity: Some("u1"),
            before,
            after,
            carried: 2,
        }
    }

    #[test]
    fn status_alone() {
        assert_eq!(on_status(Verb::Delete, Some(404), false), OnStatus::AlreadyGone);
        assert_eq!(on_status(Verb::Delete, Some(410), false), OnStatus::AlreadyGone);
        assert_eq!(on_status(Verb::Delete, Some(409), false), OnStatus::Reread);
        assert_eq!(on_status(Verb::Suspend, Some(404), false), OnStatus::Reread);
        assert_eq!(on_status(Verb::Suspend, Some(422), false), OnStatus::Reread);
        assert_eq!(on_status(Verb::Resume, Some(500), false), OnStatus::Failed);
        assert_eq!(on_status(Verb::Resume, Some(410), false), OnStatus::Failed);
        assert_eq!(
            on_status(Verb::Suspend, None, false),
            OnStatus::Failed,
            "an answer that was not the object"
        );
        assert_eq!(
            on_status(Verb::Suspend, None, true),
            OnStatus::Reread,
            "no answer: it may have landed"
        );
    }

    #[test]
    fn gone_after_a_refusal() {
        let before = sbx("u1", "1", "Running", "2");
        assert_eq!(
            on_reread(reread(Verb::Delete, 409, 1, &before, None)),
            OnReread::AlreadyGone
        );
        assert_eq!(
            on_reread(reread(Verb::Suspend, 422, 1, &before, None)),
            OnReread::NotFound
        );
    }

    #[test]
    fn another_uid_under_the_name_is_never_written() {
        let before = sbx("u1", "1", "Running", "2");
        let after = sbx("u2", "9", "Running", "2");
        assert_eq!(
            on_reread(reread(Verb::Suspend, 422, 1, &before, Some(&after))),
            OnReread::Replaced
        );
    }

    #[test]
    fn a_landed_write_whose_retry_was_refused() {
        let before = sbx("u1", "1", "Running", "2");
        let after = sbx("u1", "2", "Suspended", "2");
        assert_eq!(
            on_reread(reread(Verb::Suspend, 404, 1, &before, Some(&after))),
            OnReread::Landed
        );
        // a 422 is a failed test, never a landed write
        assert_ne!(
            on_reread(reread(Verb::Suspend, 422, 1, &before, Some(&after))),
            OnReread::Landed
        );
    }

    #[test]
    fn nothing_moved_is_not_applied_and_not_retried() {
        let before = sbx("u1", "1", "Running", "2");
        assert_eq!(
            on_reread(reread(Verb::Suspend, 422, 1, &before, Some(&before.clone()))),
            OnReread::NotApplied
        );
        // a delete's 409 is retried as it stands
        assert_eq!(
            on_reread(reread(Verb::Delete, 409, 1, &before, Some(&before.clone()))),
            OnReread::Resend
        );
    }

    #[test]
    fn no_answer_is_looked_at_before_it_is_reported() {
        let before = sbx("u1", "1", "Running", "2");
        let landed = sbx("u1", "2", "Suspended", "2");
        let unanswered = |after| Reread {
            status: None,
            unanswered: true,
            ..reread(Verb::Suspend, 0, 1, &before, after)
        };
        assert_eq!(on_reread(unanswered(Some(&landed))), OnReread::Landed);
        assert_eq!(on_reread(unanswered(Some(&before))), OnReread::Unanswered);
    }

    #[test]
    fn a_refresh_that_lost_to_another_resume_is_not_written_again() {
        let before = sbx("u1", "1", "Suspended", "2");
        let raced = sbx("u1", "2", "Running", "2");
        assert_eq!(
            on_refresh_reread(reread(Verb::Resume, 422, 1, &before, Some(&raced)), "sha256:h"),
            OnReread::Raced
        );
        // a higher epoch stamped meanwhile: the decision on the re-read refuses
        let fenced = sbx("u1", "2", "Suspended", "9");
        assert_eq!(
            on_refresh_reread(reread(Verb::Resume, 422, 1, &before, Some(&fenced)), "sha256:h"),
            OnReread::Resend
        );
        assert_eq!(
            on_refresh_reread(reread(Verb::Resume, 422, 1, &before, Some(&before.clone())), "sha256:h"),
            OnReread::NotApplied
        );
        assert_eq!(
            on_refresh_reread(reread(Verb::Resume, 422, 1, &before, None), "sha256:h"),
            OnReread::NotFound
        );
        let mut landed = raced.clone();
        landed["metadata"]["annotations"]["sandbox.namzu.ai/pod-template-hash"] = json!("sha256:h");
        assert_eq!(
            on_refresh_reread(reread(Verb::Resume, 409, 1, &before, Some(&landed)), "sha256:h"),
            OnReread::Landed
        );
    }

    #[test]
    fn moved_means_resend_until_the_cap() {
        let before = sbx("u1", "1", "Running", "2");
        let after = sbx("u1", "5", "Running", "2");
        assert_eq!(
            on_reread(reread(Verb::Resume, 422, 1, &before, Some(&after))),
            OnReread::Resend
        );
        assert_eq!(
            on_reread(reread(Verb::Resume, 422, 2, &before, Some(&after))),
            OnReread::Resend
        );
        assert_eq!(
            on_reread(reread(Verb::Resume, 422, MAX_SENDS, &before, Some(&after))),
            OnReread::Conflict
        );
    }
}
