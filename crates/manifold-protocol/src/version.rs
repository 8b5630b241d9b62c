//! Protocol revisions Manifold knows, and version negotiation for the stateful era.

/// Stateful-era revisions Manifold serves downstream, newest first.
pub const SESSION_SUPPORTED: &[&str] = &["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// Stateless-era revisions Manifold speaks (downstream and upstream), newest first.
pub const STATELESS_SUPPORTED: &[&str] = &["2026-07-28"];

/// The stateless revision Manifold asks 2026-07-28 upstreams for.
pub const LATEST_STATELESS: &str = "2026-07-28";

pub fn is_supported_stateless(v: &str) -> bool {
    STATELESS_SUPPORTED.contains(&v)
}

/// The revision Manifold answers when a client asks for one it does not know.
pub const LATEST_SESSION: &str = "2025-11-25";

/// The revision assumed when a session's client sends no `MCP-Protocol-Version`
/// header and nothing else says otherwise (spec: assume 2025-03-26).
pub const DEFAULT_WHEN_HEADER_MISSING: &str = "2025-03-26";

/// The revision to answer an `initialize` that asked for `requested`: the same when
/// supported, else the newest Manifold supports.
pub fn negotiate(requested: &str) -> &'static str {
    SESSION_SUPPORTED
        .iter()
        .copied()
        .find(|v| *v == requested)
        .unwrap_or(LATEST_SESSION)
}

pub fn is_supported_session(v: &str) -> bool {
    SESSION_SUPPORTED.contains(&v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negotiation_table() {
        for (asked, answered) in [
            ("2025-11-25", "2025-11-25"),
            ("2025-06-18", "2025-06-18"),
            ("2025-03-26", "2025-03-26"),
            ("2024-11-05", "2024-11-05"),
            ("2026-07-28", "2025-11-25"),
            ("1999-01-01", "2025-11-25"),
            ("", "2025-11-25"),
        ] {
            assert_eq!(negotiate(asked), answered, "asked {asked}");
        }
    }
}
