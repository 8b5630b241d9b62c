//! Times in the store: RFC 3339, UTC, whole seconds (`2026-11-26T09:05:03Z`).
//!
//! Invariants: the same instant always gives the same text; times before the
//! epoch print as the epoch (a clock that far off is not worth a panic).
//!
//! Not here: parsing (the store only shows its times, never computes on them).
//! manifold-audit keeps its own microsecond form; the foundation crate of
//! DESIGN.md is where one copy of the date arithmetic belongs.

use std::time::{SystemTime, UNIX_EPOCH};

/// `time` as `YYYY-MM-DDTHH:MM:SSZ`.
pub fn rfc3339(time: SystemTime) -> String {
    let secs = time
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let (year, month, day) = civil_from_days(secs / 86_400);
    let rem = secs % 86_400;
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// The proleptic Gregorian date `days` after 1970-01-01 (Howard Hinnant's
/// `civil_from_days`, for non-negative days).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn formats_utc_seconds() {
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00Z");
        // 2000-02-29 (a leap day in a century year) and the next midnight.
        let t = UNIX_EPOCH + Duration::from_secs(951_782_399);
        assert_eq!(rfc3339(t), "2000-02-28T23:59:59Z");
        assert_eq!(
            rfc3339(t + Duration::from_secs(86_400 + 1)),
            "2000-03-01T00:00:00Z"
        );
        assert_eq!(
            rfc3339(UNIX_EPOCH + Duration::from_millis(1_795_685_103_999)),
            "2026-11-26T09:25:03Z"
        );
    }
}
