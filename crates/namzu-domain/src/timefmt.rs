//! Timestamps: the library's `toISOString()` form, and parsing what the API server stores.

use chrono::{DateTime, SecondsFormat, Utc};

/// JS `Date.prototype.toISOString()`: `2026-11-29T10:00:00.000Z`.
pub fn js_iso(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// An RFC 3339 timestamp as Kubernetes or the library writes it.
pub fn parse(text: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(text).ok().map(|t| t.with_timezone(&Utc))
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn iso_has_millis_and_z() {
        let t = Utc.with_ymd_and_hms(2026, 11, 29, 10, 0, 0).unwrap();
        assert_eq!(js_iso(t), "2026-11-29T10:00:00.000Z");
        let t = t + chrono::Duration::milliseconds(7);
        assert_eq!(js_iso(t), "2026-11-29T10:00:00.007Z");
        assert_eq!(
            parse("2026-09-10T12:00:00Z").map(js_iso).as_deref(),
            Some("2026-09-10T12:00:00.000Z")
        );
        assert_eq!(parse("yesterday"), None);
    }
}
