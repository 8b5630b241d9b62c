//! The merged view of every upstream's tools and prompts: the naming table (exposed
//! name → upstream + original name), deterministic order, and pre-serialized list
//! pages with opaque cursors.
//!
//! Invariants:
//! - the same upstream lists give byte-identical pages (LLM prompt caches rely on it),
//!   whatever order the upstreams were added in: candidates are ranked by
//!   (exposed name, upstream name, original name), never by arrival;
//! - every exposed name matches `^[A-Za-z0-9_-]{1,max_length}$`;
//! - every member of an item other than `name` is kept as the upstream sent it, in
//!   order;
//! - a collision or an invalid item is reported in [`NamedList::left_out`], never fatal;
//! - a name an upstream publishes twice in one list is a protocol error: every copy
//!   is left out ([`LeftOutReason::Duplicate`]), never disambiguated, so no second
//!   definition rides under a suffixed name beside the first.
//!
//! Beside the merged lists, the crate holds what is built from them or applied
//! to them, one module each: [`naming`] (exposed names), [`filter`] (`allow` /
//! `deny` globs), [`overrides`] (per-tool overrides and each call's [`Adjust`]),
//! [`uri`] (canonical resource URIs), [`template`] (RFC 6570 matching),
//! [`namespace`] (resource namespaces), [`skills`] (the merged Skills list),
//! [`fingerprint`] (tool fingerprints in canonical JSON, and their diffs) and
//! [`search`] (the tool search index: BM25F over a catalogue's tools, with its
//! tokenizer and Porter stemmer, built once and searched within a caller's view).
//!
//! Not here: fetching lists (the upstream layer), deciding when to rebuild (the
//! server). Resources are keyed by URI, not renamed: see [`resources`]. Lists
//! under the upstreams' own names (`[[endpoint]] naming = "original"`) are
//! `own_names`'s.

pub mod filter;
pub mod fingerprint;
pub mod namespace;
pub mod naming;
pub mod overrides;
mod own_names;
mod page;
mod resources;
pub mod search;
pub mod skills;
pub mod template;
pub mod uri;

use bytes::Bytes;
use manifold_protocol::headers::{header_params, HeaderParam};
use serde_json::{Map, Value};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

pub use filter::{Glob, ItemFilter};
pub use fingerprint::Fingerprint;
pub use naming::NameChange;
pub use overrides::{Adjust, Override, Overrides};
pub use own_names::OwnNameCollision;
pub use page::CursorError;
pub use resources::{Resources, UriList};
pub use search::{SearchIndex, SearchRequest, ToolSet};
pub use skills::{SkillFile, Skills};

/// How prefixes are applied: `[naming] prefix_mode` (manifold-config parses
/// the key into this type).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PrefixMode {
    Always,
    /// Prefix only when more than one upstream is configured.
    Multiple,
    Never,
}

#[derive(Debug, Clone)]
pub struct NamingPolicy {
    pub separator: String,
    pub prefix_mode: PrefixMode,
    pub max_length: usize,
    /// Configured upstreams (not connected ones): `Multiple` keys off this so names do
    /// not flip when one upstream is down.
    pub configured_upstreams: usize,
    /// Which resource URIs are exposed under their upstream (default: none).
    pub uris: namespace::UriNamespaces,
}

impl NamingPolicy {
    /// Whether exposed names carry their upstream's prefix.
    pub fn use_prefix(&self) -> bool {
        match self.prefix_mode {
            PrefixMode::Always => true,
            PrefixMode::Never => false,
            PrefixMode::Multiple => self.configured_upstreams > 1,
        }
    }
}

/// Which list a [`NamedList`] holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    Tools,
    Prompts,
}

impl Kind {
    /// The member of the list result that holds the items.
    pub fn member(self) -> &'static str {
        match self {
            Kind::Tools => "tools",
            Kind::Prompts => "prompts",
        }
    }
    pub fn singular(self) -> &'static str {
        match self {
            Kind::Tools => "tool",
            Kind::Prompts => "prompt",
        }
    }
}

/// One upstream's current lists, as fetched (all pages).
pub use manifold_protocol::lists::ListSnapshot as UpstreamLists;

/// An upstream's contribution to a build.
#[derive(Debug, Clone)]
pub struct UpstreamInput {
    pub name: Arc<str>,
    /// The prefix used in exposed names (the upstream name unless aliased).
    pub prefix: String,
    pub lists: Arc<UpstreamLists>,
    /// Which tools and prompts the operator hides (`tools.allow` / `tools.deny`).
    pub filter: Arc<ItemFilter>,
    /// The operator's per-tool overrides (by the upstream's own tool name).
    pub overrides: Arc<Overrides>,
}

/// One exposed item.
#[derive(Debug, Clone)]
pub struct Entry {
    pub exposed: String,
    pub upstream: Arc<str>,
    pub original: String,
    pub change: Option<NameChange>,
    /// `x-mcp-header` parameters (tools only), for `Mcp-Param-*` mirroring.
    pub header_params: Vec<HeaderParam>,
    /// What each call must do to its arguments (an override's pins and hidden
    /// arguments), if anything.
    pub adjust: Option<Arc<Adjust>>,
    /// An MCP Apps tool only its app may see (`_meta.ui.visibility` without
    /// `"model"`): left out of the pages and the search index, callable.
    pub app_only: bool,
    /// The item serialized with its exposed name.
    json: Bytes,
}

/// Why an upstream item is not exposed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LeftOutReason {
    /// The item has no string `name` (`uri` for resources).
    NoName,
    /// The operator's `allow`/`deny` lists hide it.
    Filtered,
    /// Its `inputSchema` carries an invalid `x-mcp-header` annotation.
    InvalidHeader(String),
    /// Another upstream's item got the exposed name first.
    Collision {
        exposed: String,
        kept_upstream: String,
    },
    /// A resource template that cannot be parsed, or is over the template limits
    /// (see `template`): it could not route reads safely.
    InvalidTemplate(String),
    /// A `skills/list` entry that is not a SEP-2640 skill (see `skills`).
    InvalidSkill(String),
    /// The upstream published `copies` items under this one name (URI for
    /// resources) in one list: a protocol error. Every copy is left out, so
    /// a second definition can never stand in for an approved first one.
    Duplicate { copies: usize },
}

impl LeftOutReason {
    /// A short stable name (a metrics label, `manifold check --json`).
    pub fn kind(&self) -> &'static str {
        match self {
            LeftOutReason::NoName => "no_name",
            LeftOutReason::Filtered => "filtered",
            LeftOutReason::InvalidHeader(_) => "invalid_header",
            LeftOutReason::Collision { .. } => "collision",
            LeftOutReason::InvalidTemplate(_) => "invalid_template",
            LeftOutReason::InvalidSkill(_) => "invalid_skill",
            LeftOutReason::Duplicate { .. } => "duplicate",
        }
    }
}

impl std::fmt::Display for LeftOutReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LeftOutReason::NoName => write!(f, "no string `name`"),
            LeftOutReason::Filtered => write!(f, "hidden by the upstream's allow/deny lists"),
            LeftOutReason::InvalidHeader(e) => write!(f, "invalid x-mcp-header: {e}"),
            LeftOutReason::InvalidTemplate(e) | LeftOutReason::InvalidSkill(e) => write!(f, "{e}"),
            LeftOutReason::Duplicate { copies } => write!(
                f,
                "the upstream published {copies} items under this name in one list; every copy is left out until it publishes one"
            ),
            LeftOutReason::Collision {
                exposed,
                kept_upstream,
            } => write!(
                f,
                "collision: `{exposed}` is already exposed from upstream `{kept_upstream}`"
            ),
        }
    }
}

#[derive(Debug, Clone)]
pub struct LeftOut {
    pub upstream: Arc<str>,
    pub original: String,
    pub reason: LeftOutReason,
}

/// The merged list of one kind.
#[derive(Debug)]
pub struct NamedList {
    kind: Kind,
    entries: Vec<Entry>,
    by_name: HashMap<String, usize>,
    left_out: Vec<LeftOut>,
    /// The entries the pages hold when some are app-only (`None`: all).
    listed: Option<Vec<Entry>>,
    pages: page::Pages,
    /// Served under the upstreams' own names (`own_names`): `by_name` holds
    /// each own name besides each exposed name.
    own_names: bool,
}

/// The merged view of every kind; rebuilt whole and swapped in atomically.
#[derive(Debug)]
pub struct Catalog {
    pub tools: NamedList,
    pub prompts: NamedList,
    pub resources: Resources,
    /// Skills (SEP-2640), by the URI of their `SKILL.md` as exposed.
    pub skills: Skills,
}

impl Catalog {
    pub fn empty(page_size: usize) -> Catalog {
        let policy = NamingPolicy {
            separator: "__".into(),
            prefix_mode: PrefixMode::Always,
            max_length: 64,
            configured_upstreams: 0,
            uris: Default::default(),
        };
        Catalog::build(&[], &policy, page_size)
    }

    /// Builds the merged view. `inputs` may come in any order. URIs
    /// `policy.uris` covers are exposed under their upstream's prefix
    /// (resources, templates, tools' UI references) before merging.
    pub fn build(inputs: &[UpstreamInput], policy: &NamingPolicy, page_size: usize) -> Catalog {
        // Only an input with something to expose is copied.
        let exposed: Vec<Option<UpstreamInput>> = inputs
            .iter()
            .map(|i| {
                let lists = policy.uris.expose_lists(&i.prefix, &i.lists)?;
                Some(UpstreamInput {
                    lists: Arc::new(lists),
                    ..i.clone()
                })
            })
            .collect();
        let mut sorted: Vec<&UpstreamInput> = inputs
            .iter()
            .zip(&exposed)
            .map(|(i, e)| e.as_ref().unwrap_or(i))
            .collect();
        sorted.sort_by(|a, b| a.name.cmp(&b.name));
        Catalog {
            tools: NamedList::build(Kind::Tools, &sorted, policy, page_size),
            prompts: NamedList::build(Kind::Prompts, &sorted, policy, page_size),
            resources: Resources::build(&sorted, page_size),
            skills: Skills::build(&sorted, policy, page_size),
        }
    }

    pub fn list(&self, kind: Kind) -> &NamedList {
        match kind {
            Kind::Tools => &self.tools,
            Kind::Prompts => &self.prompts,
        }
    }

    /// The part of this catalog that `keep` lets through: the same items in the
    /// same order, with their own pre-serialized pages and cursors (a caller's
    /// view under `[[policy]]`). Items are shared, not re-serialized; nothing is
    /// reported left out.
    pub fn restricted(&self, keep: &dyn Fn(Item<'_>) -> bool) -> Catalog {
        let visible = |uri: &str| keep(Item::Resource(uri));
        Catalog {
            tools: self
                .tools
                .restricted(&|e| keep(Item::Tool(&e.exposed)), &visible),
            prompts: self
                .prompts
                .restricted(&|e| keep(Item::Prompt(&e.exposed)), &|_| true),
            resources: self.resources.restricted(keep),
            skills: self.skills.restricted(keep),
        }
    }
}

/// An item as a [`Catalog::restricted`] filter sees it: tools and prompts by
/// exposed name, resources by URI, templates by their template string.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Item<'a> {
    Tool(&'a str),
    Prompt(&'a str),
    Resource(&'a str),
    Template(&'a str),
    /// A skill by its exposed name (`skills::exposed_name`) and its upstream.
    Skill {
        name: &'a str,
        upstream: &'a str,
    },
}

struct Candidate<'a> {
    exposed: String,
    change: Option<NameChange>,
    upstream: &'a Arc<str>,
    original: &'a str,
    header_params: Vec<HeaderParam>,
    item: &'a Map<String, Value>,
    over: Option<&'a Override>,
}

impl NamedList {
    fn build(
        kind: Kind,
        inputs: &[&UpstreamInput],
        policy: &NamingPolicy,
        page_size: usize,
    ) -> NamedList {
        let use_prefix = policy.use_prefix();
        let mut left_out = Vec::new();
        let mut candidates = Vec::new();
        for input in inputs {
            let items = match kind {
                Kind::Tools => &input.lists.tools,
                Kind::Prompts => &input.lists.prompts,
            };
            let repeated = repeated(items, "name", &input.name, kind.singular());
            for item in items {
                let Some(original) = item.get("name").and_then(Value::as_str) else {
                    left_out.push(LeftOut {
                        upstream: input.name.clone(),
                        original: String::new(),
                        reason: LeftOutReason::NoName,
                    });
                    continue;
                };
                if let Some(&copies) = repeated.get(original) {
                    left_out.push(duplicate(&input.name, original, copies));
                    continue;
                }
                if !input.filter.shows(kind, original) {
                    left_out.push(LeftOut {
                        upstream: input.name.clone(),
                        original: original.to_string(),
                        reason: LeftOutReason::Filtered,
                    });
                    continue;
                }
                let header_params = if kind == Kind::Tools {
                    let schema = item.get("inputSchema").unwrap_or(&Value::Null);
                    match header_params(schema) {
                        Ok(p) => p,
                        Err(e) => {
                            left_out.push(LeftOut {
                                upstream: input.name.clone(),
                                original: original.to_string(),
                                reason: LeftOutReason::InvalidHeader(e.to_string()),
                            });
                            continue;
                        }
                    }
                } else {
                    Vec::new()
                };
                let over = match kind {
                    Kind::Tools => input.overrides.get(original),
                    Kind::Prompts => None,
                };
                let prefix = use_prefix.then_some(input.prefix.as_str());
                let (exposed, change) = naming::expose(
                    &input.name,
                    prefix,
                    &policy.separator,
                    over.and_then(|o| o.name.as_deref()).unwrap_or(original),
                    policy.max_length,
                );
                candidates.push(Candidate {
                    exposed,
                    change,
                    upstream: &input.name,
                    original,
                    header_params,
                    item,
                    over,
                });
            }
        }
        // Rank by (exposed, upstream, original): winners of a collision never depend
        // on arrival order.
        candidates.sort_by(|a, b| {
            (a.exposed.as_str(), &**a.upstream, a.original).cmp(&(
                b.exposed.as_str(),
                &**b.upstream,
                b.original,
            ))
        });
        let mut taken: HashSet<String> = HashSet::with_capacity(candidates.len());
        let mut winners = Vec::with_capacity(candidates.len());
        let mut losers = Vec::new();
        for c in candidates {
            if taken.insert(c.exposed.clone()) {
                winners.push(c);
            } else {
                losers.push(c);
            }
        }
        let winner_upstream: HashMap<String, String> = winners
            .iter()
            .map(|c| (c.exposed.clone(), c.upstream.to_string()))
            .collect();
        for mut c in losers {
            let kept_upstream = winner_upstream.get(&c.exposed).cloned().unwrap_or_default();
            let alt = naming::disambiguate(&c.exposed, c.upstream, c.original, policy.max_length);
            if use_prefix && !taken.contains(&alt) {
                tracing::warn!(
                    kind = kind.singular(), upstream = %c.upstream, name = c.original,
                    exposed = %alt, collided_with = %c.exposed,
                    "exposed-name collision resolved with a hash suffix"
                );
                taken.insert(alt.clone());
                c.exposed = alt;
                c.change = Some(NameChange::Disambiguated);
                winners.push(c);
            } else {
                tracing::warn!(
                    kind = kind.singular(), upstream = %c.upstream, name = c.original,
                    exposed = %c.exposed, kept_upstream = %kept_upstream,
                    "exposed-name collision: item left out"
                );
                left_out.push(LeftOut {
                    upstream: c.upstream.clone(),
                    original: c.original.to_string(),
                    reason: LeftOutReason::Collision {
                        exposed: c.exposed,
                        kept_upstream,
                    },
                });
            }
        }
        winners.sort_by(|a, b| a.exposed.cmp(&b.exposed));
        let entries: Vec<Entry> = winners
            .into_iter()
            .map(|c| {
                let mut item = c.item.clone();
                if let Some(v) = item.get_mut("name") {
                    *v = Value::String(c.exposed.clone());
                }
                let adjust = c.over.and_then(|o| {
                    let (adjust, problems) = overrides::apply(&mut item, o);
                    for problem in problems {
                        tracing::warn!(upstream = %c.upstream, tool = c.original, %problem,
                            "override not applied in full");
                    }
                    adjust.map(Arc::new)
                });
                let app_only = kind == Kind::Tools && app_only(&item);
                let json =
                    Bytes::from(serde_json::to_vec(&Value::Object(item)).unwrap_or_default());
                Entry {
                    exposed: c.exposed,
                    upstream: c.upstream.clone(),
                    original: c.original.to_string(),
                    change: c.change,
                    header_params: c.header_params,
                    adjust,
                    app_only,
                    json,
                }
            })
            .collect();
        NamedList::of(kind, entries, left_out, page_size, false)
    }

    /// The entries `keep` lets through; a tool whose UI resource `visible`
    /// says the viewer may not read loses its UI reference (MCP Apps: a
    /// host would otherwise fetch a resource the viewer cannot read).
    fn restricted(
        &self,
        keep: &dyn Fn(&Entry) -> bool,
        visible: &dyn Fn(&str) -> bool,
    ) -> NamedList {
        let entries: Vec<Entry> = self
            .entries
            .iter()
            .filter(|e| keep(e))
            .map(|e| {
                let mut e = e.clone();
                if self.kind == Kind::Tools {
                    strip_hidden_ui(&mut e, visible);
                }
                e
            })
            .collect();
        NamedList::of(
            self.kind,
            entries,
            Vec::new(),
            self.pages.page_size(),
            self.own_names,
        )
    }

    /// A list of `entries` (in order) with its index and pages; `own_names`:
    /// each found by its own name too.
    fn of(
        kind: Kind,
        entries: Vec<Entry>,
        left_out: Vec<LeftOut>,
        page_size: usize,
        own_names: bool,
    ) -> NamedList {
        let by_name = own_names::index(&entries, own_names);
        let listed = listed(&entries);
        let pages = page::Pages::build(
            kind.member(),
            listed.as_deref().unwrap_or(&entries),
            page_size,
        );
        NamedList {
            kind,
            entries,
            by_name,
            left_out,
            listed,
            pages,
            own_names,
        }
    }

    pub fn kind(&self) -> Kind {
        self.kind
    }
    /// The entry of an exposed name (or, in a list served under own names,
    /// of an own name).
    pub fn get(&self, exposed: &str) -> Option<&Entry> {
        self.by_name.get(exposed).map(|&i| &self.entries[i])
    }
    /// Every entry, app-only tools included (what may be called).
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }
    /// The entries a model is shown (what the pages and search hold).
    pub fn listed(&self) -> &[Entry] {
        self.listed.as_deref().unwrap_or(&self.entries)
    }
    pub fn left_out(&self) -> &[LeftOut] {
        &self.left_out
    }
    pub fn len(&self) -> usize {
        self.entries.len()
    }
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The serialized list result (`{"tools":[…],"nextCursor":…}`) for a cursor.
    pub fn page(&self, cursor: Option<&str>) -> Result<Bytes, CursorError> {
        self.pages.page(self.kind.member(), self.listed(), cursor)
    }
}

/// Drops a tool's UI resource references (`_meta.ui.resourceUri`,
/// `_meta["ui/resourceUri"]`) when `visible` says the viewer may not read
/// the resource; the tool itself stays. Only tools that name a UI resource
/// are parsed.
fn strip_hidden_ui(e: &mut Entry, visible: &dyn Fn(&str) -> bool) {
    if !e.json.windows(11).any(|w| w == b"resourceUri") {
        return;
    }
    let Ok(Value::Object(mut tool)) = serde_json::from_slice::<Value>(&e.json) else {
        return;
    };
    let Some(Value::Object(meta)) = tool.get_mut("_meta") else {
        return;
    };
    let legacy = namespace::LEGACY_UI_RESOURCE_URI;
    let mut hidden: Vec<String> = Vec::new();
    if let Some(Value::String(u)) = meta.get(legacy) {
        if !visible(u) {
            hidden.push(u.clone());
            meta.remove(legacy);
        }
    }
    if let Some(Value::Object(ui)) = meta.get_mut("ui") {
        if let Some(Value::String(u)) = ui.get(namespace::UI_RESOURCE_URI) {
            if !visible(u) {
                hidden.push(u.clone());
                ui.remove(namespace::UI_RESOURCE_URI);
            }
        }
    }
    if hidden.is_empty() {
        return;
    }
    let hidden: Vec<String> = hidden.iter().map(|u| fingerprint::printable(u)).collect();
    tracing::info!(tool = %e.exposed, uris = ?hidden,
        "a tool's UI resource is hidden from this caller by [[policy]]: its UI reference is left out of its definition");
    if let Ok(json) = serde_json::to_vec(&Value::Object(tool)) {
        e.json = Bytes::from(json);
    }
}

/// Whether a tool is for its MCP App only: `_meta.ui.visibility` is an
/// array without `"model"` (the default, absent, is model and app).
fn app_only(tool: &Map<String, Value>) -> bool {
    tool.get("_meta")
        .and_then(|m| m.get("ui"))
        .and_then(|ui| ui.get("visibility"))
        .and_then(Value::as_array)
        .is_some_and(|v| !v.iter().any(|x| x == "model"))
}

/// The entries a model is shown, when some are app-only.
fn listed(entries: &[Entry]) -> Option<Vec<Entry>> {
    entries
        .iter()
        .any(|e| e.app_only)
        .then(|| entries.iter().filter(|e| !e.app_only).cloned().collect())
}

/// The names (`key` members) that appear more than once in one upstream's
/// list, with their number of copies; each is logged once (`what`: the
/// kind, for the log).
pub(crate) fn repeated<'a>(
    items: &'a [Map<String, Value>],
    key: &str,
    upstream: &str,
    what: &str,
) -> HashMap<&'a str, usize> {
    let mut counts: HashMap<&str, usize> = HashMap::with_capacity(items.len());
    for item in items {
        if let Some(name) = item.get(key).and_then(Value::as_str) {
            *counts.entry(name).or_insert(0) += 1;
        }
    }
    counts.retain(|_, n| *n > 1);
    for (name, copies) in &counts {
        tracing::warn!(
            kind = what, %upstream, name = %fingerprint::printable(name), copies,
            "the upstream published this name more than once in one list (a protocol error): every copy is left out"
        );
    }
    counts
}

/// One copy of a repeated name, left out.
pub(crate) fn duplicate(upstream: &Arc<str>, original: &str, copies: usize) -> LeftOut {
    LeftOut {
        upstream: upstream.clone(),
        original: original.to_string(),
        reason: LeftOutReason::Duplicate { copies },
    }
}

impl Entry {
    /// The item as exposed, serialized.
    pub fn json(&self) -> &Bytes {
        &self.json
    }
}

#[cfg(test)]
mod proptests;
#[cfg(test)]
mod tests;
