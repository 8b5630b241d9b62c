//! One sealed file of the credential store: `<magic line><base64 of the
//! AES-256-GCM ciphertext>\n`, bound to its associated data, mode 0600,
//! written aside and renamed into place (a crash leaves the old file or the
//! new one). Shared by the upstream token records (`store`) and callers'
//! accounts (`accounts`).
//!
//! Invariants: a file is never opened without its magic line and a tag that
//! authenticates it for its associated data; nothing here sees what the
//! plaintext means or logs it.
//!
//! Not here: the records' formats and paths (`store`, `accounts`).

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use manifold_foundation::aead::{Keys, OpenError, SealError};
use std::path::Path;

use crate::error::CredentialError;

/// Seals `data` for `aad` and writes it to `path` (its directory made).
pub(crate) fn write(
    keys: &Keys,
    magic: &str,
    aad: &[u8],
    path: &Path,
    data: Vec<u8>,
) -> Result<(), CredentialError> {
    let raw = keys.seal(aad, data).map_err(|e| match e {
        SealError::NoRandomness => CredentialError::Store("no OS randomness".into()),
        SealError::Refused => CredentialError::Store("sealing failed".into()),
    })?;
    write_text(path, &format!("{magic}{}\n", STANDARD.encode(raw)))
}

/// Writes `text` (a sealed file's whole text, already checked by the
/// caller) to `path`, aside then renamed.
pub(crate) fn write_text(path: &Path, text: &str) -> Result<(), CredentialError> {
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let fail = |e: std::io::Error| {
        CredentialError::Store(format!("cannot write to {}: {e}", dir.display()))
    };
    std::fs::create_dir_all(&dir).map_err(fail)?;
    // Unique per write: replicas sharing a store may all be pid 1.
    let mut tag = [0u8; 6];
    let _ = getrandom::fill(&mut tag);
    let mut aside = path.as_os_str().to_owned();
    aside.push(format!(".{}.{}", std::process::id(), hex::encode(tag)));
    let aside = std::path::PathBuf::from(aside);
    write_private(&aside, text.as_bytes()).map_err(fail)?;
    std::fs::rename(&aside, path).map_err(fail)
}

/// The plaintext of a sealed file's `text` for `aad`; `corrupt` says why not.
pub(crate) fn open(
    keys: &Keys,
    magic: &str,
    aad: &[u8],
    text: &str,
    corrupt: &dyn Fn(&str) -> CredentialError,
) -> Result<Vec<u8>, CredentialError> {
    let body = text
        .strip_prefix(magic)
        .ok_or_else(|| corrupt("not a file of this kind"))?;
    let raw = STANDARD
        .decode(body.trim())
        .map_err(|_| corrupt("not base64"))?;
    keys.open(aad, &raw).map_err(|e| match e {
        OpenError::TooShort => corrupt("too short"),
        OpenError::NotAuthentic => corrupt("authentication failed"),
    })
}

#[cfg(unix)]
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    f.write_all(bytes)?;
    f.sync_all()
}

#[cfg(not(unix))]
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    std::fs::write(path, bytes)
}
