//! The merged list of tools or of prompts ([`NamedList`]): every upstream's
//! items under their exposed names, in a deterministic order, first come
//! first named, with what was left out and why, and its pre-serialized pages.
//!
//! Invariants: upstreams are merged in name order, so a collision is
//! resolved the same way on every build and replica; an item is serialized
//! once; an app-only tool is callable but in no page.
//!
//! Not here: resources and templates (`resources`), skills (`skills`),
//! serving under the upstreams' own names (`own_names`).

use bytes::Bytes;
use manifold_protocol::headers::{header_params, HeaderParam};
use serde_json::{Map, Value};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use crate::entry::{duplicate, repeated, Entry, Kind, LeftOut, LeftOutReason};
use crate::fingerprint;
use crate::input::{NamingPolicy, UpstreamInput};
use crate::members::{Entries, Members};
use crate::namespace;
use crate::naming::{self, NameChange};
use crate::overrides::{self, Override};
use crate::page::{self, CursorError};

/// The merged list of one kind.
#[derive(Debug)]
pub struct NamedList {
    pub(crate) kind: Kind,
    pub(crate) entries: Members,
    /// Exposed (and, `own_names`, own) name → position in the shared
    /// entries; shared with every list restricted from this one.
    pub(crate) by_name: Arc<foldhash::HashMap<String, u32>>,
    pub(crate) left_out: Vec<LeftOut>,
    /// The entries the pages hold when some are app-only (`None`: all).
    pub(crate) listed: Option<Members>,
    pub(crate) pages: page::Pages,
    /// Served under the upstreams' own names (`own_names`): `by_name` holds
    /// each own name besides each exposed name.
    pub(crate) own_names: bool,
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
    pub(crate) fn build(
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
    /// host would otherwise fetch a resource the viewer cannot read). The
    /// entries and the name index are shared with this list; `pre`: with
    /// pre-serialized pages (else each page is joined when asked for).
    pub(crate) fn restricted(
        &self,
        keep: &dyn Fn(&Entry) -> bool,
        visible: &dyn Fn(&str) -> bool,
        pre: bool,
    ) -> NamedList {
        let tools = self.kind == Kind::Tools;
        let entries = self.entries.subset(keep, &|e| match tools {
            true => without_hidden_ui(e, visible),
            false => None,
        });
        let listed = listed(&entries);
        let pages = page::Pages::build(
            self.kind.member(),
            listed.as_ref().unwrap_or(&entries),
            self.pages.page_size(),
            pre,
        );
        NamedList {
            kind: self.kind,
            entries,
            by_name: self.by_name.clone(),
            left_out: Vec::new(),
            listed,
            pages,
            own_names: self.own_names,
        }
    }

    /// A list of `entries` (in order) with its index and pre-serialized
    /// pages; `own_names`: each found by its own name too.
    pub(crate) fn of(
        kind: Kind,
        entries: Vec<Entry>,
        left_out: Vec<LeftOut>,
        page_size: usize,
        own_names: bool,
    ) -> NamedList {
        let by_name = Arc::new(index(&entries, own_names));
        let entries = Members::all(entries);
        let listed = listed(&entries);
        let pages = page::Pages::build(
            kind.member(),
            listed.as_ref().unwrap_or(&entries),
            page_size,
            true,
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

    /// Bytes this list holds of its own beside the entries it shares (a
    /// view's index, pages and changed entries).
    pub fn own_bytes(&self) -> usize {
        self.entries.own_bytes()
            + self.listed.as_ref().map_or(0, Members::own_bytes)
            + self.pages.bytes()
    }

    pub fn kind(&self) -> Kind {
        self.kind
    }
    /// The entry of an exposed name (or, in a list served under own names,
    /// of an own name).
    pub fn get(&self, exposed: &str) -> Option<&Entry> {
        let at = *self.by_name.get(exposed)?;
        match self.entries.at_shared(at) {
            Some(e) => Some(e),
            // The shared index names an entry this view does not hold: an own
            // name may still be another held entry's (the first keeps it).
            None if self.own_names => self
                .entries
                .entries()
                .iter()
                .find(|e| e.original == exposed),
            None => None,
        }
    }
    /// Every entry, app-only tools included (what may be called).
    pub fn entries(&self) -> Entries<'_> {
        self.entries.entries()
    }
    /// The entries a model is shown (what the pages and search hold).
    pub fn listed(&self) -> Entries<'_> {
        self.listed.as_ref().unwrap_or(&self.entries).entries()
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
        let listed = self.listed.as_ref().unwrap_or(&self.entries);
        self.pages.page(self.kind.member(), listed, cursor)
    }
}

/// Drops a tool's UI resource references (`_meta.ui.resourceUri`,
/// `_meta["ui/resourceUri"]`) when `visible` says the viewer may not read
/// the resource; the tool itself stays. Only tools that name a UI resource
/// are parsed. `None`: the entry stays as it is.
fn without_hidden_ui(e: &Entry, visible: &dyn Fn(&str) -> bool) -> Option<Entry> {
    if !e.json.windows(11).any(|w| w == b"resourceUri") {
        return None;
    }
    let Ok(Value::Object(mut tool)) = serde_json::from_slice::<Value>(&e.json) else {
        return None;
    };
    let Some(Value::Object(meta)) = tool.get_mut("_meta") else {
        return None;
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
        return None;
    }
    let hidden: Vec<String> = hidden.iter().map(|u| fingerprint::printable(u)).collect();
    tracing::info!(tool = %e.exposed, uris = ?hidden,
        "a tool's UI resource is hidden from this caller by [[policy]]: its UI reference is left out of its definition");
    let json = serde_json::to_vec(&Value::Object(tool)).ok()?;
    Some(Entry {
        json: Bytes::from(json),
        ..e.clone()
    })
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
fn listed(entries: &Members) -> Option<Members> {
    entries
        .entries()
        .iter()
        .any(|e| e.app_only)
        .then(|| entries.subset(&|e| !e.app_only, &|_| None))
}

/// Each entry by its exposed name, and (`own`) by its own name too, the
/// first entry with an own name keeping it.
fn index(entries: &[Entry], own: bool) -> foldhash::HashMap<String, u32> {
    let mut by_name: foldhash::HashMap<String, u32> = entries
        .iter()
        .zip(0..)
        .map(|(e, i)| (e.exposed.clone(), i))
        .collect();
    if own {
        for (e, i) in entries.iter().zip(0..) {
            by_name.entry(e.original.clone()).or_insert(i);
        }
    }
    by_name
}
