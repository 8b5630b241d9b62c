use super::*;
use manifold_catalog::filter::{Glob, Rules as FilterRules};
use serde_json::json;

fn item(v: Value) -> Map<String, Value> {
    v.as_object().cloned().unwrap_or_default()
}

fn lists() -> UpstreamLists {
    UpstreamLists {
        tools: vec![
            item(json!({"name": "a", "description": "A"})),
            item(json!({"name": "b"})),
            item(json!({"name": "secret"})),
        ],
        prompts: vec![item(json!({"name": "p"}))],
        resources: vec![item(json!({"uri": "file:///x", "name": "x"}))],
        resource_templates: vec![item(json!({"uriTemplate": "file:///{p}", "name": "t"}))],
        skills: vec![item(
            json!({"uri": "skill://s/SKILL.md", "frontmatter": {"name": "s", "description": "d"}, "resources": "dynamic"}),
        )],
    }
}

fn names(items: &[Map<String, Value>], key: &str) -> Vec<String> {
    items
        .iter()
        .filter_map(|i| i.get(key)?.as_str().map(str::to_string))
        .collect()
}

#[test]
fn withheld_items_leave_the_lists_and_only_they_are_kept_aside() {
    let l = lists();
    let mut held: BTreeMap<ItemKind, HashSet<&str>> = BTreeMap::new();
    held.entry(ItemKind::Tool).or_default().insert("b");
    held.entry(ItemKind::ResourceTemplate)
        .or_default()
        .insert("file:///{p}");
    held.entry(ItemKind::Skill)
        .or_default()
        .insert("skill://s/SKILL.md");
    let out = without(&l, &held);
    assert!(out.skills.is_empty(), "a held skill leaves the list");
    assert_eq!(names(&out.tools, "name"), ["a", "secret"]);
    assert_eq!(names(&out.prompts, "name"), ["p"]);
    assert!(out.resource_templates.is_empty());
    assert_eq!(
        out.resources, l.resources,
        "listed resources are not judged"
    );
    let aside = only(&l, &held);
    assert_eq!(names(&aside.tools, "name"), ["b"]);
    assert!(aside.prompts.is_empty() && aside.resources.is_empty());
    assert_eq!(
        names(&aside.resource_templates, "uriTemplate"),
        ["file:///{p}"]
    );
    assert_eq!(names(&aside.skills, "uri"), ["skill://s/SKILL.md"]);
}

#[test]
fn what_the_filter_hides_is_never_judged() {
    let l = lists();
    assert!(shown(&l, &ItemFilter::default()).is_none(), "no copy");
    let filter = ItemFilter {
        tools: FilterRules {
            allow: vec![],
            deny: vec![Glob::new("secret")],
        },
        prompts: FilterRules::default(),
    };
    let s = shown(&l, &filter).expect("filtered");
    assert_eq!(names(&s.tools, "name"), ["a", "b"]);
    assert_eq!(s.resource_templates, l.resource_templates);
}
