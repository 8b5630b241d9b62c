//! The catalogue: every tool, prompt, resource and template of the merged
//! view with its upstream, original name and why it was renamed; a text
//! search; "view as" a caller (`as=group:ops`) with why each hidden item is
//! hidden — the same answer as `/catalog?as=` and `manifold check --as`,
//! because it is built by the same function (`inspect::catalog`); the items
//! left out of the merged lists, and why. A tool's own page shows its
//! description, schemas, annotations, overrides and pin.
//!
//! Endpoints: `endpoint=/mcp/ops` narrows the page to what that
//! `[[endpoint]]` serves (its upstreams and its own allow/deny), and "view
//! as" then shows a caller's view of that endpoint — as `/catalog?endpoint=`
//! does; without it, the default endpoint.
//!
//! Invariants: one catalogue snapshot per page; the search is a plain
//! case-insensitive substring match over names, upstream, title and
//! description (what an operator types is what they find).
//!
//! Not here: the policy decisions (manifold-policy), pins (`pins`).

use http::StatusCode;
use maud::{html, Markup};
use serde_json::Value;

use super::answer::Query;
use super::layout;
use super::session::Viewer;
use crate::state::Gateway;

/// The kinds a page can narrow to: query value, heading, `inspect` member.
const KINDS: [(&str, &str, &str); 4] = [
    ("tool", "Tools", "tools"),
    ("prompt", "Prompts", "prompts"),
    ("resource", "Resources", "resources"),
    (
        "resource_template",
        "Resource templates",
        "resource_templates",
    ),
];

/// One row: what `inspect::catalog` lists, with what the catalogue knows.
struct Row {
    name: String,
    upstream: String,
    original: Option<String>,
    renamed: Option<String>,
    summary: Option<String>,
}

pub(super) fn page(
    gw: &Gateway,
    viewer: &Viewer,
    query: &Query,
) -> Result<Markup, (StatusCode, String)> {
    let spec = query.get("as");
    let endpoint = query.get("endpoint");
    let endpoints: Vec<String> = gw.cfg().endpoints.iter().map(|e| e.path.clone()).collect();
    let search = query.get("q").map(str::to_lowercase);
    let kind = query
        .get("kind")
        .filter(|k| KINDS.iter().any(|(q, _, _)| q == k));
    let inspect_query = layout::query_string(
        [("as", spec), ("endpoint", endpoint)]
            .into_iter()
            .filter_map(|(k, v)| Some((k, v?))),
    );
    let view = super::super::inspect::catalog(gw, Some(&inspect_query));
    let catalog = gw.catalog();
    let form = html! {
        form.filters method="get" action="/ui/catalogue" role="search" {
            label { "Search " input type="search" name="q" value=[query.get("q")] placeholder="name, upstream or description" data-search; }
            label { "View as " input type="text" name="as" value=[spec] placeholder="group:ops, key:ci, subject:alice" list="who-values"; }
            datalist #who-values { @for w in who_values(gw) { option value=(w) {} } }
            @if !endpoints.is_empty() {
                label { "Endpoint "
                    select name="endpoint" {
                        option value="" { (gw.cfg().server.path) " (default)" }
                        @for p in &endpoints { option value=(p) selected[endpoint == Some(p.as_str())] { (p) } }
                    }
                }
            }
            label { "Kind "
                select name="kind" {
                    option value="" { "all" }
                    @for (q, label, _) in KINDS { option value=(q) selected[kind == Some(q)] { (label) } }
                }
            }
            button type="submit" { "Show" }
            @if spec.is_some() || search.is_some() || kind.is_some() || endpoint.is_some() { " " a href="/ui/catalogue" { "Clear" } }
        }
    };
    let body = match view {
        Err(e) => html! {
            (form)
            p.error role="alert" { "Cannot view as " code { (spec.unwrap_or("")) } ": " (e) }
        },
        Ok(view) => {
            let matches = |r: &Row| match &search {
                None => true,
                Some(s) => [
                    Some(&r.name),
                    Some(&r.upstream),
                    r.original.as_ref(),
                    r.summary.as_ref(),
                ]
                .into_iter()
                .flatten()
                .any(|t| t.to_lowercase().contains(s.as_str())),
            };
            let mut sections = Vec::new();
            for (q, label, member) in KINDS {
                if kind.is_some_and(|k| k != q) {
                    continue;
                }
                let rows: Vec<Row> = view[member]
                    .as_array()
                    .map(|a| a.iter().map(|v| row(&catalog, q, v)).collect())
                    .unwrap_or_default();
                let total = rows.len();
                let rows: Vec<Row> = rows.into_iter().filter(|r| matches(r)).collect();
                sections.push(section(q, label, total, &rows, spec));
            }
            let hidden: Vec<&Value> = view["hidden"]
                .as_array()
                .map(|a| a.iter().collect())
                .unwrap_or_default();
            html! {
                (form)
                @if let Some(e) = endpoint {
                    p.note role="status" { "Showing the endpoint " code { (e) } " only." }
                }
                @if let Some(s) = spec {
                    p.note role="status" {
                        "Showing what " code { (s) } " sees under [[policy]]: "
                        (hidden.len()) " items hidden from it (listed below, with the rule that hides each)."
                    }
                }
                @for s in sections { (s) }
                @if spec.is_some() { (hidden_section(&hidden)) }
                (left_out(&catalog))
            }
        }
    };
    Ok(layout::page(
        viewer,
        "Catalogue",
        "/ui/catalogue",
        false,
        body,
    ))
}

/// The `who` values `[[policy]]` names, for the "view as" suggestions.
fn who_values(gw: &Gateway) -> Vec<String> {
    let cfg = gw.cfg();
    let mut out: Vec<String> = cfg.effective["policy"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|p| p["who"].as_array().cloned().unwrap_or_default())
        .filter_map(|w| w.as_str().map(str::to_string))
        .filter(|w| w != "*")
        .collect();
    out.sort();
    out.dedup();
    out
}

fn row(catalog: &manifold_catalog::Catalog, kind: &str, v: &Value) -> Row {
    let text = |k: &str| v[k].as_str().map(str::to_string);
    let name = text("exposed")
        .or_else(|| text("uri"))
        .or_else(|| text("uri_template"))
        .unwrap_or_default();
    let entry = match kind {
        "tool" => catalog.tools.get(&name),
        "prompt" => catalog.prompts.get(&name),
        _ => None,
    };
    let item: Option<Value> = entry.and_then(|e| serde_json::from_slice(e.json()).ok());
    let summary = item.as_ref().and_then(|i| {
        i["description"]
            .as_str()
            .or_else(|| i["title"].as_str())
            .map(|d| d.lines().next().unwrap_or("").to_string())
    });
    let original = text("original");
    let renamed = entry.and_then(|e| {
        e.change
            .as_ref()
            .map(|c| c.describe().to_string())
            .or_else(|| (e.exposed != e.original).then(|| "prefixed ([naming])".to_string()))
    });
    Row {
        upstream: text("upstream").unwrap_or_default(),
        name,
        original,
        renamed,
        summary,
    }
}

fn section(kind: &str, label: &str, total: usize, rows: &[Row], spec: Option<&str>) -> Markup {
    let linked = kind == "tool";
    html! {
        section aria-labelledby={ "k-" (kind) } {
            h2 id={ "k-" (kind) } { (label) " " span.count { (rows.len()) @if rows.len() != total { " of " (total) } } }
            @if rows.is_empty() {
                p.muted { @if total == 0 { "None in the merged catalogue." } @else { "None match the search." } }
            } @else {
                div.scroll {
                    table.catalogue {
                        thead { tr {
                            th scope="col" { "Name" } th scope="col" { "Upstream" }
                            th scope="col" { "Original name" } th scope="col" { "Why renamed" }
                            th scope="col" { "Description" }
                        } }
                        tbody {
                            @for r in rows {
                                tr {
                                    th scope="row" {
                                        @if linked {
                                            a href={ "/ui/catalogue/tool/" (layout::encode(&r.name)) @if let Some(s) = spec { "?as=" (layout::encode(s)) } } { code { (r.name) } }
                                        } @else { code { (r.name) } }
                                    }
                                    td { (r.upstream) }
                                    td { @if let Some(o) = &r.original { code { (o) } } }
                                    td { @if let Some(w) = &r.renamed { (w) } }
                                    td.desc { @if let Some(s) = &r.summary { (s) } }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

fn hidden_section(hidden: &[&Value]) -> Markup {
    html! {
        section aria-labelledby="hidden-h" {
            h2 #hidden-h { "Hidden from this caller " span.count { (hidden.len()) } }
            @if hidden.is_empty() {
                p.muted { "Nothing: this caller sees the whole catalogue." }
            } @else {
                div.scroll { table {
                    thead { tr { th scope="col" { "Kind" } th scope="col" { "Name" } th scope="col" { "Why hidden" } } }
                    tbody { @for h in hidden { tr {
                        td { (h["kind"].as_str().unwrap_or("")) }
                        th scope="row" { code { (h["name"].as_str().unwrap_or("")) } }
                        td { (h["reason"].as_str().unwrap_or("")) }
                    } } }
                } }
            }
        }
    }
}

fn left_out(catalog: &manifold_catalog::Catalog) -> Markup {
    let lists = [
        ("tool", catalog.tools.left_out()),
        ("prompt", catalog.prompts.left_out()),
        ("resource", catalog.resources.resources.left_out()),
        ("resource_template", catalog.resources.templates.left_out()),
    ];
    let count: usize = lists.iter().map(|(_, l)| l.len()).sum();
    html! {
        section aria-labelledby="left-h" {
            h2 #left-h { "Left out of the merged lists " span.count { (count) } }
            @if count == 0 {
                p.muted { "Nothing: every item the upstreams publish is exposed." }
            } @else {
                div.scroll { table {
                    thead { tr { th scope="col" { "Kind" } th scope="col" { "Upstream" } th scope="col" { "Name" } th scope="col" { "Why" } } }
                    tbody {
                        @for (kind, items) in &lists { @for lo in items.iter() { tr {
                            td { (kind) } td { (lo.upstream) } th scope="row" { code { (lo.original) } } td { (lo.reason.to_string()) }
                        } } }
                    }
                } }
            }
        }
    }
}

/// A tool's own page.
pub(super) fn tool(
    gw: &Gateway,
    viewer: &Viewer,
    name: &str,
    query: &Query,
) -> Result<Markup, (StatusCode, String)> {
    let catalog = gw.catalog();
    let Some(entry) = catalog.tools.get(name) else {
        return Err((
            StatusCode::NOT_FOUND,
            format!(
                "no tool `{name}` in the merged catalogue (is its upstream ready? was it left \
                 out? see the catalogue page)"
            ),
        ));
    };
    let exposed: Value = serde_json::from_slice(entry.json()).unwrap_or_default();
    // The one definition the entry was built from: a name the upstream
    // publishes more than once has none (and is left out of the catalogue).
    let upstream_def = gw.upstream(&entry.upstream).and_then(|u| {
        let lists = u.lists()?;
        let mut same = lists
            .tools
            .iter()
            .filter(|t| t.get("name").and_then(Value::as_str) == Some(entry.original.as_str()));
        let first = same.next()?.clone();
        same.next().is_none().then_some(first)
    });
    let visibility = match query.get("as") {
        None => None,
        Some(spec) => {
            let sources = manifold_config::IdentitySources::of(&gw.cfg());
            Some(
                manifold_policy::who::identity_for(spec, &sources).map(|id| {
                    let policy = gw.policy();
                    let key = policy.view_key(&id);
                    (
                        spec.to_string(),
                        policy.hidden(&key, manifold_policy::ItemKind::Tool, name),
                    )
                }),
            )
        }
    };
    let cfg = gw.cfg();
    let overrides = &cfg.effective["upstreams"][&*entry.upstream]["overrides"][&entry.original];
    let pin = super::pins::tool_pin(gw, &entry.upstream, &entry.original, upstream_def.as_ref());
    let schema = |key: &str| -> Option<Value> { exposed.get(key).cloned() };
    let annotations = exposed
        .get("annotations")
        .and_then(Value::as_object)
        .cloned();
    let body = html! {
        p { a href="/ui/catalogue" { "← Catalogue" } }
        dl.facts {
            div { dt { "Exposed name" } dd { code { (name) } } }
            div { dt { "Upstream" } dd { (entry.upstream) } }
            div { dt { "Original name" } dd { code { (entry.original) } } }
            @if let Some(c) = &entry.change { div { dt { "Why renamed" } dd { (c.describe()) } } }
            @if let Some(t) = exposed["title"].as_str() { div { dt { "Title" } dd { (t) } } }
        }
        @if let Some(v) = &visibility {
            @match v {
                Ok((spec, None)) => p.note role="status" { code { (spec) } " sees this tool." },
                Ok((spec, Some(why))) => p.error role="status" { code { (spec) } " does not see this tool: " (why) },
                Err(e) => p.error role="alert" { "Cannot view as that caller: " (e) },
            }
        }
        section aria-labelledby="desc-h" {
            h2 #desc-h { "Description" }
            @match exposed["description"].as_str() {
                Some(d) => pre.text { (d) },
                None => p.muted { "The upstream gives no description." },
            }
        }
        section aria-labelledby="schema-h" {
            h2 #schema-h { "Schemas" }
            @match schema("inputSchema") {
                Some(s) => details open { summary { "Input schema" } (layout::json_block(&s)) },
                None => p.muted { "No input schema." },
            }
            @match schema("outputSchema") {
                Some(s) => details { summary { "Output schema" } (layout::json_block(&s)) },
                None => p.muted { "No output schema: results are not checked ([validation] output)." },
            }
        }
        section aria-labelledby="ann-h" {
            h2 #ann-h { "Annotations" }
            @match &annotations {
                Some(a) if !a.is_empty() => dl.facts {
                    @for (k, v) in a { div { dt { code { (k) } } dd { (v.to_string()) } } }
                },
                _ => p.muted { "None. Clients must assume the tool may change things (destructiveHint defaults to true)." },
            }
        }
        section aria-labelledby="ovr-h" {
            h2 #ovr-h { "Overrides" }
            @if overrides.is_null() {
                p.muted { "None: clients see the upstream's definition, renamed only by [naming]." }
            } @else {
                p.hint { "From " code { "[upstreams." (entry.upstream) ".overrides." (entry.original) "]" } " (secrets redacted):" }
                (layout::json_block(overrides))
            }
        }
        section aria-labelledby="pin-h" {
            h2 #pin-h { "Pin" }
            (pin)
        }
        @if let Some(def) = &upstream_def {
            section aria-labelledby="raw-h" {
                h2 #raw-h { "As the upstream publishes it" }
                details { summary { "Definition before naming and overrides" } (layout::json_block(&Value::Object(def.clone()))) }
            }
        }
    };
    Ok(layout::page(viewer, name, "/ui/catalogue", false, body))
}
