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

mod catalog;
mod entry;
pub mod filter;
pub mod fingerprint;
mod input;
mod list;
mod members;
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

pub use catalog::Catalog;
pub use entry::{Entry, Item, Kind, LeftOut, LeftOutReason};
pub use filter::{Glob, ItemFilter};
pub use fingerprint::Fingerprint;
pub use input::{NamingPolicy, PrefixMode, UpstreamInput, UpstreamLists};
pub use list::NamedList;
pub use members::{Entries, Iter as EntriesIter};
pub use naming::NameChange;
pub use overrides::{Adjust, Override, Overrides};
pub use own_names::OwnNameCollision;
pub use page::CursorError;
pub use resources::{Resources, UriList};
pub use search::{SearchIndex, SearchRequest, ToolSet};
pub use skills::{SkillFile, Skills};

#[cfg(test)]
mod proptests;
#[cfg(test)]
mod tests;
