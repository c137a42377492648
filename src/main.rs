use clap::{CommandFactory, FromArgMatches};
use kubectl_namzu::cli::{self, Cli};

// glibc's malloc gives each worker thread its own arena and keeps what a burst of parsing freed:
// the TUI held ~150 MiB at 5,000 workspaces where its live heap was ~50 MiB (docs/benchmarks.md)
#[cfg(not(target_env = "msvc"))]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() {
    let argv0 = std::env::args().next().unwrap_or_default();
    let name = cli::display_name(&argv0);
    // `__complete` takes the words being completed as they are (`-n ''` is half-typed, not a
    // bad namespace): clap parses only what comes before it
    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let complete_at = argv.iter().position(|a| a == "__complete");
    let head = complete_at.map_or(&argv[..], |i| &argv[..=i]);
    let matches = Cli::command()
        .bin_name(&name)
        .try_get_matches_from(head)
        .unwrap_or_else(|e| usage_exit(e));
    let mut parsed = Cli::from_arg_matches(&matches).unwrap_or_else(|e| usage_exit(e));
    if let (Some(i), Some(cli::Command::Complete { args })) = (complete_at, parsed.command.as_mut()) {
        *args = argv[i + 1..].iter().map(|a| a.to_string_lossy().into_owned()).collect();
    }
    // a verb is a few requests and one pass over their answers: one thread does it, and one
    // heap arena holds it (worker threads each grow their own); the terminal UI and the demo keep
    // their drawing apart from their I/O on a multi-threaded runtime, and a fleet reads and
    // derives its contexts on as many cores as there are
    let interactive = matches!(
        parsed.command,
        None | Some(cli::Command::Tui(_) | cli::Command::Demo(_))
    );
    let fleet = parsed.globals.all_contexts || parsed.globals.context.len() > 1;
    // a session that stays open hands back, within seconds, what its loading burst freed
    #[cfg(not(target_env = "msvc"))]
    if interactive {
        let _ = tikv_jemalloc_ctl::background_thread::write(true);
    }
    let runtime = if interactive || fleet {
        tokio::runtime::Builder::new_multi_thread().enable_all().build()
    } else {
        tokio::runtime::Builder::new_current_thread().enable_all().build()
    }
    .expect("a tokio runtime");
    let outcome = runtime.block_on(cli::run(parsed, &name));
    // a hung request must not keep the process alive after its answer is printed
    runtime.shutdown_background();
    // output cut short by a full disk or a size limit is a failure, not a success
    let outcome = outcome.and_then(|()| match cli::output::stdout_failure() {
        Some(e) => Err(cli::exit::Failure::error(format!("cannot write to stdout: {e}"))),
        None => Ok(()),
    });
    if let Err(failure) = outcome {
        // one line, whatever a library's message carried, and nothing a terminal would obey
        let line: Vec<&str> = failure.message.split_whitespace().collect();
        // an answer already printed (reconcile's absent or replaced) needs no error line
        if !line.is_empty() {
            namzu_engine::errln!("error: {}", cli::output::printable(&line.join(" ")));
        }
        std::process::exit(failure.code);
    }
}

/// Help and version print as clap prints them; a usage error is its one first line, exit 2.
fn usage_exit(e: clap::Error) -> ! {
    if !e.use_stderr() {
        // --help and --version: printed whole, or as far as a closed pipe lets them
        let _ = e.print();
        std::process::exit(0);
    }
    // a Sandbox given for a workspace that is none: said as it is, not as a malformed value
    let reference = std::error::Error::source(&e)
        .and_then(|s| s.downcast_ref::<namzu_domain::naming::BadReference>())
        .filter(|r| !matches!(r, namzu_domain::naming::BadReference::Id(_)));
    if let Some(r) = reference {
        namzu_engine::errln!("error: {}", cli::output::printable(&r.to_string()));
        std::process::exit(kubectl_namzu::cli::exit::USAGE);
    }
    // clap's message and its hints (possible values, a similar flag) joined, usage left to --help
    let text = e.render().to_string();
    let parts: Vec<&str> = text
        .lines()
        .map(str::trim)
        .take_while(|l| !l.starts_with("Usage:") && !l.starts_with("For more information"))
        .filter(|l| !l.is_empty())
        .collect();
    let line = if parts.is_empty() {
        "error: invalid arguments".to_string()
    } else {
        parts.join(" ")
    };
    namzu_engine::errln!("{} (see --help)", cli::output::printable(&line));
    std::process::exit(kubectl_namzu::cli::exit::USAGE);
}
