//! The server's back-pressure (429 with Retry-After), shared by every write of a batch.

/// The API server's back-pressure, shared by every write of a batch: a 429 with Retry-After holds
/// them all back until then, not just the one that was refused. The tool's only retry (kube's
/// own is off, `cluster/connect.rs`); a hold ends early when the batch is abandoned (Ctrl-C,
/// SIGTERM, the TUI's quit).
#[derive(Debug, Clone, Default)]
pub struct Throttle {
    until: std::sync::Arc<std::sync::Mutex<Option<tokio::time::Instant>>>,
    abandoned: std::sync::Arc<(std::sync::atomic::AtomicBool, tokio::sync::Notify)>,
}

impl Throttle {
    /// Wait until the server's last "retry after" has passed; `false` when the batch was
    /// abandoned first (nothing more may be sent).
    pub async fn wait(&self) -> bool {
        loop {
            if self.is_abandoned() {
                return false;
            }
            let until = *self.until.lock().unwrap_or_else(|p| p.into_inner());
            match until {
                Some(t) if t > tokio::time::Instant::now() => {
                    let abandoned = self.abandoned.1.notified();
                    tokio::select! {
                        _ = tokio::time::sleep_until(t) => {}
                        _ = abandoned => {}
                    }
                }
                _ => return true,
            }
        }
    }

    /// Hold every write back for `seconds` from now (at most [`MAX_HOLD_SECONDS`]; never
    /// shortening a longer hold).
    pub fn hold(&self, seconds: u32) {
        let seconds = seconds.min(MAX_HOLD_SECONDS);
        let until = tokio::time::Instant::now() + std::time::Duration::from_secs(seconds.into());
        let mut held = self.until.lock().unwrap_or_else(|p| p.into_inner());
        *held = Some(held.map_or(until, |t| t.max(until)));
    }

    /// End every hold now and send nothing more through this throttle.
    pub fn abandon(&self) {
        self.abandoned.0.store(true, std::sync::atomic::Ordering::SeqCst);
        self.abandoned.1.notify_waiters();
    }

    pub fn is_abandoned(&self) -> bool {
        self.abandoned.0.load(std::sync::atomic::Ordering::SeqCst)
    }
}

/// The longest one "retry after" holds a batch: a server asking for more is asking too much.
pub const MAX_HOLD_SECONDS: u32 = 60;

/// How often one write is resent after "too many requests" before it gives up.
pub const MAX_THROTTLED: u32 = 5;
