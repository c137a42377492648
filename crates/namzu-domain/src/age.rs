//! Ages in kubectl's style (`HumanDuration`: `45s`, `12m`, `5h`, `3d4h`, `2y`), from an injected clock.

use chrono::{DateTime, Utc};

/// The age of `since` at `now`, as `kubectl get` prints it.
pub fn age(since: DateTime<Utc>, now: DateTime<Utc>) -> String {
    human_duration((now - since).num_seconds())
}

/// kubectl's `duration.HumanDuration` over whole seconds.
pub fn human_duration(seconds: i64) -> String {
    if seconds < -1 {
        return "<invalid>".into();
    }
    if seconds < 0 {
        return "0s".into();
    }
    if seconds < 60 * 2 {
        return format!("{seconds}s");
    }
    let minutes = seconds / 60;
    if minutes < 10 {
        let s = seconds % 60;
        return if s == 0 {
            format!("{minutes}m")
        } else {
            format!("{minutes}m{s}s")
        };
    }
    if minutes < 60 * 3 {
        return format!("{minutes}m");
    }
    let hours = minutes / 60;
    if hours < 8 {
        let m = minutes % 60;
        return if m == 0 {
            format!("{hours}h")
        } else {
            format!("{hours}h{m}m")
        };
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    if hours < 24 * 8 {
        let (d, h) = (hours / 24, hours % 24);
        return if h == 0 { format!("{d}d") } else { format!("{d}d{h}h") };
    }
    if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    }
    let years = hours / 24 / 365;
    if hours < 24 * 365 * 8 {
        let dy = (hours / 24) % 365;
        return if dy == 0 {
            format!("{years}y")
        } else {
            format!("{years}y{dy}d")
        };
    }
    format!("{years}y")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubectl_buckets() {
        let m = 60;
        let h = 3600;
        let d = 24 * h;
        let cases = [
            (-5, "<invalid>"),
            (-1, "0s"),
            (0, "0s"),
            (45, "45s"),
            (119, "119s"),
            (2 * m, "2m"),
            (2 * m + 5, "2m5s"),
            (12 * m, "12m"),
            (179 * m, "179m"),
            (3 * h, "3h"),
            (5 * h + 30 * m, "5h30m"),
            (8 * h, "8h"),
            (47 * h, "47h"),
            (2 * d, "2d"),
            (3 * d + 4 * h, "3d4h"),
            (8 * d, "8d"),
            (60 * d, "60d"),
            (729 * d, "729d"),
            (730 * d, "2y"),
            (735 * d, "2y5d"),
            (8 * 365 * d, "8y"),
        ];
        for (secs, want) in cases {
            assert_eq!(human_duration(secs), want, "{secs}");
        }
    }
}
