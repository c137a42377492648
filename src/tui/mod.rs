//! The inventory browser: `kubectl namzu` on a terminal, or `kubectl namzu tui`.
//! One Action enum, `update` the only mutation, rendering pure; cluster I/O on its own tasks.

pub mod action;
pub mod app;
pub mod io;
pub mod view;

use crate::cluster::connect::{ConnectOptions, Connection};
use crate::cluster::error::ClusterError;
use crate::cluster::write::WritePolicy;
use action::{Action, Effect};
use app::{App, AppOptions, update};
use io::Io;
use ratatui::Terminal;
use ratatui::backend::Backend;
use ratatui::crossterm::event::{self, Event, KeyEventKind};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};
use view::Theme;

/// What the TUI needs from its caller: where to connect, what it may write, how often to re-list.
pub struct Options {
    /// Exec credential plugins must not prompt inside the alternate screen: leave
    /// `interactive_exec` false.
    pub connect: ConnectOptions,
    pub policy: WritePolicy,
    /// Start with every namespace in scope.
    pub all_namespaces: bool,
    /// How often a kind the user may not watch is re-listed.
    pub refresh: Duration,
}

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

/// Open the TUI and run it until the user quits.
pub async fn run(options: Options) -> Result<(), TuiError> {
    let conn = Connection::open(&options.connect).await?;
    // one cheap request first, so a login failure is a normal line in the normal terminal
    conn.version().await?;
    let mut policy = options.policy;
    policy.audit.session = Some(Arc::new(Mutex::new(Vec::new())));
    let mut app = App::new(AppOptions {
        context: conn.context.clone(),
        server: conn.server.clone(),
        namespace: conn.namespace.clone(),
        all_namespaces: options.all_namespaces,
        read_only: policy.read_only,
        now: conn.clock.now(),
        live: true,
    });
    let flags = crate::domain::drift::OverlayFlags {
        per_sandbox_label_key: policy.per_sandbox_label_key.clone(),
        ..Default::default()
    };
    let io = Arc::new(Io {
        conn,
        policy,
        flags,
        wait_timeout: io::WAIT,
        writes_in_flight: Default::default(),
        live: crate::cluster::live::LiveOptions {
            poll_every: options.refresh,
            ..Default::default()
        },
        following: tokio::sync::watch::channel(0).0,
    });
    let theme = Theme {
        colour: std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()),
    };

    let (actions_tx, actions_rx) = unbounded_channel();
    let keys_tx = actions_tx.clone();
    let key_clock = io.conn.clock.clone();
    // crossterm's read blocks: a thread of its own, forwarding key presses only
    std::thread::spawn(move || {
        while let Ok(ev) = event::read() {
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
    let mut terminal = ratatui::try_init().map_err(|e| TuiError(format!("cannot open the terminal UI: {e}")))?;
    let in_flight = io.writes_in_flight.clone();
    let result = event_loop(
        &mut terminal,
        &mut app,
        io,
        actions_tx,
        actions_rx,
        options.refresh,
        theme,
    )
    .await;
    ratatui::restore();
    wait_for_writes(&in_flight).await;
    result
}

/// A write sent before the user quit is let finish (bounded), so its answer reaches the audit
/// log: the UI ends at once, the process a moment later.
async fn wait_for_writes(in_flight: &std::sync::atomic::AtomicUsize) {
    use std::sync::atomic::Ordering;
    let n = in_flight.load(Ordering::SeqCst);
    if n == 0 {
        return;
    }
    crate::errln!("waiting for {n} write(s) in flight to be answered and audited…");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while in_flight.load(Ordering::SeqCst) > 0 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Run effects on their own tasks; their answers come back on `tx`. A task that panics is
/// reported as [`Action::Crashed`], so the UI ends cleanly instead of waiting on it.
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

/// The loop: draw, then take the next action (a key, an answer, a tick); never waits on the network.
pub async fn event_loop<B: Backend>(
    terminal: &mut Terminal<B>,
    app: &mut App,
    io: Arc<Io>,
    tx: UnboundedSender<Action>,
    mut rx: UnboundedReceiver<Action>,
    refresh: Duration,
    theme: Theme,
) -> Result<(), TuiError> {
    let draw_failed = |e: B::Error| TuiError(format!("cannot draw: {e}"));
    let first = app.start();
    spawn_all(&io, first, &tx);
    let mut ticks = tokio::time::interval(Duration::from_secs(1));
    let mut refreshes = tokio::time::interval(refresh);
    refreshes.tick().await;
    let (termination, signals) = (crate::signals::Termination::listen(), tx.clone());
    tokio::spawn(async move {
        termination.received().await;
        let _ = signals.send(Action::Terminated);
    });
    loop {
        terminal.draw(|f| view::render(f, app, theme)).map_err(draw_failed)?;
        let mut effects = tokio::select! {
            Some(action) = rx.recv() => update(app, action),
            _ = ticks.tick() => update(app, Action::Tick(io.conn.clock.now())),
            _ = refreshes.tick() => update(app, Action::Refresh),
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
    }
}
