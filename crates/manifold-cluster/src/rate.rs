//! Rate-limit buckets shared by every replica: GCRA (the algorithm the local
//! limiter uses), kept in Redis, decided by one script per call so that a
//! call needing several buckets takes a place in all of them or in none.
//!
//! Invariants: the script reads Redis's own clock (`TIME`), so replicas with
//! skewed clocks agree; a bucket's key expires once it is full again, so idle
//! callers leave nothing behind; one decision is one round trip (`EVALSHA`,
//! plus one `SCRIPT LOAD` the first time a server sees the script).
//!
//! Not here: the bucket type and the seam (manifold-foundation `rate`), which
//! buckets apply and what happens when Redis cannot decide (manifold-policy
//! `limits`: this replica's own buckets decide).

use manifold_foundation::rate::Bucket;

/// KEYS: one per bucket. ARGV: period in microseconds and burst, per bucket.
/// Returns `{0, 0}` when every bucket had a place (all taken), else `{i, wait}`
/// for the first bucket (1-based) without one and the microseconds until it has.
pub(crate) const GCRA: &str = r#"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local tats = {}
for i = 1, #KEYS do
  local period = tonumber(ARGV[2 * i - 1])
  local burst = tonumber(ARGV[2 * i])
  local tat = tonumber(redis.call('GET', KEYS[i]) or now)
  if tat < now then tat = now end
  local wait = tat - now - period * (burst - 1)
  if wait > 0 then return {i, wait} end
  tats[i] = tat + period
end
for i = 1, #KEYS do
  -- %.0f: a plain number converts with 14 significant digits, too few for
  -- microseconds since the epoch.
  redis.call('SET', KEYS[i], string.format('%.0f', tats[i]), 'PX', math.ceil((tats[i] - now) / 1000) + 1)
end
return {0, 0}
"#;

/// The Redis key of a bucket.
pub(crate) fn key(channel: &str, c: &Bucket) -> String {
    format!("{channel}:rl:{}:{}", c.rule, c.key)
}
