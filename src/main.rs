use clap::{CommandFactory, FromArgMatches};
use kubectl_namzu::cli::{self, Cli};

fn main() {
    let argv0 = std::env::args().next().unwrap_or_default();
    let name = cli::display_name(&argv0);
    let matches = Cli::command().bin_name(&name).get_matches();
    let parsed = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let outcome = runtime.block_on(cli::run(parsed, &name));
    // a hung request must not keep the process alive after its answer is printed
    runtime.shutdown_background();
    if let Err(failure) = outcome {
        // one line, whatever a library's message carried
        let line: Vec<&str> = failure.message.split_whitespace().collect();
        eprintln!("error: {}", line.join(" "));
        std::process::exit(failure.code);
    }
}
