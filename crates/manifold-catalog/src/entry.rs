//! One exposed item ([`Entry`]) and what is said about the items a build did
//! not expose ([`LeftOut`], [`LeftOutReason`]); the two kinds of named list
//! ([`Kind`]); an item as a view's filter sees it ([`Item`]); and the count of
//! names one upstream lists twice.
//!
//! Invariants: an entry's JSON is serialized once, with its exposed name, and
//! shared by every page and view that holds it.
//!
//! Not here: building entries (`list`), pages (`page`).

use bytes::Bytes;
use manifold_protocol::headers::HeaderParam;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::Arc;

use crate::fingerprint;
use crate::naming::NameChange;
use crate::overrides::Adjust;

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
    pub(crate) json: Bytes,
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
