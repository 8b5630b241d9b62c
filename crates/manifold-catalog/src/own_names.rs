//! A catalogue served under the upstreams' own names (`[[endpoint]] naming =
//! "original"`): each tool's and prompt's definition says its upstream's
//! name for it (`get-time`, not `vanilla__get-time`), and that name finds it.
//!
//! Invariants: an entry keeps its exposed name (`Entry::exposed`), which is
//! what rules, validators, confirmation and rate limits key on and what still
//! finds it here; only the served definition and the lookup by own name
//! change; when two entries have one own name, the first by exposed name
//! keeps it and the collision is reported (never silently): the other is
//! reachable by its exposed name only.
//!
//! Not here: refusing a collision at start (the server).

use bytes::Bytes;
use serde_json::Value;
use std::collections::HashMap;

use crate::catalog::Catalog;
use crate::entry::{Entry, Kind};
use crate::list::NamedList;

/// Own names that more than one entry of a kind has.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnNameCollision {
    pub kind: Kind,
    /// The upstreams' own name.
    pub name: String,
    /// The exposed names that have it, the one that keeps it first.
    pub exposed: Vec<String>,
}

impl std::fmt::Display for OwnNameCollision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} `{}` is the own name of {} (`{}` keeps it)",
            self.kind.singular(),
            crate::fingerprint::printable(&self.name),
            self.exposed.join(", "),
            self.exposed.first().map_or("", String::as_str)
        )
    }
}

impl NamedList {
    /// This list served under the upstreams' own names, and the own names
    /// more than one entry has.
    pub fn by_own_names(&self) -> (NamedList, Vec<OwnNameCollision>) {
        let entries: Vec<Entry> = self
            .entries()
            .iter()
            .map(|e| {
                let mut e = e.clone();
                if e.exposed != e.original {
                    rename(&mut e);
                }
                e
            })
            .collect();
        let mut holders: HashMap<&str, Vec<String>> = HashMap::new();
        for e in &entries {
            holders
                .entry(e.original.as_str())
                .or_default()
                .push(e.exposed.clone());
        }
        let mut collisions: Vec<OwnNameCollision> = holders
            .into_iter()
            .filter(|(_, exposed)| exposed.len() > 1)
            .map(|(name, exposed)| OwnNameCollision {
                kind: self.kind,
                name: name.to_string(),
                exposed,
            })
            .collect();
        collisions.sort_by(|a, b| a.name.cmp(&b.name));
        let list = NamedList::of(self.kind, entries, Vec::new(), self.pages.page_size(), true);
        (list, collisions)
    }
}

/// The served definition says the upstream's own name.
fn rename(e: &mut Entry) {
    let Ok(Value::Object(mut item)) = serde_json::from_slice::<Value>(&e.json) else {
        return;
    };
    item.insert("name".into(), Value::String(e.original.clone()));
    if let Ok(json) = serde_json::to_vec(&Value::Object(item)) {
        e.json = Bytes::from(json);
    }
}

impl Catalog {
    /// This catalogue with its tools and prompts served under their
    /// upstreams' own names (resources and skills are keyed by URI, as
    /// they are), and the own names more than one item of a kind has.
    pub fn by_own_names(&self) -> (Catalog, Vec<OwnNameCollision>) {
        let (tools, mut collisions) = self.tools.by_own_names();
        let (prompts, more) = self.prompts.by_own_names();
        collisions.extend(more);
        let all = |_: crate::entry::Item<'_>| true;
        let catalog = Catalog {
            tools,
            prompts,
            resources: self.resources.restricted(&all, true),
            skills: self.skills.restricted(&all, true),
        };
        (catalog, collisions)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        filter::ItemFilter, input::NamingPolicy, input::PrefixMode, input::UpstreamInput,
        input::UpstreamLists,
    };
    use serde_json::{json, Map};
    use std::sync::Arc;

    fn input(name: &str, tools: &[&str]) -> UpstreamInput {
        let tools: Vec<Map<String, Value>> = tools
            .iter()
            .map(|t| {
                json!({"name": t, "inputSchema": {"type": "object"}, "x-extra": 1})
                    .as_object()
                    .cloned()
                    .unwrap()
            })
            .collect();
        UpstreamInput {
            name: Arc::from(name),
            prefix: name.to_string(),
            lists: Arc::new(UpstreamLists {
                tools,
                ..Default::default()
            }),
            filter: Arc::new(ItemFilter::default()),
            overrides: Default::default(),
        }
    }

    fn policy() -> NamingPolicy {
        NamingPolicy {
            separator: "__".into(),
            prefix_mode: PrefixMode::Always,
            max_length: 64,
            configured_upstreams: 2,
            uris: Default::default(),
        }
    }

    #[test]
    fn own_names_are_served_and_found_and_exposed_names_still_find_them() {
        let cat = Catalog::build(&[input("vanilla", &["get-time", "x"])], &policy(), 10);
        let (own, collisions) = cat.by_own_names();
        assert!(collisions.is_empty());
        let page: Value = serde_json::from_slice(&own.tools.page(None).unwrap()).unwrap();
        let names: Vec<&str> = page["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["get-time", "x"]);
        assert_eq!(page["tools"][0]["x-extra"], 1, "the rest as it was");
        let e = own.tools.get("get-time").expect("by own name");
        assert_eq!(e.exposed, "vanilla__get-time", "rules still key on it");
        assert!(own.tools.get("vanilla__get-time").is_some());
        // A view of it keeps serving own names.
        let view = own.restricted(&|i| !matches!(i, crate::entry::Item::Tool("vanilla__x")));
        assert!(view.tools.get("get-time").is_some());
        assert!(view.tools.get("x").is_none(), "rules match exposed names");
    }

    #[test]
    fn two_items_with_one_own_name_are_reported_and_the_first_keeps_it() {
        let cat = Catalog::build(
            &[
                input("vanilla", &["get-time"]),
                input("react", &["get-time"]),
            ],
            &policy(),
            10,
        );
        let (own, collisions) = cat.by_own_names();
        assert_eq!(
            collisions,
            [OwnNameCollision {
                kind: Kind::Tools,
                name: "get-time".into(),
                exposed: vec!["react__get-time".into(), "vanilla__get-time".into()],
            }]
        );
        assert!(collisions[0]
            .to_string()
            .contains("`react__get-time` keeps it"));
        assert_eq!(
            own.tools.get("get-time").unwrap().upstream.as_ref(),
            "react"
        );
        assert_eq!(
            own.tools
                .get("vanilla__get-time")
                .unwrap()
                .upstream
                .as_ref(),
            "vanilla"
        );
        // A caller who may not see react's keeps the own name for vanilla's
        // (the view shares the name index, whose holder it does not see).
        let no_react =
            |i: crate::entry::Item<'_>| !matches!(i, crate::entry::Item::Tool("react__get-time"));
        for view in [own.view(&no_react), own.restricted(&no_react)] {
            let e = view.tools.get("get-time").expect("by own name");
            assert_eq!(e.upstream.as_ref(), "vanilla");
            assert!(view.tools.get("react__get-time").is_none());
        }
    }
}
