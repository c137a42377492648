//! The process's stdout and stderr, for every layer: writes that never panic (a closed pipe stops
//! output, it is not a crash), the macros `out!`, `outln!`, `errln!`, `errw!`, and stderr diverted
//! while the terminal UI owns the screen. A leaf: it imports nothing of the tool.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);
static STDOUT_FAILED: std::sync::Mutex<Option<String>> = std::sync::Mutex::new(None);

/// Write to stdout. A reader that went away (`| head -1`) is no error: output stops, and the
/// verb learns it from [`stdout_closed`] — a bulk write stops between workspaces. Any other
/// failure (a full disk, a file-size limit) stops output too and is kept for [`stdout_failure`]:
/// the command then exits 1, never 0 with half its output.
pub fn write_stdout(text: &str) {
    if STDOUT_CLOSED.load(Ordering::Relaxed) {
        return;
    }
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_all(text.as_bytes()).and_then(|_| out.flush()) {
        STDOUT_CLOSED.store(true, Ordering::Relaxed);
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            *STDOUT_FAILED.lock().unwrap_or_else(|p| p.into_inner()) = Some(e.to_string());
        }
    }
}

/// Why stdout could not be written, unless its reader simply went away.
pub fn stdout_failure() -> Option<String> {
    STDOUT_FAILED.lock().unwrap_or_else(|p| p.into_inner()).clone()
}

/// `eprint!` that never panics (a prompt, a spinner frame).
#[macro_export]
macro_rules! errw {
    ($($arg:tt)*) => { $crate::console::write_stderr(&format!($($arg)*)) };
}

/// `eprintln!` that never panics: a stderr that cannot be written loses the line, nothing more.
#[macro_export]
macro_rules! errln {
    ($($arg:tt)*) => { $crate::console::write_stderr(&format!("{}\n", format_args!($($arg)*))) };
}

/// Where stderr's lines go while a full-screen UI owns the terminal (they would be drawn over
/// it): a file, or nowhere.
static DIVERTED: std::sync::Mutex<Option<Diverted>> = std::sync::Mutex::new(None);

enum Diverted {
    File(std::fs::File),
    Nowhere,
}

/// Write to stderr, or where it is diverted to; never panics.
pub fn write_stderr(text: &str) {
    let mut diverted = DIVERTED.lock().unwrap_or_else(|p| p.into_inner());
    let _ = match diverted.as_mut() {
        Some(Diverted::File(f)) => f.write_all(text.as_bytes()),
        Some(Diverted::Nowhere) => Ok(()),
        None => {
            let mut stderr = std::io::stderr().lock();
            stderr.write_all(text.as_bytes()).and_then(|()| stderr.flush())
        }
    };
}

/// Send stderr's lines to `file` (`None`: drop them) until [`undivert`].
pub fn divert_stderr(file: Option<std::fs::File>) {
    *DIVERTED.lock().unwrap_or_else(|p| p.into_inner()) = Some(file.map_or(Diverted::Nowhere, Diverted::File));
}

/// Stderr is the terminal's again.
pub fn undivert_stderr() {
    *DIVERTED.lock().unwrap_or_else(|p| p.into_inner()) = None;
}

/// Whether a write to stdout has failed (the pipe's reader closed it).
pub fn stdout_closed() -> bool {
    STDOUT_CLOSED.load(Ordering::Relaxed)
}

/// `println!` to stdout through [`write_stdout`]: never panics on a closed pipe.
#[macro_export]
macro_rules! outln {
    () => { $crate::console::write_stdout("\n") };
    ($($arg:tt)*) => { $crate::console::write_stdout(&format!("{}\n", format_args!($($arg)*))) };
}

/// `print!` to stdout through [`write_stdout`].
#[macro_export]
macro_rules! out {
    ($($arg:tt)*) => { $crate::console::write_stdout(&format!($($arg)*)) };
}

/// Text from the cluster made safe for a terminal: control characters (an escape sequence, a
/// newline that would split a table row) are shown as `\u{..}` escapes instead of acting.
pub fn printable(text: &str) -> String {
    if !text.chars().any(unprintable) {
        return text.to_string();
    }
    text.chars()
        .map(|c| {
            if unprintable(c) {
                c.escape_unicode().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// What no text from the cluster may show a terminal as it is, the one rule for every front-end
/// (tables and messages escape it, [`printable`]; `logs`, the log pane and the history replace
/// it with `�`, `present::layout::terminal_safe`): control characters, and the format
/// characters that reorder or break what follows them — bidirectional marks, embeddings,
/// overrides and isolates (U+061C, U+200E, U+200F, U+202A–U+202E, U+2066–U+2069), line and
/// paragraph separators.
pub(crate) fn unprintable(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061c}'
                | '\u{200e}'
                | '\u{200f}'
                | '\u{202a}'..='\u{202e}'
                | '\u{2066}'..='\u{2069}'
                | '\u{2028}'
                | '\u{2029}'
        )
}

/// Multi-line text from the cluster made safe for a terminal: lines stay lines, every other
/// control character is escaped as in [`printable`].
pub fn printable_lines(text: &str) -> String {
    text.split('\n').map(printable).collect::<Vec<_>>().join("\n")
}
