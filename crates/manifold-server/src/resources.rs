//! Resources and completion through one endpoint: `resources/read`,
//! `resources/subscribe` / `unsubscribe`, `notifications/resources/updated`, and
//! `completion/complete`, each routed to the upstream that owns the URI or prompt.
//!
//! Who owns a URI, first match wins:
//! 1. the merged lists and templates (see `manifold_catalog::resources`);
//! 2. URIs Manifold has passed to a client in a result (`resource_link`, embedded
//!    resources, `resources/read` contents), remembered per upstream, at most
//!    [`LEARNED_URI_CAPACITY`] of them (the oldest is forgotten first);
//! 3. the only ready upstream that declared `resources`, if there is exactly one.
//!
//! Otherwise the read fails with the spec's resource-not-found error (-32002).
//!
//! Subscriptions are shared: the first session to subscribe to a URI subscribes
//! upstream, and the last one to leave unsubscribes. An upstream's
//! `notifications/resources/updated` reaches only the sessions subscribed to that
//! URI. When an upstream reconnects, its subscriptions are renewed.
//!
//! Invariants: the `std::sync::Mutex`es here are never held across `.await`.

use http::{Response, StatusCode};
use manifold_protocol::methods as m;
use manifold_protocol::{jsonrpc, ErrorCode, RequestId, RpcError};
use manifold_upstream::{CallOutcome, Upstream};
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex};

use crate::body::Body;
use crate::forward::{dispatch, refuse, standard_headers, Failures, Target};
use crate::http::json_response;
use crate::observe::Observed;
use crate::session::DownSession;
use crate::Gateway;

/// URIs remembered from results (rule 2 above). Beyond this the oldest goes.
pub const LEARNED_URI_CAPACITY: usize = 10_000;

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// URIs seen in results, with the upstream that produced them; bounded, FIFO.
#[derive(Default)]
pub(crate) struct Learned {
    owner: HashMap<String, Arc<str>>,
    order: VecDeque<String>,
}

impl Learned {
    fn insert(&mut self, uri: String, upstream: &Arc<str>) {
        if self.owner.insert(uri.clone(), upstream.clone()).is_none() {
            self.order.push_back(uri);
            while self.order.len() > LEARNED_URI_CAPACITY {
                if let Some(old) = self.order.pop_front() {
                    self.owner.remove(&old);
                }
            }
        }
    }
}

/// One URI's subscribers.
struct Subscription {
    upstream: Arc<str>,
    sessions: HashSet<String>,
}

/// Every URI some session subscribed to.
#[derive(Default)]
pub(crate) struct Subscriptions(HashMap<String, Subscription>);

/// Remembers the URIs in a result (`content` of a tool result, `messages[].content`
/// of a prompt, `contents` of a read). Cheap when there are none: the bytes are only
/// parsed if they contain `"uri"`.
pub(crate) fn learn(gw: &Gateway, upstream: &Arc<str>, raw: &RawValue) {
    if !raw.get().contains("\"uri\"") {
        return;
    }
    let Ok(v) = serde_json::from_str::<Value>(raw.get()) else {
        return;
    };
    let mut uris: Vec<String> = Vec::new();
    let mut from_block = |block: &Value| {
        let uri = match block.get("type").and_then(Value::as_str) {
            Some("resource_link") => block.get("uri"),
            Some("resource") => block.get("resource").and_then(|r| r.get("uri")),
            _ => None,
        };
        uris.extend(uri.and_then(Value::as_str).map(str::to_string));
    };
    for block in v
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        from_block(block);
    }
    for msg in v
        .get("messages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        match msg.get("content") {
            Some(Value::Array(blocks)) => blocks.iter().for_each(&mut from_block),
            Some(block) => from_block(block),
            None => {}
        }
    }
    uris.extend(
        v.get("contents")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|c| c.get("uri").and_then(Value::as_str).map(str::to_string)),
    );
    if uris.is_empty() {
        return;
    }
    let mut learned = lock(&gw.learned);
    for uri in uris {
        learned.insert(uri, upstream);
    }
}

/// The upstream that owns `uri`, by the rules in the module docs.
pub(crate) fn owner(gw: &Gateway, uri: &str) -> Option<Upstream> {
    let by_catalog = gw.catalog.load().resources.owner(uri).cloned();
    let name = by_catalog.or_else(|| lock(&gw.learned).owner.get(uri).cloned());
    if let Some(name) = name {
        return gw.by_name.get(&name).cloned();
    }
    let mut serving = gw.upstreams.iter().filter(|u| {
        u.status()
            .facts
            .is_some_and(|f| f.capabilities.contains_key("resources"))
    });
    match (serving.next(), serving.next()) {
        (Some(only), None) => Some(only.clone()),
        _ => None,
    }
}

fn not_found(uri: &str) -> RpcError {
    RpcError::new(
        ErrorCode::RESOURCE_NOT_FOUND_LEGACY,
        format!("Resource not found: {uri}"),
    )
    .with_data(serde_json::json!({ "uri": uri }))
}

fn uri_param(params: &Map<String, Value>, method: &str) -> Result<String, RpcError> {
    params
        .get("uri")
        .and_then(Value::as_str)
        .map(str::to_string)
        .ok_or_else(|| RpcError::invalid_params(format!("{method} needs params.uri (a string)")))
}

fn error_response(id: &RequestId, e: &RpcError) -> Response<Body> {
    json_response(StatusCode::OK, jsonrpc::error_bytes(Some(id), e), None)
}

fn empty_result(id: &RequestId) -> Response<Body> {
    json_response(
        StatusCode::OK,
        jsonrpc::response_bytes_from_json(id, b"{}"),
        None,
    )
}

/// `resources/read`.
pub(crate) async fn read(
    gw: &Arc<Gateway>,
    session: &Arc<DownSession>,
    id: RequestId,
    params: Map<String, Value>,
    accepts_sse: bool,
    meta: &crate::RequestMeta,
) -> Response<Body> {
    let mut obs = Observed::new(meta, m::RESOURCES_READ, Some(session));
    let uri = match uri_param(&params, m::RESOURCES_READ) {
        Ok(u) => u,
        Err(e) => return refuse(gw, obs, &id, e).await,
    };
    obs.name = Some(uri.clone());
    obs.original = Some(uri.clone());
    let Some(upstream) = owner(gw, &uri) else {
        return refuse(gw, obs, &id, not_found(&uri)).await;
    };
    let target = Target {
        upstream,
        headers: standard_headers(m::RESOURCES_READ, Some(&uri)),
        failures: Failures::RpcRead,
    };
    dispatch(
        gw,
        session,
        id,
        m::RESOURCES_READ,
        params,
        target,
        accepts_sse,
        obs,
    )
    .await
}

/// Sends a request Manifold makes itself (subscribe, unsubscribe) and waits for it.
/// A modern upstream has no such methods: the URI joins (or leaves) the
/// `resourceSubscriptions` of Manifold's listen to it.
async fn own_request(upstream: &Upstream, method: &str, uri: &str) -> Result<(), RpcError> {
    if upstream.is_modern() {
        upstream.watch_resource(uri, method == m::RESOURCES_SUBSCRIBE);
        return Ok(());
    }
    let mut params = Map::new();
    params.insert("uri".into(), Value::from(uri));
    let mut call = upstream
        .call(method, Some(params), standard_headers(method, Some(uri)))
        .await
        .map_err(|e| RpcError::new(e.code(), e.to_string()))?;
    match call.outcome().await {
        CallOutcome::Result(_) => Ok(()),
        CallOutcome::Error(raw) => {
            let v: Value = serde_json::from_str(raw.get()).unwrap_or(Value::Null);
            let code = v.get("code").and_then(Value::as_i64).unwrap_or(-32603);
            let msg = v.get("message").and_then(Value::as_str).unwrap_or("error");
            Err(RpcError::new(
                ErrorCode(code),
                format!("upstream `{}`: {msg}", upstream.name()),
            ))
        }
        CallOutcome::Failed(e) => Err(RpcError::new(e.code(), e.to_string())),
    }
}

/// `resources/subscribe`.
pub(crate) async fn subscribe(
    gw: &Arc<Gateway>,
    session: &Arc<DownSession>,
    id: RequestId,
    params: Map<String, Value>,
) -> Response<Body> {
    let uri = match uri_param(&params, m::RESOURCES_SUBSCRIBE) {
        Ok(u) => u,
        Err(e) => return error_response(&id, &e),
    };
    match join(gw, &session.id, &uri).await {
        Ok(()) => empty_result(&id),
        Err(e) => error_response(&id, &e),
    }
}

/// Adds `subscriber` (a session id, or a listen stream's key) to the URI's
/// subscribers; the first one subscribes upstream. On an upstream refusal the
/// subscriber is removed again and the error returned.
pub(crate) async fn join(gw: &Arc<Gateway>, subscriber: &str, uri: &str) -> Result<(), RpcError> {
    let Some(upstream) = owner(gw, uri) else {
        return Err(not_found(uri));
    };
    let first = {
        let mut subs = lock(&gw.subscriptions);
        let sub = subs
            .0
            .entry(uri.to_string())
            .or_insert_with(|| Subscription {
                upstream: upstream.name().clone(),
                sessions: HashSet::new(),
            });
        let first = sub.sessions.is_empty();
        sub.sessions.insert(subscriber.to_string());
        first
    };
    if first {
        if let Err(e) = own_request(&upstream, m::RESOURCES_SUBSCRIBE, uri).await {
            leave(gw, subscriber, uri);
            return Err(e);
        }
    }
    Ok(())
}

/// Removes one session from a URI's subscribers; true if nobody is left (the
/// entry is then gone and the caller unsubscribes upstream).
fn leave(gw: &Gateway, session: &str, uri: &str) -> Option<Arc<str>> {
    let mut subs = lock(&gw.subscriptions);
    let sub = subs.0.get_mut(uri)?;
    if !sub.sessions.remove(session) || !sub.sessions.is_empty() {
        return None;
    }
    subs.0.remove(uri).map(|s| s.upstream)
}

/// Unsubscribes upstream in the background (the last subscriber left without a
/// request to answer). A subscriber may join while the unsubscribe is on its way
/// and its subscribe can reach the upstream first: then the URI is subscribed
/// again afterwards, so the upstream ends up as the subscribers say.
fn unsubscribe_upstream(gw: &Arc<Gateway>, upstream: Arc<str>, uri: String) {
    let Some(up) = gw.by_name.get(&upstream).cloned() else {
        return;
    };
    if up.is_modern() {
        // No request: the URI leaves the listen's set at once, in order.
        up.watch_resource(&uri, false);
        return;
    }
    let gw2 = gw.clone();
    gw.tasks.spawn(async move {
        let wanted = |gw: &Gateway| lock(&gw.subscriptions).0.contains_key(&uri);
        tokio::select! {
            _ = gw2.shutdown.cancelled() => {}
            _ = async {
                if wanted(&gw2) {
                    return; // someone joined before it was sent: nothing to undo
                }
                if let Err(e) = own_request(&up, m::RESOURCES_UNSUBSCRIBE, &uri).await {
                    tracing::debug!(upstream = %up.name(), %uri, error = %e.message, "unsubscribe failed");
                }
                if wanted(&gw2) {
                    if let Err(e) = own_request(&up, m::RESOURCES_SUBSCRIBE, &uri).await {
                        tracing::warn!(upstream = %up.name(), %uri, error = %e.message,
                            "re-subscribing after a racing unsubscribe failed");
                    }
                }
            } => {}
        }
    });
}

/// `resources/unsubscribe`: always `{}` (unsubscribing twice is harmless).
pub(crate) async fn unsubscribe(
    gw: &Arc<Gateway>,
    session: &Arc<DownSession>,
    id: RequestId,
    params: Map<String, Value>,
) -> Response<Body> {
    let uri = match uri_param(&params, m::RESOURCES_UNSUBSCRIBE) {
        Ok(u) => u,
        Err(e) => return error_response(&id, &e),
    };
    // Awaited, not spawned: a subscribe right after must not overtake it upstream.
    if let Some(upstream) = leave(gw, &session.id, &uri) {
        if let Some(up) = gw.by_name.get(&upstream).cloned() {
            if let Err(e) = own_request(&up, m::RESOURCES_UNSUBSCRIBE, &uri).await {
                tracing::debug!(upstream = %up.name(), %uri, error = %e.message, "unsubscribe failed");
            }
        }
    }
    empty_result(&id)
}

/// A session (or listen stream) ended: its subscriptions go, upstream too where
/// it was the last.
pub(crate) fn session_ended(gw: &Arc<Gateway>, session: &str) {
    let uris: Vec<String> = lock(&gw.subscriptions)
        .0
        .iter()
        .filter(|(_, s)| s.sessions.contains(session))
        .map(|(u, _)| u.clone())
        .collect();
    for uri in uris {
        if let Some(upstream) = leave(gw, session, &uri) {
            unsubscribe_upstream(gw, upstream, uri);
        }
    }
}

/// `notifications/resources/updated` from `upstream`: to the subscribers of its
/// URI, legacy sessions on their GET stream and listen streams tagged with their
/// `subscriptionId`.
pub(crate) fn updated(gw: &Arc<Gateway>, upstream: &str, msg: &Map<String, Value>) -> usize {
    let Some(uri) = jsonrpc::params(msg)
        .and_then(|p| p.get("uri"))
        .and_then(Value::as_str)
    else {
        return 0;
    };
    let sessions: Vec<String> = match lock(&gw.subscriptions).0.get(uri) {
        Some(s) if &*s.upstream == upstream => s.sessions.iter().cloned().collect(),
        _ => return 0,
    };
    let bytes = crate::body::sse_message(
        &serde_json::to_vec(&Value::Object(msg.clone())).unwrap_or_default(),
    );
    let (listens, sessions): (Vec<String>, Vec<String>) = sessions
        .into_iter()
        .partition(|id| crate::listen::is_listen_key(id));
    let mut sent = 0;
    let delivered = crate::listen::resource_updated(gw, &listens, msg);
    for (key, delivered) in listens.iter().zip(delivered) {
        match delivered {
            Some(d) => sent += usize::from(d),
            None => session_ended(gw, key),
        }
    }
    for id in sessions {
        match gw.sessions.get(&id) {
            Some(s) => sent += usize::from(s.push(bytes.clone())),
            None => session_ended(gw, &id),
        }
    }
    sent
}

/// An upstream (re)connected: its subscriptions were lost with the old
/// connection, so they are renewed.
pub(crate) fn renew(gw: &Arc<Gateway>, upstream: &Upstream) {
    let uris: Vec<String> = lock(&gw.subscriptions)
        .0
        .iter()
        .filter(|(_, s)| s.upstream == *upstream.name())
        .map(|(u, _)| u.clone())
        .collect();
    if uris.is_empty() {
        return;
    }
    let up = upstream.clone();
    let shutdown = gw.shutdown.clone();
    gw.tasks.spawn(async move {
        for uri in uris {
            tokio::select! {
                _ = shutdown.cancelled() => return,
                r = own_request(&up, m::RESOURCES_SUBSCRIBE, &uri) => if let Err(e) = r {
                    tracing::warn!(upstream = %up.name(), %uri, error = %e.message,
                        "renewing a resource subscription failed");
                }
            }
        }
    });
}

/// `completion/complete`: a `ref/prompt` goes to the prompt's upstream with its
/// original name; a `ref/resource` to the owner of the URI or template.
pub(crate) async fn complete(
    gw: &Arc<Gateway>,
    session: &Arc<DownSession>,
    id: RequestId,
    mut params: Map<String, Value>,
    accepts_sse: bool,
    meta: &crate::RequestMeta,
) -> Response<Body> {
    let method = m::COMPLETION_COMPLETE;
    let obs = Observed::new(meta, method, Some(session));
    let Some(reference) = params.get_mut("ref").and_then(Value::as_object_mut) else {
        return error_response(
            &id,
            &RpcError::invalid_params("completion/complete needs params.ref (an object)"),
        );
    };
    let kind = reference.get("type").and_then(Value::as_str).unwrap_or("");
    let upstream = match kind {
        "ref/prompt" => {
            let Some(name) = reference.get("name").and_then(Value::as_str) else {
                return error_response(
                    &id,
                    &RpcError::invalid_params("ref/prompt needs a `name` (a string)"),
                );
            };
            let catalog = gw.catalog.load();
            let Some(entry) = catalog.prompts.get(name) else {
                return error_response(
                    &id,
                    &RpcError::invalid_params(format!("Unknown prompt: {name}")),
                );
            };
            reference.insert("name".into(), Value::String(entry.original.clone()));
            gw.by_name.get(&entry.upstream).cloned()
        }
        "ref/resource" => {
            let Some(uri) = reference.get("uri").and_then(Value::as_str) else {
                return error_response(
                    &id,
                    &RpcError::invalid_params("ref/resource needs a `uri` (a string)"),
                );
            };
            let by_template = gw.catalog.load().resources.template_owner(uri).cloned();
            match by_template {
                Some(name) => gw.by_name.get(&name).cloned(),
                None => owner(gw, uri),
            }
        }
        other => {
            return error_response(
                &id,
                &RpcError::invalid_params(format!(
                    "Unknown ref type `{other}`: expected ref/prompt or ref/resource"
                )),
            )
        }
    };
    let Some(upstream) = upstream else {
        return error_response(
            &id,
            &RpcError::invalid_params("No upstream owns what this completion refers to"),
        );
    };
    let target = Target {
        upstream,
        headers: standard_headers(method, None),
        failures: Failures::RpcError,
    };
    dispatch(gw, session, id, method, params, target, accepts_sse, obs).await
}
