//! Text fitted to a width, for the terminal UI: lines wrapped at spaces (a patch operation is
//! spaced between JSON tokens, so it wraps between tokens, never inside a string), a word too
//! long for any line cut with `…`, a cell cut to its column with `…`.

/// The visible width of `text` (one column a character: what the UI prints is ASCII, arrows,
/// dashes and box characters).
pub fn width(text: &str) -> usize {
    text.chars().count()
}

/// `text` cut to `max` columns, ending in `…` when it was cut.
pub fn cut(text: &str, max: usize) -> String {
    if width(text) <= max {
        return text.to_string();
    }
    if max == 0 {
        return String::new();
    }
    let mut out: String = text.chars().take(max - 1).collect();
    out.push('…');
    out
}

/// Every line of `text` wrapped to `max` columns. A line breaks only at a space; its
/// continuation lines are indented two past the line's own indent; a word longer than a whole
/// line is cut with `…` (the detail view has it whole).
pub fn wrap(text: &str, max: usize) -> Vec<String> {
    let max = max.max(8);
    let mut out = Vec::new();
    for line in text.split('\n') {
        let indent = line.len() - line.trim_start_matches(' ').len();
        let indent = indent.min(max / 2);
        let hanging = (indent + 2).min(max / 2);
        let mut current = " ".repeat(indent);
        let mut empty = true;
        for word in line.trim_start_matches(' ').split(' ') {
            let room = max.saturating_sub(width(&current) + usize::from(!empty));
            if !empty && width(word) > room {
                out.push(std::mem::replace(&mut current, " ".repeat(hanging)));
                empty = true;
            }
            if !empty {
                current.push(' ');
            }
            let room = max.saturating_sub(width(&current));
            current.push_str(&cut(word, room));
            empty = false;
        }
        out.push(current.trim_end().to_string());
    }
    out
}

/// A log line as the terminal may show it: colour and cursor sequences (ANSI CSI, OSC) taken
/// out, a tab as spaces, any other control character or bidirectional mark
/// ([`crate::console::unprintable`]) as `�` — no line drives the terminal or reorders it.
pub fn terminal_safe(line: String) -> String {
    use crate::console::unprintable;
    if !line.chars().any(unprintable) {
        return line;
    }
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => match chars.peek() {
                // CSI: parameters and intermediates, then one final byte in @..~
                Some('[') => {
                    chars.next();
                    for c in chars.by_ref() {
                        if ('@'..='~').contains(&c) {
                            break;
                        }
                    }
                }
                // OSC: up to BEL or ESC \
                Some(']') => {
                    while let Some(c) = chars.next() {
                        if c == '\u{7}' || (c == '\u{1b}' && chars.peek() == Some(&'\\')) {
                            if c == '\u{1b}' {
                                chars.next();
                            }
                            break;
                        }
                    }
                }
                _ => {
                    chars.next();
                }
            },
            '\t' => out.push_str("    "),
            c if unprintable(c) => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_line_drives_the_terminal() {
        assert_eq!(terminal_safe("\u{1b}[31mred\u{1b}[0m\tok".into()), "red    ok");
        assert_eq!(terminal_safe("\u{1b}]0;title\u{7}x\u{8}".into()), "x\u{fffd}");
        assert_eq!(terminal_safe("plain".into()), "plain");
        // bidirectional marks reorder what follows them: never shown as they are
        assert_eq!(
            terminal_safe("a\u{202e}b\u{2066}c\u{061c}d\u{200f}".into()),
            "a\u{fffd}b\u{fffd}c\u{fffd}d\u{fffd}"
        );
    }

    #[test]
    fn wraps_at_spaces_with_a_hanging_indent() {
        let lines = wrap(
            "  {\"op\": \"add\", \"path\": \"/metadata/annotations\", \"value\": \"2026-11-29T12:00:00.000Z\"}",
            40,
        );
        assert_eq!(
            lines,
            [
                "  {\"op\": \"add\", \"path\":",
                "    \"/metadata/annotations\", \"value\":",
                "    \"2026-11-29T12:00:00.000Z\"}"
            ]
        );
        assert!(lines.iter().all(|l| width(l) <= 40));
    }

    #[test]
    fn a_word_longer_than_a_line_is_cut_with_an_ellipsis() {
        let hash = format!("sha256:{}", "ab".repeat(32));
        let lines = wrap(&format!("Stored hash: {hash}"), 30);
        assert_eq!(lines[0], "Stored hash:");
        assert_eq!(width(&lines[1]), 30);
        assert!(lines[1].ends_with('…'));
        assert_eq!(cut("suspend-unconfirmed", 12), "suspend-unc…");
        assert_eq!(cut("short", 12), "short");
    }

    #[test]
    fn any_text_fits_any_width() {
        let text = format!(
            "{} x {}\n        deep {}",
            "w".repeat(50),
            "y".repeat(9),
            "z".repeat(70)
        );
        for max in 0..60 {
            for line in wrap(&text, max) {
                assert!(width(&line) <= max.max(8), "{max}: {line:?}");
            }
        }
    }

    #[test]
    fn empty_lines_and_short_lines_stay() {
        assert_eq!(wrap("a\n\nb c", 20), ["a", "", "b c"]);
    }
}
