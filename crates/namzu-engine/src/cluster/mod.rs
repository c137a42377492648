//! Cluster I/O through kube-rs only: connecting, the inventory pass, fenced writes, waits, RBAC.

pub mod access;
pub mod audit;
pub mod connect;
pub mod detail;
pub mod error;
pub mod inventory;
pub mod kinds;
pub mod leaks;
pub mod live;
pub mod observe;
pub mod pack;
pub mod policies;
pub mod pools;
pub mod portforward;
pub mod resources;
pub mod tombstone;
pub mod triage;
mod verbose;
pub mod verdict;
pub mod wait;
pub mod write;
