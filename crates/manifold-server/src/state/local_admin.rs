//! The local admin token: the credential of the control endpoints and the
//! console when `[admin]` names none (no `[[admin.tokens]]`, no `who`).
//! Loopback is not a credential — the riskiest local process is the agent
//! itself, which a prompt injection can steer to `POST /pins/approve`.
//!
//! - The token is 256 random bits, kept in `[admin] token_file` (see
//!   `AdminSettings::token_file`), created readable and writable by the
//!   gateway's user only (0600, in a 0700 directory it creates), and reused
//!   across restarts; a file others may read or write, another user's file,
//!   or a symbolic link is refused, not used. It separates users: a process
//!   running as the gateway's user can read it (give the gateway a user of
//!   its own where agents run).
//! - The one-time login link's code: random, printed once by `serve`,
//!   exchanged for a console login at most once and within
//!   [`LOGIN_LINK_LIFETIME`], then void.
//!
//! Invariants: the token and the code are compared as SHA-256 digests in
//! constant time, as `[[admin.tokens]]` are (`manifold_policy::find_key`);
//! neither the token nor the code is ever logged.
//!
//! Not here: checking a request (`admin::auth`), the console's login
//! (`admin::console::session`).

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use manifold_config::auth::ApiKey;
use parking_lot::Mutex;
use sha2::{Digest, Sha256};

/// How long the login link `serve` prints can be used.
pub const LOGIN_LINK_LIFETIME: Duration = Duration::from_secs(15 * 60);

/// The token's length in hex digits (256 bits).
const TOKEN_HEX_LEN: usize = 64;

/// Why the local admin token cannot be had.
#[derive(Debug, thiserror::Error)]
pub enum LocalAdminError {
    #[error(
        "no [admin] credentials are configured and there is nowhere to keep the local admin token: \
         set [admin] token_file (or [audit] path, or HOME), or configure [[admin.tokens]]"
    )]
    NoPlace,
    #[error("the local admin token file {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "the local admin token file {path} may be read or written by other users (mode {mode:o}): \
         run `chmod 600 {path}` or remove it to make a new token"
    )]
    Exposed { path: PathBuf, mode: u32 },
    #[error(
        "the local admin token file {path} does not hold a token (64 hex digits): \
         remove it to make a new one"
    )]
    NotAToken { path: PathBuf },
    #[error(
        "the local admin token file {path} belongs to another user (uid {owner}): a token \
         someone else wrote is no credential; remove it to make a new one"
    )]
    NotOwned { path: PathBuf, owner: u32 },
    #[error("no OS randomness to make the local admin token: {0}")]
    NoRandomness(String),
}

/// The token in `path`, made (with the file) when there is none.
pub fn load_or_create(path: &Path) -> Result<String, LocalAdminError> {
    let io = |source| LocalAdminError::Io {
        path: path.to_path_buf(),
        source,
    };
    match read(path) {
        Err(LocalAdminError::Io { source, .. })
            if source.kind() == std::io::ErrorKind::NotFound => {}
        other => return other,
    }
    let mut raw = [0u8; TOKEN_HEX_LEN / 2];
    getrandom::fill(&mut raw).map_err(|e| LocalAdminError::NoRandomness(e.to_string()))?;
    let token = hex::encode(raw);
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        let mut b = std::fs::DirBuilder::new();
        b.recursive(true);
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o700);
        b.create(dir).map_err(io)?;
    }
    let mut o = std::fs::OpenOptions::new();
    o.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut o, 0o600);
    match o.open(path) {
        Ok(mut f) => {
            f.write_all(format!("{token}\n").as_bytes()).map_err(io)?;
            f.sync_all().map_err(io)?;
            Ok(token)
        }
        // Another process made it first: use theirs.
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => read(path),
        Err(e) => Err(io(e)),
    }
}

/// The token in `path`, if the file is private and holds one.
pub fn read(path: &Path) -> Result<String, LocalAdminError> {
    let io = |source| LocalAdminError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut open = std::fs::OpenOptions::new();
    open.read(true);
    // Not through a symbolic link: the file itself must be private.
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(&mut open, nix::libc::O_NOFOLLOW);
    let mut f = open.open(path).map_err(io)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        let meta = f.metadata().map_err(io)?;
        let owner = meta.uid();
        if owner != nix::unistd::geteuid().as_raw() {
            return Err(LocalAdminError::NotOwned {
                path: path.to_path_buf(),
                owner,
            });
        }
        let mode = meta.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            return Err(LocalAdminError::Exposed {
                path: path.to_path_buf(),
                mode,
            });
        }
    }
    let mut text = String::new();
    // One token and a newline; anything longer is not one.
    (&mut f).take(256).read_to_string(&mut text).map_err(io)?;
    let token = text.trim();
    if token.len() != TOKEN_HEX_LEN || !token.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(LocalAdminError::NotAToken {
            path: path.to_path_buf(),
        });
    }
    Ok(token.to_ascii_lowercase())
}

/// The local admin credential of a running gateway.
pub(crate) struct LocalAdmin {
    /// The token as `[[admin.tokens]]` keep theirs: a digest, checked with
    /// `manifold_policy::find_key`.
    key: ApiKey,
    pub path: PathBuf,
    /// The login link's code (printed), its digest, and when it was made;
    /// `None` once used.
    code: Mutex<Option<(String, ApiKey, Instant)>>,
}

/// `secret` kept as a digest, named `name`.
fn key_of(name: &str, secret: &str) -> ApiKey {
    ApiKey {
        name: name.to_string(),
        sha256: Sha256::digest(secret.as_bytes()).into(),
        groups: Vec::new(),
        scopes: Vec::new(),
    }
}

/// Whether `sent` is the secret of `key` (compared in constant time).
fn is(key: &ApiKey, sent: &str) -> bool {
    manifold_policy::find_key(std::slice::from_ref(key), sent).is_some()
}

impl LocalAdmin {
    /// The credential for `token` (kept in `path`), with a fresh login code.
    pub(crate) fn new(token: &str, path: PathBuf) -> Result<LocalAdmin, LocalAdminError> {
        let mut raw = [0u8; 16];
        getrandom::fill(&mut raw).map_err(|e| LocalAdminError::NoRandomness(e.to_string()))?;
        let code = hex::encode(raw);
        let code_key = key_of("login-link", &code);
        Ok(LocalAdmin {
            key: key_of("local", token),
            path,
            code: Mutex::new(Some((code, code_key, Instant::now()))),
        })
    }

    /// Whether `token` is the local admin token.
    pub(crate) fn accepts(&self, token: &str) -> bool {
        is(&self.key, token.trim())
    }

    /// The login link's code, while it is unused and young.
    pub(crate) fn login_code(&self) -> Option<String> {
        let code = self.code.lock();
        code.as_ref()
            .filter(|(_, _, made)| made.elapsed() < LOGIN_LINK_LIFETIME)
            .map(|(c, _, _)| c.clone())
    }

    /// Uses up the login code if `sent` is it (and it is young).
    pub(crate) fn redeem(&self, sent: &str) -> bool {
        let mut code = self.code.lock();
        let ok = code
            .as_ref()
            .is_some_and(|(_, key, made)| made.elapsed() < LOGIN_LINK_LIFETIME && is(key, sent));
        if ok {
            *code = None;
        }
        ok
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!(
            "manifold-local-admin-{name}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn the_token_is_made_private_once_and_reused() {
        let dir = scratch("made");
        let path = dir.join("sub/admin-token");
        let t = load_or_create(&path).expect("made");
        assert_eq!(t.len(), 64);
        assert_eq!(load_or_create(&path).expect("reused"), t);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600);
            let dmode = std::fs::metadata(path.parent().unwrap())
                .unwrap()
                .permissions()
                .mode()
                & 0o777;
            assert_eq!(dmode, 0o700);
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[cfg(unix)]
    #[test]
    fn a_readable_or_malformed_file_is_refused_not_used() {
        use std::os::unix::fs::PermissionsExt;
        let dir = scratch("exposed");
        let path = dir.join("admin-token");
        load_or_create(&path).expect("made");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let e = load_or_create(&path).expect_err("exposed");
        assert!(matches!(e, LocalAdminError::Exposed { .. }), "{e}");
        assert!(e.to_string().contains("chmod 600"), "{e}");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        std::fs::write(&path, "hunter2\n").unwrap();
        let e = load_or_create(&path).expect_err("not a token");
        assert!(matches!(e, LocalAdminError::NotAToken { .. }), "{e}");
        // A symbolic link to a private file is not the private file.
        let real = dir.join("real");
        load_or_create(&real).expect("made");
        let link = dir.join("link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let e = read(&link).expect_err("a link");
        assert!(matches!(e, LocalAdminError::Io { .. }), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_token_is_checked_by_digest_and_the_code_works_once() {
        let token = "ab".repeat(32);
        let l = LocalAdmin::new(&token, PathBuf::from("x")).expect("randomness");
        assert!(l.accepts(&token));
        assert!(!l.accepts(&"ab".repeat(31)));
        assert!(!l.accepts(""));
        let code = l.login_code().expect("a code");
        assert!(!l.redeem("nope"));
        assert!(l.redeem(&code));
        assert!(!l.redeem(&code), "a code is void once used");
        assert_eq!(l.login_code(), None);
    }
}
