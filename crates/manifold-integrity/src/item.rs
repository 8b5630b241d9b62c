//! What is pinned: an item's kind ([`ItemKind`]) and reference ([`ItemRef`]),
//! the members of each kind that are fingerprinted ([`published`]), and the
//! principal a first-sight pin is recorded under.
//!
//! Invariants: plain values; the kinds' spellings are the store's format.
//!
//! Not here: deciding (`decide`), the store (`store`).

use serde::{Deserialize, Serialize};

/// Who approved a pin made at first sight (`trust_on_first_use`, or
/// `new_tools = "allow"` for an upstream that already has pins).
pub const TRUST_ON_FIRST_USE: &str = "trust-on-first-use";

/// What an item is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ItemKind {
    Tool,
    Prompt,
    ResourceTemplate,
    /// A static resource's model-facing members (`uri`, `name`, `title`,
    /// `description`): see [`published`].
    Resource,
    /// The server's `instructions` (one item, [`INSTRUCTIONS`], its text
    /// empty when the server sends none).
    Instructions,
    /// A skill (SEP-2640) by the URI of its `SKILL.md`: its frontmatter and
    /// its files' digests ([`SKILL_MEMBERS`]), so a changed file is a
    /// changed skill.
    Skill,
}

/// The one name of the [`ItemKind::Instructions`] item.
pub const INSTRUCTIONS: &str = "instructions";

/// The members of a static resource that are pinned: what a host shows a
/// model. The rest (`mimeType`, `size`, `annotations` with their
/// `lastModified`) change with the data, not the instructions.
pub const RESOURCE_MEMBERS: [&str; 4] = ["uri", "name", "title", "description"];

/// The members of a skill entry that are pinned: what a host shows and
/// loads. The rest (`_meta`, members a later revision adds) pass unjudged.
pub const SKILL_MEMBERS: [&str; 3] = ["uri", "frontmatter", "resources"];

impl ItemKind {
    pub const ALL: [ItemKind; 6] = [
        ItemKind::Tool,
        ItemKind::Prompt,
        ItemKind::ResourceTemplate,
        ItemKind::Resource,
        ItemKind::Instructions,
        ItemKind::Skill,
    ];

    /// As written in the store, on the command line and in metrics labels.
    pub fn as_str(self) -> &'static str {
        match self {
            ItemKind::Tool => "tool",
            ItemKind::Prompt => "prompt",
            ItemKind::ResourceTemplate => "resource_template",
            ItemKind::Resource => "resource",
            ItemKind::Instructions => "instructions",
            ItemKind::Skill => "skill",
        }
    }

    /// The member of a definition that names the item: tools and prompts
    /// by `name`, templates by `uriTemplate` (their `name` is a label that
    /// need not be unique).
    pub fn key_member(self) -> &'static str {
        match self {
            ItemKind::Tool | ItemKind::Prompt => "name",
            ItemKind::ResourceTemplate => "uriTemplate",
            ItemKind::Resource | ItemKind::Skill => "uri",
            ItemKind::Instructions => "name",
        }
    }

    /// Kinds whose first sight is trusted per kind, not per upstream: added
    /// after upstreams had pins, so a store written before them pins what
    /// the upstream publishes now instead of holding it all.
    pub fn judged_per_kind(self) -> bool {
        matches!(
            self,
            ItemKind::Resource | ItemKind::Instructions | ItemKind::Skill
        )
    }

    /// The item's name in a definition, when it has a string one.
    pub fn name_of(self, definition: &serde_json::Map<String, serde_json::Value>) -> Option<&str> {
        definition.get(self.key_member())?.as_str()
    }
}

impl std::fmt::Display for ItemKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for ItemKind {
    type Err = String;
    fn from_str(s: &str) -> Result<ItemKind, String> {
        ItemKind::ALL
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| {
                format!(
                    "`{s}` is not one of tool, prompt, resource_template, resource, instructions, skill"
                )
            })
    }
}

/// What an upstream publishes of `kind`, as `[integrity]` judges it: tools,
/// prompts and templates as listed; static resources reduced to
/// [`RESOURCE_MEMBERS`]; the instructions as one item `{"name":
/// "instructions", "instructions": <text or "">}` (so instructions that
/// appear later are a change, not a first sight).
pub fn published<'a>(
    lists: &'a manifold_catalog::UpstreamLists,
    instructions: Option<&str>,
    kind: ItemKind,
) -> std::borrow::Cow<'a, [serde_json::Map<String, serde_json::Value>]> {
    use std::borrow::Cow;
    match kind {
        ItemKind::Tool => Cow::Borrowed(&lists.tools),
        ItemKind::Prompt => Cow::Borrowed(&lists.prompts),
        ItemKind::ResourceTemplate => Cow::Borrowed(&lists.resource_templates),
        ItemKind::Resource => Cow::Owned(only_members(&lists.resources, &RESOURCE_MEMBERS)),
        ItemKind::Skill => Cow::Owned(only_members(&lists.skills, &SKILL_MEMBERS)),
        ItemKind::Instructions => {
            let mut m = serde_json::Map::new();
            m.insert("name".into(), INSTRUCTIONS.into());
            m.insert(INSTRUCTIONS.into(), instructions.unwrap_or_default().into());
            Cow::Owned(vec![m])
        }
    }
}

/// `items` reduced to `members`.
fn only_members(
    items: &[serde_json::Map<String, serde_json::Value>],
    members: &[&str],
) -> Vec<serde_json::Map<String, serde_json::Value>> {
    items
        .iter()
        .map(|r| {
            members
                .iter()
                .filter_map(|m| Some((m.to_string(), r.get(*m)?.clone())))
                .collect()
        })
        .collect()
}

/// One item of one upstream, by the upstream's own name for it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ItemRef {
    pub upstream: String,
    pub kind: ItemKind,
    pub name: String,
}

impl ItemRef {
    pub fn new(upstream: &str, kind: ItemKind, name: &str) -> ItemRef {
        ItemRef {
            upstream: upstream.to_string(),
            kind,
            name: name.to_string(),
        }
    }
}

/// `upstream/name (kind)`, the form `manifold pins` prints.
impl std::fmt::Display for ItemRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}/{} ({})",
            self.upstream,
            manifold_catalog::fingerprint::printable(&self.name),
            self.kind
        )
    }
}
