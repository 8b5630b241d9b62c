//! MCP log levels (`logging/setLevel`, `notifications/message`, and the
//! 2026-07-28 `_meta` logLevel): the RFC 5424 severities, least severe first, as
//! MCP spells them.
//!
//! Invariants: [`LogLevel`]'s order is severity order (`Debug < … < Emergency`), so
//! "at least this severe" is a comparison; [`LEVELS`] lists the names in that order.
//!
//! Not here: who asked for which level, and filtering messages per client (the
//! server crate).

/// The level names, least severe first.
pub const LEVELS: [&str; 8] = [
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
];

/// One MCP log level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LogLevel {
    Debug,
    Info,
    Notice,
    Warning,
    Error,
    Critical,
    Alert,
    Emergency,
}

impl LogLevel {
    /// Every level, least severe first.
    pub const ALL: [LogLevel; 8] = [
        LogLevel::Debug,
        LogLevel::Info,
        LogLevel::Notice,
        LogLevel::Warning,
        LogLevel::Error,
        LogLevel::Critical,
        LogLevel::Alert,
        LogLevel::Emergency,
    ];

    /// The level named `name` (exact, lowercase as MCP spells it).
    pub fn parse(name: &str) -> Option<LogLevel> {
        LEVELS
            .iter()
            .position(|l| *l == name)
            .map(|i| LogLevel::ALL[i])
    }

    /// The name MCP uses.
    pub fn as_str(self) -> &'static str {
        LEVELS[self as usize]
    }
}

impl std::fmt::Display for LogLevel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_in_severity_order() {
        for (i, name) in LEVELS.iter().enumerate() {
            let level = LogLevel::parse(name).expect(name);
            assert_eq!(level.as_str(), *name);
            assert_eq!(level, LogLevel::ALL[i]);
        }
        assert!(LogLevel::Debug < LogLevel::Warning && LogLevel::Alert < LogLevel::Emergency);
        for bad in ["", "DEBUG", "warn", "fatal"] {
            assert_eq!(LogLevel::parse(bad), None, "{bad}");
        }
    }
}
