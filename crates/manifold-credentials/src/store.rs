//! Tokens at rest: one file per upstream under `[credentials] store`, mode
//! 0600, AES-256-GCM under the SHA-256 of a domain label and the key.
//!
//! Invariants: a file is replaced whole (written aside, then renamed), so a
//! crash leaves the old record or the new one; a file that cannot be opened
//! with the key is an error for that upstream only, never a silent empty
//! store; nothing here logs a token.
//!
//! Not here: what the tokens are for (`source`, `login`).

use manifold_foundation::aead::Keys;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::sync::Arc;

use crate::error::CredentialError;
use crate::limits::REFRESH_MARGIN;

/// What a store file starts with (the format's version).
const MAGIC: &str = "manifold-tokens-v1\n";
/// The key's own domain (manifold-foundation `aead`).
const KEY_DOMAIN: &str = "manifold token store v1";

/// What Manifold keeps for one upstream.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Record {
    pub access_token: String,
    #[serde(default)]
    pub refresh_token: Option<String>,
    /// Seconds since the epoch; `None`: the server gave no lifetime.
    #[serde(default)]
    pub expires_at: Option<u64>,
    /// When it was issued (seconds since the epoch), to refresh short-lived
    /// tokens at half their life rather than a fixed margin before the end.
    #[serde(default)]
    pub obtained_at: Option<u64>,
    /// The scopes granted (or asked for, when the server did not say).
    #[serde(default)]
    pub scope: Option<String>,
    /// The client it was issued to, and how it authenticates at the token
    /// endpoint, for refreshing.
    pub client_id: String,
    #[serde(default)]
    pub client_secret: Option<String>,
    pub auth_method: String,
    pub token_endpoint: String,
    /// The `resource` (RFC 8707) it was issued for.
    pub resource: String,
    /// The issuer that issued it: the one `manifold login` used (the pinned
    /// `auth.issuer`, or the one the upstream's resource metadata named, as
    /// it printed). `serve` uses the record only with that issuer, and a
    /// token from one is never refreshed at another.
    #[serde(default)]
    pub authorization_server: Option<String>,
    /// Scopes a 403 `insufficient_scope` asked for since: the next `manifold
    /// login` asks for them too.
    #[serde(default)]
    pub step_up: Option<String>,
}

impl Record {
    /// Whether the access token is good for a while yet: more than
    /// [`REFRESH_MARGIN`] (or half its lifetime, for a short-lived one)
    /// before it expires.
    pub fn fresh(&self) -> bool {
        let Some(end) = self.expires_at else {
            return true;
        };
        let life = self.obtained_at.map_or(u64::MAX, |t| end.saturating_sub(t));
        let margin = REFRESH_MARGIN.as_secs().min(life / 2);
        end > manifold_foundation::time::unix_now() + margin
    }
}

/// The store of one deployment.
#[derive(Clone)]
pub struct Store {
    dir: PathBuf,
    keys: Arc<Keys>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("dir", &self.dir).finish()
    }
}

impl Store {
    pub fn new(settings: &manifold_config::credentials::StoreSettings) -> Store {
        Store {
            dir: settings.dir.clone(),
            keys: Arc::new(Keys::new::<&str>(KEY_DOMAIN, &settings.key, &[])),
        }
    }

    fn path(&self, upstream: &str) -> PathBuf {
        self.dir.join(format!("{upstream}.tokens"))
    }

    /// The record of `upstream`; `None` when there is none yet.
    pub fn load(&self, upstream: &str) -> Result<Option<Record>, CredentialError> {
        let path = self.path(upstream);
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => {
                return Err(CredentialError::Store(format!(
                    "cannot read {}: {e}",
                    path.display()
                )))
            }
        };
        let corrupt = |why: &str| {
            CredentialError::Store(format!(
                "{} cannot be opened ({why}): a different [credentials] key, or a damaged file; run `manifold login {upstream}` again",
                path.display()
            ))
        };
        let plain =
            crate::sealed_file::open(&self.keys, MAGIC, upstream.as_bytes(), &text, &corrupt)?;
        serde_json::from_slice(&plain)
            .map(Some)
            .map_err(|_| corrupt("not a record"))
    }

    /// Replaces the record of `upstream`.
    pub fn save(&self, upstream: &str, record: &Record) -> Result<(), CredentialError> {
        let data = serde_json::to_vec(record).map_err(|e| CredentialError::Store(e.to_string()))?;
        crate::sealed_file::write(
            &self.keys,
            MAGIC,
            upstream.as_bytes(),
            &self.path(upstream),
            data,
        )
    }
}
#[cfg(test)]
mod tests {
    use super::*;
    use manifold_config::credentials::StoreSettings;

    fn store(dir: &std::path::Path, key: &str) -> Store {
        Store::new(&StoreSettings {
            dir: dir.to_path_buf(),
            key: key.into(),
            connect_ttl: manifold_config::accounts::DEFAULT_CONNECT_TTL,
            sign_in: None,
        })
    }

    #[test]
    fn records_survive_a_reopen_and_refuse_another_key() {
        let dir = std::env::temp_dir().join(format!("mf-store-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let a = store(&dir, "k".repeat(32).as_str());
        assert_eq!(a.load("up").expect("empty"), None);
        let r = Record {
            access_token: "access-token-in-plain-text".into(),
            refresh_token: Some("refresh-token-in-plain-text".into()),
            client_id: "c".into(),
            auth_method: "none".into(),
            token_endpoint: "http://127.0.0.1/token".into(),
            resource: "http://127.0.0.1/mcp".into(),
            ..Record::default()
        };
        a.save("up", &r).expect("saved");
        assert_eq!(
            store(&dir, "k".repeat(32).as_str())
                .load("up")
                .expect("read"),
            Some(r)
        );
        let text = std::fs::read_to_string(dir.join("up.tokens")).expect("file");
        assert!(!text.contains("plain-text"), "{text}");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.join("up.tokens"))
                .expect("meta")
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let e = store(&dir, "x".repeat(32).as_str())
            .load("up")
            .expect_err("wrong key");
        assert!(e.to_string().contains("manifold login up"), "{e}");
        // A record is bound to its upstream's name.
        std::fs::copy(dir.join("up.tokens"), dir.join("other.tokens")).expect("copy");
        assert!(a.load("other").is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
