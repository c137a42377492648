//! The inventory browser: `kubectl namzu` on a terminal, or `kubectl namzu tui`.
//! One Action enum, `update` the only mutation, rendering pure; cluster I/O on its own tasks.

pub mod action;
pub mod app;
pub mod io;
pub mod view;

use crate::cli::exit::Failure;
use crate::cli::globals::Globals;
use crate::cluster::connect::Connection;
use crate::cluster::error::Op;
use action::{Action, Effect};
use app::{App, update};
use io::Io;
use ratatui::Terminal;
use ratatui::backend::Backend;
use ratatui::crossterm::event::{self, Event, KeyEventKind};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};
use view::Theme;

/// Open the TUI. `refresh` is how often the inventory is re-listed.
pub async fn run(globals: &Globals, refresh: Duration) -> Result<(), Failure> {
    // exec credential plugins must not prompt inside the alternate screen
    let conn = Connection::open(&globals.connect_options(false)).await?;
    // one cheap request first, so a login failure is a normal line in the normal terminal
    let op = Op {
        verb: "get",
        resource: "/version".into(),
        namespace: None,
        name: String::new(),
    };
    conn.bounded(&op, conn.client.apiserver_version()).await?;
    let mut guard = globals.guard();
    guard.audit.session = Some(Arc::new(Mutex::new(Vec::new())));
    let mut app = App::new(
        &conn.context,
        &conn.server,
        &conn.namespace,
        globals.all_namespaces,
        guard.read_only,
        conn.clock.now(),
    );
    let io = Arc::new(Io {
        conn,
        guard,
        flags: Default::default(),
        wait_timeout: io::WAIT,
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
    let mut terminal = ratatui::try_init().map_err(|e| Failure::error(format!("cannot open the terminal UI: {e}")))?;
    let result = event_loop(&mut terminal, &mut app, io, actions_tx, actions_rx, refresh, theme).await;
    ratatui::restore();
    result
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

/// The loop: draw, then take the next action (a key, an answer, a tick); never waits on the network.
pub async fn event_loop<B: Backend>(
    terminal: &mut Terminal<B>,
    app: &mut App,
    io: Arc<Io>,
    tx: UnboundedSender<Action>,
    mut rx: UnboundedReceiver<Action>,
    refresh: Duration,
    theme: Theme,
) -> Result<(), Failure> {
    let draw_failed = |e: B::Error| Failure::error(format!("cannot draw: {e}"));
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
        let effects = tokio::select! {
            Some(action) = rx.recv() => update(app, action),
            _ = ticks.tick() => update(app, Action::Tick(io.conn.clock.now())),
            _ = refreshes.tick() => update(app, Action::Key(ratatui::crossterm::event::KeyEvent::from(ratatui::crossterm::event::KeyCode::F(5)))),
        };
        if app.quit {
            return app.fatal.take().map_or(Ok(()), |m| Err(Failure::error(m)));
        }
        spawn_all(&io, effects, &tx);
    }
}
