//! Tasks (the 2026-07-28 Tasks extension, `io.modelcontextprotocol/tasks`)
//! as the gateway keeps them: the client-visible task id, sealed, and what one
//! replica remembers of the tasks it saw (for the in-flight gauge and for one
//! end record per task).
//!
//! The id a client sees is `t1.` + base64url(nonce ‖ AES-256-GCM ciphertext ‖
//! tag) of [`TaskFacts`]: the upstream and its own task id, the owner (a digest
//! of the principal), the tool, when it was created and when the id stops
//! opening. Everything needed to route a `tasks/*` request travels in it, so any
//! replica holding the key routes it, and a gateway restart with the same key
//! does too. Key: `[cluster] session_key` (and `previous_session_keys`, for
//! rotation), else `[server] request_state_key`, else a random key of this
//! process (ids then die with it); each in a domain of its own, so a session id
//! never opens as a task id.
//!
//! Invariants: an id that does not open (not ours, tampered, another key, not
//! facts) and one of another principal are answered alike, as an unknown task;
//! "expired" is said only to the owner. The tables here are bounded
//! ([`MAX_TASKS_TRACKED`], [`ENDED_TASKS_REMEMBERED`]); no lock is held across
//! an `.await`.
//!
//! Not here: routing and relaying `tasks/*` (the call chain: `call::resolve::task`,
//! `call::shape`), the records
//! themselves (`observe`, manifold-audit).

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use manifold_foundation::aead::Keys;
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::{HashMap, HashSet, VecDeque};
use std::time::Duration;

/// How a client task id starts.
pub const TASK_ID_PREFIX: &str = "t1.";
/// The largest sealed facts, in bytes of JSON.
pub const MAX_TASK_FACTS_BYTES: usize = 2048;
/// The longest upstream task id Manifold relays.
pub const MAX_UPSTREAM_TASK_ID_BYTES: usize = 1024;
/// The longest a task id opens after its task was created, whatever its
/// `ttlMs` (and the lifetime of a task whose `ttlMs` is `null`).
pub const TASK_ID_MAX_AGE: Duration = Duration::from_secs(24 * 3600);
/// How long a task id opens after the task's own `ttlMs` (within
/// [`TASK_ID_MAX_AGE`]): a client may still learn how it ended.
pub const TASK_ID_GRACE: Duration = Duration::from_secs(15 * 60);
/// Tasks one replica follows for the in-flight gauge and the expiry sweep;
/// beyond, a task is relayed all the same, untracked.
pub const MAX_TASKS_TRACKED: usize = 10_000;
/// Ended tasks one replica remembers, so it writes one end record per task.
pub const ENDED_TASKS_REMEMBERED: usize = 65_536;
/// How often tracked tasks past their id's expiry are recorded as `expired`.
pub const TASK_SWEEP_INTERVAL: Duration = Duration::from_secs(30);
/// The keys' own domain (see the module doc).
const KEY_DOMAIN: &str = "manifold sealed task id v1";

/// What travels in a task id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct TaskFacts {
    /// The upstream's configured name.
    #[serde(rename = "u")]
    pub upstream: String,
    /// A digest of the upstream's endpoint: a reload that points the name
    /// elsewhere does not send this task id to another server.
    #[serde(rename = "d")]
    pub endpoint: String,
    /// The upstream's own task id.
    #[serde(rename = "t")]
    pub upstream_id: String,
    /// A digest of the owner's audit name.
    #[serde(rename = "p")]
    pub owner: String,
    /// The exposed tool name.
    #[serde(rename = "n")]
    pub tool: String,
    /// The upstream's own tool name.
    #[serde(rename = "o")]
    pub original: String,
    /// Created, milliseconds since the epoch.
    #[serde(rename = "c")]
    pub created_ms: u64,
    /// Seconds since the epoch after which the id is expired.
    #[serde(rename = "e")]
    pub expires: u64,
    /// The pool member that made the task (an upstream that is a pool): its
    /// `tasks/*` go there, where the task lives.
    #[serde(rename = "m", default, skip_serializing_if = "Option::is_none")]
    pub member: Option<usize>,
    /// The Manifold endpoint (`[server] path` or an `[[endpoint]]`'s) the
    /// task was made through: its `tasks/*` are answered there only (ids
    /// sealed before it was kept: anywhere, as then).
    #[serde(rename = "w", default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
}

/// Why an id does not route.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum NotOpened {
    /// Not a task id of this gateway, or not the caller's: answered as an
    /// unknown task.
    Unknown,
    /// The caller's, but past its expiry.
    Expired(Box<TaskFacts>),
}

/// The digest an owner is sealed as.
pub(crate) fn owner_digest(audit_name: &str) -> String {
    hex::encode(&Sha256::digest(audit_name.as_bytes())[..16])
}

/// The digest of an upstream's endpoint (its URL, or its command and args).
pub(crate) fn endpoint_digest(t: &manifold_config::Transport) -> String {
    let mut h = Sha256::new();
    match t {
        manifold_config::Transport::Http { url, .. } => h.update(url.as_bytes()),
        manifold_config::Transport::Stdio { command, args, .. } => {
            h.update(command.as_bytes());
            for a in args {
                h.update(b"\0");
                h.update(a.as_bytes());
            }
        }
    }
    hex::encode(&h.finalize()[..8])
}

/// How audit records name a task: the first 16 hex digits of the SHA-256 of
/// the id the client holds (never the id, a bearer handle).
pub(crate) fn record_id(client_id: &str) -> String {
    hex::encode(&Sha256::digest(client_id.as_bytes())[..8])
}

/// When a task created at `created_ms` with `ttl_ms` (`None`: unlimited)
/// stops opening, in seconds since the epoch.
pub(crate) fn expiry(created_ms: u64, ttl_ms: Option<u64>) -> u64 {
    let max = TASK_ID_MAX_AGE.as_millis() as u64;
    let life = match ttl_ms {
        Some(t) => t.saturating_add(TASK_ID_GRACE.as_millis() as u64).min(max),
        None => max,
    };
    created_ms.saturating_add(life) / 1000
}

/// A task this replica relayed the creation of.
struct Tracked {
    facts: TaskFacts,
    owner: String,
}

/// A followed task whose id expired with no end seen here.
pub(crate) struct Swept {
    pub facts: TaskFacts,
    pub record_id: String,
    /// The owner's audit name.
    pub owner: String,
}

/// Ids remembered in arrival order, the oldest forgotten first.
#[derive(Default)]
struct Ended {
    set: HashSet<String>,
    order: VecDeque<String>,
}

/// The task ids' keys and what this replica remembers of tasks.
pub(crate) struct Tasks {
    keys: Keys,
    tracked: Mutex<HashMap<String, Tracked>>,
    ended: Mutex<Ended>,
}

impl Tasks {
    /// Keys from `config` (see the module doc); `durable` is false when the key
    /// is this process's own (ids die with it).
    pub(crate) fn new(config: &manifold_config::GatewayConfig) -> Tasks {
        Tasks::from_keys(
            config.cluster.as_ref(),
            config.server.request_state_key.as_deref(),
        )
    }

    fn from_keys(
        cluster: Option<&manifold_config::cluster::ClusterSettings>,
        request_state_key: Option<&str>,
    ) -> Tasks {
        let keys = match (cluster, request_state_key) {
            (Some(c), _) => Keys::new(KEY_DOMAIN, &c.session_key, &c.previous_session_keys),
            (None, Some(k)) => Keys::new::<&str>(KEY_DOMAIN, k, &[]),
            (None, None) => {
                let mut k = [0u8; 32];
                if getrandom::fill(&mut k).is_err() {
                    // Seal then fails for want of a nonce too: no task is relayed.
                    tracing::error!("no OS randomness: task ids cannot be sealed");
                }
                Keys::new::<&str>(KEY_DOMAIN, &hex::encode(k), &[])
            }
        };
        Tasks {
            keys,
            tracked: Mutex::new(HashMap::new()),
            ended: Mutex::new(Ended::default()),
        }
    }

    /// The client's id for a task; `None` when its facts are too large (or no
    /// randomness for the nonce).
    pub(crate) fn seal(&self, facts: &TaskFacts) -> Option<String> {
        let data = serde_json::to_vec(facts).ok()?;
        if data.len() > MAX_TASK_FACTS_BYTES {
            return None;
        }
        let sealed = self.keys.seal(TASK_ID_PREFIX.as_bytes(), data).ok()?;
        Some(format!(
            "{TASK_ID_PREFIX}{}",
            URL_SAFE_NO_PAD.encode(sealed)
        ))
    }

    /// The facts of `id` for the principal named `audit_name`.
    pub(crate) fn open(&self, id: &str, audit_name: &str) -> Result<TaskFacts, NotOpened> {
        let body = id.strip_prefix(TASK_ID_PREFIX).ok_or(NotOpened::Unknown)?;
        let raw = URL_SAFE_NO_PAD
            .decode(body)
            .map_err(|_| NotOpened::Unknown)?;
        let plain = self
            .keys
            .open(TASK_ID_PREFIX.as_bytes(), &raw)
            .map_err(|_| NotOpened::Unknown)?;
        let facts: TaskFacts = serde_json::from_slice(&plain).map_err(|_| NotOpened::Unknown)?;
        if facts.owner != owner_digest(audit_name) {
            return Err(NotOpened::Unknown);
        }
        if manifold_foundation::time::unix_now() > facts.expires {
            return Err(NotOpened::Expired(Box::new(facts)));
        }
        Ok(facts)
    }

    /// A task was created through this replica: followed until its end (or
    /// its id's expiry) when there is room. Returns whether it is followed.
    pub(crate) fn created(&self, record_id: &str, facts: &TaskFacts, owner: &str) -> bool {
        let mut t = self.tracked.lock();
        if t.len() >= MAX_TASKS_TRACKED {
            return false;
        }
        t.insert(
            record_id.to_string(),
            Tracked {
                facts: facts.clone(),
                owner: owner.to_string(),
            },
        );
        true
    }

    /// The task `record_id` ended: `None` when this replica already recorded
    /// its end, else whether this replica followed it (its gauge goes down).
    pub(crate) fn ended(&self, record_id: &str) -> Option<bool> {
        {
            let mut e = self.ended.lock();
            if !e.set.insert(record_id.to_string()) {
                return None;
            }
            e.order.push_back(record_id.to_string());
            while e.order.len() > ENDED_TASKS_REMEMBERED {
                if let Some(old) = e.order.pop_front() {
                    e.set.remove(&old);
                }
            }
        }
        Some(self.tracked.lock().remove(record_id).is_some())
    }

    /// Followed tasks whose ids expired with no end seen here, for their
    /// ends to be recorded as `expired`; they stay in the table (and counted
    /// in flight) until [`Tasks::ended`] takes them off.
    pub(crate) fn sweep(&self, now_secs: u64) -> Vec<Swept> {
        let t = self.tracked.lock();
        t.iter()
            .filter(|(_, v)| v.facts.expires < now_secs)
            .map(|(k, v)| Swept {
                facts: v.facts.clone(),
                record_id: k.clone(),
                owner: v.owner.clone(),
            })
            .collect()
    }

    /// Tasks followed now.
    #[cfg(test)]
    pub(crate) fn tracked(&self) -> usize {
        self.tracked.lock().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tasks(cluster_key: Option<(&str, &[&str])>, state_key: Option<&str>) -> Tasks {
        let cluster = cluster_key.map(|(k, prev)| manifold_config::cluster::ClusterSettings {
            session_key: k.into(),
            previous_session_keys: prev.iter().map(|s| s.to_string()).collect(),
            redis: None,
            redis_ca: None,
            redis_channel: manifold_config::cluster::DEFAULT_REDIS_CHANNEL.into(),
        });
        Tasks::from_keys(cluster.as_ref(), state_key)
    }

    fn facts(owner: &str, expires: u64) -> TaskFacts {
        TaskFacts {
            upstream: "demo".into(),
            endpoint: "0011223344556677".into(),
            upstream_id: "up-1".into(),
            owner: owner_digest(owner),
            tool: "demo__slow".into(),
            original: "slow".into(),
            created_ms: manifold_foundation::time::unix_now_ms(),
            expires,
            member: None,
            path: None,
        }
    }

    const A: &str = "key-a-0123456789abcdef0123456789abcdef";
    const B: &str = "key-b-0123456789abcdef0123456789abcdef";

    #[test]
    fn ids_open_for_their_owner_under_the_keys_held_only() {
        let later = manifold_foundation::time::unix_now() + 600;
        let f = facts("key:alice", later);
        let t = tasks(Some((A, &[])), None);
        let id = t.seal(&f).unwrap();
        assert!(id.starts_with(TASK_ID_PREFIX));
        assert!(
            id.bytes().all(|b| (0x21..=0x7e).contains(&b)),
            "a header value as is"
        );
        assert!(!id.contains("up-1"), "the upstream's id is not visible");
        assert_eq!(t.open(&id, "key:alice"), Ok(f.clone()));
        assert_eq!(
            tasks(Some((B, &[A])), None).open(&id, "key:alice"),
            Ok(f.clone())
        );
        // Another principal, another key, a tampered byte, garbage, a session id:
        // all the same unknown task.
        assert_eq!(t.open(&id, "key:bob"), Err(NotOpened::Unknown));
        assert_eq!(
            tasks(Some((B, &[])), None).open(&id, "key:alice"),
            Err(NotOpened::Unknown)
        );
        let mut bad = id.clone().into_bytes();
        let i = bad.len() - 3;
        bad[i] = if bad[i] == b'A' { b'B' } else { b'A' };
        assert_eq!(
            t.open(&String::from_utf8(bad).unwrap(), "key:alice"),
            Err(NotOpened::Unknown)
        );
        assert_eq!(t.open("t1.garbage", "key:alice"), Err(NotOpened::Unknown));
        assert_eq!(t.open("s1.AAAA", "key:alice"), Err(NotOpened::Unknown));
        // A session id sealed under the same secret does not open here.
        let s = crate::state::sealed::Sealer::new(&manifold_config::cluster::ClusterSettings {
            session_key: A.into(),
            previous_session_keys: vec![],
            redis: None,
            redis_ca: None,
            redis_channel: manifold_config::cluster::DEFAULT_REDIS_CHANNEL.into(),
        })
        .unwrap();
        let sid = s
            .seal(&crate::state::sealed::SessionFacts {
                protocol_version: "2025-11-25".into(),
                client_info: serde_json::json!({}),
                capabilities: Default::default(),
                owner: None,
                expires: later,
                endpoint: None,
            })
            .unwrap();
        let as_task = sid.replacen("s1.", TASK_ID_PREFIX, 1);
        assert_eq!(t.open(&as_task, "anonymous"), Err(NotOpened::Unknown));
        // Expired: said to the owner only.
        let old = t.seal(&facts("key:alice", 1)).unwrap();
        assert!(matches!(
            t.open(&old, "key:alice"),
            Err(NotOpened::Expired(_))
        ));
        assert_eq!(t.open(&old, "key:bob"), Err(NotOpened::Unknown));
    }

    #[test]
    fn the_request_state_key_and_a_process_key_seal_too() {
        let f = facts("anonymous", manifold_foundation::time::unix_now() + 60);
        let id = tasks(None, Some(A)).seal(&f).unwrap();
        assert_eq!(tasks(None, Some(A)).open(&id, "anonymous"), Ok(f.clone()));
        let own = tasks(None, None);
        let id = own.seal(&f).unwrap();
        assert_eq!(own.open(&id, "anonymous"), Ok(f));
        assert_eq!(
            tasks(None, None).open(&id, "anonymous"),
            Err(NotOpened::Unknown)
        );
    }

    #[test]
    fn oversized_facts_are_not_sealed_and_expiry_is_bounded() {
        let mut f = facts("anonymous", 1);
        f.upstream_id = "x".repeat(MAX_TASK_FACTS_BYTES);
        assert!(tasks(None, None).seal(&f).is_none());
        let day = TASK_ID_MAX_AGE.as_secs();
        assert_eq!(expiry(0, None), day);
        assert_eq!(expiry(0, Some(u64::MAX)), day);
        assert_eq!(expiry(0, Some(60_000)), 60 + TASK_ID_GRACE.as_secs());
    }

    #[test]
    fn one_end_per_task_and_the_sweep_takes_expired_ones() {
        let t = tasks(None, None);
        assert!(t.created("a", &facts("x", 10), "x"));
        assert!(t.created("b", &facts("x", u64::MAX), "x"));
        assert_eq!(t.ended("b"), Some(true));
        assert_eq!(t.ended("b"), None, "recorded once");
        assert_eq!(t.ended("c"), Some(false), "another replica's task");
        let swept = t.sweep(11);
        assert_eq!(swept.len(), 1);
        assert_eq!(swept[0].record_id, "a");
        assert_eq!(swept[0].owner, "x");
        assert_eq!(t.ended("a"), Some(true));
        assert_eq!(t.tracked(), 0);
    }
}
