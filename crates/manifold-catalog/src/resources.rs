//! The merged resources and resource templates, and the URI → upstream index that
//! `resources/read`, `resources/subscribe` and `completion/complete` route on.
//!
//! Resource URIs are not renamed: a URI is an identifier the upstream (and often the
//! model) already knows. So ownership is by URI:
//! - a URI listed by exactly one upstream belongs to it;
//! - a URI listed by several belongs to the upstream whose name sorts first; the
//!   others' entries are left out of the merged list (reported as a collision),
//!   the same rule for duplicate `uriTemplate`s;
//! - a URI (or template) one upstream lists twice is left out in every copy
//!   ([`LeftOutReason::Duplicate`]): which copy is meant cannot be known;
//! - an unlisted URI belongs to the most specific template that matches it (most
//!   literal characters; ties go to the first in (template, upstream) order).
//!
//! Invariants: lists are sorted by (URI, upstream) and pre-serialized, so the same
//! upstream lists give byte-identical pages; items pass through unchanged.
//!
//! Where resource rules apply, the server reads a URI in its canonical form
//! (`uri`); [`Resources::listed_spelling`] gives back the spelling an upstream
//! listed for that form (`é` for `%C3%A9`), so an upstream that looks its own
//! URIs up as strings still finds them.
//!
//! Not here: URIs learned from tool results (the server keeps those, bounded), and
//! the fallback to a sole resource-serving upstream (the server knows capabilities).

use bytes::Bytes;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use crate::members::Members;
use crate::page::Pages;
use crate::template::UriTemplate;
use crate::{
    entry::Entry, entry::LeftOut, entry::LeftOutReason, input::UpstreamInput, page::CursorError,
};

/// One merged URI-keyed list (`resources` or `resourceTemplates`).
#[derive(Debug)]
pub struct UriList {
    member: &'static str,
    /// `exposed` is the sort key (URI, NUL, upstream); `original` is the URI.
    entries: Members,
    pages: Pages,
    left_out: Vec<LeftOut>,
}

impl UriList {
    pub(crate) fn build(
        member: &'static str,
        key: &str,
        inputs: &[&UpstreamInput],
        items: impl Fn(&UpstreamInput) -> &Vec<Map<String, Value>>,
        check: impl Fn(&str, &Map<String, Value>) -> Result<(), LeftOutReason>,
        page_size: usize,
    ) -> UriList {
        let mut left_out = Vec::new();
        let mut candidates: Vec<(String, Arc<str>, &Map<String, Value>)> = Vec::new();
        for input in inputs {
            let repeated = crate::entry::repeated(items(input), key, &input.name, key);
            for item in items(input) {
                match item.get(key).and_then(Value::as_str) {
                    Some(uri) if repeated.contains_key(uri) => {
                        left_out.push(crate::entry::duplicate(&input.name, uri, repeated[uri]));
                    }
                    Some(uri) => match check(uri, item) {
                        Ok(()) => candidates.push((uri.to_string(), input.name.clone(), item)),
                        Err(reason) => {
                            tracing::warn!(upstream = %input.name,
                                uri = %crate::fingerprint::printable(uri), %reason,
                                "left out of the merged {member}");
                            left_out.push(LeftOut {
                                upstream: input.name.clone(),
                                original: uri.to_string(),
                                reason,
                            })
                        }
                    },
                    None => left_out.push(LeftOut {
                        upstream: input.name.clone(),
                        original: String::new(),
                        reason: LeftOutReason::NoName,
                    }),
                }
            }
        }
        candidates.sort_by(|a, b| (a.0.as_str(), &*a.1).cmp(&(b.0.as_str(), &*b.1)));
        let mut entries: Vec<Entry> = Vec::with_capacity(candidates.len());
        for (uri, upstream, item) in candidates {
            if let Some(kept) = entries.last().filter(|e| e.original == uri) {
                tracing::warn!(uri = %crate::fingerprint::printable(&uri), upstream = %upstream, kept_upstream = %kept.upstream,
                    "two upstreams list the same {key}; the first by name keeps it");
                left_out.push(LeftOut {
                    upstream,
                    original: uri.clone(),
                    reason: LeftOutReason::Collision {
                        exposed: uri,
                        kept_upstream: kept.upstream.to_string(),
                    },
                });
                continue;
            }
            let json = Bytes::from(serde_json::to_vec(item).unwrap_or_default());
            entries.push(Entry {
                exposed: format!("{uri}\u{0}{upstream}"),
                upstream,
                original: uri,
                change: None,
                header_params: Vec::new(),
                adjust: None,
                app_only: false,
                json,
            });
        }
        let entries = Members::all(entries);
        let pages = Pages::build(member, &entries, page_size, true);
        UriList {
            member,
            entries,
            pages,
            left_out,
        }
    }

    /// The items `keep` lets through, sharing this list's; `pre`: with
    /// pre-serialized pages.
    pub(crate) fn restricted(&self, keep: &dyn Fn(&str) -> bool, pre: bool) -> UriList {
        let entries = self.entries.subset(&|e| keep(&e.original), &|_| None);
        let pages = Pages::build(self.member, &entries, self.pages.page_size(), pre);
        UriList {
            member: self.member,
            entries,
            pages,
            left_out: Vec::new(),
        }
    }

    /// The serialized list result for a cursor.
    pub fn page(&self, cursor: Option<&str>) -> Result<Bytes, CursorError> {
        self.pages.page(self.member, &self.entries, cursor)
    }
    /// (URI, owning upstream, the item as listed), in list order.
    pub(crate) fn parsed(&self) -> impl Iterator<Item = (&str, &Arc<str>, Map<String, Value>)> {
        self.entries.entries().into_iter().filter_map(|e| {
            let item = serde_json::from_slice(&e.json).ok()?;
            Some((e.original.as_str(), &e.upstream, item))
        })
    }
    /// (URI or template, owning upstream), in list order.
    pub fn items(&self) -> impl Iterator<Item = (&str, &Arc<str>)> {
        self.entries
            .entries()
            .into_iter()
            .map(|e| (e.original.as_str(), &e.upstream))
    }
    pub fn len(&self) -> usize {
        self.entries.len()
    }
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
    pub fn left_out(&self) -> &[LeftOut] {
        &self.left_out
    }
    /// Bytes this list holds of its own beside the entries it shares.
    pub(crate) fn own_bytes(&self) -> usize {
        self.entries.own_bytes() + self.pages.bytes()
    }
    /// True when both lists would serialize identically.
    pub fn same_as(&self, other: &UriList) -> bool {
        self.entries.len() == other.entries.len()
            && self
                .entries
                .entries()
                .iter()
                .zip(other.entries.entries())
                .all(|(a, b)| a.json == b.json)
    }
}

/// The merged resources, templates, and who owns which URI.
#[derive(Debug)]
pub struct Resources {
    pub resources: UriList,
    pub templates: UriList,
    /// Listed URI → its position in the shared resource entries; shared
    /// with every view restricted from this one (a view holds a subset).
    exact: Arc<HashMap<String, u32>>,
    /// Parsed templates (with their text), most specific first.
    matchers: Vec<(UriTemplate, Arc<str>, String)>,
    /// Canonical form → listed URI, for listed URIs not in canonical form;
    /// built on first use (only reads under resource rules need it).
    spellings: OnceLock<HashMap<String, String>>,
}

impl Resources {
    pub(crate) fn build(inputs: &[&UpstreamInput], page_size: usize) -> Resources {
        let resources = UriList::build(
            "resources",
            "uri",
            inputs,
            |i| &i.lists.resources,
            |_, _| Ok(()),
            page_size,
        );
        let templates = UriList::build(
            "resourceTemplates",
            "uriTemplate",
            inputs,
            |i| &i.lists.resource_templates,
            |t, _| {
                UriTemplate::parse(t)
                    .map(|_| ())
                    .map_err(|e| LeftOutReason::InvalidTemplate(e.to_string()))
            },
            page_size,
        );
        let exact = resources
            .items()
            .zip(0..)
            .map(|((uri, _), at)| (uri.to_string(), at))
            .collect();
        Resources::index(resources, templates, Arc::new(exact))
    }

    fn index(
        resources: UriList,
        templates: UriList,
        exact: Arc<HashMap<String, u32>>,
    ) -> Resources {
        // Every listed template parsed when the list was built.
        let mut matchers: Vec<(UriTemplate, Arc<str>, String)> = templates
            .items()
            .filter_map(|(t, up)| Some((UriTemplate::parse(t).ok()?, up.clone(), t.to_string())))
            .collect();
        // Stable: ties keep (template, upstream) order.
        matchers.sort_by_key(|(t, _, _)| std::cmp::Reverse(t.literal_len()));
        Resources {
            resources,
            templates,
            exact,
            matchers,
            spellings: OnceLock::new(),
        }
    }

    /// The items `keep` lets through, sharing this one's; `pre`: with
    /// pre-serialized pages.
    pub(crate) fn restricted(
        &self,
        keep: &dyn Fn(crate::entry::Item<'_>) -> bool,
        pre: bool,
    ) -> Resources {
        let resources = self
            .resources
            .restricted(&|uri| keep(crate::entry::Item::Resource(uri)), pre);
        let templates = self
            .templates
            .restricted(&|t| keep(crate::entry::Item::Template(t)), pre);
        Resources::index(resources, templates, self.exact.clone())
    }

    /// The upstream of `uri` when this list holds it.
    fn listed_owner(&self, uri: &str) -> Option<&Arc<str>> {
        let at = *self.exact.get(uri)?;
        self.resources.entries.at_shared(at).map(|e| &e.upstream)
    }

    /// Bytes these lists hold of their own beside the entries they share.
    pub(crate) fn own_bytes(&self) -> usize {
        self.resources.own_bytes() + self.templates.own_bytes()
    }

    /// The upstream that owns `uri` by the lists and templates, if any.
    pub fn owner(&self, uri: &str) -> Option<&Arc<str>> {
        self.listed_owner(uri).or_else(|| {
            self.matchers
                .iter()
                .find(|(t, _, _)| t.matches(uri))
                .map(|(_, up, _)| up)
        })
    }

    /// The template that routes `uri`, when no listed resource does (the
    /// most specific one, as [`Resources::owner`] chooses).
    pub fn routing_template(&self, uri: &str) -> Option<&str> {
        if self.listed_owner(uri).is_some() {
            return None;
        }
        self.matchers
            .iter()
            .find(|(t, _, _)| t.matches(uri))
            .map(|(_, _, text)| text.as_str())
    }

    /// The URI a list names whose canonical form is `canonical`, when that
    /// list spells it otherwise (the first in list order); `None` when it is
    /// listed as is, or not at all.
    pub fn listed_spelling(&self, canonical: &str) -> Option<&str> {
        if self.listed_owner(canonical).is_some() {
            return None;
        }
        self.spellings
            .get_or_init(|| {
                let mut spellings = HashMap::new();
                for (uri, _) in self.resources.items() {
                    if let Ok(c) = crate::uri::canonical(uri) {
                        if c != uri {
                            spellings.entry(c).or_insert_with(|| uri.to_string());
                        }
                    }
                }
                spellings
            })
            .get(canonical)
            .map(String::as_str)
    }

    /// The upstream that lists `template` itself (for `completion/complete` with a
    /// `ref/resource` naming a template).
    pub fn template_owner(&self, template: &str) -> Option<&Arc<str>> {
        self.templates
            .entries
            .entries()
            .into_iter()
            .find(|e| e.original == template)
            .map(|e| &e.upstream)
    }
}
