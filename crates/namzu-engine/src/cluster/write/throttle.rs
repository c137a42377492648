//! The server's back-pressure (429 with Retry-After), shared by every write of a batch.

use crate::cluster::error::ClusterError;

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
    pub(crate) async fn wait(&self) -> bool {
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
    pub(crate) fn hold(&self, seconds: u32) {
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

    pub(crate) fn is_abandoned(&self) -> bool {
        self.abandoned.0.load(std::sync::atomic::Ordering::SeqCst)
    }
}

/// The longest one "retry after" holds a batch: a server asking for more is asking too much.
pub const MAX_HOLD_SECONDS: u32 = 60;

/// How often one write is resent after "too many requests" before it gives up.
pub const MAX_THROTTLED: u32 = 5;

/// What a write does with an error: a 429 holds the whole batch as long as it asks and the
/// write is resent (`Ok`); anything else, a 429 past [`MAX_THROTTLED`] resends, or one asking
/// for more than [`MAX_HOLD_SECONDS`] (named so) is the answer (`Err`). The one rule of every
/// write this tool sends: a Sandbox's mode change or delete, a leaked object's delete.
pub(super) fn resend_after(e: ClusterError, throttled: &mut u32, throttle: &Throttle) -> Result<(), ClusterError> {
    match e {
        ClusterError::Api {
            code: 429,
            retry_after: Some(after),
            reason,
            message,
            op,
        } if after > MAX_HOLD_SECONDS => Err(ClusterError::Api {
            code: 429,
            retry_after: Some(after),
            reason,
            message: format!(
                "{message} (it asked to retry after {after} s, more than the {MAX_HOLD_SECONDS} s this tool waits: not resent)"
            ),
            op,
        }),
        ClusterError::Api {
            code: 429, retry_after, ..
        } if *throttled < MAX_THROTTLED => {
            *throttled += 1;
            throttle.hold(retry_after.unwrap_or(1));
            Ok(())
        }
        other => Err(other),
    }
}
