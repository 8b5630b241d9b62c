//! The MCP endpoints, compiled: the default one (`[server] path`, everything)
//! and each `[[endpoint]]` (a part of the merged catalogue: its upstreams,
//! then its tool, prompt, resource and skill globs), with their discovery mode.
//!
//! An endpoint is a filter on the catalogue every caller of it shares; a
//! caller's `[[policy]]` view applies inside it (`state::views` builds the
//! intersection once per endpoint × view). Resource globs are matched in
//! canonical form, like `[[policy]]`'s, and a URI with no canonical form is
//! outside every virtual endpoint.
//!
//! Invariants: the default endpoint is first and filters nothing; endpoints
//! are swapped whole with the configuration (a reload); a request names its
//! endpoint by path and finds it again in the views it reads, so an endpoint a
//! reload removed holds nothing.
//!
//! Not here: routing a request to its endpoint (`front/http.rs`), search
//! (`handlers/discovery.rs`).

use std::collections::HashSet;
use std::sync::Arc;

use manifold_catalog::uri::{canonical, canonical_pattern};
use manifold_catalog::{Catalog, Item};
use manifold_config::{
    AllowDeny, DiscoverySettings, EndpointConfig, EndpointNaming, GatewayConfig,
};
use manifold_foundation::glob::Glob;

/// Allow and deny globs of one kind (an empty `allow` allows everything).
struct Globs {
    allow: Vec<Glob>,
    deny: Vec<Glob>,
}

impl Globs {
    fn new(l: &AllowDeny, uri: bool) -> Globs {
        let glob = |g: &String| {
            if uri {
                Glob::new(&canonical_pattern(g))
            } else {
                Glob::new(g)
            }
        };
        Globs {
            allow: l.allow.iter().map(glob).collect(),
            deny: l.deny.iter().map(glob).collect(),
        }
    }

    fn allows(&self, name: &str) -> bool {
        (self.allow.is_empty() || self.allow.iter().any(|g| g.matches(name)))
            && !self.deny.iter().any(|g| g.matches(name))
    }
}

/// What a virtual endpoint holds.
struct Filter {
    /// `None`: every upstream.
    upstreams: Option<HashSet<String>>,
    tools: Option<Globs>,
    prompts: Option<Globs>,
    resources: Option<Globs>,
    skills: Option<Globs>,
}

/// One MCP endpoint.
pub(crate) struct Endpoint {
    pub path: Arc<str>,
    /// Its position (0: the default endpoint), which keys its views.
    pub index: usize,
    /// `None`: the default endpoint, everything.
    filter: Option<Filter>,
    /// `[[endpoint]] instructions`.
    pub instructions: Option<String>,
    /// `[[endpoint]] resource`.
    pub resource: Option<String>,
    pub discovery: DiscoverySettings,
    always_visible: Vec<Glob>,
    /// `[[endpoint]] naming`.
    pub naming: EndpointNaming,
}

impl Endpoint {
    fn new(index: usize, path: &str, e: Option<&EndpointConfig>, d: &DiscoverySettings) -> Self {
        Endpoint {
            path: Arc::from(path),
            index,
            filter: e.map(|e| Filter {
                upstreams: e.upstreams.as_ref().map(|u| u.iter().cloned().collect()),
                tools: e.tools.as_ref().map(|l| Globs::new(l, false)),
                prompts: e.prompts.as_ref().map(|l| Globs::new(l, false)),
                resources: e.resources.as_ref().map(|l| Globs::new(l, true)),
                skills: e.skills.as_ref().map(|l| Globs::new(l, false)),
            }),
            instructions: e.and_then(|e| e.instructions.clone()),
            resource: e.and_then(|e| e.resource.clone()),
            always_visible: d.always_visible.iter().map(|g| Glob::new(g)).collect(),
            discovery: d.clone(),
            naming: e.map(|e| e.naming).unwrap_or_default(),
        }
    }

    /// The default endpoint: everything.
    pub fn is_default(&self) -> bool {
        self.filter.is_none()
    }

    /// `discovery = "search"`.
    pub fn searches(&self) -> bool {
        self.discovery.is_search()
    }

    /// Whether a tool stays in `tools/list` of a search endpoint.
    pub fn always_visible(&self, exposed: &str) -> bool {
        self.always_visible.iter().any(|g| g.matches(exposed))
    }

    /// Whether the endpoint holds anything of `upstream`'s at all.
    pub fn reaches(&self, upstream: &str) -> bool {
        self.filter
            .as_ref()
            .and_then(|f| f.upstreams.as_ref())
            .is_none_or(|u| u.contains(upstream))
    }

    /// Whether it holds items of every upstream (no `upstreams` list).
    pub fn reaches_every_upstream(&self) -> bool {
        self.filter.as_ref().is_none_or(|f| f.upstreams.is_none())
    }

    /// Whether a resource URI (or template string) is inside the endpoint's
    /// `resources` globs (its owner is checked with [`Endpoint::reaches`]).
    pub fn allows_uri(&self, uri: &str) -> bool {
        let Some(globs) = self.filter.as_ref().and_then(|f| f.resources.as_ref()) else {
            return true;
        };
        canonical(uri).is_ok_and(|c| globs.allows(&c))
    }

    /// Whether the endpoint holds `item` of `base` (the merged catalogue).
    pub fn holds(&self, base: &Catalog, item: Item<'_>) -> bool {
        let Some(f) = &self.filter else {
            return true;
        };
        let (owner, globs, name) = match item {
            Item::Tool(n) => (base.tools.get(n).map(|e| &*e.upstream), &f.tools, n),
            Item::Prompt(n) => (base.prompts.get(n).map(|e| &*e.upstream), &f.prompts, n),
            Item::Resource(u) => (base.resources.owner(u).map(|o| &**o), &f.resources, u),
            Item::Template(t) => (
                base.resources.template_owner(t).map(|o| &**o),
                &f.resources,
                t,
            ),
            Item::Skill { name, upstream } => (Some(upstream), &f.skills, name),
        };
        if !owner.is_some_and(|o| self.reaches(o)) {
            return false;
        }
        match (item, globs) {
            (_, None) => true,
            (Item::Resource(_) | Item::Template(_), Some(_)) => self.allows_uri(name),
            (_, Some(g)) => g.allows(name),
        }
    }

    /// The part of `base` this endpoint holds (the default: `base` itself),
    /// under the names it serves (`naming`); a collision of own names is
    /// logged (the first by exposed name keeps the name).
    pub fn catalog_of(&self, base: &Arc<Catalog>) -> Arc<Catalog> {
        if self.is_default() {
            return base.clone();
        }
        let held = base.restricted(&|item| self.holds(base, item));
        if self.naming == EndpointNaming::Prefixed {
            return Arc::new(held);
        }
        let (own, collisions) = held.by_own_names();
        for c in &collisions {
            tracing::error!(endpoint = %self.path, collision = %c,
                "[[endpoint]] naming = \"original\": two items have one own name; the other is reachable by its exposed name only");
        }
        Arc::new(own)
    }

    /// With `naming = "original"`: the own names more than one item of
    /// `base` this endpoint holds has (what `manifold serve` refuses at start).
    pub fn own_name_collisions(&self, base: &Catalog) -> Vec<manifold_catalog::OwnNameCollision> {
        if self.naming == EndpointNaming::Prefixed || self.is_default() {
            return Vec::new();
        }
        base.restricted(&|item| self.holds(base, item))
            .by_own_names()
            .1
    }
}

/// Every endpoint: the default first, then `[[endpoint]]` in file order.
pub(crate) struct Endpoints {
    list: Vec<Arc<Endpoint>>,
}

impl Endpoints {
    pub(crate) fn new(cfg: &GatewayConfig) -> Endpoints {
        let mut list = vec![Arc::new(Endpoint::new(
            0,
            &cfg.server.path,
            None,
            &cfg.server.discovery,
        ))];
        for (i, e) in cfg.endpoints.iter().enumerate() {
            list.push(Arc::new(Endpoint::new(
                i + 1,
                &e.path,
                Some(e),
                &e.discovery,
            )));
        }
        Endpoints { list }
    }

    /// Only the default endpoint, at `path` (unit tests).
    #[cfg(test)]
    pub(crate) fn only_default(path: &str) -> Endpoints {
        Endpoints {
            list: vec![Arc::new(Endpoint::new(0, path, None, &Default::default()))],
        }
    }

    /// The endpoint served at `path`.
    pub(crate) fn at(&self, path: &str) -> Option<&Arc<Endpoint>> {
        self.list.iter().find(|e| &*e.path == path)
    }

    /// The default endpoint (`[server] path`).
    pub(crate) fn default_endpoint(&self) -> &Arc<Endpoint> {
        &self.list[0]
    }

    pub(crate) fn all(&self) -> &[Arc<Endpoint>] {
        &self.list
    }

    pub(crate) fn len(&self) -> usize {
        self.list.len()
    }
}
