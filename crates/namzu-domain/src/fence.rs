//! Deciding a fenced write from one read (docs/interop.md §3, §4): which epoch it
//! carries, whether the fence lets it through, and what body it sends — or why nothing is sent.

use super::epoch::{EpochError, Reading, take_over};
use super::patch::{self, Mode, PatchOp};
use serde_json::Value;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verb {
    Suspend,
    Resume,
    Delete,
}

impl Verb {
    pub fn as_str(self) -> &'static str {
        match self {
            Verb::Suspend => "suspend",
            Verb::Resume => "resume",
            Verb::Delete => "delete",
        }
    }

    /// A delete destroys the workspace's disks (and so asks for its id typed).
    pub fn destroys_data(self) -> bool {
        self == Verb::Delete
    }

    /// "suspended", "resumed", "deleted".
    pub fn past(self) -> &'static str {
        match self {
            Verb::Suspend => "suspended",
            Verb::Resume => "resumed",
            Verb::Delete => "deleted",
        }
    }
}

/// Which epoch the write carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EpochChoice {
    /// The stored epoch as read (0 when absent): conditional, takes authority from nobody.
    Stored,
    Explicit(u64),
    /// Stored + 1: fences the current holder out.
    TakeOver,
}

/// The epoch a write carried against the one it found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EpochUse {
    pub carried: u64,
    /// `None` when the annotation is unreadable.
    pub stored: Option<u64>,
    pub raw: Option<String>,
    /// The body carries no epoch at all: the library's unfenced refresh of a workspace without
    /// a stored epoch (`carried` is then only what the fence was checked at).
    pub unfenced: bool,
}

impl EpochUse {
    /// "keeps holder epoch 7" / "takes over: 7 → 8".
    pub fn describe(&self) -> String {
        if self.unfenced {
            return "no holder epoch (unfenced, as the library refreshes)".to_string();
        }
        match self.stored {
            Some(s) if s == self.carried => format!("keeps holder epoch {s}"),
            Some(s) => format!("takes over: {s} → {}", self.carried),
            None => format!("carries holder epoch {}", self.carried),
        }
    }
}

/// Why nothing is sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Hold {
    /// The mode already is what the verb asks for and the epoch does not rise.
    AlreadyThere(Mode),
    /// The stored epoch is above the one carried (`stored`), or unreadable (`raw`).
    Fenced {
        carried: Option<u64>,
        stored: Option<u64>,
        raw: Option<String>,
    },
    /// The epoch argument cannot be carried (take-over past 2^53−1).
    BadEpoch(String),
    /// No resourceVersion and no epoch annotation: nothing to condition the write on.
    Unconditionable(String),
}

impl Hold {
    /// The library's words for a fence refusal.
    pub fn message(&self, operation: &str, id: &str) -> String {
        match self {
            Hold::AlreadyThere(mode) => format!("{} is already {}", id, mode.as_str()),
            Hold::Fenced {
                carried,
                stored: Some(s),
                ..
            } => format!(
                "{operation} of workspace {id} carried holder epoch {}, but the Sandbox is held at epoch {s} — another process took this workspace over. Nothing on the cluster changed.",
                carried.map_or("?".into(), |c| c.to_string())
            ),
            Hold::Fenced { raw, .. } => format!(
                "{operation} of workspace {id}: the holder-epoch annotation reads {:?}, which is not a decimal integer. Nothing on the cluster changed. Fix the annotation, or remove it to start the workspace's epoch again at 0.",
                raw.clone().unwrap_or_default()
            ),
            Hold::BadEpoch(m) | Hold::Unconditionable(m) => m.clone(),
        }
    }
}

/// What a write changes: the kind of its body, known when it is built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// `spec.operatingMode` moves (and the epoch and changed-at are stamped).
    ModeChange,
    /// The mode is already there; only a higher holder epoch is stamped (a take-over).
    StampOnly,
    /// A refresh (docs/interop.md §14): `spec.podTemplate` replaced with its hash stamped, and the
    /// mode moves from Suspended to Running, in one body.
    Refresh,
    Delete,
}

/// The body of the one request a write sends.
#[derive(Debug, Clone, PartialEq)]
pub enum WriteBody {
    /// A JSON Patch, `test` operations first.
    Patch { ops: Vec<PatchOp>, change: Change },
    /// DeleteOptions with a resourceVersion precondition.
    Delete(Value),
}

impl WriteBody {
    pub fn change(&self) -> Change {
        match self {
            WriteBody::Patch { change, .. } => *change,
            WriteBody::Delete(_) => Change::Delete,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    pub epoch: EpochUse,
    pub body: WriteBody,
}

fn carried(reading: &Reading, choice: EpochChoice) -> Result<u64, Hold> {
    let fenced = || Hold::Fenced {
        carried: None,
        stored: None,
        raw: reading.annotation.clone(),
    };
    match choice {
        EpochChoice::Explicit(e) => Ok(e),
        EpochChoice::Stored => reading.epoch.ok_or_else(fenced),
        EpochChoice::TakeOver => take_over(reading).map_err(|e| match e {
            EpochError::Unreadable(_) => fenced(),
            other => Hold::BadEpoch(other.to_string()),
        }),
    }
}

/// The epoch a write carries, resolved once from the first read: retries keep it, so a holder
/// that takes over between read and write fences this write out instead of being followed.
pub fn resolve(sandbox: &Value, choice: EpochChoice) -> Result<u64, Hold> {
    carried(&Reading::of(sandbox), choice)
}

/// The epoch a write carries, and whether the fence lets it through, from one read: the
/// library's `holderEpochAllows` (stored ≤ carried), or why not.
pub(crate) fn admit(sandbox: &Value, choice: EpochChoice) -> Result<EpochUse, Hold> {
    let reading = Reading::of(sandbox);
    let carried = carried(&reading, choice)?;
    if !reading.allows(carried) {
        return Err(Hold::Fenced {
            carried: Some(carried),
            stored: reading.epoch,
            raw: reading.annotation,
        });
    }
    Ok(EpochUse {
        carried,
        stored: reading.epoch,
        raw: reading.annotation,
        unfenced: false,
    })
}

/// Decide a write from one read of the Sandbox. `changed_at` is the stamp a mode change writes.
pub fn decide(sandbox: &Value, verb: Verb, choice: EpochChoice, changed_at: &str) -> Result<Decision, Hold> {
    let epoch = admit(sandbox, choice)?;
    let (reading, carried) = (Reading::of(sandbox), epoch.carried);
    let unconditionable = |e: patch::PatchError| Hold::Unconditionable(e.to_string());
    let body = match verb {
        Verb::Delete => {
            let rv = reading.resource_version.as_deref().ok_or_else(|| {
                Hold::Unconditionable(
                    "the Sandbox carries no metadata.resourceVersion: refusing an unconditional DELETE".into(),
                )
            })?;
            WriteBody::Delete(patch::delete_options(rv))
        }
        Verb::Suspend | Verb::Resume => {
            let target = if verb == Verb::Suspend {
                Mode::Suspended
            } else {
                Mode::Running
            };
            let rises = reading.epoch.is_some_and(|s| carried > s);
            if Mode::of_sandbox(sandbox) == target {
                if !rises {
                    return Err(Hold::AlreadyThere(target));
                }
                WriteBody::Patch {
                    ops: patch::stamp_only(&reading, carried).map_err(unconditionable)?,
                    change: Change::StampOnly,
                }
            } else {
                WriteBody::Patch {
                    ops: patch::mode_change(&reading, carried, target, changed_at.to_string())
                        .map_err(unconditionable)?,
                    change: Change::ModeChange,
                }
            }
        }
    };
    Ok(Decision { epoch, body })
}

/// After a 422: did the object move since the read the patch was built from? (The library's
/// `(annotation, resourceVersion, hasAnnotations)` comparison.)
pub(crate) fn moved(before: &Value, after: &Value) -> bool {
    let (a, b) = (Reading::of(before), Reading::of(after));
    (a.annotation, a.resource_version, a.has_annotations) != (b.annotation, b.resource_version, b.has_annotations)
}

/// Does the object already show this write (one that landed, then was retried by the client)?
pub(crate) fn shows(after: &Value, verb: Verb, epoch: u64) -> bool {
    let target = match verb {
        Verb::Suspend => Mode::Suspended,
        Verb::Resume => Mode::Running,
        Verb::Delete => return false,
    };
    Mode::of_sandbox(after) == target && Reading::of(after).epoch == Some(epoch)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sbx(mode: &str, epoch: Option<&str>) -> Value {
        let mut s = json!({"metadata":{"name":"namzu-ws-a","resourceVersion":"10","annotations":{"x":"y"}},"spec":{"operatingMode":mode}});
        if let Some(e) = epoch {
            s["metadata"]["annotations"]["sandbox.namzu.ai/holder-epoch"] = json!(e);
        }
        s
    }

    #[test]
    fn stored_epoch_keeps_take_over_rises() {
        let d = decide(&sbx("Running", Some("7")), Verb::Suspend, EpochChoice::Stored, "T").unwrap();
        assert_eq!(d.epoch.describe(), "keeps holder epoch 7");
        let d = decide(&sbx("Running", Some("7")), Verb::Suspend, EpochChoice::TakeOver, "T").unwrap();
        assert_eq!(d.epoch.describe(), "takes over: 7 → 8");
    }

    #[test]
    fn fence_refusals() {
        let e = decide(&sbx("Running", Some("5")), Verb::Suspend, EpochChoice::Explicit(4), "T").unwrap_err();
        assert!(
            e.message("suspend", "a")
                .contains("carried holder epoch 4, but the Sandbox is held at epoch 5")
        );
        let e = decide(
            &sbx("Running", Some("latest")),
            Verb::Delete,
            EpochChoice::Explicit(9),
            "T",
        )
        .unwrap_err();
        assert!(
            e.message("delete", "a")
                .contains("\"latest\", which is not a decimal integer")
        );
        let e = decide(
            &sbx("Running", Some("latest")),
            Verb::Suspend,
            EpochChoice::TakeOver,
            "T",
        )
        .unwrap_err();
        assert!(matches!(e, Hold::Fenced { .. }));
    }

    #[test]
    fn already_there_unless_the_epoch_rises() {
        let e = decide(&sbx("Suspended", Some("2")), Verb::Suspend, EpochChoice::Stored, "T").unwrap_err();
        assert_eq!(e, Hold::AlreadyThere(Mode::Suspended));
        let d = decide(&sbx("Suspended", Some("2")), Verb::Suspend, EpochChoice::TakeOver, "T").unwrap();
        let WriteBody::Patch { ops, change } = d.body else {
            panic!()
        };
        assert_eq!(
            (ops.len(), change),
            (2, Change::StampOnly),
            "stamp-only: test + add epoch"
        );
        let d = decide(&sbx("Running", Some("2")), Verb::Resume, EpochChoice::Explicit(6), "T").unwrap();
        let WriteBody::Patch { ops, change } = d.body else {
            panic!()
        };
        assert_eq!((ops.len(), change), (2, Change::StampOnly));
        assert!(decide(&sbx("Running", None), Verb::Resume, EpochChoice::Stored, "T").is_err());
    }
}
