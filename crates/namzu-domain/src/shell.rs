//! Shell words: the commands this crate suggests are pasted into a shell as they are printed.

/// One shell word: as is when it needs no quoting, else single-quoted.
pub(crate) fn word(text: &str) -> String {
    let plain = !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=@%+,".contains(c));
    if plain {
        text.to_string()
    } else {
        format!("'{}'", text.replace('\'', "'\\''"))
    }
}
