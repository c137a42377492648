//! What the user reads, for both front-ends: the sentences said about a write's outcome and a
//! wait and the detail text of a workspace. Pure: types
//! in, text out; `cli` and `tui` print it and never word the same thing twice.

pub mod describe;
pub mod detail;
pub mod history;
pub mod jsonpath;
pub mod layout;
pub mod leaks;
pub mod outcome;
pub mod report;
pub mod yaml;
