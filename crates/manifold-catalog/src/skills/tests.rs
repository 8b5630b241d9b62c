use super::*;
use crate::namespace::{ResourceNaming, UriNamespaces};
use crate::{catalog::Catalog, filter::ItemFilter, input::PrefixMode, input::UpstreamLists};
use serde_json::json;

const D1: &str = "sha256:1111111111111111111111111111111111111111111111111111111111111111";
const D2: &str = "sha256:2222222222222222222222222222222222222222222222222222222222222222";

fn skill(uri: &str, name: &str, digest: &str) -> Map<String, Value> {
    json!({
        "uri": uri,
        "frontmatter": {"name": name, "description": "review code", "x-author-field": [1, 2]},
        "resources": [{"uri": uri, "digest": digest, "size": 10}],
        "x-unknown": {"kept": true}
    })
    .as_object()
    .cloned()
    .unwrap()
}

fn input(name: &str, skills: Vec<Map<String, Value>>) -> UpstreamInput {
    UpstreamInput {
        name: Arc::from(name),
        prefix: name.to_string(),
        lists: Arc::new(UpstreamLists {
            skills,
            ..Default::default()
        }),
        filter: Arc::new(ItemFilter::default()),
        overrides: Default::default(),
    }
}

fn policy(mode: ResourceNaming) -> NamingPolicy {
    NamingPolicy {
        separator: "__".into(),
        prefix_mode: PrefixMode::Always,
        max_length: 64,
        configured_upstreams: 2,
        uris: UriNamespaces::new(
            mode,
            &[],
            [
                ("a".to_string(), "a".to_string()),
                ("b".to_string(), "b".to_string()),
            ],
        ),
    }
}

#[test]
fn two_servers_with_the_same_skill_are_two_skills_each_with_its_own_files() {
    let a = input(
        "a",
        vec![skill("skill://code-review/SKILL.md", "code-review", D1)],
    );
    let b = input(
        "b",
        vec![skill("skill://code-review/SKILL.md", "code-review", D2)],
    );
    let cat = Catalog::build(&[b, a], &policy(ResourceNaming::HostSchemes), 10);
    let items: Vec<(String, String, String)> = cat
        .skills
        .items()
        .map(|(u, n, up)| (u.into(), n.into(), up.to_string()))
        .collect();
    assert_eq!(
        items,
        [
            (
                "skill://a/code-review/SKILL.md".into(),
                "a__code-review".into(),
                "a".into()
            ),
            (
                "skill://b/code-review/SKILL.md".into(),
                "b__code-review".into(),
                "b".into()
            ),
        ]
    );
    assert!(cat.skills.left_out().is_empty());
    assert_eq!(
        cat.skills
            .file("skill://a/code-review/SKILL.md")
            .unwrap()
            .digest,
        D1
    );
    assert_eq!(
        cat.skills
            .file("skill://b/code-review/SKILL.md")
            .unwrap()
            .digest,
        D2
    );
    // Frontmatter and unknown members untouched; URIs exposed.
    let page: Value = serde_json::from_slice(&cat.skills.page(None).unwrap()).unwrap();
    let first = &page["skills"][0];
    assert_eq!(first["frontmatter"]["x-author-field"], json!([1, 2]));
    assert_eq!(first["x-unknown"], json!({"kept": true}));
    assert_eq!(
        first["resources"][0]["uri"],
        "skill://a/code-review/SKILL.md"
    );
}

#[test]
fn without_namespaces_the_same_uri_collides_and_is_reported() {
    let a = input(
        "a",
        vec![skill("skill://code-review/SKILL.md", "code-review", D1)],
    );
    let b = input(
        "b",
        vec![skill("skill://code-review/SKILL.md", "code-review", D2)],
    );
    let cat = Catalog::build(&[a, b], &policy(ResourceNaming::Never), 10);
    assert_eq!(cat.skills.len(), 1);
    assert_eq!(cat.skills.left_out()[0].reason.kind(), "collision");
}

#[test]
fn entries_that_are_not_skills_are_left_out_with_the_reason() {
    let mut bad_digest = skill("skill://x/SKILL.md", "x", D1);
    bad_digest["resources"][0]["digest"] = json!("sha256:ABC");
    let mut no_fm = skill("skill://y/SKILL.md", "y", D1);
    no_fm.remove("frontmatter");
    let mut dynamic = skill("skill://z/SKILL.md", "z", D1);
    dynamic["resources"] = json!("dynamic");
    let mut no_resources = skill("skill://w/SKILL.md", "w", D1);
    no_resources.remove("resources");
    let cat = Catalog::build(
        &[input("a", vec![bad_digest, no_fm, dynamic, no_resources])],
        &policy(ResourceNaming::HostSchemes),
        10,
    );
    let kept: Vec<&str> = cat.skills.items().map(|(u, _, _)| u).collect();
    assert_eq!(kept, ["skill://a/z/SKILL.md"]);
    let reasons: Vec<String> = cat
        .skills
        .left_out()
        .iter()
        .map(|l| l.reason.to_string())
        .collect();
    assert_eq!(reasons.len(), 3, "{reasons:?}");
    assert!(reasons.iter().any(|r| r.contains("digest")), "{reasons:?}");
    assert!(
        reasons.iter().any(|r| r.contains("frontmatter")),
        "{reasons:?}"
    );
    assert!(reasons.iter().any(|r| r.contains("dynamic")), "{reasons:?}");
    // A dynamic skill announces no files to verify.
    assert!(cat.skills.file("skill://a/z/SKILL.md").is_none());
}

#[test]
fn a_view_keeps_the_skills_its_names_allow_and_only_their_files() {
    let a = input(
        "a",
        vec![
            skill("skill://code-review/SKILL.md", "code-review", D1),
            skill("skill://deploy/SKILL.md", "deploy", D2),
        ],
    );
    let cat = Catalog::build(&[a], &policy(ResourceNaming::HostSchemes), 10);
    let view =
        cat.restricted(&|i| !matches!(i, Item::Skill { name, .. } if name.ends_with("deploy")));
    let kept: Vec<&str> = view.skills.items().map(|(_, n, _)| n).collect();
    assert_eq!(kept, ["a__code-review"]);
    assert!(view.skills.file("skill://a/deploy/SKILL.md").is_none());
    assert!(view.skills.owner("skill://a/deploy/SKILL.md").is_none());
    assert!(view.skills.file("skill://a/code-review/SKILL.md").is_some());
    // What the hidden skill's directory holds is the hidden skill's.
    for inside in [
        "skill://a/deploy",
        "skill://a/deploy/templates",
        "skill://a/deploy/templates/x.md",
        "skill://a/deploy/SKILL.md",
    ] {
        assert_eq!(
            cat.skills.holding(inside),
            Some("skill://a/deploy/SKILL.md"),
            "{inside}"
        );
    }
    assert_eq!(cat.skills.holding("skill://a/deployment/x"), None);
    // Nested skills: a path of the inner one is the inner one's.
    let nested = input(
        "a",
        vec![
            skill("skill://outer/SKILL.md", "outer", D1),
            skill("skill://outer/inner/SKILL.md", "inner", D2),
        ],
    );
    let cat = Catalog::build(&[nested], &policy(ResourceNaming::HostSchemes), 10);
    for _ in 0..8 {
        assert_eq!(
            cat.skills.holding("skill://a/outer/inner/notes.md"),
            Some("skill://a/outer/inner/SKILL.md")
        );
    }
    assert_eq!(
        cat.skills.holding("skill://a/outer/notes.md"),
        Some("skill://a/outer/SKILL.md")
    );
}

#[test]
fn pages_follow_their_cursor_to_the_end() {
    let many: Vec<Map<String, Value>> = (0..5)
        .map(|i| skill(&format!("skill://s{i}/SKILL.md"), &format!("s{i}"), D1))
        .collect();
    let cat = Catalog::build(&[input("a", many)], &policy(ResourceNaming::HostSchemes), 2);
    let mut cursor: Option<String> = None;
    let mut seen = Vec::new();
    for _ in 0..5 {
        let page: Value =
            serde_json::from_slice(&cat.skills.page(cursor.as_deref()).unwrap()).unwrap();
        for s in page["skills"].as_array().unwrap() {
            seen.push(s["frontmatter"]["name"].as_str().unwrap().to_string());
        }
        match page.get("nextCursor").and_then(Value::as_str) {
            Some(c) => cursor = Some(c.to_string()),
            None => break,
        }
    }
    assert_eq!(seen, ["s0", "s1", "s2", "s3", "s4"]);
}

#[test]
fn digests_are_sha256_in_lower_case_hex() {
    assert!(is_digest(D1));
    for bad in [
        "sha256:",
        "md5:11",
        &D1.to_uppercase(),
        &format!("{D1}0"),
        &D1[..70],
    ] {
        assert!(!is_digest(bad), "{bad}");
    }
}
