//! The inventory browser: `kubectl namzu` on a terminal, or `kubectl namzu tui`.
//! One Action enum, `update` the only mutation, rendering pure; cluster I/O on its own tasks.

pub mod action;
pub mod app;
mod context_options;
pub mod io;
pub mod keys;
pub mod log_view;
pub mod logs;
mod search;
pub mod view;

use action::{Action, Effect};
use app::{App, AppOptions, update};
use context_options::ContextOptions;
use io::{Cluster, Io};
use namzu_clock::Clock;
use namzu_domain::safety::ContextRules;
use namzu_engine::cluster::connect::Connection;
use namzu_engine::cluster::error::ClusterError;
use namzu_engine::cluster::write::WritePolicy;
use ratatui::Terminal;
use ratatui::backend::Backend;
use ratatui::crossterm::event::{self, Event, KeyEventKind};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};
use view::Theme;

/// What the TUI needs from its caller: the contexts to show, what each may write, and how often
/// to re-list a kind the user may list but not watch.
pub struct Options {
    /// The contexts opened (exec credential plugins must not prompt inside the alternate screen:
    /// open them with `interactive_exec` false), each with its safety rules.
    pub clusters: Vec<(Connection, ContextRules)>,
    /// The contexts that could not be opened, and why: each shows as an error, the others work.
    pub failed: Vec<(String, String)>,
    /// Several contexts were asked for: rows and messages name their context.
    pub several_contexts: bool,
    /// The write policy each context's starts from: its read-only rule and a throttle of its own
    /// are added; the audit log is shared.
    pub policy: WritePolicy,
    /// `--read-only` was given (every context refuses writes, whatever its rules say).
    pub read_only_flag: bool,
    /// Start with every namespace in scope.
    pub all_namespaces: bool,
    /// How often a kind the user may not watch is re-listed.
    pub refresh: Duration,
    pub clock: Clock,
    /// A single-context session may open the kubeconfig's other contexts (`:ctx NAME`).
    pub switch: Option<io::Switch>,
    /// The list's keys as the config file moved them (`keys::KeyMap::from_config`).
    pub keys: keys::KeyMap,
    /// The flight recorder's directory `:at` replays from (`--recording`, else beside the audit
    /// log); `None`: none could be named.
    pub recording: Option<std::path::PathBuf>,
    /// Record what the watches see into it (`None`: nothing is recorded).
    pub record: Option<namzu_engine::cluster::live::RecordTo>,
}

/// How a shell runs: kubectl's arguments and the banner above it in, what the status line says
/// of its end out (or kubectl's words of a refusal, kept until dismissed).
pub type Shell<'a> = dyn FnMut(&[String], &str) -> Result<String, String> + Send + 'a;

/// Why the TUI could not run or ended other than by the user's choice: one line.
#[derive(Debug)]
pub struct TuiError(pub String);

impl std::fmt::Display for TuiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<ClusterError> for TuiError {
    fn from(e: ClusterError) -> Self {
        TuiError(e.to_string())
    }
}

/// The columns of the terminal stdout is, if it is one (`COLUMNS` first, as kubectl's and less's
/// users expect): what the CLI's wide text (`history`) is laid out for. `None` for a pipe or a
/// file, which take every column.
pub fn stdout_columns() -> Option<usize> {
    use std::io::IsTerminal;
    if !std::io::stdout().is_terminal() {
        return None;
    }
    let set = std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse::<usize>().ok());
    set.filter(|c| *c > 0)
        .or_else(|| ratatui::crossterm::terminal::size().ok().map(|(w, _)| usize::from(w)))
        .filter(|c| *c > 0)
}

/// Read the terminal's keys on a thread of their own (crossterm's read blocks), forwarding key
/// presses and resizes; parked while `keys` is paused (a shell has the terminal).
fn read_keys(keys: KeyThread, keys_tx: UnboundedSender<Action>, key_clock: Clock) {
    std::thread::spawn(move || {
        loop {
            if keys.paused.load(Ordering::SeqCst) {
                keys.parked.store(true, Ordering::SeqCst);
                std::thread::sleep(Duration::from_millis(10));
                continue;
            }
            keys.parked.store(false, Ordering::SeqCst);
            match event::poll(Duration::from_millis(50)) {
                Ok(true) => {}
                Ok(false) => continue,
                Err(_) => break,
            }
            let Ok(ev) = event::read() else { break };
            let action = match ev {
                Event::Key(k) if k.kind == KeyEventKind::Press => Action::Key(k),
                Event::Resize(..) => Action::Tick(key_clock.now()),
                _ => continue,
            };
            if keys_tx.send(action).is_err() {
                break;
            }
        }
    });
}

/// Why the UI does not open: no context answered.
fn none_reached(contexts: &[ContextOptions]) -> TuiError {
    let why: Vec<String> = contexts
        .iter()
        .map(|c| format!("{}: {}", c.name, c.open_error.as_deref().unwrap_or("-")))
        .collect();
    TuiError(format!("no context could be reached ({})", why.join("; ")))
}

/// The UI's I/O over the contexts opened.
fn new_io(
    clusters: Vec<Cluster>,
    switch: Option<io::Switch>,
    policy: WritePolicy,
    clock: Clock,
    refresh: Duration,
) -> Io {
    let flags = namzu_domain::drift::OverlayFlags {
        per_sandbox_label_key: policy.per_sandbox_label_key.clone(),
        ..Default::default()
    };
    Io {
        clusters,
        added: Default::default(),
        switch,
        policy,
        clock,
        flags,
        wait_timeout: io::WAIT,
        writes_in_flight: Default::default(),
        closed: Default::default(),
        log_task: Default::default(),
        forwards: Default::default(),
        live: namzu_engine::cluster::live::LiveOptions {
            poll_every: refresh,
            ..Default::default()
        },
        recording: None,
    }
}

/// Open the TUI and run it until the user quits.
pub async fn run(options: Options) -> Result<(), TuiError> {
    let Options {
        clusters,
        failed,
        several_contexts,
        mut policy,
        read_only_flag,
        all_namespaces,
        refresh,
        clock,
        switch,
        keys: key_map,
        recording,
        record,
    } = options;
    // one cheap request first, so a login failure is a normal line in the normal terminal; across
    // several contexts a context that fails it shows as an error, and the others work — and one
    // that has not answered a moment after the first did opens anyway, shown connecting
    let probes = probe_all(&clusters, several_contexts).await;
    policy.audit.session = Some(Arc::new(Mutex::new(Vec::new())));
    let namespace = clusters
        .first()
        .map_or_else(|| "default".to_string(), |(conn, _)| conn.namespace.clone());
    let mut contexts = Vec::new();
    let mut opened = Vec::new();
    // quitting ends every 429 hold: a write held back is not sent after the UI is gone
    let mut throttles = Vec::new();
    for ((conn, rules), probe) in clusters.into_iter().zip(probes) {
        let open_error = match probe {
            Err(e) if !several_contexts => return Err(e.into()),
            Err(e) => Some(e.to_string()),
            Ok(_) => None,
        };
        contexts.push(ContextOptions {
            name: conn.context.clone(),
            server: conn.server.clone(),
            namespace: conn.namespace.clone(),
            rules: rules.clone(),
            open_error: open_error.clone(),
        });
        if open_error.is_none() {
            let policy = namzu_engine::ops::write::rules::policy(&policy, &rules);
            throttles.push(policy.throttle.clone());
            opened.push(Cluster::new(conn, policy));
        }
    }
    contexts.extend(failed.into_iter().map(|(name, why)| ContextOptions {
        name,
        open_error: Some(why),
        ..Default::default()
    }));
    // nothing to show and nothing to act on: one line in the normal terminal, as with one context
    if opened.is_empty() {
        return Err(none_reached(&contexts));
    }
    let mut app = App::new(AppOptions {
        contexts,
        several_contexts,
        namespace,
        all_namespaces,
        read_only: read_only_flag,
        now: clock.now(),
    });
    app.kube_contexts = switch.as_ref().map(|s| s.contexts.clone()).unwrap_or_default();
    app.keys = key_map;
    let mut io = new_io(opened, switch, policy, clock, refresh);
    io.recording = recording;
    io.live.record = record;
    let io = Arc::new(io);
    let theme = Theme {
        colour: std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()),
    };

    let (actions_tx, actions_rx) = unbounded_channel();
    // crossterm's read blocks: a thread of its own, forwarding key presses only; it parks while
    // a shell has the terminal (it would steal the shell's keys)
    let keys = KeyThread::default();
    read_keys(keys.clone(), actions_tx.clone(), io.clock.clone());
    // what the layers below would print on stderr (-v's request lines, a warning) would be
    // drawn over the UI: it goes to a file of this session, named at the end if it holds anything
    let diagnostics = Diagnostics::open();
    let mut terminal = match ratatui::try_init() {
        Ok(t) => t,
        Err(e) => {
            diagnostics.close();
            return Err(TuiError(format!("cannot open the terminal UI: {e}")));
        }
    };
    let (in_flight, closed) = (io.writes_in_flight.clone(), io.closed.clone());
    let mut shell = |argv: &[String], banner: &str| keys.run_aside(argv, banner);
    let result = event_loop(&mut terminal, &mut app, io, actions_tx, actions_rx, theme, &mut shell).await;
    // a batch still running starts no further write: the UI that showed it is gone
    closed.store(true, Ordering::SeqCst);
    ratatui::restore();
    diagnostics.close();
    throttles
        .iter()
        .for_each(namzu_engine::cluster::write::Throttle::abandon);
    if !wait_for_writes(&in_flight, &keys).await {
        // as the CLI's second Ctrl-C: the intents stay in the audit log without an outcome
        return Err(TuiError(ABANDONED.to_string()));
    }
    result
}

/// A second `q` (or Ctrl-C, SIGTERM, SIGHUP) while the writes sent before the quit are awaited.
const ABANDONED: &str = "quit twice: the writes in flight were abandoned, their outcome unknown (`kubectl namzu audit` names them; `kubectl namzu inspect ID` shows what the cluster has)";

/// Stderr diverted to a file while the UI owns the terminal.
struct Diagnostics {
    path: std::path::PathBuf,
    /// The file is this session's (else stderr's lines were dropped, and nothing is touched).
    created: bool,
}

impl Diagnostics {
    fn open() -> Diagnostics {
        let path = std::env::temp_dir().join(format!("kubectl-namzu-tui-{}.log", std::process::id()));
        let mut options = std::fs::OpenOptions::new();
        // a new file only: whatever stands at the path (a symlink planted there) is not written
        options.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let file = options.open(&path).ok();
        let created = file.is_some();
        namzu_engine::console::divert_stderr(file);
        Diagnostics { path, created }
    }

    /// Stderr is the terminal's again; the file stays only if something was written to it.
    fn close(&self) {
        namzu_engine::console::undivert_stderr();
        if !self.created {
            return;
        }
        match std::fs::metadata(&self.path) {
            Ok(m) if m.len() > 0 => {
                namzu_engine::errln!("what this session logged (-v, warnings): {}", self.path.display())
            }
            _ => {
                let _ = std::fs::remove_file(&self.path);
            }
        }
    }
}

/// How long a fleet waits for its slower contexts' first answer once one context has answered:
/// the UI opens with those that have, the others shown connecting until their watches answer.
const SLOW_CONTEXT_GRACE: Duration = Duration::from_millis(1500);

/// Each context's `/version` probe: its answer, or `Ok` for one still pending when a fleet opens
/// without it (its watches report how it stands).
async fn probe_all(clusters: &[(Connection, ContextRules)], several: bool) -> Vec<Result<(), ClusterError>> {
    use futures::StreamExt;
    let mut answers: Vec<Option<Result<(), ClusterError>>> = clusters.iter().map(|_| None).collect();
    let mut pending: futures::stream::FuturesUnordered<_> = clusters
        .iter()
        .enumerate()
        .map(|(i, (conn, _))| async move { (i, conn.version().await.map(|_| ())) })
        .collect();
    let mut deadline: Option<tokio::time::Instant> = None;
    loop {
        let next = match deadline {
            Some(at) => match tokio::time::timeout_at(at, pending.next()).await {
                Ok(next) => next,
                Err(_) => break,
            },
            None => pending.next().await,
        };
        let Some((i, answer)) = next else { break };
        if several && answer.is_ok() && deadline.is_none() {
            deadline = Some(tokio::time::Instant::now() + SLOW_CONTEXT_GRACE);
        }
        answers[i] = Some(answer);
    }
    answers.into_iter().map(|a| a.unwrap_or(Ok(()))).collect()
}

/// The key thread's switch: a shell takes the terminal while it is paused.
#[derive(Clone, Default)]
struct KeyThread {
    paused: Arc<AtomicBool>,
    parked: Arc<AtomicBool>,
}

impl KeyThread {
    /// Stop the key thread reading (it would take the keys read elsewhere), for good.
    fn park(&self) {
        self.paused.store(true, Ordering::SeqCst);
        let deadline = std::time::Instant::now() + Duration::from_secs(1);
        while !self.parked.load(Ordering::SeqCst) && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Run kubectl (a shell) on the normal screen under `banner`, the UI stepped aside and its
    /// key reader parked; then the UI comes back. What the status line says of it, or — kubectl
    /// failed and said why on its stderr — its words, which the UI keeps until dismissed.
    fn run_aside(&self, argv: &[String], banner: &str) -> Result<String, String> {
        // the reader polls every 50 ms: it parks within that (bounded: a reader that has ended
        // cannot park, and the shell runs all the same)
        self.park();
        ratatui::restore();
        let _ = ratatui::crossterm::execute!(std::io::stdout(), ratatui::crossterm::cursor::Show);
        {
            use std::io::Write;
            let mut out = std::io::stdout();
            for line in banner.lines() {
                let _ = writeln!(out, "\x1b[7m {line} \x1b[0m");
            }
            let _ = out.flush();
        }
        let ran = run_kubectl(argv);
        let back = ratatui::crossterm::terminal::enable_raw_mode().and_then(|()| {
            ratatui::crossterm::execute!(std::io::stdout(), ratatui::crossterm::terminal::EnterAlternateScreen)
        });
        self.paused.store(false, Ordering::SeqCst);
        match (ran, back) {
            (_, Err(e)) => Err(format!("the terminal could not be taken back: {e}")),
            (Err(e), _) if e.kind() == std::io::ErrorKind::NotFound => {
                Err("kubectl is not on PATH: the shell runs `kubectl exec -it … -- sh`".to_string())
            }
            (Err(e), _) => Err(format!("cannot run kubectl: {e}")),
            (Ok((status, said)), _) => match status.code() {
                Some(0) => Ok("the shell ended".to_string()),
                Some(n) if !said.is_empty() => Err(format!("kubectl exec ended with exit code {n}:\n{said}")),
                Some(n) => Ok(format!("the shell ended with exit code {n}")),
                None => Ok("the shell ended by a signal".to_string()),
            },
        }
    }
}

/// Run kubectl on this terminal, its stderr copied through as it comes and its last lines kept
/// (kubectl's own words when it refuses: the remote shell's stderr comes on the TTY's stdout).
fn run_kubectl(argv: &[String]) -> std::io::Result<(std::process::ExitStatus, String)> {
    use std::io::{Read, Write};
    let mut child = std::process::Command::new("kubectl")
        .args(argv)
        .stderr(std::process::Stdio::piped())
        .spawn()?;
    let stderr = child.stderr.take();
    let copier = std::thread::spawn(move || {
        let mut kept: Vec<u8> = Vec::new();
        let Some(mut from) = stderr else { return kept };
        let mut buffer = [0u8; 4096];
        while let Ok(n) = from.read(&mut buffer) {
            if n == 0 {
                break;
            }
            let mut to = std::io::stderr();
            let _ = to.write_all(&buffer[..n]);
            let _ = to.flush();
            kept.extend_from_slice(&buffer[..n]);
            // the last 4 KiB are enough for kubectl's error
            if kept.len() > 8192 {
                kept.drain(..kept.len() - 4096);
            }
        }
        kept
    });
    let status = child.wait()?;
    let kept = copier.join().unwrap_or_default();
    let text = namzu_engine::present::layout::terminal_safe(String::from_utf8_lossy(&kept).into_owned());
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim_end)
        .filter(|l| !l.trim().is_empty())
        .collect();
    let said = lines[lines.len().saturating_sub(6)..].join("\n");
    Ok((status, said))
}

/// A write sent before the user quit is let finish (bounded), so its answer reaches the audit
/// log: the UI ends at once, the process a moment later. A second `q` or Ctrl-C (or SIGTERM,
/// SIGHUP) abandons them: `false`.
async fn wait_for_writes(in_flight: &std::sync::atomic::AtomicUsize, keys: &KeyThread) -> bool {
    use ratatui::crossterm::event::{KeyCode, KeyModifiers};
    let n = in_flight.load(Ordering::SeqCst);
    if n == 0 {
        return true;
    }
    namzu_engine::errln!(
        "waiting for {n} write(s) in flight to be answered and audited… (q or Ctrl-C again abandons them, their outcome unknown)"
    );
    // the keys are read here now, one press at a time: the key thread parks, raw mode again
    keys.park();
    let raw = ratatui::crossterm::terminal::enable_raw_mode().is_ok();
    let signalled = namzu_engine::signals::Termination::listen().received();
    tokio::pin!(signalled);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    let mut finished = true;
    while in_flight.load(Ordering::SeqCst) > 0 && tokio::time::Instant::now() < deadline {
        tokio::select! {
            _ = &mut signalled => {
                finished = false;
                break;
            }
            _ = tokio::time::sleep(Duration::from_millis(20)) => {}
        }
        while raw && matches!(event::poll(Duration::ZERO), Ok(true)) {
            if let Ok(Event::Key(k)) = event::read()
                && k.kind == KeyEventKind::Press
                && (matches!(k.code, KeyCode::Char('q'))
                    || (k.code == KeyCode::Char('c') && k.modifiers.contains(KeyModifiers::CONTROL)))
            {
                finished = false;
            }
        }
        if !finished {
            break;
        }
    }
    if raw {
        let _ = ratatui::crossterm::terminal::disable_raw_mode();
    }
    finished
}

/// Run effects on their own tasks; their answers come back on `tx`. A task that panics is
/// reported as [`Action::Crashed`], so the UI ends cleanly instead of waiting on it.
/// A shell has the terminal: it runs on a thread of its own while this one goes on applying
/// what arrives (no frame is drawn). A watch event replaces its row, so what the parked UI holds
/// stays the size of its rows, not a queue of every event since the shell opened. On a runtime
/// of one thread (never the UI's) the shell just runs.
fn shell_aside(
    app: &mut App,
    io: &Arc<Io>,
    tx: &UnboundedSender<Action>,
    rx: &mut UnboundedReceiver<Action>,
    shell: &mut Shell<'_>,
    argv: &[String],
    banner: &str,
) -> Result<String, String> {
    let handle = tokio::runtime::Handle::current();
    if handle.runtime_flavor() != tokio::runtime::RuntimeFlavor::MultiThread {
        return shell(argv, banner);
    }
    tokio::task::block_in_place(|| {
        std::thread::scope(|scope| {
            let (ended_tx, mut ended_rx) = tokio::sync::oneshot::channel();
            let worker = scope.spawn(move || {
                let ended = shell(argv, banner);
                let _ = ended_tx.send(());
                ended
            });
            handle.block_on(async {
                loop {
                    tokio::select! {
                        _ = &mut ended_rx => break,
                        Some(action) = rx.recv() => {
                            let effects = update(app, action);
                            spawn_all(io, effects, tx);
                        }
                    }
                }
            });
            worker
                .join()
                .unwrap_or_else(|_| Err("the shell ended abnormally".to_string()))
        })
    })
}

fn spawn_all(io: &Arc<Io>, effects: Vec<Effect>, tx: &UnboundedSender<Action>) {
    for e in effects {
        let (io, answers, crashes) = (io.clone(), tx.clone(), tx.clone());
        let task = tokio::spawn(async move { io.perform(e, answers).await });
        tokio::spawn(async move {
            if let Err(e) = task.await
                && e.is_panic()
            {
                let _ = crashes.send(Action::Crashed(format!("internal error in the terminal UI: {e}")));
            }
        });
    }
}

/// Actions applied at most between two frames.
const BATCH: usize = 10_000;

/// The loop: draw, then take the next action (a key, an answer, a tick); never waits on the
/// network. A shell the app asks for runs through `shell` (kubectl's arguments in, what the
/// status line says out) with the UI stepped aside; the screen is drawn anew after it.
#[allow(clippy::too_many_arguments)]
pub async fn event_loop<B: Backend>(
    terminal: &mut Terminal<B>,
    app: &mut App,
    io: Arc<Io>,
    tx: UnboundedSender<Action>,
    mut rx: UnboundedReceiver<Action>,
    theme: Theme,
    shell: &mut Shell<'_>,
) -> Result<(), TuiError> {
    let draw_failed = |e: B::Error| TuiError(format!("cannot draw: {e}"));
    let first = app.start();
    spawn_all(&io, first, &tx);
    let mut ticks = tokio::time::interval(Duration::from_secs(1));
    let (termination, signals) = (namzu_engine::signals::Termination::listen(), tx.clone());
    tokio::spawn(async move {
        termination.received().await;
        let _ = signals.send(Action::Terminated);
    });
    loop {
        app.settle();
        terminal.draw(|f| view::render(f, app, theme)).map_err(draw_failed)?;
        let mut effects = tokio::select! {
            Some(action) = rx.recv() => update(app, action),
            _ = ticks.tick() => update(app, Action::Tick(io.clock.now())),
        };
        // whatever else has arrived is applied before the next frame: a burst of watch events
        // costs one sort and one draw
        for _ in 0..BATCH {
            match rx.try_recv() {
                Ok(action) => effects.extend(update(app, action)),
                Err(_) => break,
            }
            if app.quit {
                break;
            }
        }
        if app.quit {
            return app.fatal.take().map_or(Ok(()), |m| Err(TuiError(m)));
        }
        spawn_all(&io, effects, &tx);
        if let Some(argv) = app.shell.take() {
            let banner = std::mem::take(&mut app.shell_banner);
            let ended = shell_aside(app, &io, &tx, &mut rx, shell, &argv, &banner);
            terminal.clear().map_err(draw_failed)?;
            spawn_all(&io, update(app, Action::ShellEnded(ended)), &tx);
        }
    }
}
