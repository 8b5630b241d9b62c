//! `[stdio]`: the stdio front door (`manifold stdio`).
//!
//! A reload cannot change the principal its requests run as
//! ([`FIXED_AT_START`]: the session was opened as it).
//!
//! Not here: serving stdio (manifold-server `front/stdio.rs`).

use serde::{Deserialize, Serialize};

/// `[stdio]`: the stdio front door (`manifold stdio`).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct StdioSection {
    /// The principal its requests run as (`local:<principal>` in audit
    /// records; `subject:<principal>` in `who` rules). Default: the OS user
    /// (`$USER`, then `$LOGNAME`, then `local`).
    #[serde(default)]
    pub principal: Option<String>,
}

/// `[stdio] principal` validated.
pub(crate) fn validate(s: &StdioSection) -> Result<Option<String>, String> {
    match &s.principal {
        Some(p) if p.trim().is_empty() => Err("key `stdio.principal`: must not be empty".into()),
        p => Ok(p.clone()),
    }
}
