use super::*;
use crate::{
    catalog::Catalog, filter::ItemFilter, input::NamingPolicy, input::PrefixMode,
    input::UpstreamInput, input::UpstreamLists, overrides::Override, overrides::Overrides,
};
use serde_json::json;
use std::sync::Arc;

fn def(v: Value) -> Map<String, Value> {
    v.as_object().cloned().expect("an object")
}

/// (exposed name, upstream, definition)
fn docs(tools: &[(&str, &str, Value)]) -> Vec<(String, String, Map<String, Value>)> {
    tools
        .iter()
        .map(|(n, u, d)| (n.to_string(), u.to_string(), def(d.clone())))
        .collect()
}

fn build(docs: &[(String, String, Map<String, Value>)]) -> SearchIndex {
    SearchIndex::build(docs.iter().map(|(name, upstream, tool)| ToolDoc {
        name,
        upstream,
        tool,
    }))
}

fn names<'a>(hits: &[Hit<'a>]) -> Vec<&'a str> {
    hits.iter().map(|h| h.name).collect()
}

fn query(q: &str) -> SearchRequest {
    SearchRequest::new(q, None).expect("a valid query")
}

fn sample() -> Vec<(String, String, Map<String, Value>)> {
    docs(&[
        (
            "github__create_pull_request",
            "github",
            json!({"name": "create_pull_request",
            "description": "Create a new pull request in a GitHub repository.",
            "inputSchema": {"type": "object", "properties": {"head": {"type": "string", "description": "The branch with your changes"}}}}),
        ),
        (
            "github__list_issues",
            "github",
            json!({"name": "list_issues",
            "description": "List issues in a GitHub repository."}),
        ),
        (
            "gitlab__create_issue",
            "gitlab",
            json!({"name": "create_issue",
            "description": "Create a new issue in a project."}),
        ),
        (
            "time__get_current_time",
            "time",
            json!({"name": "get_current_time",
            "title": "Current time", "description": "Get current time in a specific timezone"}),
        ),
        (
            "files__write_file",
            "files",
            json!({"name": "write_file",
            "description": "Create a new file or overwrite one. Mentions a pull request in passing."}),
        ),
    ])
}

#[test]
fn finds_by_the_words_a_user_would_use() {
    let docs = sample();
    let index = build(&docs);
    let top = |q: &str| index.search(&query(q), &|_| true)[0].name;
    // "PR" is expanded; the name match outranks a passing mention.
    assert_eq!(top("open a PR"), "github__create_pull_request");
    assert_eq!(top("new ticket"), "gitlab__create_issue");
    assert_eq!(top("what time is it now"), "time__get_current_time");
    // The upstream's name is searchable.
    assert_eq!(top("gitlab"), "gitlab__create_issue");
    // Parameter descriptions count, a little.
    assert_eq!(top("branch with changes"), "github__create_pull_request");
    assert!(index.search(&query("zebra"), &|_| true).is_empty());
}

#[test]
fn ranking_is_deterministic_and_ties_go_to_the_smaller_name() {
    let same = json!({"name": "t", "description": "Deletes a widget."});
    let docs = docs(&[
        ("b__delete_widget", "u", same.clone()),
        ("a__delete_widget", "u", same.clone()),
        ("c__delete_widget", "u", same),
    ]);
    let index = build(&docs);
    let hits = index.search(&query("delete widget"), &|_| true);
    assert_eq!(
        names(&hits),
        ["a__delete_widget", "b__delete_widget", "c__delete_widget"]
    );
    assert!(hits.windows(2).all(|w| w[0].score == w[1].score));
    // Input order changes ids, not results.
    let mut reversed = docs.clone();
    reversed.reverse();
    let again = build(&reversed);
    assert_eq!(
        names(&again.search(&query("delete widget"), &|_| true)),
        names(&hits)
    );
}

#[test]
fn a_view_is_a_filter_and_keeps_the_full_ranking_order() {
    let docs = sample();
    let index = build(&docs);
    let q = SearchRequest::new("create a new issue or pull request", Some(MAX_LIMIT)).unwrap();
    let all = index.search(&q, &|_| true);
    assert!(all.len() >= 3);
    let view = index.set_of(["gitlab__create_issue", "files__write_file", "nope__unknown"]);
    assert_eq!(view.len(), 2);
    let within = index.search(&q, &|id| view.contains(id));
    let expected: Vec<&str> = all
        .iter()
        .filter(|h| view.contains(h.id))
        .map(|h| h.name)
        .collect();
    assert_eq!(names(&within), expected);
    // An empty view finds nothing, whatever the query.
    assert!(index
        .search(&q, &|id| ToolSet::new().contains(id))
        .is_empty());
}

#[test]
fn limit_caps_results_and_defaults_to_eight() {
    let many: Vec<(String, String, Map<String, Value>)> = (0..60)
        .map(|i| {
            (
                format!("s__report_{i:02}"),
                "s".to_string(),
                def(json!({"name": "r", "description": format!("Sales report number {i}")})),
            )
        })
        .collect();
    let index = build(&many);
    assert_eq!(
        index.search(&query("sales report"), &|_| true).len(),
        DEFAULT_LIMIT
    );
    let max = SearchRequest::new("sales report", Some(MAX_LIMIT)).unwrap();
    assert_eq!(index.search(&max, &|_| true).len(), MAX_LIMIT);
    let one = SearchRequest::new("sales report", Some(1)).unwrap();
    assert_eq!(names(&index.search(&one, &|_| true)), ["s__report_00"]);
}

#[test]
fn bad_requests_say_what_to_do() {
    let args = |v: Value| SearchRequest::from_arguments(&def(v));
    assert_eq!(args(json!({})), Err(QueryError::NotAString));
    assert_eq!(args(json!({"query": 3})), Err(QueryError::NotAString));
    assert_eq!(args(json!({"query": "  "})), Err(QueryError::Empty));
    assert_eq!(
        args(json!({"query": "the of a ?!"})),
        Err(QueryError::NoTerms)
    );
    for limit in [
        json!(0),
        json!(51),
        json!(-1),
        json!(2.5),
        json!("5"),
        json!(true),
    ] {
        let e = args(json!({"query": "list issues", "limit": limit})).unwrap_err();
        assert!(matches!(e, QueryError::BadLimit { .. }), "{limit}: {e}");
        assert!(e.to_string().contains("from 1 to 50"), "{e}");
    }
    assert_eq!(
        args(json!({"query": "list issues", "limit": null})).map(|r| r.limit()),
        Ok(DEFAULT_LIMIT)
    );
    assert_eq!(
        args(json!({"query": "list issues", "limit": 50, "extra": 1})).map(|r| r.limit()),
        Ok(50)
    );
    let long = "issue ".repeat(200);
    let e = args(json!({ "query": long })).unwrap_err();
    assert_eq!(
        e,
        QueryError::TooLong {
            chars: 1200,
            max: MAX_QUERY_CHARS
        }
    );
    assert!(e.to_string().contains("the limit is 1000"), "{e}");
    let wordy: String = (0..MAX_QUERY_TERMS + 1)
        .map(|i| format!("word{i} "))
        .collect();
    let e = args(json!({ "query": wordy })).unwrap_err();
    assert!(matches!(e, QueryError::TooManyTerms { max: 64, .. }), "{e}");
    let fits: String = (0..MAX_QUERY_TERMS)
        .map(|i| {
            format!(
                "{}{}qx ",
                (b'a' + i as u8 / 26) as char,
                (b'a' + i as u8 % 26) as char
            )
        })
        .collect();
    assert!(SearchRequest::new(&fits, None).is_ok());
}

#[test]
fn names_and_ids_round_trip() {
    let docs = sample();
    let index = build(&docs);
    assert_eq!(index.len(), docs.len());
    for (i, (name, _, _)) in docs.iter().enumerate() {
        assert_eq!(index.id(name), Some(i as ToolId));
        assert_eq!(index.name(i as ToolId), Some(name.as_str()));
    }
    assert_eq!(index.id("missing"), None);
    assert_eq!(index.name(docs.len() as ToolId), None);
    let empty = SearchIndex::build(std::iter::empty());
    assert!(empty.is_empty());
    assert!(empty.search(&query("anything"), &|_| true).is_empty());
}

#[test]
fn tool_set_is_a_bitset() {
    let mut set: ToolSet = [3, 64, 200].into_iter().collect();
    assert!(set.contains(3) && set.contains(64) && set.contains(200));
    assert!(!set.contains(4) && !set.contains(65) && !set.contains(100_000));
    assert_eq!(set.len(), 3);
    set.insert(0);
    assert_eq!(set.len(), 4);
    assert!(ToolSet::new().is_empty());
}

#[test]
fn what_one_tool_adds_is_bounded() {
    // A hostile upstream's megabyte description indexes at most MAX_FIELD_TERMS
    // terms per field, and words over the term limit are not indexed at all.
    let huge: String = (0..100_000).map(|i| format!("w{i} ")).collect();
    let junk = "x".repeat(100_000);
    let docs = docs(&[(
        "u__big",
        "u",
        json!({"name": "big", "description": format!("{huge} {junk}")}),
    )]);
    let index = build(&docs);
    assert!(index.vocabulary_len() <= 5 * MAX_FIELD_TERMS);
    assert!(index.postings_len() <= 5 * MAX_FIELD_TERMS);
    assert!(index.heap_bytes() < 200 * 1024, "{}", index.heap_bytes());
    assert!(!index.search(&query("w12"), &|_| true).is_empty());
    assert!(index.search(&query("w99999"), &|_| true).is_empty());
}

#[test]
fn heap_size_is_reported() {
    let docs = sample();
    let index = build(&docs);
    let bytes = index.heap_bytes();
    // At least the postings and the names it holds.
    let floor = index.postings_len() * 8 + docs.iter().map(|d| d.0.len()).sum::<usize>();
    assert!(bytes >= floor, "{bytes} < {floor}");
    assert_eq!(index.bytes_per_tool(), bytes / docs.len());
}

#[test]
fn indexes_a_catalog_as_exposed() {
    let lists = UpstreamLists {
        tools: vec![
            def(json!({"name": "mk", "description": "Makes widgets."})),
            def(json!({"name": "rm", "description": "Removes widgets."})),
        ],
        ..Default::default()
    };
    let mut overrides = Overrides::new();
    overrides.insert(
        "rm".into(),
        Override {
            name: Some("shred".into()),
            description: Some("Shreds documents for good.".into()),
            ..Default::default()
        },
    );
    let input = UpstreamInput {
        name: Arc::from("office"),
        prefix: "office".into(),
        lists: Arc::new(lists),
        filter: Arc::new(ItemFilter::default()),
        overrides: Arc::new(overrides),
    };
    let policy = NamingPolicy {
        separator: "__".into(),
        prefix_mode: PrefixMode::Always,
        max_length: 64,
        configured_upstreams: 1,
        uris: Default::default(),
    };
    let catalog = Catalog::build(&[input], &policy, 100);
    let index = SearchIndex::from_list(&catalog.tools);
    // Ids are positions in the list; the override's name and description count.
    for (i, e) in catalog.tools.entries().iter().enumerate() {
        assert_eq!(index.id(&e.exposed), Some(i as ToolId));
    }
    let hits = index.search(&query("shred documents"), &|_| true);
    assert_eq!(names(&hits), ["office__shred"]);
    assert!(index.search(&query("removes"), &|_| true).is_empty());
}

#[test]
fn a_tool_matching_more_of_the_query_ranks_higher() {
    // `zebra` alone is rare and would win on idf; the tool that has both words wins.
    let docs = docs(&[
        (
            "a__zebra_feed",
            "a",
            json!({"description": "Zebra zebra zebra."}),
        ),
        (
            "a__list_animals",
            "a",
            json!({"description": "List animals, a giraffe or a lion or a zebra."}),
        ),
        (
            "a__list_plants",
            "a",
            json!({"description": "List plants."}),
        ),
        ("a__list_rocks", "a", json!({"description": "List rocks."})),
    ]);
    let index = build(&docs);
    assert_eq!(
        names(&index.search(&query("list zebra"), &|_| true))[0],
        "a__list_animals"
    );
}

#[test]
fn a_product_named_in_the_query_ranks_its_tools_first() {
    let docs = docs(&[
        (
            "github__merge_pull_request",
            "github",
            json!({"description": "Merge a pull request."}),
        ),
        (
            "gitlab__merge_merge_request",
            "gitlab",
            json!({"description": "Merge a merge request."}),
        ),
        (
            "time__get_current_time",
            "time",
            json!({"description": "Get the current time; merge time zones."}),
        ),
        (
            "clock__get_time",
            "clock",
            json!({"description": "The time now."}),
        ),
        (
            "github__list_issues",
            "github",
            json!({"description": "Issues."}),
        ),
        ("github__get_me", "github", json!({"description": "Me."})),
        ("github__star", "github", json!({"description": "Star."})),
    ]);
    let build_with = |other_product: f32| {
        SearchIndex::build_with(
            docs.iter().map(|(name, upstream, tool)| ToolDoc {
                name,
                upstream,
                tool,
            }),
            Ranking {
                coverage: 0.0,
                other_product,
                ..Ranking::default()
            },
        )
    };
    // Without the product factor, GitLab's "merge merge request" wins on its words.
    fn first(index: &SearchIndex, q: &str) -> String {
        names(&index.search(&query(q), &|_| true))[0].to_string()
    }
    let plain = build_with(1.0);
    assert_eq!(
        first(&plain, "merge the merge request on github"),
        "gitlab__merge_merge_request"
    );
    let index = build_with(Ranking::default().other_product);
    assert_eq!(
        first(&index, "merge the merge request on github"),
        "github__merge_pull_request"
    );
    assert_eq!(
        first(&index, "merge on gitlab"),
        "gitlab__merge_merge_request"
    );
    // `github` names a product: 3 in 4 of the tools with it are GitHub's; `time` is
    // said by another upstream's tool too, so it names none.
    let term = |t: &str| index.terms.binary_search_by(|x| (**x).cmp(t)).ok();
    let is_product = |t: &str| term(t).is_some_and(|i| index.products.contains(i as u32));
    assert!(is_product("github"));
    assert!(!is_product("time"));
    assert!(!is_product("merg"));
}
