//! kubectl-namzu: inventory and fenced suspend/resume/delete of @namzu/sandbox workspaces.

pub mod cli;
pub mod clock;
pub mod cluster;
pub mod console;
pub mod domain;
pub mod ops;
pub mod present;
pub mod signals;
pub mod sim;
pub mod tui;
