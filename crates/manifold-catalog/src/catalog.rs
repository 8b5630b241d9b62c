//! The merged view of every kind ([`Catalog`]): tools, prompts, resources and
//! skills, built whole from every upstream's input, and restricted to a
//! caller's view.
//!
//! Invariants: rebuilt whole on every change and swapped in at once; a
//! restricted part or view shares the items (and name indexes), holding
//! only which of them it keeps.
//!
//! Not here: how each kind merges (`list`, `resources`, `skills`).

use std::sync::Arc;

use crate::entry::{Item, Kind};
use crate::input::{NamingPolicy, PrefixMode, UpstreamInput};
use crate::list::NamedList;
use crate::resources::Resources;
use crate::skills::Skills;

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
    /// same order, with their own pre-serialized pages and cursors (an
    /// endpoint's part of the catalogue). Items and name indexes are shared,
    /// not copied; nothing is reported left out.
    pub fn restricted(&self, keep: &dyn Fn(Item<'_>) -> bool) -> Catalog {
        self.part(keep, true)
    }

    /// A caller's view under `[[policy]]`: as [`Catalog::restricted`], but
    /// without pre-serialized pages (each page is joined from the shared
    /// items when asked for), so a view costs its indexes, not a copy of
    /// its items.
    pub fn view(&self, keep: &dyn Fn(Item<'_>) -> bool) -> Catalog {
        self.part(keep, false)
    }

    fn part(&self, keep: &dyn Fn(Item<'_>) -> bool, pre: bool) -> Catalog {
        let visible = |uri: &str| keep(Item::Resource(uri));
        Catalog {
            tools: self
                .tools
                .restricted(&|e| keep(Item::Tool(&e.exposed)), &visible, pre),
            prompts: self
                .prompts
                .restricted(&|e| keep(Item::Prompt(&e.exposed)), &|_| true, pre),
            resources: self.resources.restricted(keep, pre),
            skills: self.skills.restricted(keep, pre),
        }
    }

    /// Bytes this catalogue holds of its own beside the items it shares
    /// with the one it was restricted from (a view's indexes and pages).
    pub fn own_bytes(&self) -> usize {
        self.tools.own_bytes()
            + self.prompts.own_bytes()
            + self.resources.own_bytes()
            + self.skills.own_bytes()
    }
}
