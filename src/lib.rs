//! kubectl-namzu: inventory and fenced suspend/resume/delete of @namzu/sandbox workspaces.
//! The binary's own crate holds the command line; the layers below are the workspace's crates
//! (docs/ARCHITECTURE.md).

pub mod cli;
