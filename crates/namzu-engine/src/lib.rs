//! kubectl-namzu's engine, below every front-end: `cluster` does the I/O through kube-rs (the
//! connection, reads, the one write path, waits, the audit log); `ops` holds the use cases every
//! front-end goes through (a fleet, a write, a live follow, a leak delete); `present` words what
//! the user reads; `console` and `signals` are the process's stdout/stderr and its signals.

pub mod cluster;
pub mod console;
pub mod ops;
pub mod present;
pub mod signals;
