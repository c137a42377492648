//! The holder-epoch fence (docs/interop.md §3): reading, the allow rule, argument validation, take-over.

use super::annotations::HOLDER_EPOCH;
use serde_json::Value;

/// 2^53 − 1: the largest epoch JavaScript can carry exactly.
pub const MAX_EPOCH: u64 = (1 << 53) - 1;

/// What one read of an object saw about its holder epoch (`readHolderEpoch`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Reading {
    /// Parsed epoch; 0 when absent; `None` when present but unreadable.
    pub epoch: Option<u64>,
    /// The annotation exactly as stored (absent → `None`).
    pub annotation: Option<String>,
    /// `metadata.annotations` exists at all.
    pub has_annotations: bool,
    pub resource_version: Option<String>,
}

impl Reading {
    /// Read the fence off an object's `metadata`.
    pub fn of_metadata(meta: Option<&Value>) -> Reading {
        let annotations = meta.and_then(|m| m.get("annotations"));
        let resource_version = meta
            .and_then(|m| m.get("resourceVersion"))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_string);
        // the library's `annotations !== undefined`: a `null` map counts as present (its per-key
        // adds are what it sends; a real server never serves `null`)
        let has_annotations = annotations.is_some();
        let base = Reading {
            epoch: None,
            annotation: None,
            has_annotations,
            resource_version,
        };
        match annotations.and_then(|a| a.get(HOLDER_EPOCH)).and_then(Value::as_str) {
            None => Reading { epoch: Some(0), ..base },
            Some(raw) => Reading {
                epoch: parse_stored(raw),
                annotation: Some(raw.to_string()),
                ..base
            },
        }
    }

    /// Read the fence off a whole object.
    pub fn of(obj: &Value) -> Reading {
        Reading::of_metadata(obj.get("metadata"))
    }

    /// `holderEpochAllows`: a write carrying `epoch` passes iff stored ≤ epoch (equal allowed).
    pub fn allows(&self, epoch: u64) -> bool {
        self.epoch.is_some_and(|stored| stored <= epoch)
    }
}

/// `^(?:0|[1-9][0-9]*)$` and ≤ 2^53−1, else unreadable.
fn parse_stored(raw: &str) -> Option<u64> {
    let canonical = raw == "0" || (!raw.is_empty() && !raw.starts_with('0') && raw.bytes().all(|b| b.is_ascii_digit()));
    if !canonical {
        return None;
    }
    raw.parse::<u64>().ok().filter(|e| *e <= MAX_EPOCH)
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EpochError {
    #[error("holder epoch {0:?} is invalid: the epoch must be a non-negative safe integer (0..=9007199254740991)")]
    Invalid(String),
    #[error("cannot take over: the stored holder epoch {0} is already the largest safe integer")]
    Exhausted(u64),
    #[error(
        "cannot take over: the holder-epoch annotation reads {0:?}, which is not a decimal integer. Fix the annotation, or remove it to start the workspace's epoch again at 0."
    )]
    Unreadable(String),
}

/// Validate an `--epoch` argument: a non-negative integer ≤ 2^53−1, written as JS would accept a
/// safe integer (`1.5`, `-1`, `1e3` and friends are refused; `+`, spaces and leading zeros too:
/// an epoch is written one way, as the annotation stores it).
pub fn parse_epoch_arg(text: &str) -> Result<u64, EpochError> {
    let t = text;
    let digits = !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) && (t == "0" || !t.starts_with('0'));
    digits
        .then(|| t.parse::<u64>().ok())
        .flatten()
        .filter(|e| *e <= MAX_EPOCH)
        .ok_or_else(|| EpochError::Invalid(text.to_string()))
}

/// `--take-over`: stored + 1, which fences the current holder out.
pub(crate) fn take_over(reading: &Reading) -> Result<u64, EpochError> {
    match reading.epoch {
        None => Err(EpochError::Unreadable(reading.annotation.clone().unwrap_or_default())),
        Some(MAX_EPOCH) => Err(EpochError::Exhausted(MAX_EPOCH)),
        Some(e) => Ok(e + 1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read(annotations: Value) -> Reading {
        Reading::of(&json!({"metadata":{"resourceVersion":"7","annotations":annotations}}))
    }

    #[test]
    fn reading_edges() {
        assert_eq!(read(json!({})).epoch, Some(0));
        assert_eq!(read(json!({ HOLDER_EPOCH: "0" })).epoch, Some(0));
        assert_eq!(read(json!({ HOLDER_EPOCH: "7" })).epoch, Some(7));
        assert_eq!(read(json!({ HOLDER_EPOCH: "9007199254740991" })).epoch, Some(MAX_EPOCH));
        for bad in ["", "latest", "007", "-1", "1.5", "9007199254740992", " 1", "+1"] {
            let r = read(json!({ HOLDER_EPOCH: bad }));
            assert_eq!(r.epoch, None, "{bad}");
            assert_eq!(r.annotation.as_deref(), Some(bad));
            assert!(!r.allows(MAX_EPOCH));
        }
        // a non-string annotation reads as absent, like the library
        assert_eq!(read(json!({ HOLDER_EPOCH: 5 })).epoch, Some(0));
        let none = Reading::of(&json!({"metadata":{}}));
        assert!(!none.has_annotations && none.resource_version.is_none());
    }

    #[test]
    fn allow_rule_is_stored_le_epoch() {
        let r = read(json!({ HOLDER_EPOCH: "5" }));
        assert!(!r.allows(4));
        assert!(r.allows(5));
        assert!(r.allows(6));
    }

    #[test]
    fn epoch_argument_edges() {
        assert_eq!(parse_epoch_arg("0"), Ok(0));
        assert_eq!(parse_epoch_arg("9007199254740991"), Ok(MAX_EPOCH));
        for bad in [
            "",
            "-1",
            "1.5",
            "9007199254740992",
            "1e3",
            "x",
            "+2",
            " 7",
            "7 ",
            "07",
            "00",
        ] {
            let e = parse_epoch_arg(bad).unwrap_err();
            assert!(e.to_string().contains("non-negative safe integer"), "{bad}");
        }
    }

    #[test]
    fn take_over_is_stored_plus_one() {
        assert_eq!(take_over(&read(json!({}))), Ok(1));
        assert_eq!(take_over(&read(json!({ HOLDER_EPOCH: "7" }))), Ok(8));
        assert!(matches!(
            take_over(&read(json!({ HOLDER_EPOCH: "latest" }))),
            Err(EpochError::Unreadable(raw)) if raw == "latest"
        ));
        assert_eq!(
            take_over(&read(json!({ HOLDER_EPOCH: "9007199254740991" }))),
            Err(EpochError::Exhausted(MAX_EPOCH))
        );
    }
}
