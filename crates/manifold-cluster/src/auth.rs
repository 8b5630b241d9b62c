//! Who may speak on the bus, and who may read it: every message is sealed by
//! the replica that sends it and opened by every replica that takes it, so
//! that whoever can PUBLISH on the Redis channel without holding `[cluster]
//! session_key` can neither answer another user's question, cancel a call,
//! push into a stream nor forge the answer to a forwarded retry — and whoever
//! can SUBSCRIBE reads nothing of what travels (tool results of resumed
//! calls, answers to questions, resource updates).
//!
//! On the wire a message is `mb2.` + the sealed JSON [`Envelope`] (which names
//! its sender, a timestamp and the sender's sequence number): AES-256-GCM,
//! `nonce ‖ ciphertext ‖ tag` (bytes, not text), the channel's name as
//! associated data, under a key derived from the session key in a domain of
//! its own ([`SEAL_DOMAIN`], `manifold_foundation::aead`). Replicas of the
//! version before sent `mb1.` + hex(MAC) + `.` + the JSON in clear, the MAC
//! HMAC-SHA256 over the channel's name, a zero byte and the JSON under a key
//! derived with HKDF-SHA256 and [`KEY_LABEL`]: still taken (a rolling upgrade
//! passes through a mixed deployment), never sent. The same secret seals
//! session ids under another derivation, so no key tells anything about
//! another.
//!
//! Invariants: a message is taken at most once by a replica, and only when
//! its MAC verifies (in constant time) under the current or a previous session
//! key, it was sent at most [`MAX_ENVELOPE_AGE`] ago (and no more than
//! [`MAX_CLOCK_SKEW`] ahead, nor before this replica started listening), and
//! its sender's sequence number was not seen yet (a window of
//! [`REPLAY_WINDOW`] numbers per sender, for at most [`MAX_SENDERS`] senders
//! heard within the age window). Every refusal has a [`Rejection`] reason.
//!
//! Not here: connections and delivery (`bus`), what messages mean (`message`
//! and the server).

use std::collections::HashMap;
use std::time::Duration;

use aws_lc_rs::hmac;

use crate::message::Envelope;

/// How long after it was sent a message is still taken. Relays are answered
/// within milliseconds; this covers a queue that fell behind and clocks that
/// differ by up to [`MAX_CLOCK_SKEW`], and bounds how long a captured message
/// could be replayed to a replica that never saw it.
pub const MAX_ENVELOPE_AGE: Duration = Duration::from_secs(30);
/// How far ahead of this replica's clock a sender's timestamp may be.
pub const MAX_CLOCK_SKEW: Duration = Duration::from_secs(5);
/// Sequence numbers remembered per sender: a message more than this many
/// behind the sender's newest one is refused as a replay (one sender's
/// concurrent publishes are reordered by far less).
pub const REPLAY_WINDOW: u64 = 1024;
/// Senders whose sequence numbers are remembered at once; a sender silent for
/// longer than [`MAX_ENVELOPE_AGE`] is forgotten (its old messages have
/// expired anyway). Only authentic messages create an entry.
pub const MAX_SENDERS: usize = 1024;
/// The HKDF label (salt) of the version-1 bus MAC key: the bus's own domain.
pub const KEY_LABEL: &[u8] = b"manifold cluster bus v1";
/// The domain of the bus's sealing key (`manifold_foundation::aead`).
pub const SEAL_DOMAIN: &str = "manifold cluster bus v2";

const PREFIX: &[u8] = b"mb1.";
const SEALED_PREFIX: &[u8] = b"mb2.";
const MAC_HEX: usize = 64;

/// Why a message from the bus was not taken: the `reason` label of
/// `manifold_cluster_rejected_total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rejection {
    /// Neither sealed (`mb2.`) nor signed (`mb1.<hex>.`): someone publishing
    /// plain JSON.
    Unsigned,
    /// A seal or MAC that does not verify under any key this replica holds.
    BadMac,
    /// Sent more than [`MAX_ENVELOPE_AGE`] ago, or before this replica
    /// started listening.
    Expired,
    /// Timestamped more than [`MAX_CLOCK_SKEW`] ahead.
    Future,
    /// Its sender's sequence number was taken already (or is out of the window).
    Replayed,
    /// Authentic, but [`MAX_SENDERS`] other senders are remembered.
    TooManySenders,
    /// Larger than `MAX_MESSAGE_BYTES`.
    TooLarge,
    /// Authentic, but not a message this version reads.
    Unreadable,
}

impl Rejection {
    /// Every reason, in the order [`Rejection::index`] numbers them.
    pub const ALL: [Rejection; 8] = [
        Rejection::Unsigned,
        Rejection::BadMac,
        Rejection::Expired,
        Rejection::Future,
        Rejection::Replayed,
        Rejection::TooManySenders,
        Rejection::TooLarge,
        Rejection::Unreadable,
    ];

    /// The metric label.
    pub fn as_str(self) -> &'static str {
        match self {
            Rejection::Unsigned => "unsigned",
            Rejection::BadMac => "bad_mac",
            Rejection::Expired => "expired",
            Rejection::Future => "future",
            Rejection::Replayed => "replayed",
            Rejection::TooManySenders => "too_many_senders",
            Rejection::TooLarge => "too_large",
            Rejection::Unreadable => "unreadable",
        }
    }

    pub(crate) fn index(self) -> usize {
        Rejection::ALL.iter().position(|r| *r == self).unwrap_or(0)
    }
}

/// The bus keys derived from the session keys: messages are sealed with the
/// current one and taken under any (a rotation rolls through the replicas).
pub struct Keys {
    current: hmac::Key,
    previous: Vec<hmac::Key>,
    sealing: manifold_foundation::aead::Keys,
}

/// Why a message could not be sealed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NotSealed;

/// The HKDF info of the bus key.
const KEY_INFO: &[u8] = b"envelope mac";

/// HKDF-SHA256 (RFC 5869) of `secret`, salt [`KEY_LABEL`], info [`KEY_INFO`],
/// one block (32 bytes): written out with HMAC, as one block is, so that it
/// cannot fail.
fn derive(secret: &str) -> hmac::Key {
    let prk = hmac::sign(
        &hmac::Key::new(hmac::HMAC_SHA256, KEY_LABEL),
        secret.as_bytes(),
    );
    let prk = hmac::Key::new(hmac::HMAC_SHA256, prk.as_ref());
    let mut ctx = hmac::Context::with_key(&prk);
    ctx.update(KEY_INFO);
    ctx.update(&[1]);
    hmac::Key::new(hmac::HMAC_SHA256, ctx.sign().as_ref())
}

impl Keys {
    /// The keys of `[cluster] session_key` and `previous_session_keys`.
    pub fn new(session_key: &str, previous: &[String]) -> Keys {
        Keys {
            current: derive(session_key),
            previous: previous.iter().map(|k| derive(k)).collect(),
            sealing: manifold_foundation::aead::Keys::new(SEAL_DOMAIN, session_key, previous),
        }
    }

    fn mac(key: &hmac::Key, channel: &str, body: &[u8]) -> hmac::Tag {
        let mut ctx = hmac::Context::with_key(key);
        ctx.update(channel.as_bytes());
        ctx.update(&[0]);
        ctx.update(body);
        ctx.sign()
    }

    /// `body` (an envelope's JSON) as it goes on `channel`: sealed.
    pub fn seal(&self, channel: &str, body: &str) -> Result<Vec<u8>, NotSealed> {
        let sealed = self
            .sealing
            .seal(channel.as_bytes(), body.as_bytes().to_vec())
            .map_err(|_| NotSealed)?;
        let mut out = Vec::with_capacity(SEALED_PREFIX.len() + sealed.len());
        out.extend_from_slice(SEALED_PREFIX);
        out.extend_from_slice(&sealed);
        Ok(out)
    }

    /// `body` signed in clear, as replicas of the version before sent bus
    /// messages and shared-log entries (tests make them).
    pub fn sign(&self, channel: &str, body: &str) -> String {
        let tag = Keys::mac(&self.current, channel, body.as_bytes());
        let mut out = String::with_capacity(PREFIX.len() + MAC_HEX + 1 + body.len());
        out.push_str("mb1.");
        out.push_str(&hex::encode(tag.as_ref()));
        out.push('.');
        out.push_str(body);
        out
    }

    /// The JSON of a message taken from `channel`, when its seal (or, from a
    /// replica of the version before, its MAC) verifies.
    pub fn open<'a>(
        &self,
        channel: &str,
        wire: &'a [u8],
    ) -> Result<std::borrow::Cow<'a, [u8]>, Rejection> {
        if let Some(sealed) = wire.strip_prefix(SEALED_PREFIX) {
            use manifold_foundation::aead::OpenError;
            return match self.sealing.open(channel.as_bytes(), sealed) {
                Ok(plain) => Ok(std::borrow::Cow::Owned(plain)),
                Err(OpenError::TooShort) => Err(Rejection::Unsigned),
                Err(OpenError::NotAuthentic) => Err(Rejection::BadMac),
            };
        }
        self.open_signed(channel, wire)
            .map(std::borrow::Cow::Borrowed)
    }

    /// A version-1 message: the JSON, when its MAC verifies.
    fn open_signed<'a>(&self, channel: &str, wire: &'a [u8]) -> Result<&'a [u8], Rejection> {
        let rest = wire.strip_prefix(PREFIX).ok_or(Rejection::Unsigned)?;
        if rest.len() < MAC_HEX + 1 || rest[MAC_HEX] != b'.' {
            return Err(Rejection::Unsigned);
        }
        let (mac, body) = (&rest[..MAC_HEX], &rest[MAC_HEX + 1..]);
        let mac = hex::decode(mac).map_err(|_| Rejection::Unsigned)?;
        let mut ok = false;
        // Every key is tried, so the time taken says nothing about which one
        // (or how much of a MAC) matched.
        for key in std::iter::once(&self.current).chain(&self.previous) {
            let tag = Keys::mac(key, channel, body);
            ok |= manifold_foundation::ct::eq(tag.as_ref(), &mac);
        }
        if ok {
            Ok(body)
        } else {
            Err(Rejection::BadMac)
        }
    }
}

/// Milliseconds since the epoch: an envelope's timestamp.
pub use manifold_foundation::time::unix_now_ms as now_ms;

const WORDS: usize = (REPLAY_WINDOW as usize).div_ceil(64);

/// One sender's sequence numbers: the newest, and which of the
/// [`REPLAY_WINDOW`] before it were taken (a ring indexed by number).
struct Window {
    newest: u64,
    seen: [u64; WORDS],
    /// The newest timestamp taken from it: it is forgotten once that expired.
    last_ts: u64,
}

impl Window {
    fn slot(seq: u64) -> (usize, u64) {
        let i = seq % REPLAY_WINDOW;
        ((i / 64) as usize, 1u64 << (i % 64))
    }

    fn new(seq: u64, ts: u64) -> Window {
        let mut w = Window {
            newest: seq,
            seen: [0; WORDS],
            last_ts: ts,
        };
        let (i, bit) = Window::slot(seq);
        w.seen[i] |= bit;
        w
    }

    /// Takes `seq`, or says it was taken already or is too old to tell.
    fn take(&mut self, seq: u64, ts: u64) -> Result<(), Rejection> {
        if seq > self.newest {
            // The slots the window moves over held numbers a window ago.
            if seq - self.newest >= REPLAY_WINDOW {
                self.seen = [0; WORDS];
            } else {
                for s in self.newest + 1..=seq {
                    let (i, bit) = Window::slot(s);
                    self.seen[i] &= !bit;
                }
            }
            self.newest = seq;
        } else if self.newest - seq >= REPLAY_WINDOW {
            return Err(Rejection::Replayed);
        }
        let (i, bit) = Window::slot(seq);
        if self.seen[i] & bit != 0 {
            return Err(Rejection::Replayed);
        }
        self.seen[i] |= bit;
        self.last_ts = self.last_ts.max(ts);
        Ok(())
    }
}

/// What a replica remembers to take each authentic message once.
pub(crate) struct Replay {
    /// When this replica started listening (ms since the epoch): nothing it
    /// holds predates it, so older messages are refused.
    since: u64,
    senders: HashMap<String, Window>,
}

impl Replay {
    pub(crate) fn new(since: u64) -> Replay {
        Replay {
            since,
            senders: HashMap::new(),
        }
    }

    /// Takes `env` at `now` (ms since the epoch), or says why not.
    pub(crate) fn check(&mut self, env: &Envelope, now: u64) -> Result<(), Rejection> {
        let age = u64::try_from(MAX_ENVELOPE_AGE.as_millis()).unwrap_or(u64::MAX);
        let skew = u64::try_from(MAX_CLOCK_SKEW.as_millis()).unwrap_or(u64::MAX);
        if env.ts > now.saturating_add(skew) {
            return Err(Rejection::Future);
        }
        if env.ts.saturating_add(age) < now || env.ts.saturating_add(skew) < self.since {
            return Err(Rejection::Expired);
        }
        if let Some(w) = self.senders.get_mut(&env.from) {
            return w.take(env.seq, env.ts);
        }
        if self.senders.len() >= MAX_SENDERS {
            // A sender whose newest message expired can replay nothing.
            self.senders
                .retain(|_, w| w.last_ts.saturating_add(age) >= now);
            if self.senders.len() >= MAX_SENDERS {
                return Err(Rejection::TooManySenders);
            }
        }
        self.senders
            .insert(env.from.clone(), Window::new(env.seq, env.ts));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::Message;

    fn env(from: &str, seq: u64, ts: u64) -> Envelope {
        Envelope {
            from: from.into(),
            ts,
            seq,
            message: Message::ListChanged {
                upstream: "u".into(),
                method: "m".into(),
            },
        }
    }

    #[test]
    fn a_sealed_message_opens_under_the_same_key_and_channel_only_and_shows_nothing() {
        let keys = Keys::new("k".repeat(32).as_str(), &[]);
        let body = r#"{"kind":"resumed","bytes":"a tool result"}"#;
        let wire = keys.seal("manifold", body).expect("sealed");
        assert!(wire.starts_with(b"mb2."));
        let shown = String::from_utf8_lossy(&wire);
        assert!(
            !shown.contains("tool result") && !shown.contains("kind"),
            "{shown}"
        );
        assert_eq!(keys.open("manifold", &wire).as_deref(), Ok(body.as_bytes()));
        // Two seals of one body differ (a fresh nonce each).
        assert_ne!(keys.seal("manifold", body).expect("sealed"), wire);
        // Another channel, another key, a changed byte, a truncated seal.
        assert_eq!(keys.open("other", &wire), Err(Rejection::BadMac));
        let other = Keys::new("o".repeat(32).as_str(), &[]);
        assert_eq!(other.open("manifold", &wire), Err(Rejection::BadMac));
        let mut flipped = wire.clone();
        let last = flipped.len() - 1;
        flipped[last] ^= 1;
        assert_eq!(keys.open("manifold", &flipped), Err(Rejection::BadMac));
        assert_eq!(
            keys.open("manifold", b"mb2.short"),
            Err(Rejection::Unsigned)
        );
        // Rotation: a previous key opens what it sealed.
        let rotated = Keys::new("n".repeat(32).as_str(), &["k".repeat(32)]);
        assert_eq!(
            rotated.open("manifold", &wire).as_deref(),
            Ok(body.as_bytes())
        );
    }

    #[test]
    fn a_signed_message_opens_under_the_same_key_and_channel_only() {
        let keys = Keys::new("k".repeat(32).as_str(), &[]);
        let wire = keys.sign("manifold", r#"{"x":1}"#);
        assert!(wire.starts_with("mb1."), "{wire}");
        assert_eq!(
            keys.open("manifold", wire.as_bytes()).as_deref(),
            Ok(&br#"{"x":1}"#[..])
        );
        // Another channel, another key, a changed body, a changed MAC, no MAC.
        assert_eq!(keys.open("other", wire.as_bytes()), Err(Rejection::BadMac));
        let other = Keys::new("o".repeat(32).as_str(), &[]);
        assert_eq!(
            other.open("manifold", wire.as_bytes()),
            Err(Rejection::BadMac)
        );
        let changed = wire.replace(r#""x":1"#, r#""x":2"#);
        assert_eq!(
            keys.open("manifold", changed.as_bytes()),
            Err(Rejection::BadMac)
        );
        let mut flipped = wire.clone().into_bytes();
        flipped[5] = if flipped[5] == b'0' { b'1' } else { b'0' };
        assert_eq!(keys.open("manifold", &flipped), Err(Rejection::BadMac));
        for bad in [&br#"{"x":1}"#[..], b"mb1.", b"mb1.zz.{}", b"mb3.00.{}"] {
            assert_eq!(keys.open("manifold", bad), Err(Rejection::Unsigned));
        }
    }

    #[test]
    fn the_bus_key_is_hkdf_sha256_of_the_session_key() {
        use aws_lc_rs::hkdf;
        let secret = "a-session-key-0123456789abcdef0123456789";
        let prk = hkdf::Salt::new(hkdf::HKDF_SHA256, KEY_LABEL).extract(secret.as_bytes());
        let info = [KEY_INFO];
        let okm = prk.expand(&info, hmac::HMAC_SHA256).expect("32 bytes");
        let reference = hmac::Key::from(okm);
        let ours = derive(secret);
        assert_eq!(
            hmac::sign(&reference, b"x").as_ref(),
            hmac::sign(&ours, b"x").as_ref()
        );
    }

    #[test]
    fn a_previous_key_still_opens_and_the_key_is_not_the_session_key() {
        let old = Keys::new("old-key-0123456789abcdef0123456789", &[]);
        let rotated = Keys::new(
            "new-key-0123456789abcdef0123456789",
            &["old-key-0123456789abcdef0123456789".into()],
        );
        let wire = old.sign("c", "{}");
        assert!(rotated.open("c", wire.as_bytes()).is_ok());
        // A MAC made with the raw session key as the HMAC key is refused:
        // the bus key is derived under its own label.
        let raw = hmac::Key::new(hmac::HMAC_SHA256, b"old-key-0123456789abcdef0123456789");
        let tag = Keys::mac(&raw, "c", b"{}");
        let forged = format!("mb1.{}.{{}}", hex::encode(tag.as_ref()));
        assert_eq!(old.open("c", forged.as_bytes()), Err(Rejection::BadMac));
    }

    #[test]
    fn each_message_is_taken_once_within_its_age() {
        let now = 1_000_000_000;
        let mut r = Replay::new(now - 1000);
        assert_eq!(r.check(&env("a", 1, now), now), Ok(()));
        assert_eq!(r.check(&env("a", 1, now), now), Err(Rejection::Replayed));
        assert_eq!(r.check(&env("a", 3, now), now), Ok(()));
        // A late one in the window is taken once.
        assert_eq!(r.check(&env("a", 2, now), now), Ok(()));
        assert_eq!(r.check(&env("a", 2, now), now), Err(Rejection::Replayed));
        assert_eq!(r.check(&env("a", 3, now), now), Err(Rejection::Replayed));
        // Another sender has its own numbers.
        assert_eq!(r.check(&env("b", 1, now), now), Ok(()));
        // Far ahead: the window moves; what fell out of it is refused.
        assert_eq!(r.check(&env("a", 3 + REPLAY_WINDOW, now), now), Ok(()));
        assert_eq!(r.check(&env("a", 3, now), now), Err(Rejection::Replayed));
        assert_eq!(r.check(&env("a", 4, now), now), Ok(()));
        assert_eq!(r.check(&env("a", 4, now), now), Err(Rejection::Replayed));
    }

    #[test]
    fn old_future_and_pre_start_messages_are_refused() {
        let now = 1_000_000_000;
        let age = MAX_ENVELOPE_AGE.as_millis() as u64;
        let skew = MAX_CLOCK_SKEW.as_millis() as u64;
        let mut r = Replay::new(now - 2 * age);
        assert_eq!(
            r.check(&env("a", 1, now - age - 1), now),
            Err(Rejection::Expired)
        );
        assert_eq!(r.check(&env("a", 1, now - age), now), Ok(()));
        assert_eq!(
            r.check(&env("a", 2, now + skew + 1), now),
            Err(Rejection::Future)
        );
        assert_eq!(r.check(&env("a", 2, now + skew), now), Ok(()));
        let mut fresh = Replay::new(now);
        assert_eq!(
            fresh.check(&env("a", 1, now - skew - 1), now),
            Err(Rejection::Expired)
        );
    }

    #[test]
    fn senders_are_bounded_and_forgotten_once_silent() {
        let now = 1_000_000_000;
        let age = MAX_ENVELOPE_AGE.as_millis() as u64;
        let mut r = Replay::new(0);
        for i in 0..MAX_SENDERS {
            assert_eq!(r.check(&env(&format!("s{i}"), 1, now), now), Ok(()));
        }
        assert_eq!(
            r.check(&env("late", 1, now), now),
            Err(Rejection::TooManySenders)
        );
        // Once their messages expired, they make room.
        let later = now + age + 1;
        assert_eq!(r.check(&env("late", 1, later), later), Ok(()));
        assert_eq!(r.senders.len(), 1);
    }
}
