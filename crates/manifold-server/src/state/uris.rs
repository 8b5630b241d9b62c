//! Where namespaced resource URIs (`[naming] resources`, manifold-catalog
//! `namespace`) are translated on their way: to an upstream as it wrote
//! them, to a client as exposed. The catalogue exposes the lists; this does
//! requests (reads, subscriptions, completion references) and what comes
//! back (results, `notifications/resources/updated`).
//!
//! Invariants: a URI goes to an upstream in its own spelling only when the
//! exposed URI names that upstream; a result is parsed and written again only
//! when it may hold a namespaced URI (`UriNamespaces::may_hold`), otherwise
//! its bytes pass untouched.
//!
//! Not here: the form itself (manifold-catalog `namespace`).

use std::borrow::Cow;

use manifold_catalog::namespace::UriNamespaces;
use serde_json::value::RawValue;
use serde_json::Value;

use super::Gateway;

/// `uri` as the upstream `upstream` wrote it, when it is one of its
/// namespaced URIs; else as it is.
pub(crate) fn to_upstream<'a>(uris: &UriNamespaces, upstream: &str, uri: &'a str) -> Cow<'a, str> {
    match uris.resolve(uri) {
        Some((owner, original)) if owner == upstream => Cow::Owned(original),
        _ => Cow::Borrowed(uri),
    }
}

impl Gateway {
    /// A result from `upstream` with its URIs as exposed (content blocks'
    /// `uri`, UI resource references in `_meta`); the same bytes when none
    /// is namespaced.
    pub(crate) fn exposed_result(&self, upstream: &str, raw: Box<RawValue>) -> Box<RawValue> {
        // Per result: a guard, no reference count taken.
        let live = self.live.load();
        let uris = &live.uris;
        let Some(prefix) = uris
            .prefix_of(upstream)
            .filter(|_| uris.may_hold(raw.get()))
        else {
            return raw;
        };
        let Ok(mut value) = serde_json::from_str::<Value>(raw.get()) else {
            return raw;
        };
        if !uris.expose_result(prefix, &mut value) {
            return raw;
        }
        serde_json::value::to_raw_value(&value).unwrap_or(raw)
    }
}
