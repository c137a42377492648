//! `kubectl namzu demo` in a plugin built without the simulated cluster (`cargo build
//! --no-default-features`): the verb is there and says how to get a build that has one.

use super::exit::Failure;
use super::globals::Globals;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Whatever a demo build takes: this build has no simulated cluster to give it to.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, hide = true)]
    rest: Vec<std::ffi::OsString>,
}

/// The one line a build without the demo answers, exit 1.
pub(crate) const NO_DEMO: &str = "this kubectl-namzu was built without the simulated cluster (cargo feature `demo`): \
     `cargo install --path .` in a clone of kubectl-namzu (default features), or `cargo run --release -- demo` there, \
     has one";

pub(crate) async fn run(_: &Globals, _: Args) -> Result<(), Failure> {
    Err(Failure::error(NO_DEMO))
}
