//! Time as Manifold writes and counts it: RFC 3339 in UTC (whole seconds, or
//! microseconds for the audit log), and seconds since the Unix epoch.
//!
//! Invariants: the same instant always gives the same text; an instant before
//! the epoch is written and counted as the epoch, one past 9999-12-31 as its
//! last microsecond (a clock that far off is not worth a panic); the formats
//! are `humantime`'s (`2026-11-26T09:05:03Z`, `2026-11-26T09:05:03.000042Z`).
//!
//! Not here: parsing durations from configuration (manifold-config), or any
//! timezone but UTC.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The last instant RFC 3339's four-digit year can hold (9999-12-31T23:59:59.999999Z).
const LAST: Duration = Duration::new(253_402_300_799, 999_999_000);

/// `time` within what the formats can write.
fn clamped(time: SystemTime) -> SystemTime {
    time.clamp(UNIX_EPOCH, UNIX_EPOCH + LAST)
}

/// `time` as `YYYY-MM-DDTHH:MM:SSZ`.
pub fn rfc3339_seconds(time: SystemTime) -> String {
    humantime::format_rfc3339_seconds(clamped(time)).to_string()
}

/// `time` as `YYYY-MM-DDTHH:MM:SS.ffffffZ`.
pub fn rfc3339_micros(time: SystemTime) -> String {
    humantime::format_rfc3339_micros(clamped(time)).to_string()
}

/// Whole seconds from the epoch to `time` (0 before it).
pub fn unix_secs(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// Whole seconds since the epoch now.
pub fn unix_now() -> u64 {
    unix_secs(SystemTime::now())
}

/// Milliseconds since the epoch now (0 before it).
pub fn unix_now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_table() {
        let cases = [
            (0, 0, "1970-01-01T00:00:00Z", "1970-01-01T00:00:00.000000Z"),
            (
                0,
                1_000,
                "1970-01-01T00:00:00Z",
                "1970-01-01T00:00:00.000001Z",
            ),
            (
                86_399,
                999_999_999,
                "1970-01-01T23:59:59Z",
                "1970-01-01T23:59:59.999999Z",
            ),
            (
                951_782_399,
                0,
                "2000-02-28T23:59:59Z",
                "2000-02-28T23:59:59.000000Z",
            ),
            (
                951_782_400,
                0,
                "2000-02-29T00:00:00Z",
                "2000-02-29T00:00:00.000000Z",
            ),
            (
                951_868_800,
                0,
                "2000-03-01T00:00:00Z",
                "2000-03-01T00:00:00.000000Z",
            ),
            (
                1_709_164_800 + 3_723,
                42_000,
                "2024-02-29T01:02:03Z",
                "2024-02-29T01:02:03.000042Z",
            ),
            (
                1_735_689_599,
                500_000_000,
                "2024-12-31T23:59:59Z",
                "2024-12-31T23:59:59.500000Z",
            ),
            (
                1_795_685_103,
                999_000_000,
                "2026-11-26T09:25:03Z",
                "2026-11-26T09:25:03.999000Z",
            ),
            (
                4_107_542_400,
                0,
                "2100-03-01T00:00:00Z",
                "2100-03-01T00:00:00.000000Z",
            ),
            (
                253_402_300_799,
                0,
                "9999-12-31T23:59:59Z",
                "9999-12-31T23:59:59.000000Z",
            ),
        ];
        for (secs, nanos, seconds, micros) in cases {
            let t = UNIX_EPOCH + Duration::new(secs, nanos);
            assert_eq!(rfc3339_seconds(t), seconds, "{secs}.{nanos}");
            assert_eq!(rfc3339_micros(t), micros, "{secs}.{nanos}");
            assert_eq!(unix_secs(t), secs);
        }
    }

    #[test]
    fn instants_out_of_range_are_written_at_its_ends() {
        let before = UNIX_EPOCH - Duration::from_secs(5);
        assert_eq!(rfc3339_micros(before), "1970-01-01T00:00:00.000000Z");
        assert_eq!(rfc3339_seconds(before), "1970-01-01T00:00:00Z");
        assert_eq!(unix_secs(before), 0);
        let after = UNIX_EPOCH + Duration::from_secs(300_000_000_000);
        assert_eq!(rfc3339_micros(after), "9999-12-31T23:59:59.999999Z");
        assert!(unix_now() > 1_700_000_000);
        assert!(unix_now_ms() / 1000 >= unix_now() - 1);
    }
}
