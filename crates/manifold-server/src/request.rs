//! The per-request context. The front door says what it knows ([`Arrival`]); once
//! the pipeline has decoded and admitted the request it becomes a [`Request`]:
//! the era, the caller ([`Caller`]: a session, a 2026-07-28 request's own
//! `_meta`, or the local operator), the principal, the JSON-RPC id and method,
//! the response forms the client accepts, and the request's observation
//! (metrics and audit, finished once). Its trace context is the request's span
//! (`tracectx`). A forwarded call's deadline is its upstream's `timeout`, kept
//! by the upstream call itself.
//!
//! Invariants: a `Request` exists only for an admitted request; its
//! observation is taken by whoever answers (the relay for forwarded calls) or
//! finished by the pipeline, never both.
//!
//! Not here: deciding any of these facts (the pipeline's phases do).

use http::{HeaderMap, HeaderName};
use manifold_audit::ClientInfo;
use manifold_policy::{AuthMethod, Identity};
use manifold_protocol::methods as m;
use manifold_protocol::RequestId;
use serde_json::{Map, Value};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

use crate::era::Era;
use crate::observe::Observed;
use crate::state::log_levels::LogFilter;
use crate::state::sessions::ClientSession;
use crate::state::Gateway;

static SESSION_ID: HeaderName = HeaderName::from_static(m::HEADER_SESSION_ID);
static PROTOCOL_VERSION: HeaderName = HeaderName::from_static(m::HEADER_PROTOCOL_VERSION);
static METHOD: HeaderName = HeaderName::from_static(m::HEADER_METHOD);
static NAME: HeaderName = HeaderName::from_static(m::HEADER_NAME);

/// Which front door a request came through.
#[derive(Debug, Clone)]
pub(crate) enum Front {
    /// The Streamable-HTTP endpoint: the request's headers.
    Http(HeaderMap),
    /// The local operator (`manifold call`): no transport, no headers; the token
    /// cancels its call.
    Operator(CancellationToken),
    /// `manifold stdio`: no headers; the session its `initialize` opened stands
    /// in for `Mcp-Session-Id`.
    Stdio { session: Option<String> },
}

impl Front {
    /// A header's value without surrounding whitespace; `None` if absent, not text,
    /// or the front door has no headers.
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        match self {
            Front::Http(h) => {
                // The names every request asks for are looked up by a parsed
                // name: a lookup by text parses (lower-cases) it first.
                let value = match name {
                    m::HEADER_SESSION_ID => h.get(&SESSION_ID),
                    m::HEADER_PROTOCOL_VERSION => h.get(&PROTOCOL_VERSION),
                    m::HEADER_METHOD => h.get(&METHOD),
                    m::HEADER_NAME => h.get(&NAME),
                    _ => h.get(name),
                };
                value.and_then(|v| v.to_str().ok()).map(str::trim)
            }
            Front::Stdio { session } if name.eq_ignore_ascii_case(m::HEADER_SESSION_ID) => {
                session.as_deref()
            }
            Front::Operator(_) | Front::Stdio { .. } => None,
        }
    }

    /// `network.transport` for traces: `tcp` (HTTP), `pipe` (stdio), `inproc`.
    pub(crate) fn transport(&self) -> &'static str {
        match self {
            Front::Http(_) => "tcp",
            Front::Stdio { .. } => "pipe",
            Front::Operator(_) => "inproc",
        }
    }

    /// The request's HTTP headers, if it came over HTTP.
    pub(crate) fn headers(&self) -> Option<&HeaderMap> {
        match self {
            Front::Http(h) => Some(h),
            Front::Operator(_) | Front::Stdio { .. } => None,
        }
    }
}

/// The response forms the client accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Accepts {
    /// One JSON message.
    pub json: bool,
    /// A stream of messages (SSE over HTTP).
    pub stream: bool,
}

/// What the front door knows about a request before the pipeline reads it.
#[derive(Debug, Clone)]
pub(crate) struct Arrival {
    /// Manifold's id for the request: in every log line of it and in its audit record.
    pub request_id: String,
    /// Size of the request body.
    pub bytes: usize,
    pub front: Front,
    /// Who the front door authenticated (`None`: no `[auth]`, or the operator).
    pub identity: Option<Arc<Identity>>,
    /// The client's address (`None` for the operator).
    pub peer: Option<std::net::IpAddr>,
    /// The endpoint's path (`[server] path` or an `[[endpoint]]`'s; stdio
    /// and the operator use the default endpoint).
    pub endpoint: Arc<str>,
    pub accepts: Accepts,
}

/// Who is calling.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Principal {
    /// No `[auth]`, or no credentials with `allow_anonymous`.
    Anonymous,
    /// The local operator running `manifold call`.
    Operator,
    /// Authenticated at the front door (`[auth]`).
    Caller(Arc<Identity>),
}

impl Principal {
    /// The principal as audit records and logs name it, qualified by its
    /// source: `anonymous`, `operator`, `jwt:<source>:<sub>`,
    /// `introspection:<source>:<sub>`, `key:<name>`, `cert:<type>:<name>`,
    /// `local:<user>`. Never a credential.
    pub(crate) fn audit_name(&self) -> String {
        match self {
            Principal::Anonymous => manifold_audit::ANONYMOUS.to_string(),
            Principal::Operator => "operator".to_string(),
            Principal::Caller(id) => id.display_name(),
        }
    }

    /// What a session is bound to: another principal presenting its id is
    /// answered as if the session did not exist. Qualified, so another
    /// issuer's subject of the same name is another principal.
    pub(crate) fn session_owner(&self) -> Option<String> {
        match self {
            Principal::Caller(id) => Some(id.display_name()),
            Principal::Anonymous | Principal::Operator => None,
        }
    }

    /// The `principal` label of `manifold_requests_by_principal_total`, per
    /// `[metrics] principal_label` (`None`: not counted by principal).
    pub(crate) fn metrics_label(&self, mode: manifold_config::PrincipalLabel) -> Option<String> {
        use manifold_config::PrincipalLabel as L;
        match mode {
            L::None => None,
            L::Subject => Some(self.audit_name()),
            L::Group => Some(match self {
                Principal::Caller(id) => {
                    id.groups.first().cloned().unwrap_or_else(|| "none".into())
                }
                Principal::Operator => "operator".into(),
                Principal::Anonymous => manifold_audit::ANONYMOUS.into(),
            }),
        }
    }

    /// Who `[[rate_limit]]` rules look at: the authenticated identity, or
    /// `anonymous`; `None` for the local operator (never limited).
    pub(crate) fn identity(&self) -> Option<Arc<Identity>> {
        match self {
            Principal::Caller(id) => Some(id.clone()),
            Principal::Anonymous => Some(Arc::new(Identity::anonymous())),
            Principal::Operator => None,
        }
    }

    pub(crate) fn from_identity(identity: Option<&Arc<Identity>>) -> Principal {
        match identity {
            Some(id) if id.method != AuthMethod::Anonymous => Principal::Caller(id.clone()),
            _ => Principal::Anonymous,
        }
    }
}

/// A 2026-07-28 request's own description of its client (its `_meta`), kept for
/// that request only.
#[derive(Debug)]
pub(crate) struct StatelessCaller {
    pub client_info: Value,
    pub capabilities: Map<String, Value>,
    pub log: LogFilter,
    /// The digest a `requestState` is bound to (see `state::held_calls`).
    pub digest: String,
}

/// The client a request is answered for.
#[derive(Clone)]
pub(crate) enum Caller {
    /// A session-era client, in its session.
    Session(Arc<ClientSession>),
    /// A 2026-07-28 request.
    Stateless(Arc<StatelessCaller>),
    /// A session-era request that may come before a session exists
    /// (`initialize`; a `server/discover` without `_meta` is refused at
    /// admission).
    Initializing,
    /// The local operator (`manifold call`); the token cancels its call.
    Operator(CancellationToken),
}

impl Caller {
    pub(crate) fn session(&self) -> Option<&Arc<ClientSession>> {
        match self {
            Caller::Session(s) => Some(s),
            _ => None,
        }
    }

    pub(crate) fn has_capability(&self, name: &str) -> bool {
        match self {
            Caller::Session(s) => s.has_capability(name),
            Caller::Stateless(c) => c.capabilities.contains_key(name),
            Caller::Initializing | Caller::Operator(_) => false,
        }
    }

    pub(crate) fn capabilities(&self) -> Map<String, Value> {
        match self {
            Caller::Session(s) => s.capabilities.clone(),
            Caller::Stateless(c) => c.capabilities.clone(),
            Caller::Initializing | Caller::Operator(_) => Map::new(),
        }
    }

    /// Which log messages the client gets.
    pub(crate) fn log_filter(&self) -> LogFilter {
        match self {
            Caller::Session(s) => s.log_level().map_or(LogFilter::All, LogFilter::AtLeast),
            Caller::Stateless(c) => c.log,
            Caller::Initializing | Caller::Operator(_) => LogFilter::All,
        }
    }

    /// Whether the client can be sent server→client requests (sampling,
    /// elicitation, roots) on a response stream. A 2026-07-28 client cannot: its
    /// questions travel as an `InputRequiredResult` instead.
    pub(crate) fn can_be_asked(&self) -> bool {
        matches!(self, Caller::Session(_))
    }

    /// Whether losing the client's connection cancels its call. A session-era
    /// client may come back ("Disconnection SHOULD NOT be interpreted as the client
    /// cancelling its request"); a 2026-07-28 client cancels by closing the stream.
    pub(crate) fn cancels_on_disconnect(&self) -> bool {
        !matches!(self, Caller::Session(_))
    }

    /// A call starts: the token that cancels it (the client's
    /// `notifications/cancelled`, the session's end, the operator's interrupt).
    /// `None` when the session already has `limits.max_calls_per_session` calls
    /// in flight.
    pub(crate) fn begin_call(&self, id: &RequestId) -> Option<CancellationToken> {
        match self {
            Caller::Session(s) => s.begin_call(id.clone()),
            Caller::Operator(t) => Some(t.child_token()),
            Caller::Stateless(_) | Caller::Initializing => Some(CancellationToken::new()),
        }
    }

    /// The call is over.
    pub(crate) fn end_call(&self, id: &RequestId) {
        if let Caller::Session(s) = self {
            s.end_call(id);
        }
    }

    /// The client as it named itself, for audit records.
    pub(crate) fn client_info(&self) -> Option<ClientInfo> {
        let v = match self {
            Caller::Session(s) => &s.client_info,
            Caller::Stateless(c) => &c.client_info,
            Caller::Initializing | Caller::Operator(_) => return None,
        };
        let name = v.get("name")?.as_str()?.to_string();
        let version = v
            .get("version")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        Some(ClientInfo { name, version })
    }

    /// What a 2026-07-28 upstream is told about this client.
    pub(crate) fn for_upstream(&self) -> manifold_upstream::ClientFacts {
        let mut capabilities = self.capabilities();
        if let (Caller::Session(_), Some(Value::Object(ext))) =
            (self, capabilities.get_mut("extensions"))
        {
            // Undefined before 2026-07-28 (SEP-2663): a session-era client's
            // `initialize` cannot enable tasks upstream, where it could not
            // read them through Manifold.
            ext.shift_remove(manifold_protocol::tasks::EXTENSION);
        }
        manifold_upstream::ClientFacts {
            capabilities,
            log_level: self.log_filter().level().map(|l| l.as_str().to_string()),
            // Only a session can answer a bridged question; the operator sees
            // a 2026-07-28 upstream's `InputRequiredResult` as it is.
            bridge_input: matches!(self, Caller::Session(_)),
            member: None,
        }
    }
}

/// One admitted request, from routing to its answer.
pub(crate) struct Request {
    pub gw: Arc<Gateway>,
    pub arrival: Arrival,
    pub era: Era,
    pub caller: Caller,
    pub principal: Principal,
    /// The request's JSON-RPC id.
    pub rpc_id: RequestId,
    pub method: String,
    /// Metrics and audit for this request; taken by whoever answers it.
    pub obs: Option<Observed>,
}

impl Request {
    /// What this request's caller may see and use (its `[[policy]]` view of
    /// its endpoint).
    pub(crate) fn access(&self) -> crate::state::views::Access {
        self.gw
            .access(&self.arrival.endpoint, self.principal.identity().as_deref())
    }

    /// The request's endpoint as the views in force know it (`None`: a
    /// reload removed it).
    pub(crate) fn access_endpoint(&self) -> Option<Arc<crate::state::endpoints::Endpoint>> {
        self.gw
            .generation
            .load()
            .views
            .endpoints()
            .at(&self.arrival.endpoint)
            .cloned()
    }

    /// The request, owned, for a phase that answers after its handler has
    /// returned (a call that waits for a human's confirmation on its stream):
    /// the observation moves with it, so this one no longer records anything.
    pub(crate) fn detach(&mut self) -> Request {
        Request {
            gw: self.gw.clone(),
            arrival: self.arrival.clone(),
            era: self.era,
            caller: self.caller.clone(),
            principal: self.principal.clone(),
            rpc_id: self.rpc_id.clone(),
            method: self.method.clone(),
            obs: self.obs.take(),
        }
    }

    /// The observation, for the phase that will answer the request.
    pub(crate) fn observation(&mut self) -> Option<&mut Observed> {
        self.obs.as_mut()
    }
}
