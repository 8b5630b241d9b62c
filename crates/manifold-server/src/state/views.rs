//! Per-caller views of the merged catalog: an endpoint's part of it
//! (`state::endpoints`) under the caller's `[[policy]]`.
//!
//! A caller's view depends only on its endpoint and on which rules name it (its
//! [`manifold_policy::ViewKey`]), so each distinct (endpoint, key) gets one
//! restricted [`Catalog`] ([`Catalog::view`]: the positions of the items it
//! holds, over the items, name tables and item bytes it shares with its
//! endpoint's catalogue; each page joined from those bytes when asked for),
//! built the first time a caller with that pair needs it after a catalogue
//! change, then shared by every such caller. Nothing but a view's pages is built per
//! request. Each endpoint's own catalogue (and its search index, for
//! `discovery = "search"`) is built once per catalogue change too, and shared
//! by every view of it.
//!
//! Invariants: a view only ever holds items of the catalog it was built from
//! (the [`Views`] value is part of one `generation` with the catalog, swapped
//! whole);
//! a view holds only what its endpoint holds; without any rule the view *is*
//! its endpoint's catalogue (no copy), and the default endpoint's is the
//! catalog; the local operator sees all of its endpoint; at most
//! [`MAX_CACHED_VIEWS`] views holding about [`MAX_CACHED_VIEW_BYTES`] of their
//! own are kept per catalogue; a view is built outside the map's lock (once, by the
//! first caller that needs it).
//!
//! Resource URIs are decided in canonical form (`manifold_policy::authz`),
//! and [`Access::resource_uri`] gives handlers that same form to forward, so
//! what the upstream receives is what the rules matched.
//!
//! Not here: deciding what a rule allows (`manifold_policy::authz`); what a
//! handler answers for a hidden item (it answers as for an unknown one).

use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use manifold_catalog::search::SearchIndex;
use manifold_catalog::uri::canonical;
use manifold_catalog::{Catalog, Item};
use manifold_policy::{Identity, ItemKind, Policy, ViewKey};
use manifold_semantic::dense::DenseIndex;

use super::endpoints::{Endpoint, Endpoints};
use super::semantic::Semantic;
use crate::refusal::Refusal;

/// Distinct views kept per catalogue. Past it the cache starts over (views are
/// rebuilt as callers come).
pub const MAX_CACHED_VIEWS: usize = 1024;
/// Bytes the cached views may hold of their own together (their indexes,
/// 4 bytes per item held, and any item a view had to change; the items
/// themselves are shared). Past it the cache starts over, so memory stays
/// bounded by size too, whatever the catalogue's size and the callers' mix.
pub const MAX_CACHED_VIEW_BYTES: usize = 64 * 1024 * 1024;

/// One view, built once by whichever caller needs it first.
type Slot = Arc<OnceLock<Arc<Catalog>>>;

/// An endpoint's own catalogue and search index, built once per catalogue.
#[derive(Default)]
struct PerEndpoint {
    catalog: OnceLock<Arc<Catalog>>,
    index: OnceLock<Arc<SearchIndex>>,
    /// With `[discovery.semantic]`: its tools' vectors in the index's order,
    /// set once every tool has one.
    dense: OnceLock<Arc<DenseIndex>>,
    /// A background embedding of its tools is under way (at most one), or
    /// the last one failed and the next may start at the instant held.
    warming: Mutex<Warming>,
    /// Woken when an embedding of its tools ends, done or failed.
    embedded: tokio::sync::Notify,
}

/// Where an endpoint's embedding stands.
#[derive(Default)]
enum Warming {
    #[default]
    Idle,
    Running,
    FailedUntil(std::time::Instant),
}

/// After a failed embedding of a catalogue (an endpoint down), the next try
/// waits this long; searches meanwhile are lexical.
pub const EMBED_RETRY_AFTER: std::time::Duration = std::time::Duration::from_secs(30);

/// The catalog and the views built from it so far.
pub(crate) struct Views {
    pub base: Arc<Catalog>,
    policy: Arc<Policy>,
    endpoints: Arc<Endpoints>,
    /// Indexed like `endpoints`.
    per_endpoint: Vec<PerEndpoint>,
    built: Mutex<HashMap<(usize, ViewKey), Slot>>,
    /// A search endpoint's `tools/list` page per view (the meta-tools and the
    /// `always_visible` tools the view holds), pre-serialized.
    search_lists: Mutex<HashMap<(usize, Option<ViewKey>), bytes::Bytes>>,
    /// Item bytes of the views in `built`.
    bytes: AtomicUsize,
}

impl Views {
    pub(crate) fn new(base: Arc<Catalog>, policy: Arc<Policy>, endpoints: Arc<Endpoints>) -> Views {
        Views {
            base,
            policy,
            per_endpoint: (0..endpoints.len())
                .map(|_| PerEndpoint::default())
                .collect(),
            endpoints,
            built: Mutex::new(HashMap::new()),
            search_lists: Mutex::new(HashMap::new()),
            bytes: AtomicUsize::new(0),
        }
    }

    /// The endpoints its views are of.
    pub(crate) fn endpoints(&self) -> &Arc<Endpoints> {
        &self.endpoints
    }

    /// The endpoint served at `path` in these views (`None`: a reload removed it).
    fn endpoint(&self, path: &str) -> Option<&Arc<Endpoint>> {
        self.endpoints.at(path)
    }

    /// The catalogue of the endpoint at `path`, for every caller (empty when
    /// no endpoint is served there any more).
    pub(crate) fn endpoint_catalog(&self, path: &str) -> Arc<Catalog> {
        let Some(e) = self.endpoint(path) else {
            return Arc::new(self.base.restricted(&|_| false));
        };
        self.per_endpoint[e.index]
            .catalog
            .get_or_init(|| e.catalog_of(&self.base))
            .clone()
    }

    /// The search index of the tools of the endpoint at `path`, built by the
    /// first search after a catalogue change and shared by every view of it
    /// (a caller's search filters it by its view).
    pub(crate) fn search_index(&self, path: &str) -> Arc<SearchIndex> {
        let catalog = self.endpoint_catalog(path);
        let Some(e) = self.endpoint(path) else {
            return Arc::new(SearchIndex::from_list(&catalog.tools));
        };
        self.per_endpoint[e.index]
            .index
            .get_or_init(|| {
                let started = std::time::Instant::now();
                let index = SearchIndex::from_list(&catalog.tools);
                tracing::debug!(endpoint = %e.path, tools = index.len(), bytes = index.heap_bytes(),
                    ms = started.elapsed().as_millis() as u64, "search index built");
                Arc::new(index)
            })
            .clone()
    }

    /// The tool vectors of the endpoint at `path`, when every tool has one;
    /// otherwise `None`, and (once at a time) an embedding of its tools starts
    /// in the background, so the searches meanwhile are lexical and the one
    /// after it is done is hybrid. `stop` ends the embedding between steps.
    pub(crate) fn dense_index(
        self: &Arc<Self>,
        path: &str,
        semantic: &Arc<Semantic>,
        stop: &tokio_util::sync::CancellationToken,
    ) -> Option<Arc<DenseIndex>> {
        let e = self.endpoint(path)?;
        let slot = &self.per_endpoint[e.index];
        if let Some(d) = slot.dense.get() {
            return Some(d.clone());
        }
        {
            let mut warming = slot.warming.lock();
            match *warming {
                Warming::Running => return None,
                Warming::FailedUntil(t) if t > std::time::Instant::now() => return None,
                _ => *warming = Warming::Running,
            }
        }
        let (views, path, semantic, stop) = (
            self.clone(),
            path.to_string(),
            semantic.clone(),
            stop.clone(),
        );
        let index = e.index;
        // Owned by `stop`: it ends at the next step once the gateway stops.
        tokio::task::spawn_blocking(move || {
            // A panic in the model must not leave the endpoint `Running` for ever.
            let done = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                views.embed_endpoint(&path, &semantic, &stop)
            }))
            .unwrap_or_else(|_| Err("the embedding panicked".into()));
            let slot = &views.per_endpoint[index];
            let mut warming = slot.warming.lock();
            *warming = match done {
                Ok(dense) => {
                    let _ = slot.dense.set(dense);
                    Warming::Idle
                }
                Err(why) => {
                    semantic.fell_back(&why);
                    Warming::FailedUntil(std::time::Instant::now() + EMBED_RETRY_AFTER)
                }
            };
            drop(warming);
            slot.embedded.notify_waiters();
        });
        None
    }

    /// [`Views::dense_index`], waiting up to `wait` for an embedding under way
    /// to end (woken when it does, not polled); `None` at once when the last
    /// embedding failed, and when `wait` runs out.
    pub(crate) async fn dense_index_within(
        self: &Arc<Self>,
        path: &str,
        semantic: &Arc<Semantic>,
        stop: &tokio_util::sync::CancellationToken,
        wait: std::time::Duration,
    ) -> Option<Arc<DenseIndex>> {
        let e = self.endpoint(path)?;
        let slot = &self.per_endpoint[e.index];
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            // Registered before the check, so an end between the two wakes it.
            let ended = slot.embedded.notified();
            tokio::pin!(ended);
            ended.as_mut().enable();
            if let Some(d) = self.dense_index(path, semantic, stop) {
                return Some(d);
            }
            if matches!(*slot.warming.lock(), Warming::FailedUntil(_)) {
                return None;
            }
            tokio::time::timeout_at(deadline, ended).await.ok()?;
        }
    }

    /// Embeds the tools of the endpoint at `path` not embedded yet (blocking).
    fn embed_endpoint(
        &self,
        path: &str,
        semantic: &Semantic,
        stop: &tokio_util::sync::CancellationToken,
    ) -> Result<Arc<DenseIndex>, String> {
        let catalog = self.endpoint_catalog(path);
        let texts: Vec<String> = catalog
            .tools
            .listed()
            .iter()
            .map(|e| {
                let tool = match serde_json::from_slice(e.json()) {
                    Ok(serde_json::Value::Object(map)) => map,
                    _ => serde_json::Map::new(),
                };
                manifold_semantic::text::tool_text(&e.exposed, &e.upstream, &tool)
            })
            .collect();
        let vectors = semantic
            .tool_vectors(&texts, stop)
            .map_err(|e| e.to_string())?;
        let dim = vectors
            .iter()
            .flatten()
            .map(|v| v.len())
            .next()
            .unwrap_or(0);
        let mut dense = DenseIndex::new(texts.len(), dim);
        for (id, v) in vectors.iter().enumerate() {
            if let (Some(v), Ok(id)) = (v, u32::try_from(id)) {
                dense.set(id, v);
            }
        }
        match dense.present() == texts.len() {
            true => Ok(Arc::new(dense)),
            false => Err(format!(
                "{} of {} tools embedded (stopped)",
                dense.present(),
                texts.len()
            )),
        }
    }

    /// The catalog the view `key` sees on the endpoint at `path` (`key`
    /// `None`: all of the endpoint).
    pub(crate) fn get(&self, path: &str, key: Option<&ViewKey>) -> Arc<Catalog> {
        let endpoint = self.endpoint_catalog(path);
        let Some(key) = key else {
            return endpoint;
        };
        let index = self.endpoint(path).map_or(usize::MAX, |e| e.index);
        let key = &(index, key.clone());
        // The map's lock is held only to find the slot: a view is built
        // outside it, and callers of other views never wait for the build.
        let slot = {
            let mut built = self.built.lock();
            if let Some(slot) = built.get(key) {
                slot.clone()
            } else {
                let full = built.len() >= MAX_CACHED_VIEWS
                    || self.bytes.load(Ordering::Relaxed) >= MAX_CACHED_VIEW_BYTES;
                if full {
                    tracing::warn!(
                        views = built.len(),
                        bytes = self.bytes.load(Ordering::Relaxed),
                        "policy views over MAX_CACHED_VIEWS or MAX_CACHED_VIEW_BYTES; starting the cache over"
                    );
                    built.clear();
                    self.bytes.store(0, Ordering::Relaxed);
                }
                built.entry(key.clone()).or_default().clone()
            }
        };
        let key = &key.1;
        slot.get_or_init(|| {
            let policy = &self.policy;
            let view = Arc::new(endpoint.view(&|item| match item {
                Item::Tool(n) => policy.allows(key, ItemKind::Tool, n),
                Item::Prompt(n) => policy.allows(key, ItemKind::Prompt, n),
                Item::Resource(u) | Item::Template(u) => policy.allows(key, ItemKind::Resource, u),
                Item::Skill { name, .. } => policy.allows(key, ItemKind::Skill, name),
            }));
            self.bytes.fetch_add(view.own_bytes(), Ordering::Relaxed);
            view
        })
        .clone()
    }

    /// The policy its views follow.
    pub(crate) fn policy(&self) -> &Arc<Policy> {
        &self.policy
    }

    /// How many views are built (for tests and metrics).
    #[cfg(test)]
    pub(crate) fn built(&self) -> usize {
        self.built.lock().len()
    }
}

/// What one request may see and use: its view of the catalog, the policy
/// key it was built for and its endpoint.
pub(crate) struct Access {
    pub catalog: Arc<Catalog>,
    /// The validators of the generation the view is of.
    pub validators: Arc<manifold_policy::ArgumentValidators>,
    key: Option<ViewKey>,
    policy: Arc<Policy>,
    /// `None`: no endpoint is served at the request's path any more (a
    /// reload removed it): nothing is visible.
    pub endpoint: Option<Arc<Endpoint>>,
    views: Arc<Views>,
}

impl Access {
    /// What `viewer` may see and use on the endpoint at `path` in `views`
    /// (`None`: the local operator).
    /// `validators` are those built with `views` (one generation).
    pub(crate) fn of(
        views: &Arc<Views>,
        validators: &Arc<manifold_policy::ArgumentValidators>,
        path: &str,
        viewer: Option<&Identity>,
    ) -> Access {
        let policy = views.policy().clone();
        let key = key_of(&policy, viewer);
        Access {
            catalog: views.get(path, key.as_ref()),
            key,
            policy,
            endpoint: views.endpoint(path).cloned(),
            views: views.clone(),
            validators: validators.clone(),
        }
    }

    /// The whole catalogue of the generation the view is of (routing and
    /// ownership are decided on it, visibility on `catalog`).
    pub(crate) fn base(&self) -> &Arc<Catalog> {
        &self.views.base
    }

    /// The search index of the caller's endpoint (its view filters it).
    pub(crate) fn search_index(&self) -> Arc<SearchIndex> {
        let path = self.endpoint.as_ref().map_or("", |e| &e.path);
        self.views.search_index(path)
    }

    /// The tool vectors of the caller's endpoint, when all are embedded
    /// ([`Views::dense_index`]: otherwise an embedding starts, and `None`).
    pub(crate) fn dense_index(
        &self,
        semantic: &Arc<Semantic>,
        stop: &tokio_util::sync::CancellationToken,
    ) -> Option<Arc<DenseIndex>> {
        let path = self.endpoint.as_ref().map_or("", |e| &e.path);
        self.views.dense_index(path, semantic, stop)
    }

    /// [`Access::dense_index`], waiting up to `wait` for the embedding
    /// ([`Views::dense_index_within`]).
    pub(crate) async fn dense_index_within(
        &self,
        semantic: &Arc<Semantic>,
        stop: &tokio_util::sync::CancellationToken,
        wait: std::time::Duration,
    ) -> Option<Arc<DenseIndex>> {
        let path = self.endpoint.as_ref().map_or("", |e| &*e.path);
        self.views
            .dense_index_within(path, semantic, stop, wait)
            .await
    }

    /// The search endpoint's `tools/list` page of this view: built by `build`
    /// from the view the first time, then shared (at most
    /// [`MAX_CACHED_VIEWS`] are kept; past it they are built again).
    pub(crate) fn search_list(&self, build: &dyn Fn(&Catalog) -> bytes::Bytes) -> bytes::Bytes {
        let index = self.endpoint.as_ref().map_or(usize::MAX, |e| e.index);
        let key = (index, self.key.clone());
        if let Some(b) = self.views.search_lists.lock().get(&key) {
            return b.clone();
        }
        // Built outside the lock: two first callers may both build it.
        let page = build(&self.catalog);
        let mut lists = self.views.search_lists.lock();
        if lists.len() >= MAX_CACHED_VIEWS {
            lists.clear();
        }
        lists.insert(key, page.clone());
        page
    }

    /// Whether the caller's endpoint holds anything of `upstream`'s.
    pub(crate) fn reaches(&self, upstream: &str) -> bool {
        self.endpoint.as_ref().is_some_and(|e| e.reaches(upstream))
    }

    /// Whether the endpoint's resource globs let `uri` through.
    fn endpoint_allows_uri(&self, uri: &str) -> bool {
        self.endpoint.as_ref().is_some_and(|e| e.allows_uri(uri))
    }
}

/// Whether a catalog holds anything of `upstream` (a tool, prompt, resource
/// or template).
pub(crate) fn holds_upstream(catalog: &Catalog, upstream: &str) -> bool {
    let named =
        |l: &manifold_catalog::NamedList| l.entries().iter().any(|e| &*e.upstream == upstream);
    let by_uri = |l: &manifold_catalog::UriList| l.items().any(|(_, up)| &**up == upstream);
    named(&catalog.tools)
        || named(&catalog.prompts)
        || by_uri(&catalog.resources.resources)
        || by_uri(&catalog.resources.templates)
        || catalog.skills.items().any(|(_, _, up)| &**up == upstream)
}

impl Access {
    /// Whether the caller's view holds anything of `upstream`: what it is told
    /// about an upstream (its instructions, its log messages) follows.
    pub(crate) fn shows_upstream(&self, upstream: &str) -> bool {
        let whole = self.endpoint.as_ref().is_some_and(|e| e.is_default());
        (self.key.is_none() && whole) || holds_upstream(&self.catalog, upstream)
    }

    /// The URI a read, subscription or completion names, as rules match it
    /// and the upstream receives it. When a rule can apply to the caller (any
    /// `[[policy]]`): its canonical form (`manifold_catalog::uri`), or the
    /// spelling the owning upstream listed for that form; a URI with no
    /// canonical form is refused (-32602). Otherwise the URI as sent
    /// (lossless).
    pub(crate) fn resource_uri(&self, base: &Catalog, uri: &str) -> Result<String, Refusal> {
        if self.key.is_none() {
            return Ok(uri.to_string());
        }
        let canonical = canonical(uri).map_err(|why| {
            Refusal::InvalidParams(format!(
                "Invalid resource URI `{uri}`: {why}; resource rules apply only to URIs with one meaning"
            ))
        })?;
        Ok(match base.resources.listed_spelling(&canonical) {
            Some(listed) => listed.to_string(),
            None => canonical,
        })
    }

    /// Whether the caller may read, subscribe to or complete `uri` (a
    /// resource URI or a template string).
    pub(crate) fn may_use_uri(&self, uri: &str) -> bool {
        self.endpoint_allows_uri(uri)
            && match &self.key {
                None => true,
                Some(k) => self.policy.allows(k, ItemKind::Resource, uri),
            }
    }

    /// [`Access::may_use_uri`] for a read or a subscription: the URI, and the
    /// template that would route it (a hidden template does not route reads
    /// for this caller either).
    pub(crate) fn may_read(&self, base: &Catalog, uri: &str) -> bool {
        let template = base.resources.routing_template(uri);
        // Owned by an upstream of the endpoint: the listed owner, the routing
        // template's, or (neither known) only where every upstream is.
        let owner = base
            .resources
            .owner(uri)
            .or_else(|| template.and_then(|t| base.resources.template_owner(t)));
        let reached = match owner {
            Some(o) => self.reaches(o),
            None => self
                .endpoint
                .as_ref()
                .is_some_and(|e| e.reaches_every_upstream()),
        };
        let in_endpoint = reached
            && self.endpoint_allows_uri(uri)
            && template.is_none_or(|t| self.endpoint_allows_uri(t));
        if !in_endpoint {
            return false;
        }
        let Some(k) = &self.key else {
            return true;
        };
        self.policy.allows(k, ItemKind::Resource, uri)
            && base
                .resources
                .routing_template(uri)
                .is_none_or(|t| self.policy.allows(k, ItemKind::Resource, t))
    }
}

/// Whether the list a `list_changed` method names differs between two catalogs
/// (item bytes, in order). Skills (SEP-2640 defines no notification of its
/// own) are resources: a changed `skills/list` is a resources `list_changed`.
pub(crate) fn lists_differ(a: &Catalog, b: &Catalog, method: &str) -> bool {
    use manifold_catalog::Kind;
    use manifold_protocol::methods as m;
    let named = |kind| {
        let (x, y) = (a.list(kind), b.list(kind));
        x.len() != y.len()
            || x.entries()
                .iter()
                .zip(y.entries())
                .any(|(p, q)| p.json() != q.json())
    };
    match method {
        m::NOTIF_TOOLS_LIST_CHANGED => named(Kind::Tools),
        m::NOTIF_PROMPTS_LIST_CHANGED => named(Kind::Prompts),
        m::NOTIF_RESOURCES_LIST_CHANGED => {
            let (x, y) = (&a.resources, &b.resources);
            !x.resources.same_as(&y.resources)
                || !x.templates.same_as(&y.templates)
                || !a.skills.same_as(&b.skills)
        }
        _ => false,
    }
}

/// The policy key of a viewer (an identity; anonymous callers have one too):
/// `None` when nothing is restricted (no rule, or no viewer: the local
/// operator).
pub(crate) fn key_of(policy: &Policy, viewer: Option<&Identity>) -> Option<ViewKey> {
    if policy.is_empty() {
        return None;
    }
    viewer.map(|id| policy.view_key(id))
}

#[cfg(test)]
mod tests {
    use super::*;
    use manifold_catalog::{ItemFilter, NamingPolicy, PrefixMode, UpstreamInput, UpstreamLists};
    use manifold_config::{AllowDeny, PolicyRule};
    use manifold_policy::AuthMethod;
    use serde_json::json;

    fn catalog(n: usize) -> Arc<Catalog> {
        let tools = (0..n)
            .map(|i| json!({"name": format!("t{i}"), "inputSchema": {"type": "object"}}))
            .map(|v| v.as_object().cloned().unwrap())
            .collect();
        let input = UpstreamInput {
            name: Arc::from("up"),
            prefix: "up".into(),
            lists: Arc::new(UpstreamLists {
                tools,
                ..Default::default()
            }),
            filter: Arc::new(ItemFilter::default()),
            overrides: Default::default(),
        };
        let naming = NamingPolicy {
            separator: "__".into(),
            prefix_mode: PrefixMode::Always,
            max_length: 64,
            configured_upstreams: 1,
            uris: Default::default(),
        };
        Arc::new(Catalog::build(&[input], &naming, 100))
    }

    fn member(group: &str) -> Option<Identity> {
        Some(Identity {
            subject: format!("someone-in-{group}"),
            source: "corp".into(),
            groups: vec![group.into()],
            scopes: vec![],
            method: AuthMethod::Jwt,
        })
    }

    #[test]
    fn one_view_per_rule_set_shared_by_callers() {
        let rule = |g: &str, allow: &str| PolicyRule {
            who: vec![format!("group:{g}")],
            tools: Some(AllowDeny {
                allow: vec![allow.into()],
                deny: vec![],
            }),
            prompts: None,
            resources: None,
            skills: None,
        };
        let policy = Arc::new(Policy::new(&[rule("a", "up__t1*"), rule("b", "up__t2")]));
        let endpoints = Arc::new(Endpoints::only_default("/mcp"));
        let views = Views::new(catalog(30), policy.clone(), endpoints);
        let get = |p: &Option<Identity>| views.get("/mcp", key_of(&policy, p.as_ref()).as_ref());
        let a1 = get(&member("a"));
        let a2 = get(&member("a"));
        assert!(Arc::ptr_eq(&a1, &a2), "same key, same snapshot");
        assert_eq!(a1.tools.len(), 11); // t1, t10..t19
        assert_eq!(get(&member("b")).tools.len(), 1);
        assert_eq!(get(&Some(Identity::anonymous())).tools.len(), 0);
        assert_eq!(views.built(), 3);
        // The operator sees the catalog itself.
        assert!(Arc::ptr_eq(&get(&None), &views.base));
        // Without rules, everyone does.
        let open = Policy::new(&[]);
        assert!(key_of(&open, member("a").as_ref()).is_none());
    }
}
