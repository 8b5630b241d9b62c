//! Records every replica of a deployment shares, in Redis: a value per field
//! of a named map (`<channel>:records:<map>`, one Redis hash). Callers' own
//! upstream accounts are kept this way (the map `accounts`), so every replica
//! uses an account connected through any of them.
//!
//! What a client of Redis can do: read, replace, delete or withhold a value.
//! What it cannot: read or forge one — values arrive sealed by the caller
//! (the account store seals under `[credentials] key`, bound to its upstream
//! and owner), and the bus adds nothing a caller could trust blindly.
//!
//! Invariants: every operation is bounded by `OP_TIMEOUT`; a value over
//! [`MAX_RECORD_BYTES`] is refused before it is sent.
//!
//! Not here: what the values are (the caller).

use super::Bus;
use crate::error::ClusterError;

/// The largest value a record may hold.
pub const MAX_RECORD_BYTES: usize = 64 * 1024;

impl Bus {
    fn record_key(&self, map: &str) -> String {
        format!("{}:records:{map}", self.channel)
    }

    /// The value of `field` in `map`, if any.
    pub async fn record(&self, map: &str, field: &str) -> Result<Option<String>, ClusterError> {
        let mut conn = self.conn()?;
        self.bounded(
            redis::cmd("HGET")
                .arg(self.record_key(map))
                .arg(field)
                .query_async(&mut conn),
        )
        .await
    }

    /// Sets `field` of `map` to `value`, or deletes it (`None`).
    pub async fn set_record(
        &self,
        map: &str,
        field: &str,
        value: Option<&str>,
    ) -> Result<(), ClusterError> {
        let mut conn = self.conn()?;
        match value {
            Some(v) if v.len() > MAX_RECORD_BYTES => Err(ClusterError::TooLarge(v.len())),
            Some(v) => {
                self.bounded(
                    redis::cmd("HSET")
                        .arg(self.record_key(map))
                        .arg(field)
                        .arg(v)
                        .query_async::<i64>(&mut conn),
                )
                .await?;
                Ok(())
            }
            None => {
                self.bounded(
                    redis::cmd("HDEL")
                        .arg(self.record_key(map))
                        .arg(field)
                        .query_async::<i64>(&mut conn),
                )
                .await?;
                Ok(())
            }
        }
    }
}
