//! The use cases, between the front-ends and the cluster: what a command *does*, once, whichever
//! front-end asked (cargo's `commands/*` → `ops::*` is the model). A front-end (`cli/`, `tui/`)
//! parses, prompts and renders; it reaches the cluster for a fleet, a write or a live follow only
//! through here, so a new front-end could not skip a rule if it tried.
//!
//! - [`fleet`]: open the contexts asked for (each with the safety rules decided as it opens), run
//!   a piece of work in each, and finish (one context's failure is a warning across several).
//! - [`inventory`]: the one inventory read, from the cluster or (`--at`) a recording.
//! - [`leaks`]: `leaks --delete`: read what every context left behind, check every context's
//!   rules, ask each context's typed count, send each DELETE through the one write path.
//! - [`write`]: a bulk `suspend`/`resume`/`delete`: select the targets in every context, check
//!   every context's rules before anything is sent, bind each write to what was confirmed, batch
//!   it with stop and throttle, and report one verdict per workspace.
//! - [`record`]: the flight recorder: follow the fleet with its recording on until stopped.
//! - [`port_forward`]: a local port that follows its workspace's own pod across restarts,
//!   replacement and suspend/resume.
//! - [`pulse`]: the fleet's pulse — claims per minute, warm-hit %, start latencies and the
//!   blame of each slow start — from one bounded read per context.
//! - [`follow`]: follow a set of contexts live, their reports merged into one stream (`list -w`
//!   and the TUI render what it yields).
//!
//! What it may import: `cluster/`, `domain/`, `present/`, `clock.rs`, `signals.rs`, `console.rs`.
//! Never `cli/` or `tui/`: a front-end plugs in through the small traits defined here.

pub mod explain;
pub mod fleet;
pub mod follow;
pub mod inventory;
pub mod leaks;
pub mod port_forward;
pub mod pulse;
pub mod record;
pub mod replay;
pub mod write;
