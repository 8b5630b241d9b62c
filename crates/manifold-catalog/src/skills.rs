//! Skills (SEP-2640) merged: every upstream's `skills/list` entries in one
//! list keyed by the URI of each skill's `SKILL.md` (namespaced like any
//! URI of a host scheme, `namespace`), with the files each entry announces
//! and their digests.
//!
//! A skill's *exposed name* is its upstream's prefix, the separator and its
//! frontmatter `name` (`docs__code-review`), as a tool's would be: what
//! `[[policy]]` and `[[endpoint]]` `skills` globs match. Names need not be
//! unique (SEP-2640); URIs are.
//!
//! Invariants: an entry is kept only when it is a SEP-2640 skill (a string
//! `uri`, a `frontmatter` object with string `name` and `description`,
//! `resources` either `"dynamic"` or an array of `{uri, digest:
//! "sha256:<64 hex>", size}`); the entry's bytes pass as the upstream wrote
//! them (URIs as exposed); list order is by (URI, upstream), so the same
//! lists give the same pages; a file URI announced by two skills keeps the
//! first skill's digest.
//!
//! Not here: fetching (manifold-upstream), verifying a read's bytes (the
//! server), pinning (manifold-integrity).

use bytes::Bytes;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::Arc;

use crate::resources::UriList;
use crate::{
    entry::Item, entry::LeftOutReason, input::NamingPolicy, input::UpstreamInput, page::CursorError,
};

/// One file a skill announces: what its bytes must be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillFile {
    /// The skill (its `SKILL.md` URI as exposed) that announced it.
    pub skill: String,
    /// `sha256:<64 lowercase hex>`.
    pub digest: String,
    pub size: u64,
}

/// The merged skills.
#[derive(Debug)]
pub struct Skills {
    list: UriList,
    /// Exposed skill URI → (exposed name, upstream).
    names: HashMap<String, (String, Arc<str>)>,
    /// Exposed file URI → what its bytes must be.
    files: HashMap<String, SkillFile>,
}

/// The exposed name of a skill whose frontmatter `name` is `name`.
pub fn exposed_name(policy: &NamingPolicy, prefix: &str, name: &str) -> String {
    if policy.use_prefix() {
        format!("{prefix}{}{name}", policy.separator)
    } else {
        name.to_string()
    }
}

/// Why `entry` is no SEP-2640 skill, if it is not.
pub fn invalid(entry: &Map<String, Value>) -> Option<String> {
    if !entry.get("uri").is_some_and(Value::is_string) {
        return Some("a skill entry needs a string `uri`".into());
    }
    let Some(fm) = entry.get("frontmatter").and_then(Value::as_object) else {
        return Some("a skill entry needs a `frontmatter` object".into());
    };
    for key in ["name", "description"] {
        if !fm.get(key).is_some_and(Value::is_string) {
            return Some(format!("its frontmatter has no string `{key}`"));
        }
    }
    match entry.get("resources") {
        Some(Value::String(s)) if s == "dynamic" => None,
        Some(Value::Array(files)) => files.iter().find_map(|f| {
            let ok = f.get("uri").is_some_and(Value::is_string)
                && f.get("digest").and_then(Value::as_str).is_some_and(is_digest)
                && f.get("size").is_some_and(Value::is_u64);
            (!ok).then(|| {
                "each of its `resources` needs a string `uri`, a `digest` `sha256:<64 lowercase hex>` and an integer `size`".to_string()
            })
        }),
        _ => Some("its `resources` must be an array of files or \"dynamic\"".into()),
    }
}

/// `sha256:` and 64 lowercase hexadecimal digits.
pub fn is_digest(s: &str) -> bool {
    s.strip_prefix("sha256:").is_some_and(|h| {
        h.len() == 64
            && h.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

impl Skills {
    pub(crate) fn build(
        inputs: &[&UpstreamInput],
        policy: &NamingPolicy,
        page_size: usize,
    ) -> Skills {
        let list = UriList::build(
            "skills",
            "uri",
            inputs,
            |i| &i.lists.skills,
            |_, entry| invalid(entry).map_or(Ok(()), |why| Err(LeftOutReason::InvalidSkill(why))),
            page_size,
        );
        let prefixes: HashMap<&str, &str> = inputs
            .iter()
            .map(|i| (&*i.name, i.prefix.as_str()))
            .collect();
        let mut names = HashMap::new();
        let mut files = HashMap::new();
        for (uri, upstream, entry) in list.parsed() {
            let fm_name = entry
                .get("frontmatter")
                .and_then(|f| f.get("name"))
                .and_then(Value::as_str)
                .unwrap_or_default();
            let prefix = prefixes.get(&**upstream).copied().unwrap_or(upstream);
            let name = exposed_name(policy, prefix, fm_name);
            names.insert(uri.to_string(), (name, upstream.clone()));
            for f in entry
                .get("resources")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let (Some(furi), Some(digest), Some(size)) = (
                    f.get("uri").and_then(Value::as_str),
                    f.get("digest").and_then(Value::as_str),
                    f.get("size").and_then(Value::as_u64),
                ) else {
                    continue;
                };
                files.entry(furi.to_string()).or_insert_with(|| SkillFile {
                    skill: uri.to_string(),
                    digest: digest.to_string(),
                    size,
                });
            }
        }
        Skills { list, names, files }
    }

    /// Only the skills `keep` lets through (by exposed name), and their files.
    pub(crate) fn restricted(&self, keep: &dyn Fn(Item<'_>) -> bool, pre: bool) -> Skills {
        let shown = |uri: &str| {
            self.names
                .get(uri)
                .is_some_and(|(name, upstream)| keep(Item::Skill { name, upstream }))
        };
        let list = self.list.restricted(&shown, pre);
        let names = self
            .names
            .iter()
            .filter(|(uri, _)| shown(uri))
            .map(|(u, n)| (u.clone(), n.clone()))
            .collect();
        let files = self
            .files
            .iter()
            .filter(|(_, f)| shown(&f.skill))
            .map(|(u, f)| (u.clone(), f.clone()))
            .collect();
        Skills { list, names, files }
    }

    /// Bytes this list holds of its own beside the entries it shares (its
    /// name and file maps are its own copies: skills are few).
    pub(crate) fn own_bytes(&self) -> usize {
        self.list.own_bytes()
    }

    /// The serialized `skills/list` result for a cursor.
    pub fn page(&self, cursor: Option<&str>) -> Result<Bytes, CursorError> {
        self.list.page(cursor)
    }

    /// The upstream of the skill whose `SKILL.md` is exposed as `uri`.
    pub fn owner(&self, uri: &str) -> Option<&Arc<str>> {
        self.names.get(uri).map(|(_, upstream)| upstream)
    }

    /// The exposed name of the skill at `uri`.
    pub fn name(&self, uri: &str) -> Option<&str> {
        self.names.get(uri).map(|(n, _)| n.as_str())
    }

    /// What the bytes of the file exposed as `uri` must be, when a skill
    /// announced it with a digest.
    pub fn file(&self, uri: &str) -> Option<&SkillFile> {
        self.files.get(uri)
    }

    /// The skill (its `SKILL.md` URI) whose directory holds `uri`: a file
    /// it announced, its root (`SKILL.md`'s URI without `/SKILL.md`), or a
    /// path under that root (of nested skills, the innermost).
    pub fn holding(&self, uri: &str) -> Option<&str> {
        if let Some(f) = self.files.get(uri) {
            return Some(&f.skill);
        }
        // The deepest root that holds it (skills nest): one answer, whatever
        // the map's order.
        self.names
            .keys()
            .map(String::as_str)
            .filter(|skill| {
                skill.strip_suffix("/SKILL.md").is_some_and(|root| {
                    uri == root
                        || uri
                            .strip_prefix(root)
                            .is_some_and(|rest| rest.starts_with('/'))
                })
            })
            .max_by_key(|skill| skill.len())
    }

    /// (exposed URI, exposed name, upstream), in list order.
    pub fn items(&self) -> impl Iterator<Item = (&str, &str, &Arc<str>)> {
        self.list
            .items()
            .map(|(u, up)| (u, self.name(u).unwrap_or_default(), up))
    }

    /// True when both lists would serialize identically.
    pub fn same_as(&self, other: &Skills) -> bool {
        self.list.same_as(&other.list)
    }

    pub fn len(&self) -> usize {
        self.list.len()
    }
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }
    pub fn left_out(&self) -> &[crate::entry::LeftOut] {
        self.list.left_out()
    }
}

#[cfg(test)]
mod tests;
