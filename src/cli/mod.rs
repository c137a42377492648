//! Command-line surface: clap definitions and one file per verb. Verbs render and dispatch only.

pub mod exit;
pub mod input;
pub mod template_hash;

use clap::{Parser, Subcommand};

/// Inventory and fenced suspend/resume/delete of @namzu/sandbox workspaces.
#[derive(Debug, Parser)]
#[command(name = "kubectl namzu", version, about, long_about = None, after_help = exit::HELP)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Print the pod-template hash a workspace created from a SandboxTemplate would carry.
    TemplateHash(template_hash::Args),
}

/// Run the parsed command; the error is one line for stderr and its exit code.
pub fn run(cli: Cli) -> Result<(), exit::Failure> {
    match cli.command {
        Command::TemplateHash(args) => template_hash::run(args),
    }
}
