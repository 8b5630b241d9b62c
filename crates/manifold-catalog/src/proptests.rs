//! Property tests for exposed names and cursors, over catalogues built from
//! arbitrary upstream names: every exposed name fits the provider rule and is
//! unique; every one routes back to its own upstream item; the result does not
//! depend on upstream order; pages walk the list exactly once; a cursor a client
//! makes up is an error, never a panic.

use super::*;
use proptest::prelude::*;
use serde_json::{Map, Value};
use std::sync::Arc;

fn tool(name: &str) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("name".into(), Value::from(name));
    m.insert("inputSchema".into(), serde_json::json!({"type": "object"}));
    m
}

fn input(name: &str, tools: &[String]) -> UpstreamInput {
    UpstreamInput {
        name: Arc::from(name),
        prefix: name.to_string(),
        lists: Arc::new(UpstreamLists {
            tools: tools.iter().map(|t| tool(t)).collect(),
            ..Default::default()
        }),
        filter: Arc::new(ItemFilter::default()),
        overrides: Default::default(),
    }
}

fn policy(mode: PrefixMode, upstreams: usize) -> NamingPolicy {
    NamingPolicy {
        separator: "__".into(),
        prefix_mode: mode,
        max_length: 64,
        configured_upstreams: upstreams,
        uris: Default::default(),
    }
}

fn upstreams() -> impl Strategy<Value = Vec<(String, Vec<String>)>> {
    prop::collection::vec(
        (
            "[a-z][a-z0-9_-]{0,11}",
            prop::collection::vec(
                any::<String>().prop_filter("not empty", |s| !s.is_empty()),
                0..8,
            ),
        ),
        1..4,
    )
    .prop_map(|mut v| {
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v.dedup_by(|a, b| a.0 == b.0);
        v
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn exposed_names_fit_the_rule_are_unique_and_route_back(
        ups in upstreams(),
        mode in prop_oneof![Just(PrefixMode::Always), Just(PrefixMode::Never), Just(PrefixMode::Multiple)],
    ) {
        let inputs: Vec<UpstreamInput> = ups.iter().map(|(n, t)| input(n, t)).collect();
        let cat = Catalog::build(&inputs, &policy(mode, inputs.len()), 7);
        let mut seen = std::collections::HashSet::new();
        for e in cat.tools.entries() {
            let ok = !e.exposed.is_empty()
                && e.exposed.len() <= 64
                && e.exposed.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
            prop_assert!(ok, "{:?}", e.exposed);
            prop_assert!(seen.insert(e.exposed.clone()), "duplicate {:?}", e.exposed);
            let routed = cat.tools.get(&e.exposed).expect("routes");
            prop_assert_eq!(&routed.original, &e.original);
            prop_assert_eq!(&routed.upstream, &e.upstream);
            let owner = ups.iter().find(|(n, _)| **n == *e.upstream).expect("an upstream");
            prop_assert!(owner.1.contains(&e.original));
        }
        // Same catalogue whatever order the upstreams come in.
        let mut rev = inputs.clone();
        rev.reverse();
        let again = Catalog::build(&rev, &policy(mode, inputs.len()), 7);
        prop_assert_eq!(
            cat.tools.page(None).expect("page"),
            again.tools.page(None).expect("page")
        );
    }

    #[test]
    fn pages_walk_the_list_once_and_made_up_cursors_are_errors(
        ups in upstreams(),
        page_size in 1usize..6,
        junk in any::<String>(),
    ) {
        let inputs: Vec<UpstreamInput> = ups.iter().map(|(n, t)| input(n, t)).collect();
        let cat = Catalog::build(&inputs, &policy(PrefixMode::Always, inputs.len()), page_size);
        let mut walked = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..=cat.tools.len() + 1 {
            let page: Value = serde_json::from_slice(&cat.tools.page(cursor.as_deref()).expect("page"))
                .expect("json");
            for t in page["tools"].as_array().expect("tools") {
                walked.push(t["name"].as_str().unwrap_or_default().to_string());
            }
            cursor = page.get("nextCursor").and_then(Value::as_str).map(str::to_string);
            if cursor.is_none() {
                break;
            }
        }
        let all: Vec<String> = cat.tools.entries().iter().map(|e| e.exposed.clone()).collect();
        prop_assert_eq!(walked, all);
        // Whatever a client sends as a cursor: a page or an error, never a panic.
        let _ = cat.tools.page(Some(&junk));
    }
}
