//! Calls held for a 2026-07-28 client's input (an upstream asked it something
//! mid-call), and the `requestState` that brings the client's retry back to one.
//!
//! `requestState` is `<id>.<expiry>.<mac>`: an HMAC-SHA-256 (keyed with the
//! SHA-256 of `server.request_state_key`, or a key generated at start) over the
//! id, the expiry and a digest of the principal and the request's params
//! (without `_meta`, `inputResponses`, `requestState`; see [`params_digest`]),
//! so a tampered, expired, replayed-elsewhere or other principal's state is
//! refused before anything is looked up — and is not used up by the attempt.
//!
//! A `[confirm]` question to a 2026-07-28 client holds no call: its state is
//! `confirm.<id>.<expiry>.<mac>` (the MAC over the same fields, in its own
//! domain, so neither kind of state passes for the other), and only its id is
//! kept until it is answered or expires. A confirmed call's own input round
//! (its 2026-07-28 upstream asked something) gets the upstream's state
//! wrapped as `confirmed.<id>.<expiry>.<mac>.<upstream state>`, MAC in a third
//! domain over the same fields and the upstream state, kept like a question:
//! it too expires and is used once.
//!
//! Invariants: at most `limits.max_held_calls` calls, and as many open
//! confirmations and wrappers together, are kept; a state is used once (taking
//! it removes the call, the confirmation or the wrapper); the mutex is never
//! held across `.await`.
//!
//! Not here: holding and resuming the call itself (`relay/input_required.rs`);
//! re-checking the caller's view before a resume (`pipeline::route`).

use manifold_foundation::time::unix_now;
use manifold_protocol::RequestId;
use parking_lot::Mutex;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::time::Duration;
use tokio::sync::oneshot;

use crate::reply::Reply;

/// How a `[confirm]` question's `requestState` starts.
pub(crate) const CONFIRM_PREFIX: &str = "confirm.";
/// How the `requestState` of a confirmed call's own input round starts (a
/// 2026-07-28 upstream's state, wrapped: its retry needs no new question).
pub(crate) const CONFIRMED_PREFIX: &str = "confirmed.";

/// What a 2026-07-28 "connect your account" question's `requestState`
/// starts with (a `user_oauth` / `user_secret` upstream): the credentials
/// step takes it back.
pub(crate) const CONNECT_PREFIX: &str = "connect.";

/// Why an authentic state names no call here: it was used, its call ended,
/// or (with replicas) another replica holds it.
pub(crate) const NOT_HELD_HERE: &str = "it was already used, or its call ended";

/// What a client's retry brings to its held call.
pub(crate) struct Resume {
    /// `inputResponses`, by the keys the `InputRequiredResult` gave.
    pub responses: Map<String, Value>,
    /// The retry's own JSON-RPC id.
    pub id: RequestId,
    /// Where the retry's answer goes.
    pub reply: oneshot::Sender<Reply>,
}

/// Held calls by state id, and the MAC key.
pub(crate) struct HeldCalls {
    key: [u8; 32],
    /// Held calls by state id, with the principal each is held for.
    calls: Mutex<HashMap<String, (oneshot::Sender<Resume>, String)>>,
    /// Open confirmation questions and `confirmed.` wrappers: id → (expiry in
    /// seconds since the epoch, principal).
    confirmations: Mutex<HashMap<String, (u64, String)>>,
    /// Held calls and open confirmations one principal may have.
    pub per_principal: usize,
    /// How long a call waits for its retry.
    pub ttl: Duration,
    /// Calls held at once.
    pub max: usize,
}

/// A digest of what a state is bound to across retries: the principal that
/// presents it (as audit records name it) and the request — its method and its
/// members but `_meta`, `inputResponses` and `requestState`, in name order (a
/// client may put the retry's members anywhere, e.g. first, as the Python SDK
/// does). Another principal's retry has another digest, so its MAC fails.
pub(crate) fn params_digest(method: &str, params: &Map<String, Value>, principal: &str) -> String {
    let mut members: Vec<(&String, &Value)> = params
        .iter()
        .filter(|(k, _)| !matches!(k.as_str(), "_meta" | "inputResponses" | "requestState"))
        .collect();
    members.sort_by(|a, b| a.0.cmp(b.0));
    let mut h = Sha256::new();
    // Length-prefixed: no principal can end where a method begins.
    h.update((principal.len() as u64).to_be_bytes());
    h.update(principal.as_bytes());
    h.update(method.as_bytes());
    for (k, v) in members {
        h.update(b"\n");
        h.update(Value::String(k.clone()).to_string().as_bytes());
        h.update(b":");
        h.update(v.to_string().as_bytes());
    }
    hex::encode(&h.finalize()[..16])
}

impl HeldCalls {
    /// With `secret` (`server.request_state_key`), the MAC key is its SHA-256,
    /// the same in every process configured with it; without, a random key.
    pub(crate) fn new(secret: Option<&str>, ttl: Duration, max: usize) -> HeldCalls {
        let key = match secret {
            Some(s) => Sha256::digest(s.as_bytes()).into(),
            None => {
                let mut key = [0u8; 32];
                // Without OS randomness a key of zeros would make states
                // forgeable; the bridge then refuses every state (see `verify`).
                if getrandom::fill(&mut key).is_err() {
                    tracing::error!("no OS randomness: InputRequiredResult bridging is disabled");
                    key = [0u8; 32];
                }
                key
            }
        };
        HeldCalls {
            key,
            calls: Mutex::new(HashMap::new()),
            confirmations: Mutex::new(HashMap::new()),
            per_principal: usize::MAX,
            ttl,
            max,
        }
    }

    fn mac(&self, msg: &str) -> [u8; 32] {
        manifold_foundation::mac::hmac_sha256(&self.key, &[msg.as_bytes()])
    }

    /// With at most `n` held calls and open confirmations per principal.
    pub(crate) fn with_per_principal(mut self, n: usize) -> HeldCalls {
        self.per_principal = n;
        self
    }

    /// Whether no more calls may be held.
    pub(crate) fn full(&self) -> bool {
        self.calls.lock().len() >= self.max
    }

    /// Whether `principal` holds as many calls and open confirmations as it
    /// may (`limits.max_held_calls_per_principal`).
    pub(crate) fn full_for(&self, principal: &str) -> bool {
        let now = unix_now();
        let held = self
            .calls
            .lock()
            .values()
            .filter(|(_, p)| p == principal)
            .count();
        let asked = self
            .confirmations
            .lock()
            .values()
            .filter(|(e, p)| p == principal && *e >= now)
            .count();
        held + asked >= self.per_principal
    }

    /// Holds a call under a fresh state for the request with `digest`: the state
    /// to give the client, and where its retry will arrive.
    pub(crate) fn hold(
        &self,
        digest: &str,
        principal: &str,
    ) -> (String, String, oneshot::Receiver<Resume>) {
        let mut raw = [0u8; 16];
        let _ = getrandom::fill(&mut raw);
        let id = hex::encode(raw);
        let expiry = unix_now() + self.ttl.as_secs();
        let mac = self.mac(&format!("{id}.{expiry}.{digest}"));
        let state = format!("{id}.{expiry}.{}", hex::encode(mac));
        let (tx, rx) = oneshot::channel();
        self.calls
            .lock()
            .insert(id.clone(), (tx, principal.to_string()));
        (id, state, rx)
    }

    /// Forgets a held call (its wait is over).
    pub(crate) fn release(&self, id: &str) {
        self.calls.lock().remove(id);
    }

    /// The held call a state names, taken (states are single-use), when the state
    /// is authentic, unexpired and for this request.
    pub(crate) fn take(
        &self,
        state: &str,
        digest: &str,
    ) -> Result<oneshot::Sender<Resume>, &'static str> {
        let id = self.verify(state, digest)?;
        self.calls
            .lock()
            .remove(&id)
            .map(|(tx, _)| tx)
            .ok_or(NOT_HELD_HERE)
    }

    /// A state for a `[confirm]` question about the request with `digest`,
    /// asked for `principal`; `None` when as many confirmations as held calls
    /// are open (the caller checks [`Self::full_for`] first).
    pub(crate) fn ask_confirmation(&self, digest: &str, principal: &str) -> Option<String> {
        let (id, expiry, mac) = self.open(CONFIRM_PREFIX, digest, "", principal, unix_now())?;
        Some(format!("{CONFIRM_PREFIX}{id}.{expiry}.{mac}"))
    }

    /// A state for a "connect your account" question about the request with
    /// `digest`, asked for `principal`; `None` when as many questions as held
    /// calls are open.
    pub(crate) fn ask_connect(&self, digest: &str, principal: &str) -> Option<String> {
        let (id, expiry, mac) = self.open(CONNECT_PREFIX, digest, "", principal, unix_now())?;
        Some(format!("{CONNECT_PREFIX}{id}.{expiry}.{mac}"))
    }

    /// Takes the connect question a state names (single use), when the state
    /// is authentic, unexpired and for this request.
    pub(crate) fn take_connect(&self, state: &str, digest: &str) -> Result<(), &'static str> {
        let rest = state
            .strip_prefix(CONNECT_PREFIX)
            .ok_or("it is not a state this gateway issued")?;
        let id = self.verify_in(CONNECT_PREFIX, rest, digest)?;
        self.confirmations
            .lock()
            .remove(&id)
            .map(|_| ())
            .ok_or("it was already used")
    }

    /// Registers a single-use id in `domain`, for `principal`, and its MAC
    /// over the id, its expiry, `digest` and `suffix`; `None` when as many as
    /// held calls are open.
    fn open(
        &self,
        domain: &str,
        digest: &str,
        suffix: &str,
        principal: &str,
        now: u64,
    ) -> Option<(String, u64, String)> {
        let mut open = self.confirmations.lock();
        open.retain(|_, (expiry, _)| *expiry >= now);
        if open.len() >= self.max {
            return None;
        }
        let mut raw = [0u8; 16];
        let _ = getrandom::fill(&mut raw);
        let id = hex::encode(raw);
        let expiry = now + self.ttl.as_secs();
        let mac = self.mac(&format!("{domain}{id}.{expiry}.{digest}{suffix}"));
        open.insert(id.clone(), (expiry, principal.to_string()));
        Some((id, expiry, hex::encode(mac)))
    }

    /// Wraps the state a 2026-07-28 upstream gave a call a human confirmed,
    /// bound to the request and the principal (`digest`), expiring with
    /// `limits.held_call_ttl` and single-use: its retry goes on without asking
    /// again, once. `None` when as many as held calls are open.
    pub(crate) fn wrap_confirmed(
        &self,
        digest: &str,
        principal: &str,
        upstream_state: &str,
    ) -> Option<String> {
        self.wrap_confirmed_at(digest, principal, upstream_state, unix_now())
    }

    fn wrap_confirmed_at(
        &self,
        digest: &str,
        principal: &str,
        upstream_state: &str,
        now: u64,
    ) -> Option<String> {
        let suffix = format!(".{upstream_state}");
        let (id, expiry, mac) = self.open(CONFIRMED_PREFIX, digest, &suffix, principal, now)?;
        Some(format!("{CONFIRMED_PREFIX}{id}.{expiry}.{mac}{suffix}"))
    }

    /// The upstream's state inside a [`Self::wrap_confirmed`] state, taken
    /// (single use), when the wrapper is authentic, unexpired and for this
    /// request and principal.
    pub(crate) fn unwrap_confirmed<'a>(
        &self,
        state: &'a str,
        digest: &str,
    ) -> Result<&'a str, &'static str> {
        let forged = "it is not a state this gateway issued";
        let rest = state.strip_prefix(CONFIRMED_PREFIX).ok_or(forged)?;
        let mut parts = rest.splitn(4, '.');
        let (Some(id), Some(expiry), Some(mac), Some(inner)) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(forged);
        };
        let bound = format!("{id}.{expiry}.{mac}");
        let id = self.verify_in(CONFIRMED_PREFIX, &bound, &format!("{digest}.{inner}"))?;
        self.confirmations
            .lock()
            .remove(&id)
            .map(|_| inner)
            .ok_or("it was already used")
    }

    /// Takes the confirmation a state names (single use), when the state is
    /// authentic, unexpired and for this request.
    pub(crate) fn take_confirmation(&self, state: &str, digest: &str) -> Result<(), &'static str> {
        let rest = state
            .strip_prefix(CONFIRM_PREFIX)
            .ok_or("it is not a state this gateway issued")?;
        let id = self.verify_in(CONFIRM_PREFIX, rest, digest)?;
        self.confirmations
            .lock()
            .remove(&id)
            .map(|_| ())
            .ok_or("it was already used")
    }

    /// The state's id when it is authentic, unexpired and for this request.
    fn verify(&self, state: &str, digest: &str) -> Result<String, &'static str> {
        self.verify_in("", state, digest)
    }

    /// [`Self::verify`] in a MAC domain (`""` for held calls).
    fn verify_in(&self, domain: &str, state: &str, digest: &str) -> Result<String, &'static str> {
        if self.key == [0u8; 32] {
            return Err("bridging is disabled on this gateway");
        }
        let mut parts = state.split('.');
        let (Some(id), Some(expiry), Some(mac), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err("it is not a state this gateway issued");
        };
        let got = hex::decode(mac).map_err(|_| "it is not a state this gateway issued")?;
        // Constant time: no early exit on the first differing byte.
        let signed = format!("{domain}{id}.{expiry}.{digest}");
        if !manifold_foundation::mac::verify_hmac_sha256(&self.key, &[signed.as_bytes()], &got) {
            return Err("it was altered, or belongs to another request or caller");
        }
        let expiry: u64 = expiry.parse().map_err(|_| "it is malformed")?;
        if unix_now() > expiry {
            return Err("it expired");
        }
        Ok(id.to_string())
    }
}

/// For the console's overview.
impl HeldCalls {
    /// Calls held for a client's input, and open confirmation questions.
    pub(crate) fn counts(&self) -> (usize, usize) {
        (self.calls.lock().len(), self.confirmations.lock().len())
    }
}

/// Whether `params` carry the `requestState` of a held call (not of a
/// `[confirm]` question, which the confirm step answers, nor of a connect
/// question, which the credentials step takes).
pub(crate) fn is_retry(params: &Map<String, Value>) -> bool {
    params.get("requestState").is_some_and(|s| {
        !s.as_str().is_some_and(|s| {
            s.starts_with(CONFIRM_PREFIX)
                || s.starts_with(CONFIRMED_PREFIX)
                || s.starts_with(CONNECT_PREFIX)
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const TTL: Duration = Duration::from_secs(120);

    fn held(secret: Option<&str>) -> HeldCalls {
        HeldCalls::new(secret, TTL, 8)
    }

    #[test]
    fn states_verify_only_for_their_request_and_untampered() {
        let held = held(None);
        let (id, state, _rx) = held.hold("digest-a", "p");
        assert_eq!(held.verify(&state, "digest-a"), Ok(id));
        assert!(held.verify(&state, "digest-b").is_err(), "another request");
        let mut tampered = state.clone();
        tampered.replace_range(0..1, if state.starts_with('0') { "1" } else { "0" });
        assert!(held.verify(&tampered, "digest-a").is_err(), "altered id");
        assert!(held.verify("garbage", "digest-a").is_err());
        let other = HeldCalls::new(None, TTL, 8);
        assert!(
            other.verify(&state, "digest-a").is_err(),
            "another gateway's key"
        );
    }

    #[test]
    fn confirmation_states_are_single_use_and_not_held_call_states() {
        let held = held(None);
        let state = held.ask_confirmation("d", "p").expect("room");
        assert!(state.starts_with(CONFIRM_PREFIX));
        assert!(held.take(&state, "d").is_err(), "not a held call");
        let bare = state.strip_prefix(CONFIRM_PREFIX).unwrap();
        assert!(held.verify(bare, "d").is_err(), "another MAC domain");
        assert!(held.take_confirmation(&state, "other").is_err());
        assert_eq!(held.take_confirmation(&state, "d"), Ok(()));
        assert_eq!(
            held.take_confirmation(&state, "d"),
            Err("it was already used")
        );
        let (_, call_state, _rx) = held.hold("d", "p");
        assert!(held
            .take_confirmation(&format!("{CONFIRM_PREFIX}{call_state}"), "d")
            .is_err());
        let small = HeldCalls::new(None, TTL, 1);
        assert!(small.ask_confirmation("a", "p").is_some());
        assert!(small.ask_confirmation("b", "p").is_none(), "bounded");
    }

    #[test]
    fn confirmed_wrappers_carry_the_upstream_state_for_their_request_only() {
        let held = held(None);
        let w = held
            .wrap_confirmed("d", "p", "upstream.state.with.dots")
            .expect("room");
        assert!(w.starts_with(CONFIRMED_PREFIX) && w.ends_with(".upstream.state.with.dots"));
        assert!(
            held.unwrap_confirmed(&w, "other").is_err(),
            "another request"
        );
        assert!(held.unwrap_confirmed("confirmed.00.forged", "d").is_err());
        assert!(HeldCalls::new(None, TTL, 8)
            .unwrap_confirmed(&w, "d")
            .is_err());
        // Another state of the same shape in another domain does not pass.
        let question = held.ask_confirmation("d", "p").expect("room");
        let dressed = question.replacen(CONFIRM_PREFIX, CONFIRMED_PREFIX, 1) + ".inner";
        assert!(held.unwrap_confirmed(&dressed, "d").is_err());
        // A failed attempt does not use it up; a good one does.
        assert_eq!(
            held.unwrap_confirmed(&w, "d"),
            Ok("upstream.state.with.dots")
        );
        assert_eq!(held.unwrap_confirmed(&w, "d"), Err("it was already used"));
    }

    #[test]
    fn confirmed_wrappers_expire_and_are_bounded() {
        let held = held(None);
        let old = held
            .wrap_confirmed_at("d", "p", "s", unix_now() - 2 * TTL.as_secs())
            .expect("room");
        assert_eq!(held.unwrap_confirmed(&old, "d"), Err("it expired"));
        // The expiry is under the MAC: moving it forward breaks it.
        let (id_part, rest) = old.split_at(CONFIRMED_PREFIX.len() + 33);
        let expiry: u64 = rest.split('.').next().unwrap().parse().unwrap();
        let moved = format!(
            "{id_part}{}{}",
            expiry + 10 * TTL.as_secs(),
            &rest[expiry.to_string().len()..]
        );
        assert!(held.unwrap_confirmed(&moved, "d").is_err());
        let small = HeldCalls::new(None, TTL, 1);
        assert!(small.wrap_confirmed("a", "p", "s").is_some());
        assert!(small.wrap_confirmed("b", "p", "s").is_none(), "bounded");
        assert!(
            small.ask_confirmation("c", "p").is_none(),
            "one bound for both"
        );
    }

    #[test]
    fn states_are_bound_to_the_principal() {
        let params: Map<String, Value> =
            serde_json::from_value(json!({"name": "t", "arguments": {"x": 1}})).unwrap();
        let alice = params_digest("tools/call", &params, "api_key:alice");
        let bob = params_digest("tools/call", &params, "api_key:bob");
        assert_ne!(alice, bob);
        let held = held(None);
        let (_, state, _rx) = held.hold(&alice, "api_key:alice");
        assert!(held.take(&state, &bob).is_err(), "another principal");
        assert!(held.take(&state, &alice).is_ok(), "not used up by bob");
        let question = held.ask_confirmation(&alice, "api_key:alice").unwrap();
        assert!(held.take_confirmation(&question, &bob).is_err());
        assert!(held.take_confirmation(&question, &alice).is_ok());
        let w = held.wrap_confirmed(&alice, "api_key:alice", "s").unwrap();
        assert!(held.unwrap_confirmed(&w, &bob).is_err());
        assert_eq!(held.unwrap_confirmed(&w, &alice), Ok("s"));
        // A principal cannot end where the method begins.
        assert_ne!(
            params_digest("tools/call", &params, "a"),
            params_digest("ls/call", &params, "a-too")
        );
    }

    #[test]
    fn one_principal_cannot_take_every_place() {
        let held = HeldCalls::new(None, TTL, 8).with_per_principal(2);
        let _one = held.hold("d1", "alice");
        assert!(held.ask_confirmation("d2", "alice").is_some());
        assert!(held.full_for("alice"), "a held call and a question: two");
        assert!(!held.full_for("bob"));
        let (_, state, _rx) = held.hold("d3", "bob");
        assert!(held.take(&state, "d3").is_ok());
        assert!(!held.full_for("bob"), "a taken call gives its place back");
    }

    #[test]
    fn a_state_is_taken_once() {
        let held = held(None);
        let (_, state, _rx) = held.hold("d", "p");
        assert!(held.take(&state, "d").is_ok());
        assert_eq!(
            held.take(&state, "d").err(),
            Some("it was already used, or its call ended")
        );
    }

    #[test]
    fn a_configured_key_is_shared_by_every_gateway_configured_with_it() {
        let secret = "0123456789abcdef0123456789abcdef";
        let (a, b) = (held(Some(secret)), held(Some(secret)));
        let (id, state, _rx) = a.hold("digest-a", "p");
        assert_eq!(
            b.verify(&state, "digest-a"),
            Ok(id),
            "same secret, same key"
        );
        let c = held(Some("another-secret-another-secret-xx"));
        assert!(c.verify(&state, "digest-a").is_err(), "another secret");
    }

    #[test]
    fn hmac_matches_rfc_4231_test_case_2() {
        // Key "Jefe", zero-padded: HMAC pads short keys with zeros, so the MAC is
        // the RFC's.
        let mut h = held(None);
        h.key = [0u8; 32];
        h.key[..4].copy_from_slice(b"Jefe");
        assert_eq!(
            hex::encode(h.mac("what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    #[test]
    fn the_digest_ignores_meta_and_retry_members() {
        let a: Map<String, Value> =
            serde_json::from_value(json!({"name": "t", "arguments": {"x": 1}})).unwrap();
        let b: Map<String, Value> = serde_json::from_value(json!({
            "name": "t", "arguments": {"x": 1}, "_meta": {"k": 1},
            "inputResponses": {}, "requestState": "s"
        }))
        .unwrap();
        assert_eq!(
            params_digest("tools/call", &a, "p"),
            params_digest("tools/call", &b, "p")
        );
        // The retry's members first (the Python SDK's order) change nothing.
        let c: Map<String, Value> = serde_json::from_value(json!({
            "inputResponses": {}, "requestState": "s", "name": "t", "arguments": {"x": 1}
        }))
        .unwrap();
        assert_eq!(
            params_digest("tools/call", &a, "p"),
            params_digest("tools/call", &c, "p")
        );
        assert_ne!(
            params_digest("tools/call", &a, "p"),
            params_digest("prompts/get", &a, "p")
        );
    }
}
