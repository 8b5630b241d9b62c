//! `[integrity]`: tool integrity — the fingerprints of the tools, prompts and
//! resource templates an operator approved, and what happens when an upstream
//! publishes something else. The file model ([`IntegritySection`]) and its
//! validated form ([`IntegritySettings`]).
//!
//! Invariants: the section always exists in the validated configuration (its
//! defaults apply without it: `mode = "warn"`, pins kept in memory only);
//! `mode = "quarantine"` needs a `store` (pins kept only in memory are
//! forgotten at a restart, which is exactly when a changed package takes
//! effect); a validated `store` is a non-empty path after `${VAR}` expansion.
//! `store` is fixed at start; `mode`, `new_tools` and `trust_on_first_use`
//! are reloadable.
//!
//! Not here: fingerprints (manifold-catalog `fingerprint`), the store and the
//! decisions (manifold-integrity).

use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// Default `mode`: log and count a change, change nothing.
pub const DEFAULT_INTEGRITY_MODE: IntegrityMode = IntegrityMode::Warn;
/// Default `new_tools`: a new item from an upstream that already has pins is
/// served (and pinned).
pub const DEFAULT_NEW_TOOLS: NewTools = NewTools::Allow;
/// Default `trust_on_first_use`: an upstream without pins has everything it
/// publishes pinned at first sight.
pub const DEFAULT_TRUST_ON_FIRST_USE: bool = true;

/// `[integrity] mode`.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum IntegrityMode {
    /// A changed (or unapproved new) item is absent from every list and
    /// answers as an unknown item until approved.
    Quarantine,
    /// A changed item is logged and counted, and served as it is now.
    #[default]
    Warn,
    /// Nothing is fingerprinted.
    Off,
}

impl IntegrityMode {
    pub fn as_str(self) -> &'static str {
        match self {
            IntegrityMode::Quarantine => "quarantine",
            IntegrityMode::Warn => "warn",
            IntegrityMode::Off => "off",
        }
    }
}

/// `[integrity] new_tools`.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum NewTools {
    /// Served at once and pinned as first seen.
    #[default]
    Allow,
    /// Held (under `mode = "quarantine"`) until approved.
    Quarantine,
}

impl NewTools {
    pub fn as_str(self) -> &'static str {
        match self {
            NewTools::Allow => "allow",
            NewTools::Quarantine => "quarantine",
        }
    }
}

/// `[integrity]` in the file.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct IntegritySection {
    /// `"quarantine"`, `"warn"` (default) or `"off"`.
    #[serde(default)]
    pub mode: IntegrityMode,
    /// The file of approved fingerprints (JSON, written atomically, mode
    /// 0600; `${VAR}` expands; relative to the working directory). Required
    /// with `mode = "quarantine"`; without it pins live in memory until the
    /// process ends, and `manifold pins` has nothing to work on.
    #[serde(default)]
    pub store: Option<String>,
    /// An item never seen before from an upstream that already has pins
    /// (tools, prompts, resource templates and static resources alike; for
    /// resources and instructions, once that kind's first sight has passed):
    /// `"allow"` (default) or `"quarantine"`.
    #[serde(default)]
    pub new_tools: NewTools,
    /// An upstream with no pins yet has everything it publishes pinned at
    /// first sight (default `true`); `false`: everything it publishes waits
    /// for approval.
    #[serde(default = "default_tofu")]
    pub trust_on_first_use: bool,
}

fn default_tofu() -> bool {
    DEFAULT_TRUST_ON_FIRST_USE
}

impl Default for IntegritySection {
    fn default() -> Self {
        IntegritySection {
            mode: DEFAULT_INTEGRITY_MODE,
            store: None,
            new_tools: DEFAULT_NEW_TOOLS,
            trust_on_first_use: DEFAULT_TRUST_ON_FIRST_USE,
        }
    }
}

/// The validated `[integrity]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IntegritySettings {
    pub mode: IntegrityMode,
    /// The store file, expanded; `None`: pins in memory only.
    pub store: Option<PathBuf>,
    pub new_tools: NewTools,
    pub trust_on_first_use: bool,
}

impl Default for IntegritySettings {
    fn default() -> Self {
        IntegritySettings {
            mode: DEFAULT_INTEGRITY_MODE,
            store: None,
            new_tools: DEFAULT_NEW_TOOLS,
            trust_on_first_use: DEFAULT_TRUST_ON_FIRST_USE,
        }
    }
}

impl IntegritySettings {
    /// Whether items are fingerprinted at all.
    pub fn enabled(&self) -> bool {
        self.mode != IntegrityMode::Off
    }

    /// Whether a held item is withheld from lists and calls (not only
    /// reported).
    pub fn withholds(&self) -> bool {
        self.mode == IntegrityMode::Quarantine
    }
}

pub(crate) fn validate(
    s: &IntegritySection,
    expand: &dyn Fn(&str, &str) -> Result<String, String>,
) -> Result<IntegritySettings, String> {
    let store = match &s.store {
        None => None,
        Some(raw) => {
            let path = expand("integrity.store", raw)?;
            if path.trim().is_empty() {
                return Err("key `integrity.store`: must not be empty".into());
            }
            Some(PathBuf::from(path))
        }
    };
    if s.mode == IntegrityMode::Quarantine && store.is_none() {
        return Err(
            "key `integrity.store`: `mode = \"quarantine\"` needs a store file (e.g. \
             store = \"/var/lib/manifold/pins.json\"): pins kept only in memory are forgotten \
             at a restart, which is when a changed upstream package takes effect"
                .into(),
        );
    }
    Ok(IntegritySettings {
        mode: s.mode,
        store,
        new_tools: s.new_tools,
        trust_on_first_use: s.trust_on_first_use,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use figment::providers::Env;
    use std::path::Path;

    fn load(text: &str, vars: &[(&str, &str)]) -> Result<crate::GatewayConfig, String> {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        crate::load_str(
            Path::new("gateway.toml"),
            text,
            move |k| vars.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone()),
            Env::raw().only(&[] as &[&str]),
        )
        .map_err(|e| e.to_string())
    }

    #[test]
    fn without_the_section_integrity_warns_with_pins_in_memory() {
        let cfg = load("", &[]).expect("loads");
        assert_eq!(cfg.integrity, IntegritySettings::default());
        assert_eq!(cfg.integrity.mode, IntegrityMode::Warn);
        assert_eq!(cfg.integrity.new_tools, NewTools::Allow);
        assert!(cfg.integrity.trust_on_first_use);
        assert!(cfg.integrity.enabled() && !cfg.integrity.withholds());
        // The effective configuration shows the defaults in force.
        assert_eq!(
            cfg.effective["integrity"],
            serde_json::json!({"mode": "warn", "store": null, "new_tools": "allow",
                               "trust_on_first_use": true})
        );
    }

    #[test]
    fn every_key_loads_and_the_store_expands() {
        let cfg = load(
            "[integrity]\nmode = \"quarantine\"\nstore = \"${STATE}/pins.json\"\n\
             new_tools = \"quarantine\"\ntrust_on_first_use = false\n",
            &[("STATE", "/var/lib/manifold")],
        )
        .expect("loads");
        assert_eq!(
            cfg.integrity,
            IntegritySettings {
                mode: IntegrityMode::Quarantine,
                store: Some(PathBuf::from("/var/lib/manifold/pins.json")),
                new_tools: NewTools::Quarantine,
                trust_on_first_use: false,
            }
        );
        assert!(cfg.integrity.withholds());
        // `/config` shows the reference, not its expansion.
        assert_eq!(cfg.effective["integrity"]["store"], "${STATE}/pins.json");
        let off = load("[integrity]\nmode = \"off\"\n", &[]).expect("loads");
        assert!(!off.integrity.enabled());
    }

    #[test]
    fn environment_overrides_reach_the_section() {
        // Read only by this test (and harmless to the one other test that
        // reads the whole environment).
        std::env::set_var("MANIFOLD_INTEGRITY__NEW_TOOLS", "quarantine");
        let cfg = crate::load_str(Path::new("g.toml"), "", |_| None, Env::raw());
        std::env::remove_var("MANIFOLD_INTEGRITY__NEW_TOOLS");
        assert_eq!(
            cfg.expect("loads").integrity.new_tools,
            NewTools::Quarantine
        );
    }

    #[test]
    fn bad_values_are_refused_naming_the_key() {
        for (text, want) in [
            ("[integrity]\nmode = \"block\"\n", "unknown variant `block`"),
            (
                "[integrity]\nnew_tools = \"deny\"\n",
                "unknown variant `deny`",
            ),
            (
                "[integrity]\ntrust_on_first_use = \"yes\"\n",
                "trust_on_first_use",
            ),
            ("[integrity]\nstores = \"x\"\n", "unknown field `stores`"),
            ("[integrity]\nmode = \"quarantine\"\n", "integrity.store"),
            ("[integrity]\nstore = \"\"\n", "must not be empty"),
            ("[integrity]\nstore = \"${NOPE_UNSET}\"\n", "NOPE_UNSET"),
        ] {
            let e = load(text, &[]).expect_err(text);
            assert!(e.contains(want), "{text}: {e}");
        }
    }
}
