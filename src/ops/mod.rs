//! The use cases between the front-ends (`cli/`, `tui/`) and `cluster/`: each is written once,
//! and every front-end calls it and renders what it yields (docs/ARCHITECTURE.md).

pub mod follow;
