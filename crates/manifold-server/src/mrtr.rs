//! Bridging a 2026-07-28 client to a legacy upstream that asks the client
//! something mid-call (sampling, elicitation, roots): the upstream's request
//! becomes an `InputRequiredResult`, and the client's retry resumes the held call.
//!
//! - The call stays open upstream, owned by a holder task, for at most
//!   [`HELD_CALL_TTL`]; then it is cancelled upstream.
//! - `requestState` is `<id>.<expiry>.<mac>`: the MAC (HMAC-SHA-256 with the
//!   SHA-256 of `server.request_state_key`, or a key generated at start) covers the id, the expiry, the method and a digest of the
//!   request's params (without `_meta`, `inputResponses`, `requestState`), so a
//!   tampered, expired or replayed-elsewhere state is refused before anything is
//!   looked up. States are single-use: a resumed call gets a fresh one if it asks
//!   again.
//! - A client that did not declare the capability the upstream needs gets 400 +
//!   -32021 with `requiredCapabilities`, and the call is cancelled upstream.
//!
//! Not here: the reverse bridge (legacy client ↔ modern upstream), and requests
//! that arrive after a response stream has started (those are refused).

use http::{Response, StatusCode};
use manifold_protocol::{jsonrpc, ErrorCode, RequestId, RpcError};
use manifold_upstream::{Call, CallEvent, CallOutcome, Responder};
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::sync::oneshot;

use crate::body::Body;
use crate::forward::required_capability;
use crate::http::{json_response, rpc_error};
use crate::Gateway;

/// How long a call waits upstream for the client's retry.
pub const HELD_CALL_TTL: Duration = Duration::from_secs(120);
/// Calls held at once; beyond, new input requests are refused (the upstream gets an
/// error for its request) rather than holding without bound.
pub const MAX_HELD_CALLS: usize = 1024;

/// How long Manifold waits, after an upstream's question, for more questions to
/// ask in the same round (an upstream may ask several concurrently).
pub const GATHER_WINDOW: Duration = Duration::from_millis(50);

/// The key of the `n`-th question of a round (from 0) in `inputRequests`.
fn input_key(n: usize) -> String {
    format!("input_{}", n + 1)
}

/// One question an upstream asked its client.
pub(crate) struct Question {
    pub method: String,
    pub params: Option<Value>,
    pub responder: Responder,
}

/// The round's questions: `first`, and any others that arrive within
/// [`GATHER_WINDOW`]. An outcome instead means the upstream answered anyway.
async fn gather(call: &mut Call, first: Question) -> (Vec<Question>, Option<CallOutcome>) {
    let mut questions = vec![first];
    loop {
        match tokio::time::timeout(GATHER_WINDOW, call.next()).await {
            Ok(CallEvent::Request {
                method,
                params,
                responder,
            }) => questions.push(Question {
                method,
                params,
                responder,
            }),
            Ok(CallEvent::Notification(_)) => {}
            Ok(CallEvent::Done(outcome)) => return (questions, Some(outcome)),
            Err(_) => return (questions, None),
        }
    }
}

async fn refuse_all(questions: Vec<Question>, code: ErrorCode, why: &str) {
    for q in questions {
        q.responder.refuse(code, why).await;
    }
}

/// What a retry brings to a held call.
struct Resume {
    responses: Map<String, Value>,
    id: RequestId,
    reply: oneshot::Sender<Response<Body>>,
}

/// Held calls by state id, and the MAC key.
pub(crate) struct Held {
    key: [u8; 32],
    calls: Mutex<HashMap<String, oneshot::Sender<Resume>>>,
}

impl Held {
    /// With `secret` (`server.request_state_key`), the MAC key is its SHA-256,
    /// the same in every process configured with it; without, a random key.
    pub(crate) fn new(secret: Option<&str>) -> Held {
        match secret {
            Some(s) => Held {
                key: Sha256::digest(s.as_bytes()).into(),
                calls: Mutex::new(HashMap::new()),
            },
            None => Held::default(),
        }
    }
}

impl Default for Held {
    fn default() -> Self {
        let mut key = [0u8; 32];
        // Without OS randomness a key of zeros would make states forgeable; the
        // bridge then refuses every state (see `verify`), which is safe.
        if getrandom::fill(&mut key).is_err() {
            tracing::error!("no OS randomness: InputRequiredResult bridging is disabled");
        }
        Held {
            key,
            calls: Mutex::new(HashMap::new()),
        }
    }
}

fn hmac(key: &[u8; 32], msg: &[u8]) -> [u8; 32] {
    let mut ipad = [0x36u8; 64];
    let mut opad = [0x5cu8; 64];
    for (i, k) in key.iter().enumerate() {
        ipad[i] ^= k;
        opad[i] ^= k;
    }
    let inner = Sha256::new()
        .chain_update(ipad)
        .chain_update(msg)
        .finalize();
    Sha256::new()
        .chain_update(opad)
        .chain_update(inner)
        .finalize()
        .into()
}

/// A digest of what identifies the request across retries.
pub(crate) fn params_digest(method: &str, params: &Map<String, Value>) -> String {
    let mut p = params.clone();
    for k in ["_meta", "inputResponses", "requestState"] {
        p.remove(k);
    }
    let text = format!("{method}\n{}", Value::Object(p));
    hex::encode(&Sha256::digest(text.as_bytes())[..16])
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

impl Held {
    fn mint(&self, digest: &str) -> (String, String) {
        let mut raw = [0u8; 16];
        let _ = getrandom::fill(&mut raw);
        let id = hex::encode(raw);
        let expiry = now_secs() + HELD_CALL_TTL.as_secs();
        let mac = hmac(&self.key, format!("{id}.{expiry}.{digest}").as_bytes());
        (id.clone(), format!("{id}.{expiry}.{}", hex::encode(mac)))
    }

    /// The state's id when it is authentic, unexpired and for this request.
    fn verify(&self, state: &str, digest: &str) -> Result<String, &'static str> {
        if self.key == [0u8; 32] {
            return Err("bridging is disabled on this gateway");
        }
        let mut parts = state.split('.');
        let (Some(id), Some(expiry), Some(mac), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err("it is not a state this gateway issued");
        };
        let want = hmac(&self.key, format!("{id}.{expiry}.{digest}").as_bytes());
        let got = hex::decode(mac).map_err(|_| "it is not a state this gateway issued")?;
        // Constant-time comparison: no early exit on the first differing byte.
        if got.len() != want.len() || got.iter().zip(want).fold(0u8, |a, (x, y)| a | (x ^ y)) != 0 {
            return Err("it was altered, or belongs to a different request");
        }
        let expiry: u64 = expiry.parse().map_err(|_| "it is malformed")?;
        if now_secs() > expiry {
            return Err("it expired");
        }
        Ok(id.to_string())
    }
}

fn input_required(id: &RequestId, questions: &[Question], state: &str) -> Vec<u8> {
    let mut requests = Map::new();
    for (n, q) in questions.iter().enumerate() {
        let mut request = Map::new();
        request.insert("method".into(), Value::from(q.method.as_str()));
        if let Some(p) = &q.params {
            request.insert("params".into(), p.clone());
        }
        requests.insert(input_key(n), Value::Object(request));
    }
    let result = json!({
        "resultType": "input_required",
        "inputRequests": requests,
        "requestState": state,
    });
    jsonrpc::response_bytes_from_json(id, result.to_string().as_bytes())
}

/// Phase: the upstream asked the (modern) client something before answering.
/// Answers the client with -32021 or an `InputRequiredResult`, holding the call.
pub(crate) async fn bridge(
    gw: &Arc<Gateway>,
    caps: &Map<String, Value>,
    id: &RequestId,
    digest: String,
    mut call: Call,
    first: Question,
    answer: Answer,
) -> Response<Body> {
    let (questions, outcome) = gather(&mut call, first).await;
    if let Some(outcome) = outcome {
        // The upstream answered without waiting for its questions.
        refuse_all(
            questions,
            ErrorCode::INTERNAL_ERROR,
            "the call already ended",
        )
        .await;
        return json_response(StatusCode::OK, answer(outcome).await, None);
    }
    let mut missing = Map::new();
    for q in &questions {
        if let Some(cap) = required_capability(&q.method) {
            if !caps.contains_key(cap) {
                missing.insert(cap.to_string(), json!({}));
            }
        }
    }
    if !missing.is_empty() {
        let names: Vec<&str> = missing.keys().map(String::as_str).collect();
        let message = format!(
            "This request needs the client capabilities {}; declare them in _meta clientCapabilities",
            names.join(", ")
        );
        refuse_all(
            questions,
            ErrorCode::MISSING_CLIENT_CAPABILITY,
            "the client lacks a required capability",
        )
        .await;
        call.cancel("the client lacks a required capability").await;
        return rpc_error(
            StatusCode::BAD_REQUEST,
            Some(id),
            &RpcError::new(ErrorCode::MISSING_CLIENT_CAPABILITY, message)
                .with_data(json!({"requiredCapabilities": missing})),
        );
    }
    let full = gw
        .held
        .calls
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .len()
        >= MAX_HELD_CALLS;
    if full {
        refuse_all(
            questions,
            ErrorCode::INTERNAL_ERROR,
            "too many calls are waiting for client input",
        )
        .await;
        call.cancel("too many held calls").await;
        return rpc_error(
            StatusCode::SERVICE_UNAVAILABLE,
            Some(id),
            &RpcError::internal(format!(
                "too many calls are waiting for client input ({MAX_HELD_CALLS}); retry later"
            )),
        );
    }
    let (state_id, state) = gw.held.mint(&digest);
    let (tx, rx) = oneshot::channel();
    gw.held
        .calls
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .insert(state_id.clone(), tx);
    let bytes = input_required(id, &questions, &state);
    let responders = questions.into_iter().map(|q| q.responder).collect();
    let g = gw.clone();
    gw.tasks
        .spawn(hold(g, call, responders, rx, state_id, digest, answer));
    json_response(StatusCode::OK, bytes, None)
}

/// Builds (and audits) the final response bytes from the call's outcome.
pub(crate) type Answer = Box<
    dyn FnOnce(CallOutcome) -> std::pin::Pin<Box<dyn std::future::Future<Output = Vec<u8>> + Send>>
        + Send,
>;

/// Owns a held call until the retry comes (or the TTL ends), answers the
/// upstream's request with the client's response, and drives the call on; asks
/// again (a fresh state) if the upstream does.
async fn hold(
    gw: Arc<Gateway>,
    mut call: Call,
    mut responders: Vec<Responder>,
    mut rx: oneshot::Receiver<Resume>,
    mut state_id: String,
    digest: String,
    answer: Answer,
) {
    loop {
        let resume = tokio::select! {
            r = &mut rx => r.ok(),
            _ = tokio::time::sleep(HELD_CALL_TTL) => None,
            _ = gw.shutdown.cancelled() => None,
        };
        let Some(resume) = resume else {
            gw.held
                .calls
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(&state_id);
            call.cancel("the client did not come back with the input")
                .await;
            return;
        };
        for (n, responder) in responders.drain(..).enumerate() {
            match resume.responses.get(&input_key(n)) {
                Some(v) => {
                    let raw = RawValue::from_string(v.to_string())
                        .unwrap_or_else(|_| RawValue::NULL.to_owned());
                    responder.respond(Ok(raw)).await;
                }
                None => {
                    responder
                        .refuse(
                            ErrorCode::INVALID_PARAMS,
                            "the client's retry carried no response for this input request",
                        )
                        .await
                }
            }
        }
        // Drive the call on: its outcome, or the next round of questions.
        let (questions, outcome) = loop {
            match call.next().await {
                CallEvent::Notification(_) => continue,
                CallEvent::Done(outcome) => break (Vec::new(), Some(outcome)),
                CallEvent::Request {
                    method,
                    params,
                    responder,
                } => {
                    let first = Question {
                        method,
                        params,
                        responder,
                    };
                    break gather(&mut call, first).await;
                }
            }
        };
        if let Some(outcome) = outcome {
            refuse_all(
                questions,
                ErrorCode::INTERNAL_ERROR,
                "the call already ended",
            )
            .await;
            let bytes = answer(outcome).await;
            let _ = resume.reply.send(json_response(
                StatusCode::OK,
                retag(&bytes, &resume.id),
                None,
            ));
            return;
        }
        let (id, state) = gw.held.mint(&digest);
        let (tx, new_rx) = oneshot::channel();
        gw.held
            .calls
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id.clone(), tx);
        let bytes = input_required(&resume.id, &questions, &state);
        let _ = resume
            .reply
            .send(json_response(StatusCode::OK, bytes, None));
        responders = questions.into_iter().map(|q| q.responder).collect();
        rx = new_rx;
        state_id = id;
    }
}

/// The final response was built for the first request's id; the retry has its own.
fn retag(bytes: &[u8], id: &RequestId) -> Vec<u8> {
    let Ok(mut v) = serde_json::from_slice::<Map<String, Value>>(bytes) else {
        return bytes.to_vec();
    };
    v.insert("id".into(), id.as_value().clone());
    serde_json::to_vec(&Value::Object(v)).unwrap_or_else(|_| bytes.to_vec())
}

/// A retry carrying `requestState`: resumes its held call and waits for the
/// answer. `None` when the request carries no state (a first attempt).
pub(crate) async fn resume(
    gw: &Gateway,
    id: &RequestId,
    method: &str,
    params: &Map<String, Value>,
) -> Option<Response<Body>> {
    let state = params.get("requestState")?;
    let refuse = |why: &str| {
        Some(rpc_error(
            StatusCode::BAD_REQUEST,
            Some(id),
            &RpcError::invalid_params(format!(
                "Invalid requestState: {why}; send the request again without it"
            )),
        ))
    };
    let Some(state) = state.as_str() else {
        return refuse("it must be a string");
    };
    let state_id = match gw.held.verify(state, &params_digest(method, params)) {
        Ok(s) => s,
        Err(why) => return refuse(why),
    };
    let held = gw
        .held
        .calls
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .remove(&state_id);
    let Some(tx) = held else {
        return refuse("it was already used, or its call ended");
    };
    let responses = params
        .get("inputResponses")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let (reply, wait) = oneshot::channel();
    if tx
        .send(Resume {
            responses,
            id: id.clone(),
            reply,
        })
        .is_err()
    {
        return refuse("its call ended");
    }
    Some(match wait.await {
        Ok(r) => r,
        Err(_) => rpc_error(
            StatusCode::OK,
            Some(id),
            &RpcError::internal("the held call ended without an answer"),
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_verify_only_for_their_request_and_untampered() {
        let held = Held::default();
        let (id, state) = held.mint("digest-a");
        assert_eq!(held.verify(&state, "digest-a"), Ok(id));
        assert!(held.verify(&state, "digest-b").is_err(), "another request");
        let mut tampered = state.clone();
        tampered.replace_range(0..1, if state.starts_with('0') { "1" } else { "0" });
        assert!(held.verify(&tampered, "digest-a").is_err(), "altered id");
        assert!(held.verify("garbage", "digest-a").is_err());
        let other = Held::default();
        assert!(
            other.verify(&state, "digest-a").is_err(),
            "another gateway's key"
        );
    }

    #[test]
    fn a_configured_key_is_shared_by_every_gateway_configured_with_it() {
        let secret = "0123456789abcdef0123456789abcdef";
        let (a, b) = (Held::new(Some(secret)), Held::new(Some(secret)));
        let (id, state) = a.mint("digest-a");
        assert_eq!(
            b.verify(&state, "digest-a"),
            Ok(id),
            "same secret, same key"
        );
        let c = Held::new(Some("another-secret-another-secret-xx"));
        assert!(c.verify(&state, "digest-a").is_err(), "another secret");
    }

    #[test]
    fn hmac_matches_rfc_4231_test_case_2() {
        // Key "Jefe", zero-padded: HMAC pads short keys with zeros, so the MAC is
        // the RFC's.
        let mut key = [0u8; 32];
        key[..4].copy_from_slice(b"Jefe");
        assert_eq!(
            hex::encode(hmac(&key, b"what do ya want for nothing?")),
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
            params_digest("tools/call", &a),
            params_digest("tools/call", &b)
        );
        assert_ne!(
            params_digest("tools/call", &a),
            params_digest("prompts/get", &a)
        );
    }
}
