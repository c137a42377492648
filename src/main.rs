use clap::Parser;
use kubectl_namzu::cli::{self, Cli};

fn main() {
    let cli = Cli::parse();
    if let Err(failure) = cli::run(cli) {
        eprintln!("error: {}", failure.message);
        std::process::exit(failure.code);
    }
}
