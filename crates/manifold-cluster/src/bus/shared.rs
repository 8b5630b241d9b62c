//! Logs every replica of a deployment shares, in Redis: entries appended by
//! one replica, read by all, each sealed with the deployment's keys together
//! with its ID (its place in the log). A reader of the Redis server without
//! the keys sees their number and length only; a writer cannot write an entry
//! of its own, nor put a copy of an authentic one at another place: a copy
//! under a new ID fails its ID check, a copy under its own ID comes after a
//! higher one. It can still withhold entries (delete or trim them).
//! `[integrity]` shares its approvals and revocations this way (the log
//! `pins`), so a replica that was down when an approval was made applies it
//! when it comes back.
//!
//! Keys: `<channel>:log:<name>` (a list of `ID SEALED-ENTRY`, the last
//! [`MAX_SHARED_ENTRIES`] kept) and `<channel>:log:<name>:seq` (the last ID).
//! An entry's sealed text is `ID ENTRY`, sealed as bus messages are (`mb2.`)
//! with `<channel>:log:<name>` as associated data, never the channel itself,
//! so a bus message cannot pass for a log entry, nor the reverse. (An entry
//! signed in clear, `mb1.`, opens too; only the version before wrote them,
//! and without their ID, so they are refused as unreadable.)
//!
//! Invariants: an append seals the next ID, then appends only if that is still
//! the next one (one script; numbered and trimmed atomically), and seals again
//! when another replica appended first, at most [`APPEND_ATTEMPTS`] times;
//! every operation is bounded by `OP_TIMEOUT`; an entry over
//! `MAX_MESSAGE_BYTES` is refused; an entry that does not open, sealed
//! for another ID, or whose ID is not above every one before it is skipped and
//! counted, never returned.
//!
//! Not here: what the entries mean (the server).

use super::Bus;
use crate::auth::Rejection;
use crate::{ClusterError, MAX_MESSAGE_BYTES};
use std::sync::atomic::Ordering;

/// Entries a shared log keeps (the oldest go first).
pub const MAX_SHARED_ENTRIES: usize = 1000;

/// Attempts to append while other replicas append first.
pub const APPEND_ATTEMPTS: usize = 16;

/// KEYS: the list, the counter. ARGV: the ID the entry was sealed for, the
/// sealed entry, how many to keep. Returns that ID when it was appended, or
/// `-N` when the last ID is `N` (and the entry was sealed for another).
const APPEND: &str = r#"
local last = tonumber(redis.call('GET', KEYS[2]) or '0')
local id = tonumber(ARGV[1])
if id ~= last + 1 then return -last end
redis.call('SET', KEYS[2], id)
redis.call('RPUSH', KEYS[1], id .. ' ' .. ARGV[2])
redis.call('LTRIM', KEYS[1], -tonumber(ARGV[3]), -1)
return id
"#;

impl Bus {
    fn log_key(&self, name: &str) -> String {
        format!("{}:log:{name}", self.channel)
    }

    /// Appends `body` to the log `name`; returns its ID.
    pub async fn append_shared(&self, name: &str, body: &str) -> Result<u64, ClusterError> {
        let key = self.log_key(name);
        let mut next = self.shared_last(name).await?.saturating_add(1);
        for _ in 0..APPEND_ATTEMPTS {
            let wire = self
                .keys
                .seal(&key, &format!("{next} {body}"))
                .map_err(|_| {
                    ClusterError::Unavailable(
                        "the entry could not be sealed (no randomness)".into(),
                    )
                })?;
            if wire.len() > MAX_MESSAGE_BYTES {
                return Err(ClusterError::TooLarge(wire.len()));
            }
            let mut conn = self.conn()?;
            let got: i64 = self
                .bounded(
                    redis::Script::new(APPEND)
                        .key(&key)
                        .key(format!("{key}:seq"))
                        .arg(next)
                        .arg(wire)
                        .arg(MAX_SHARED_ENTRIES)
                        .invoke_async(&mut conn),
                )
                .await?;
            match u64::try_from(got) {
                Ok(id) if id > 0 => return Ok(id),
                // Another replica appended first: seal for the ID after its.
                _ => next = got.unsigned_abs().saturating_add(1),
            }
        }
        Err(ClusterError::Unavailable(format!(
            "the shared log `{name}` changed under each of {APPEND_ATTEMPTS} attempts to append to it"
        )))
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

    /// The log's entries after ID `after`, oldest first, as sealed by a
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
        // The highest ID of an authentic entry so far: IDs only grow down the
        // list, so one that does not is a copy put after a later entry (an
        // approval after its revocation) to undo it.
        let mut highest = 0;
        for raw in all {
            let Some((id, wire)) = split_id(&raw) else {
                self.refuse(Rejection::Unreadable);
                continue;
            };
            // What this replica read past is not counted again.
            let refuse = |r| {
                if id > after {
                    self.refuse(r)
                }
            };
            let body = match self.keys.open(&key, wire) {
                Ok(body) => body,
                Err(r) => {
                    refuse(r);
                    continue;
                }
            };
            let text = match split_id(&body).map(|(n, e)| (n, std::str::from_utf8(e))) {
                Some((n, Ok(text))) if n == id => text,
                // Authentic, but sealed for another place in the log.
                Some((_, Ok(_))) => {
                    refuse(Rejection::Replayed);
                    continue;
                }
                _ => {
                    refuse(Rejection::Unreadable);
                    continue;
                }
            };
            if id <= highest {
                refuse(Rejection::Replayed);
                continue;
            }
            highest = id;
            if id > after {
                out.push((id, text.to_string()));
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

/// `ID ENTRY` → (ID, ENTRY): a list item, or the text sealed in it.
fn split_id(raw: &[u8]) -> Option<(u64, &[u8])> {
    let space = raw.iter().position(|b| *b == b' ')?;
    let id = std::str::from_utf8(&raw[..space]).ok()?.parse().ok()?;
    Some((id, &raw[space + 1..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_is_its_id_then_the_sealed_text() {
        assert_eq!(split_id(b"12 v1.abc.{}"), Some((12, &b"v1.abc.{}"[..])));
        assert_eq!(split_id(b"x v1"), None);
        assert_eq!(split_id(b"12"), None);
        assert_eq!(
            split_id(br#"{"action":1}"#),
            None,
            "an entry of the version before, without its ID"
        );
    }
}
