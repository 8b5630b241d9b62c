//! Each caller's own account at an upstream (`user_oauth`, `user_secret`),
//! at rest: one sealed file per (upstream, principal) under
//! `<[credentials] store>/accounts/<upstream>/`, named by the SHA-256 of the
//! principal, mode 0600, AES-256-GCM under the store key with the upstream and
//! the principal as associated data.
//!
//! Invariants: a file opens only for the upstream and principal it was
//! written for (a file copied under another principal's name does not
//! authenticate); a file is replaced whole (written aside, then renamed);
//! nothing here formats a token or a secret into a log line, an error or a
//! `Debug` string ([`Account`]'s `Debug` leaves them out); listing never
//! returns a secret ([`Summary`]).
//!
//! Not here: getting the tokens (`connect`), deciding who may connect (the
//! server's connect pages).

use manifold_foundation::aead::Keys;
use serde::{Deserialize, Serialize};
use sha2::Digest;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::CredentialError;
use crate::store::Record;

/// What an account file starts with (the format's version).
const MAGIC: &str = "manifold-account-v1\n";
/// The key's own domain (manifold-foundation `aead`): an account file never
/// opens as a token store file, nor the reverse.
const KEY_DOMAIN: &str = "manifold account store v1";
/// The file name suffix of an account.
const SUFFIX: &str = "account";
/// The largest account file read (a record is well under 64 KiB).
pub const MAX_ACCOUNT_FILE: u64 = 256 * 1024;

/// One caller's account at one upstream.
#[derive(Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Account {
    /// The principal it belongs to (the audit name: `jwt:corp:alice`).
    pub principal: String,
    pub upstream: String,
    /// When it was connected (seconds since the epoch).
    pub connected_at: u64,
    /// When its tokens were last refreshed.
    #[serde(default)]
    pub refreshed_at: Option<u64>,
    /// `user_oauth`: the tokens.
    #[serde(default)]
    pub tokens: Option<Record>,
    /// `user_secret`: the key.
    #[serde(default)]
    pub secret: Option<String>,
}

impl std::fmt::Debug for Account {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Account")
            .field("principal", &self.principal)
            .field("upstream", &self.upstream)
            .field("connected_at", &self.connected_at)
            .field("kind", &self.kind())
            .finish_non_exhaustive()
    }
}

impl Account {
    /// `oauth` or `secret`.
    pub fn kind(&self) -> &'static str {
        if self.tokens.is_some() {
            "oauth"
        } else {
            "secret"
        }
    }

    /// What may be shown of it: never the secret.
    pub fn summary(&self) -> Summary {
        Summary {
            upstream: self.upstream.clone(),
            principal: self.principal.clone(),
            kind: self.kind(),
            connected_at: self.connected_at,
            refreshed_at: self.refreshed_at,
            expires_at: self.tokens.as_ref().and_then(|t| t.expires_at),
            refreshable: self
                .tokens
                .as_ref()
                .is_some_and(|t| t.refresh_token.is_some()),
            scope: self.tokens.as_ref().and_then(|t| t.scope.clone()),
        }
    }
}

/// Who is connected to what, since when, until when: never a secret.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Summary {
    pub upstream: String,
    pub principal: String,
    pub kind: &'static str,
    pub connected_at: u64,
    pub refreshed_at: Option<u64>,
    /// When its access token expires (`user_oauth` with a lifetime).
    pub expires_at: Option<u64>,
    /// Whether a refresh token is held.
    pub refreshable: bool,
    pub scope: Option<String>,
}

/// The accounts of one deployment (every upstream).
#[derive(Clone)]
pub struct AccountStore {
    dir: PathBuf,
    keys: Arc<Keys>,
}

impl std::fmt::Debug for AccountStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AccountStore")
            .field("dir", &self.dir)
            .finish()
    }
}

/// The file stem of `principal`'s account: the SHA-256 of its name.
fn digest(principal: &str) -> String {
    hex::encode(sha2::Sha256::digest(principal.as_bytes()))
}

/// What a file is sealed to: its upstream and its owner's digest (so a file
/// moved under another principal's name, or another upstream, does not open).
fn aad(upstream: &str, owner: &str) -> Vec<u8> {
    format!("{upstream}\n{owner}").into_bytes()
}

impl AccountStore {
    pub fn new(settings: &manifold_config::credentials::StoreSettings) -> AccountStore {
        AccountStore {
            dir: settings.dir.join("accounts"),
            keys: Arc::new(Keys::new::<&str>(KEY_DOMAIN, &settings.key, &[])),
        }
    }

    fn path(&self, upstream: &str, principal: &str) -> PathBuf {
        self.dir
            .join(upstream)
            .join(format!("{}.{SUFFIX}", digest(principal)))
    }

    /// The account of `principal` at `upstream`; `None` when there is none.
    pub fn load(
        &self,
        upstream: &str,
        principal: &str,
    ) -> Result<Option<Account>, CredentialError> {
        let path = self.path(upstream, principal);
        match read(&path)? {
            None => Ok(None),
            Some(text) => self
                .open_as(&path, &text, upstream, &digest(principal))
                .map(Some),
        }
    }

    /// Opens the text of `path`, sealed for `upstream` and the principal
    /// whose digest is `owner`.
    fn open_as(
        &self,
        path: &Path,
        text: &str,
        upstream: &str,
        owner: &str,
    ) -> Result<Account, CredentialError> {
        let corrupt = |why: &str| {
            CredentialError::Store(format!(
                "{} cannot be opened ({why}): a different [credentials] key, or a damaged or moved file; the caller connects again",
                path.display()
            ))
        };
        let plain =
            crate::sealed_file::open(&self.keys, MAGIC, &aad(upstream, owner), text, &corrupt)?;
        let a: Account = serde_json::from_slice(&plain).map_err(|_| corrupt("not an account"))?;
        if a.upstream != upstream || digest(&a.principal) != owner {
            return Err(corrupt("written for another account"));
        }
        Ok(a)
    }

    /// Replaces the account of `a.principal` at `a.upstream`.
    pub fn save(&self, a: &Account) -> Result<(), CredentialError> {
        let data = serde_json::to_vec(a).map_err(|e| CredentialError::Store(e.to_string()))?;
        let aad = aad(&a.upstream, &digest(&a.principal));
        crate::sealed_file::write(
            &self.keys,
            MAGIC,
            &aad,
            &self.path(&a.upstream, &a.principal),
            data,
        )
    }

    /// Where a store every replica shares keeps `principal`'s account at
    /// `upstream`: `<upstream>/<sha256(principal)>` (no name in clear).
    pub fn shared_field(upstream: &str, principal: &str) -> String {
        format!("{upstream}/{}", digest(principal))
    }

    /// The sealed text of `principal`'s account at `upstream` (what a shared
    /// store holds), if there is one here.
    pub fn sealed_text(
        &self,
        upstream: &str,
        principal: &str,
    ) -> Result<Option<String>, CredentialError> {
        read(&self.path(upstream, principal))
    }

    /// Keeps `text` from a shared store as `principal`'s account at
    /// `upstream`, once it opens for exactly them (a value moved under
    /// another field does not).
    pub fn adopt(
        &self,
        upstream: &str,
        principal: &str,
        text: &str,
    ) -> Result<Account, CredentialError> {
        let path = self.path(upstream, principal);
        let a = self.open_as(&path, text, upstream, &digest(principal))?;
        crate::sealed_file::write_text(&path, text)?;
        Ok(a)
    }

    /// Forgets the account of `principal` at `upstream`; whether there was one.
    pub fn remove(&self, upstream: &str, principal: &str) -> Result<bool, CredentialError> {
        let path = self.path(upstream, principal);
        match std::fs::remove_file(&path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(CredentialError::Store(format!(
                "cannot remove {}: {e}",
                path.display()
            ))),
        }
    }

    /// Every account (of `upstream`, when given), sorted by upstream then
    /// principal; files that cannot be opened are reported beside them.
    pub fn list(&self, upstream: Option<&str>) -> (Vec<Summary>, Vec<String>) {
        let mut found = Vec::new();
        let mut problems = Vec::new();
        let upstreams: Vec<String> = match upstream {
            Some(u) => vec![u.to_string()],
            None => std::fs::read_dir(&self.dir)
                .map(|d| {
                    d.filter_map(|e| e.ok())
                        .filter(|e| e.path().is_dir())
                        .filter_map(|e| e.file_name().into_string().ok())
                        .collect()
                })
                .unwrap_or_default(),
        };
        for up in upstreams {
            let Ok(entries) = std::fs::read_dir(self.dir.join(&up)) else {
                continue;
            };
            for e in entries.filter_map(|e| e.ok()) {
                let path = e.path();
                if path.extension().and_then(|x| x.to_str()) != Some(SUFFIX) {
                    continue;
                }
                match self.open_listed(&path, &up) {
                    Ok(a) => found.push(a.summary()),
                    Err(err) => problems.push(err.to_string()),
                }
            }
        }
        found.sort_by(|a, b| (&a.upstream, &a.principal).cmp(&(&b.upstream, &b.principal)));
        (found, problems)
    }

    /// An account found by listing: its file name says whose it is.
    fn open_listed(&self, path: &Path, upstream: &str) -> Result<Account, CredentialError> {
        let text = read(path)?.unwrap_or_default();
        let stem = path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or_default();
        self.open_as(path, &text, upstream, stem)
    }
}

/// A file's text, bounded by [`MAX_ACCOUNT_FILE`]; `None` when absent.
fn read(path: &Path) -> Result<Option<String>, CredentialError> {
    use std::io::Read;
    let f = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(CredentialError::Store(format!(
                "cannot read {}: {e}",
                path.display()
            )))
        }
    };
    let mut text = String::new();
    f.take(MAX_ACCOUNT_FILE)
        .read_to_string(&mut text)
        .map_err(|e| CredentialError::Store(format!("cannot read {}: {e}", path.display())))?;
    Ok(Some(text))
}

#[cfg(test)]
mod tests {
    use super::*;
    use manifold_config::credentials::StoreSettings;

    fn store(dir: &Path, key: &str) -> AccountStore {
        AccountStore::new(&StoreSettings {
            dir: dir.to_path_buf(),
            key: key.into(),
            connect_ttl: manifold_config::accounts::DEFAULT_CONNECT_TTL,
            sign_in: None,
        })
    }

    #[test]
    fn accounts_are_sealed_per_principal_and_listed_without_secrets() {
        let dir = std::env::temp_dir().join(format!("mf-accounts-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let s = store(&dir, &"k".repeat(32));
        let alice = Account {
            principal: "jwt:corp:alice".into(),
            upstream: "gh".into(),
            connected_at: 1,
            secret: Some("secret-of-alice".into()),
            ..Account::default()
        };
        let bob = Account {
            principal: "jwt:corp:bob".into(),
            secret: Some("secret-of-bob".into()),
            ..alice.clone()
        };
        s.save(&alice).expect("saved");
        s.save(&bob).expect("saved");
        assert_eq!(
            s.load("gh", "jwt:corp:alice").expect("read"),
            Some(alice.clone())
        );
        assert_eq!(s.load("gh", "jwt:corp:carol").expect("read"), None);
        assert!(
            !format!("{alice:?}").contains("secret-of"),
            "Debug shows no secret"
        );
        // Nothing in clear on disk.
        let path = s.path("gh", "jwt:corp:alice");
        let text = std::fs::read_to_string(&path).expect("file");
        assert!(
            !text.contains("secret-of") && !text.contains("alice"),
            "{text}"
        );
        // A file moved onto another principal's name, or another upstream's, does not open.
        std::fs::copy(&path, s.path("gh", "jwt:corp:bob")).expect("copy");
        assert!(s.load("gh", "jwt:corp:bob").is_err());
        std::fs::create_dir_all(dir.join("accounts/other")).expect("dir");
        std::fs::copy(&path, s.path("other", "jwt:corp:alice")).expect("copy");
        assert!(s.load("other", "jwt:corp:alice").is_err());
        // Another key opens nothing.
        assert!(store(&dir, &"x".repeat(32))
            .load("gh", "jwt:corp:alice")
            .is_err());
        // Listing: the good ones, and the problems beside them.
        s.save(&bob).expect("saved again");
        let (found, problems) = s.list(None);
        let who: Vec<(&str, &str)> = found
            .iter()
            .map(|a| (a.upstream.as_str(), a.principal.as_str()))
            .collect();
        assert_eq!(who, [("gh", "jwt:corp:alice"), ("gh", "jwt:corp:bob")]);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(!serde_json::to_string(&found)
            .expect("json")
            .contains("secret-of"));
        assert!(s.remove("gh", "jwt:corp:alice").expect("removed"));
        assert!(!s.remove("gh", "jwt:corp:alice").expect("gone"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
