//! `HttpLink`: what every exchange of one HTTP upstream's transport shares —
//! the wire, the pooled client, the URL and configured headers, the token
//! source, the upstream's session id.
//!
//! Invariants: the session id's lock is never held across `.await`; one
//! re-initialize at a time (`reinit`); one session check at a time
//! (`checking`).
//!
//! Not here: what is done with them (`client`, `session`, `reply`,
//! `get_stream`).

use http::HeaderMap;
use parking_lot::Mutex;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use crate::message::Outbound;
use crate::wire::Wire;

pub(crate) struct HttpLink {
    pub(super) wire: Arc<Wire>,
    pub(super) client: manifold_foundation::http::Client,
    pub(super) url: http::Uri,
    pub(super) headers: HeaderMap,
    /// `auth` other than `static`: where the bearer token comes from.
    pub(super) tokens: Option<Arc<manifold_credentials::TokenSource>>,
    pub(super) max_message: usize,
    pub(super) session_id: Mutex<Option<String>>,
    pub(super) reinit: tokio::sync::Mutex<()>,
    /// A `ping` is checking whether the upstream still accepts the session.
    pub(super) checking: AtomicBool,
}

impl HttpLink {
    /// This link as the outbound half responders hold.
    pub(super) fn outbound(self: &Arc<Self>) -> Arc<dyn Outbound> {
        self.clone()
    }
}
