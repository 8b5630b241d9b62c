//! Logs every replica of a deployment shares, in Redis: entries appended by
//! one replica, read by all, each sealed with the deployment's keys together
//! with its ID (its place in the log). `[integrity]` shares its approvals and
//! revocations this way (the log `pins`), so a replica that was down when an
//! approval was made applies it when it comes back.
//!
//! What a client of Redis without the keys can do: read how many entries
//! there are and how long, not what they say; withhold entries (delete or trim
//! them, stop appends by filling the counter), and show a replica that reads
//! the log from its start an older run of authentic entries. What it cannot:
//! write an entry of its own, make a replica take an entry out of order or
//! again once it has read past it (a copy under a new ID fails its ID check,
//! a copy under its own comes after a higher one), or make a replica skip
//! entries by raising the counter (a replica moves on only past authentic
//! IDs).
//!
//! Keys: `<channel>:log:<name>` (a list of `ID SEALED-ENTRY`, the last
//! [`MAX_SHARED_ENTRIES`] kept and read) and `<channel>:log:<name>:seq` (the
//! last ID). An entry's sealed text is `ID ENTRY`, sealed as bus messages are
//! (`mb2.`) with `<channel>:log:<name>` as associated data, never the channel
//! itself, so a bus message cannot pass for a log entry, nor the reverse. (An
//! entry signed in clear, `mb1.`, opens too; only the version before wrote
//! them, without their ID, so they are refused as unreadable.)
//!
//! Invariants: an append seals an ID above the log's last (and the appender's
//! own highest read), then appends only if it is still above it (one script;
//! numbered and trimmed atomically), and seals again when another replica
//! appended first, at most [`APPEND_ATTEMPTS`] times; IDs stay at or under
//! [`MAX_SHARED_ID`]; every operation is bounded by `OP_TIMEOUT`; an entry over
//! `MAX_MESSAGE_BYTES` is refused; an entry that does not open, sealed for
//! another ID, or whose ID is not above every authentic one before it is
//! skipped and counted, never returned.
//!
//! Not here: what the entries mean (the server).

use super::Bus;
use crate::auth::Rejection;
use crate::{error::ClusterError, limits::MAX_MESSAGE_BYTES};
use std::sync::atomic::Ordering;

/// Entries a shared log keeps (the oldest go first), and reads.
pub const MAX_SHARED_ENTRIES: usize = 1000;

/// Attempts to append while other replicas append first: each attempt lost
/// is another replica's append won, and a replica appends its entries one
/// after another, so this many replicas may append at once.
pub const APPEND_ATTEMPTS: usize = 16;

/// The highest ID an entry may have: every ID is exact as a Lua number (a
/// double), so the script compares IDs exactly.
pub const MAX_SHARED_ID: u64 = (1 << 53) - 1;

/// KEYS: the list, the counter. ARGV: the ID the entry was sealed for, the
/// sealed entry, how many to keep. The last ID is the counter's or the last
/// entry's, whichever is higher (a counter lost or lowered does not make IDs
/// repeat; one that is not a number counts as 0). Appends when the ID is above
/// it (a gap is fine) and returns the ID; else returns `-LAST`.
const APPEND: &str = r#"
local last = tonumber(redis.call('GET', KEYS[2]) or '0') or 0
local tail = redis.call('LINDEX', KEYS[1], -1)
if tail then
  local t = tonumber(string.match(tail, '^(%d+) '))
  if t and t > last then last = t end
end
local id = tonumber(ARGV[1])
if id <= last then return -last end
redis.call('SET', KEYS[2], ARGV[1])
redis.call('RPUSH', KEYS[1], ARGV[1] .. ' ' .. ARGV[2])
redis.call('LTRIM', KEYS[1], -tonumber(ARGV[3]), -1)
return id
"#;

/// What [`Bus::shared_since`] read.
#[derive(Debug, Default)]
pub struct SharedRead {
    /// The highest ID of an authentic entry in the log (0: none), also of
    /// those at or below `after`: where the next read may start.
    pub highest: u64,
    /// The authentic entries above `after`, oldest first.
    pub entries: Vec<(u64, String)>,
}

impl Bus {
    fn log_key(&self, name: &str) -> String {
        format!("{}:log:{name}", self.channel)
    }

    /// Appends `body` to the log `name` under an ID above both the log's last
    /// and `floor` (the highest this replica has read: a log whose counter
    /// Redis lost goes on above what the others read); returns the ID.
    pub async fn append_shared(
        &self,
        name: &str,
        body: &str,
        floor: u64,
    ) -> Result<u64, ClusterError> {
        let key = self.log_key(name);
        let mut next = self.shared_last(name).await?.max(floor).saturating_add(1);
        for _ in 0..APPEND_ATTEMPTS {
            if next > MAX_SHARED_ID {
                return Err(ClusterError::Unavailable(format!(
                    "the shared log `{name}` has reached the highest ID ({MAX_SHARED_ID}); \
                     delete its keys in Redis to start it again"
                )));
            }
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
                _ => next = got.unsigned_abs().max(next).saturating_add(1),
            }
        }
        Err(ClusterError::Unavailable(format!(
            "the shared log `{name}` changed under each of {APPEND_ATTEMPTS} attempts to append to it"
        )))
    }

    /// The log's counter (`0`: none yet, or not a number): it changes with
    /// every append.
    pub async fn shared_last(&self, name: &str) -> Result<u64, ClusterError> {
        let mut conn = self.conn()?;
        let seq: Option<String> = self
            .bounded(
                redis::cmd("GET")
                    .arg(format!("{}:seq", self.log_key(name)))
                    .query_async(&mut conn),
            )
            .await?;
        Ok(seq.and_then(|s| s.parse().ok()).unwrap_or(0))
    }

    /// The log's authentic entries after ID `after` (its last
    /// [`MAX_SHARED_ENTRIES`] read), sealed by a replica of this deployment
    /// for the ID they are listed under, in rising order (others are skipped
    /// and counted, except those at or below `after`: read past already).
    pub async fn shared_since(&self, name: &str, after: u64) -> Result<SharedRead, ClusterError> {
        let key = self.log_key(name);
        let mut conn = self.conn()?;
        let first = -i64::try_from(MAX_SHARED_ENTRIES).unwrap_or(i64::MAX);
        let all: Vec<Vec<u8>> = self
            .bounded(
                redis::cmd("LRANGE")
                    .arg(&key)
                    .arg(first)
                    .arg(-1)
                    .query_async(&mut conn),
            )
            .await?;
        let mut read = SharedRead::default();
        // IDs only grow down the list: an authentic entry that does not is a
        // copy put after a later entry (an approval after its revocation) to
        // undo it.
        for raw in all {
            let Some((id, wire)) = split_id(&raw) else {
                self.refuse(Rejection::Unreadable);
                continue;
            };
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
            if id <= read.highest {
                refuse(Rejection::Replayed);
                continue;
            }
            read.highest = id;
            if id > after {
                read.entries.push((id, text.to_string()));
            }
        }
        Ok(read)
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
