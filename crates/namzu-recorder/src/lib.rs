//! The flight recorder's store (issue 43; docs/recorder.md): what the watches saw, kept per
//! context as an append-only log of checksummed frames in numbered segments, each a keyframe
//! (the full projected state) and the changes after it; read back as the state at any recorded
//! instant. I/O on local files only: no cluster, no clock (every time is passed in).

mod frame;
mod patch;
mod record;
mod replay;
mod store;
mod writer;

pub use record::{Key, Object, Record};
pub use replay::{ReplayError, Replayed, Span};
pub use store::{Head, LockError, Segment, Store};
pub use writer::{Limits, Packed, Writer, pack};

/// Apply a recorded change (a JSON merge patch) to an object's previous recorded state.
pub fn apply_patch(target: &mut serde_json::Value, patch: &serde_json::Value) {
    patch::apply(target, patch);
}

#[cfg(test)]
mod tests;
