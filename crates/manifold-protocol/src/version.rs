//! Protocol revisions Manifold knows, and version negotiation for the stateful era.

/// Stateful-era revisions Manifold serves downstream, newest first.
pub const LEGACY_SUPPORTED: &[&str] = &["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// Stateless-era revisions Manifold speaks (downstream and upstream), newest first.
pub const MODERN_SUPPORTED: &[&str] = &["2026-07-28"];

/// The stateless revision Manifold asks modern upstreams for.
pub const LATEST_MODERN: &str = "2026-07-28";

pub fn is_supported_modern(v: &str) -> bool {
    MODERN_SUPPORTED.contains(&v)
}

/// The revision Manifold answers when a client asks for one it does not know.
pub const LATEST_LEGACY: &str = "2025-11-25";

/// The revision assumed when a session's client sends no `MCP-Protocol-Version`
/// header and nothing else says otherwise (spec: assume 2025-03-26).
pub const DEFAULT_WHEN_HEADER_MISSING: &str = "2025-03-26";

/// The revision to answer an `initialize` that asked for `requested`: the same when
/// supported, else the newest Manifold supports.
pub fn negotiate(requested: &str) -> &'static str {
    LEGACY_SUPPORTED
        .iter()
        .copied()
        .find(|v| *v == requested)
        .unwrap_or(LATEST_LEGACY)
}

pub fn is_supported_legacy(v: &str) -> bool {
    LEGACY_SUPPORTED.contains(&v)
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
