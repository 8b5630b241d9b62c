//! Logs every replica of a deployment shares, in Redis: entries appended by
//! one replica, read by all, each signed with the deployment's keys (a
//! writer of the Redis server without them cannot write an entry of its own;
//! the signature covers the entry, not its ID, so it can append a copy of an
//! authentic one again). Signed, not sealed: whoever reads Redis reads them. `[integrity]`
//! shares its approvals and revocations this way (the log `pins`), so a
//! replica that was down when an approval was made applies it when it comes
//! back.
//!
//! Keys: `<channel>:log:<name>` (a list of `ID SIGNED-ENTRY`, the last
//! [`MAX_SHARED_ENTRIES`] kept) and `<channel>:log:<name>:seq` (the last ID).
//! Entries are signed under `<channel>:log:<name>`, never the channel itself,
//! so a bus message cannot pass for a log entry, nor the reverse.
//!
//! Invariants: an append is one script (numbered and trimmed atomically);
//! every operation is bounded by `OP_TIMEOUT`; an entry over
//! `MAX_MESSAGE_BYTES` is refused; an entry that fails its signature is
//! skipped and counted, never returned.
//!
//! Not here: what the entries mean (the server).

use super::Bus;
use crate::auth::Rejection;
use crate::{ClusterError, MAX_MESSAGE_BYTES};
use std::sync::atomic::Ordering;

/// Entries a shared log keeps (the oldest go first).
pub const MAX_SHARED_ENTRIES: usize = 1000;

/// KEYS: the list, the counter. ARGV: the signed entry, how many to keep.
const APPEND: &str = r#"
local id = redis.call('INCR', KEYS[2])
redis.call('RPUSH', KEYS[1], id .. ' ' .. ARGV[1])
redis.call('LTRIM', KEYS[1], -tonumber(ARGV[2]), -1)
return id
"#;

impl Bus {
    fn log_key(&self, name: &str) -> String {
        format!("{}:log:{name}", self.channel)
    }

    /// Appends `body` to the log `name`; returns its ID.
    pub async fn append_shared(&self, name: &str, body: &str) -> Result<u64, ClusterError> {
        let key = self.log_key(name);
        let wire = self.keys.sign(&key, body);
        if wire.len() > MAX_MESSAGE_BYTES {
            return Err(ClusterError::TooLarge(wire.len()));
        }
        let mut conn = self.conn()?;
        let id: i64 = self
            .bounded(
                redis::Script::new(APPEND)
                    .key(&key)
                    .key(format!("{key}:seq"))
                    .arg(wire)
                    .arg(MAX_SHARED_ENTRIES)
                    .invoke_async(&mut conn),
            )
            .await?;
        Ok(u64::try_from(id).unwrap_or(0))
    }

    /// The ID of the log's last entry (`0`: none yet).
    pub async fn shared_last(&self, name: &str) -> Result<u64, ClusterError> {
        let mut conn = self.conn()?;
        let seq: Option<u64> = self
            .bounded(
                redis::cmd("GET")
                    .arg(format!("{}:seq", self.log_key(name)))
                    .query_async(&mut conn),
            )
            .await?;
        Ok(seq.unwrap_or(0))
    }

    /// The log's entries after ID `after`, oldest first, as signed by a
    /// replica of this deployment (others are skipped and counted).
    pub async fn shared_since(
        &self,
        name: &str,
        after: u64,
    ) -> Result<Vec<(u64, String)>, ClusterError> {
        let key = self.log_key(name);
        let mut conn = self.conn()?;
        let all: Vec<Vec<u8>> = self
            .bounded(
                redis::cmd("LRANGE")
                    .arg(&key)
                    .arg(0)
                    .arg(-1)
                    .query_async(&mut conn),
            )
            .await?;
        let mut out = Vec::new();
        for raw in all {
            let Some((id, wire)) = split_id(&raw) else {
                self.refuse(Rejection::Unreadable);
                continue;
            };
            if id <= after {
                continue;
            }
            match self.keys.open(&key, wire) {
                Ok(body) => match std::str::from_utf8(&body) {
                    Ok(text) => out.push((id, text.to_string())),
                    Err(_) => self.refuse(Rejection::Unreadable),
                },
                Err(r) => self.refuse(r),
            }
        }
        Ok(out)
    }

    fn refuse(&self, r: Rejection) {
        let n = self.rejected[r.index()].fetch_add(1, Ordering::Relaxed) + 1;
        if n.is_power_of_two() {
            tracing::warn!(
                reason = r.as_str(),
                count = n,
                "a shared log entry was refused"
            );
        }
    }
}

/// `ID ENTRY` → (ID, ENTRY).
fn split_id(raw: &[u8]) -> Option<(u64, &[u8])> {
    let space = raw.iter().position(|b| *b == b' ')?;
    let id = std::str::from_utf8(&raw[..space]).ok()?.parse().ok()?;
    Some((id, &raw[space + 1..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_is_its_id_then_the_signed_text() {
        assert_eq!(split_id(b"12 v1.abc.{}"), Some((12, &b"v1.abc.{}"[..])));
        assert_eq!(split_id(b"x v1"), None);
        assert_eq!(split_id(b"12"), None);
    }
}
