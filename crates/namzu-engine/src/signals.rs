//! The signals that end a command: SIGINT (Ctrl-C), SIGTERM and SIGHUP. A bulk write finishes
//! the workspace in flight and starts no other; the terminal UI quits and restores the terminal.

/// Handlers registered when made (so a signal that arrives before anyone awaits is not lost).
pub struct Termination {
    #[cfg(unix)]
    streams: Option<[tokio::signal::unix::Signal; 3]>,
}

impl Termination {
    /// Register for the signals now; must run inside the tokio runtime.
    pub fn listen() -> Termination {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            let streams = (|| {
                Some([
                    signal(SignalKind::interrupt()).ok()?,
                    signal(SignalKind::terminate()).ok()?,
                    signal(SignalKind::hangup()).ok()?,
                ])
            })();
            Termination { streams }
        }
        #[cfg(not(unix))]
        Termination {}
    }

    /// Completes at the first of the signals; never, where no handler could be installed.
    pub async fn received(self) {
        #[cfg(unix)]
        {
            let Some([mut int, mut term, mut hup]) = self.streams else {
                return std::future::pending().await;
            };
            tokio::select! {
                _ = int.recv() => {}
                _ = term.recv() => {}
                _ = hup.recv() => {}
            }
        }
        #[cfg(not(unix))]
        {
            if tokio::signal::ctrl_c().await.is_err() {
                std::future::pending::<()>().await
            }
        }
    }
}
