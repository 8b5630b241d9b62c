//! `manifold check`: validate the configuration, connect every upstream in-process
//! (no listener), and print what the gateway would expose: the merged catalog with
//! each name's origin and why it changed, what was left out and why, and each
//! upstream's status. `--json` prints the same facts as one JSON object.
//! `--as WHO` narrows the catalogue to what that caller would see under
//! `[[policy]]` and lists every hidden item with the rule that hides it;
//! `--endpoint PATH` narrows it to what that endpoint holds. Each
//! `[upstreams.x.overrides.<tool>]` is reported with what it did, or why it
//! could not.
//!
//! Exit codes: 0 every upstream is ready, 1 some are not, 2 configuration error
//! (or a `--as` that names nobody).
//!
//! Invariants: the facts are collected once, from one catalog snapshot and one
//! status reading per upstream, before the gateway is stopped; the text and JSON
//! forms are rendered from the same [`Facts`].

use manifold_catalog::{Entry, LeftOut, LeftOutReason, NameChange, NamedList};
use manifold_policy::{who, Identity, ItemKind, Policy};
use manifold_upstream::State;
use serde_json::{json, Value};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use super::inproc::InProcess;
use super::table::Table;
use super::{load_config, FAILED};

pub fn run(
    rt: &tokio::runtime::Runtime,
    config: &Path,
    as_json: bool,
    as_who: Option<&str>,
    endpoint: Option<&str>,
) -> ExitCode {
    let cfg = match load_config(config) {
        Ok(c) => c,
        Err(code) => return code,
    };
    // `subject:` is qualified by the configuration's identity sources.
    let sources = manifold_config::IdentitySources::of(&cfg);
    let viewer = match as_who.map(|w| who::identity_for(w, &sources).map(|id| (w.to_string(), id)))
    {
        None => None,
        Some(Ok(v)) => Some(v),
        Some(Err(e)) => {
            eprintln!("manifold check --as: {e}");
            return ExitCode::from(super::USAGE);
        }
    };
    if let Some(path) = endpoint {
        let known = path == cfg.server.path || cfg.endpoints.iter().any(|e| e.path == path);
        if !known {
            eprintln!("manifold check --endpoint: no endpoint is served at `{path}` ([server] path or an [[endpoint]] path)");
            return ExitCode::from(super::USAGE);
        }
    }
    let facts = rt.block_on(async {
        let core = InProcess::start(cfg).await;
        let mut facts = Facts::collect(config, &core);
        if let Some(catalog) = endpoint.and_then(|p| core.gw.endpoint_catalog(p)) {
            facts.narrow_to_endpoint(endpoint.unwrap_or_default(), &catalog);
        }
        if let Some((spec, id)) = &viewer {
            facts.narrow_to(spec, &core.gw.policy(), id);
        }
        core.stop().await;
        facts
    });
    let out = if as_json {
        let mut s = serde_json::to_string_pretty(&facts.to_json()).unwrap_or_default();
        s.push('\n');
        s
    } else {
        facts.to_text()
    };
    // A closed stdout (`| head`) is not worth a panic.
    let _ = std::io::stdout().lock().write_all(out.as_bytes());
    if facts.all_ready() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(FAILED)
    }
}

/// Everything `check` reports.
pub struct Facts {
    config: PathBuf,
    tools: Vec<Named>,
    prompts: Vec<Named>,
    resources: Vec<ByUri>,
    templates: Vec<ByUri>,
    left_out: Vec<Dropped>,
    /// Tools listed but not argument-checked, and why.
    unvalidated: Vec<(String, String)>,
    upstreams: Vec<UpstreamFacts>,
    overrides: Vec<OverrideFacts>,
    /// `--as WHO`: the caller, and what its view hides.
    viewer: Option<String>,
    /// `--endpoint PATH`: the endpoint whose catalogue is shown.
    endpoint: Option<String>,
    hidden: Vec<Hidden>,
    /// What `[integrity]` holds (see `quarantine`).
    quarantined: Vec<manifold_server::Quarantined>,
}

/// An item `--as WHO` does not see, and the rule behind it.
struct Hidden {
    kind: &'static str,
    name: String,
    why: String,
}

/// One `[upstreams.x.overrides.<tool>]` and what came of it.
struct OverrideFacts {
    upstream: String,
    tool: String,
    /// The name it is exposed under, when it is.
    exposed: Option<String>,
    /// What could not be done; empty when it applied in full.
    problems: Vec<String>,
}

/// An exposed tool or prompt.
struct Named {
    exposed: String,
    upstream: String,
    original: String,
    change: Option<Change>,
}

/// Why an exposed name differs from `<prefix><separator><original>`.
struct Change {
    /// Stable identifier for scripts.
    kind: &'static str,
    why: String,
}

/// A resource or resource template and its owner.
struct ByUri {
    uri: String,
    upstream: String,
}

/// An upstream item that is not exposed.
struct Dropped {
    kind: &'static str,
    upstream: String,
    name: String,
    reason: LeftOutReason,
}

struct UpstreamFacts {
    name: String,
    transport: &'static str,
    state: State,
    protocol_version: Option<String>,
    server_info: Option<Value>,
    /// Tools the upstream lists (before filters and collisions).
    tools: Option<usize>,
    restarts: u64,
    last_error: Option<String>,
    last_exit_code: Option<i32>,
    /// Its circuit breaker (`[upstreams.x.breaker]`), when it has one.
    breaker: Option<manifold_upstream::BreakerReport>,
    /// A pool's members: (serving, all) — serving: ready, agreeing on the
    /// lists, not ejected.
    pool: Option<(usize, usize)>,
    /// `[upstreams.x.auth] type` (HTTP upstreams).
    auth: Option<&'static str>,
    /// The authorization server its tokens come from, and whether
    /// `auth.issuer` pins it (else the one `manifold login` recorded).
    issuer: Option<(String, bool)>,
}

impl Facts {
    pub fn collect(config: &Path, core: &InProcess) -> Facts {
        let catalog = core.gw.catalog();
        let named = |list: &NamedList| -> Vec<Named> {
            list.entries()
                .iter()
                .map(|e| Named {
                    exposed: e.exposed.clone(),
                    upstream: e.upstream.to_string(),
                    original: e.original.clone(),
                    change: e.change.as_ref().map(|c| change(core, list, e, c)),
                })
                .collect()
        };
        let by_uri = |list: &manifold_catalog::UriList| -> Vec<ByUri> {
            list.items()
                .map(|(uri, up)| ByUri {
                    uri: uri.to_string(),
                    upstream: up.to_string(),
                })
                .collect()
        };
        let dropped = |kind: &'static str, items: &[LeftOut]| -> Vec<Dropped> {
            let mut rows = items
                .iter()
                .map(|lo| Dropped {
                    kind,
                    upstream: lo.upstream.to_string(),
                    name: lo.original.clone(),
                    reason: lo.reason.clone(),
                })
                .collect::<Vec<_>>();
            // Upstream lists come in the upstream's order; read them sorted.
            rows.sort_by(|a, b| (&a.upstream, &a.name).cmp(&(&b.upstream, &b.name)));
            rows
        };
        let res = &catalog.resources;
        let mut left_out = dropped("tool", catalog.tools.left_out());
        left_out.extend(dropped("prompt", catalog.prompts.left_out()));
        left_out.extend(dropped("resource", res.resources.left_out()));
        left_out.extend(dropped("resource_template", res.templates.left_out()));
        left_out.extend(dropped("skill", catalog.skills.left_out()));
        let upstreams = core
            .upstreams()
            .iter()
            .map(|u| {
                let st = u.status();
                let facts = st.facts.as_ref();
                UpstreamFacts {
                    name: u.name().to_string(),
                    transport: u.config().transport.kind(),
                    state: st.state,
                    protocol_version: facts.map(|f| f.protocol_version.clone()),
                    server_info: facts.map(|f| f.server_info.clone()),
                    tools: u.lists().map(|l| l.tools.len()),
                    restarts: st.restarts,
                    last_error: st.last_error.clone(),
                    last_exit_code: st.last_exit_code,
                    breaker: u.breaker(),
                    pool: u.is_pool().then(|| {
                        let members = u.members();
                        let serving = members
                            .iter()
                            .filter(|m| m.role() == manifold_upstream::MemberRole::Serving)
                            .count();
                        (serving, members.len())
                    }),
                    auth: match &u.config().transport {
                        manifold_config::Transport::Http { auth, .. } => Some(auth.kind()),
                        manifold_config::Transport::Stdio { .. } => None,
                    },
                    issuer: u.tokens().and_then(|t| t.issuer()),
                }
            })
            .collect();
        Facts {
            config: config.to_path_buf(),
            tools: named(&catalog.tools),
            prompts: named(&catalog.prompts),
            resources: by_uri(&res.resources),
            templates: by_uri(&res.templates),
            left_out,
            unvalidated: core.gw.unvalidated_tools(),
            upstreams,
            overrides: override_facts(core, &catalog.tools),
            viewer: None,
            endpoint: None,
            hidden: Vec::new(),
            quarantined: core.gw.quarantined(),
        }
    }

    /// Only what the endpoint at `path` holds (its `catalog`).
    fn narrow_to_endpoint(&mut self, path: &str, catalog: &manifold_catalog::Catalog) {
        self.endpoint = Some(path.to_string());
        self.tools
            .retain(|n| catalog.tools.get(&n.exposed).is_some());
        self.prompts
            .retain(|n| catalog.prompts.get(&n.exposed).is_some());
        let holds =
            |list: &manifold_catalog::UriList, uri: &str| list.items().any(|(u, _)| u == uri);
        self.resources
            .retain(|r| holds(&catalog.resources.resources, &r.uri));
        self.templates
            .retain(|r| holds(&catalog.resources.templates, &r.uri));
    }

    /// Keeps what `id` may see under `policy`; the rest moves to `hidden` with
    /// the rule that hides it.
    fn narrow_to(&mut self, spec: &str, policy: &Policy, id: &Identity) {
        self.viewer = Some(spec.to_string());
        let key = policy.view_key(id);
        let mut hidden = Vec::new();
        let mut keep = |kind: &'static str, item: ItemKind, name: &str| match policy
            .hidden(&key, item, name)
        {
            Some(why) => {
                hidden.push(Hidden {
                    kind,
                    name: name.to_string(),
                    why,
                });
                false
            }
            None => true,
        };
        self.tools
            .retain(|n| keep("tool", ItemKind::Tool, &n.exposed));
        self.prompts
            .retain(|n| keep("prompt", ItemKind::Prompt, &n.exposed));
        self.resources
            .retain(|r| keep("resource", ItemKind::Resource, &r.uri));
        self.templates
            .retain(|r| keep("resource_template", ItemKind::Resource, &r.uri));
        self.hidden = hidden;
    }

    pub fn all_ready(&self) -> bool {
        self.upstreams.iter().all(|u| u.state == State::Ready)
    }

    fn ready_count(&self) -> usize {
        self.upstreams
            .iter()
            .filter(|u| u.state == State::Ready)
            .count()
    }

    pub fn to_text(&self) -> String {
        let mut out = format!("Configuration: {}\n", self.config.display());
        if let Some(path) = &self.endpoint {
            out.push_str(&format!("Endpoint: {path}\n"));
        }
        let section = |out: &mut String, title: &str, t: &Table, n: usize| {
            out.push_str(&format!("\n{title} ({n})\n"));
            if t.is_empty() {
                out.push_str("(none)\n");
            } else {
                t.render(out);
            }
        };
        for (title, list) in [("TOOLS", &self.tools), ("PROMPTS", &self.prompts)] {
            let mut t = Table::new(&["EXPOSED", "UPSTREAM", "ORIGINAL", "CHANGE"]);
            for n in list {
                let why = n.change.as_ref().map(|c| c.why.clone()).unwrap_or_default();
                t.row(vec![
                    n.exposed.clone(),
                    n.upstream.clone(),
                    n.original.clone(),
                    why,
                ]);
            }
            section(&mut out, title, &t, list.len());
        }
        for (title, head, list) in [
            ("RESOURCES", "URI", &self.resources),
            ("RESOURCE TEMPLATES", "URI TEMPLATE", &self.templates),
        ] {
            let mut t = Table::new(&[head, "UPSTREAM"]);
            for r in list {
                t.row(vec![r.uri.clone(), r.upstream.clone()]);
            }
            section(&mut out, title, &t, list.len());
        }
        let mut t = Table::new(&["KIND", "UPSTREAM", "NAME", "REASON"]);
        for d in &self.left_out {
            t.row(vec![
                d.kind.to_string(),
                d.upstream.clone(),
                d.name.clone(),
                d.reason.to_string(),
            ]);
        }
        section(&mut out, "LEFT OUT", &t, self.left_out.len());
        let mut t = Table::new(&["TOOL", "ARGUMENTS NOT VALIDATED BECAUSE"]);
        for (tool, why) in &self.unvalidated {
            t.row(vec![tool.clone(), why.clone()]);
        }
        section(&mut out, "NOT VALIDATED", &t, self.unvalidated.len());
        let mut t = Table::new(&["UPSTREAM", "TOOL", "EXPOSED", "NOTE"]);
        for o in &self.overrides {
            let note = if o.problems.is_empty() {
                "applied".to_string()
            } else {
                o.problems.join("; ")
            };
            t.row(vec![
                o.upstream.clone(),
                o.tool.clone(),
                o.exposed.clone().unwrap_or_default(),
                note,
            ]);
        }
        section(&mut out, "OVERRIDES", &t, self.overrides.len());
        if let Some(who) = &self.viewer {
            let mut t = Table::new(&["KIND", "NAME", "HIDDEN BECAUSE"]);
            for h in &self.hidden {
                t.row(vec![h.kind.to_string(), h.name.clone(), h.why.clone()]);
            }
            section(
                &mut out,
                &format!("HIDDEN FROM {who}"),
                &t,
                self.hidden.len(),
            );
        }
        let mut t = Table::new(&[
            "UPSTREAM",
            "TRANSPORT",
            "STATE",
            "PROTOCOL",
            "TOOLS",
            "RESTARTS",
            "ISSUER",
            "LAST ERROR",
        ]);
        for u in &self.upstreams {
            t.row(vec![
                u.name.clone(),
                u.transport.to_string(),
                {
                    let mut state = u.state.as_str().to_string();
                    if let Some((serving, all)) = u.pool {
                        state.push_str(&format!(" ({serving}/{all} members)"));
                    }
                    match &u.breaker {
                        // A breaker that is not closed is news; a closed one is not.
                        Some(b) if b.state != manifold_upstream::BreakerState::Closed => {
                            state.push_str(&format!(" (breaker {})", b.state.as_str()));
                        }
                        _ => {}
                    }
                    state
                },
                u.protocol_version.clone().unwrap_or_default(),
                u.tools.map(|n| n.to_string()).unwrap_or_default(),
                u.restarts.to_string(),
                match &u.issuer {
                    Some((i, true)) => i.clone(),
                    Some((i, false)) => format!("{i} (from login)"),
                    None => String::new(),
                },
                u.last_error.clone().unwrap_or_default(),
            ]);
        }
        section(&mut out, "UPSTREAMS", &t, self.upstreams.len());
        out.push_str(&super::quarantine::text(&self.quarantined));
        let (ready, total) = (self.ready_count(), self.upstreams.len());
        out.push_str(&format!(
            "\n{ready}/{total} upstreams ready; {}, {}, {}, {} exposed; {} left out\n",
            plural(self.tools.len(), "tool"),
            plural(self.prompts.len(), "prompt"),
            plural(self.resources.len(), "resource"),
            plural(self.templates.len(), "resource template"),
            plural(self.left_out.len(), "item"),
        ));
        out
    }

    pub fn to_json(&self) -> Value {
        let named = |list: &[Named]| -> Vec<Value> {
            list.iter()
                .map(|n| {
                    json!({
                        "exposed": n.exposed,
                        "upstream": n.upstream,
                        "original": n.original,
                        "change": n.change.as_ref().map(|c| json!({"kind": c.kind, "why": c.why})),
                    })
                })
                .collect()
        };
        let by_uri = |key: &str, list: &[ByUri]| -> Vec<Value> {
            list.iter()
                .map(|r| json!({key: r.uri, "upstream": r.upstream}))
                .collect()
        };
        let left_out: Vec<Value> = self
            .left_out
            .iter()
            .map(|d| {
                let mut reason = json!({
                    "kind": d.reason.kind(),
                    "message": d.reason.to_string(),
                });
                match &d.reason {
                    LeftOutReason::InvalidHeader(e)
                    | LeftOutReason::InvalidTemplate(e)
                    | LeftOutReason::InvalidSkill(e) => reason["error"] = json!(e),
                    LeftOutReason::Collision {
                        exposed,
                        kept_upstream,
                    } => {
                        reason["exposed"] = json!(exposed);
                        reason["kept_upstream"] = json!(kept_upstream);
                    }
                    LeftOutReason::Duplicate { copies } => reason["copies"] = json!(copies),
                    LeftOutReason::NoName | LeftOutReason::Filtered => {}
                }
                json!({
                    "kind": d.kind,
                    "upstream": d.upstream,
                    "name": (!d.name.is_empty()).then_some(&d.name),
                    "reason": reason,
                })
            })
            .collect();
        let upstreams: Vec<Value> = self
            .upstreams
            .iter()
            .map(|u| {
                json!({
                    "name": u.name,
                    "transport": u.transport,
                    "state": u.state.as_str(),
                    "protocol_version": u.protocol_version,
                    "server_info": u.server_info,
                    "tools": u.tools,
                    "restarts": u.restarts,
                    "last_error": u.last_error,
                    "last_exit_code": u.last_exit_code,
                    "breaker": u.breaker.as_ref().map(|b| json!({
                        "state": b.state.as_str(),
                        "opened": b.opened,
                        "reason": b.reason,
                    })),
                    "pool": u.pool.map(|(serving, all)| json!({"members": all, "serving": serving})),
                    "auth": u.auth,
                    "issuer": u.issuer.as_ref().map(|(i, _)| i),
                    "issuer_pinned": u.issuer.as_ref().map(|(_, p)| p),
                })
            })
            .collect();
        json!({
            "config": self.config.display().to_string(),
            "ready": self.all_ready(),
            "upstreams_ready": self.ready_count(),
            "upstreams_total": self.upstreams.len(),
            "tools": named(&self.tools),
            "prompts": named(&self.prompts),
            "resources": by_uri("uri", &self.resources),
            "resource_templates": by_uri("uri_template", &self.templates),
            "left_out": left_out,
            "unvalidated": self.unvalidated.iter().map(|(t, why)| json!({"tool": t, "reason": why})).collect::<Vec<_>>(),
            "upstreams": upstreams,
            "quarantined": super::quarantine::json(&self.quarantined),
            "overrides": self.overrides.iter().map(|o| json!({
                "upstream": o.upstream, "tool": o.tool, "exposed": o.exposed, "problems": o.problems,
            })).collect::<Vec<_>>(),
            "endpoint": self.endpoint,
            "as": self.viewer,
            "hidden": self.viewer.as_ref().map(|_| self.hidden.iter().map(|h| json!({
                "kind": h.kind, "name": h.name, "reason": h.why,
            })).collect::<Vec<_>>()),
        })
    }
}

/// Each configured override: where it landed, and what it could not do (a
/// tool the upstream does not publish, a required argument asked to be hidden).
fn override_facts(core: &InProcess, tools: &NamedList) -> Vec<OverrideFacts> {
    let mut out = Vec::new();
    for u in core.upstreams() {
        let lists = u.lists();
        let overrides = manifold_server::tool_overrides(u.config());
        for (tool, o) in &overrides {
            let mut problems = Vec::new();
            let item = lists.as_ref().and_then(|l| {
                l.tools
                    .iter()
                    .find(|t| t.get("name").and_then(Value::as_str) == Some(tool))
            });
            match (&lists, item) {
                (None, _) => problems.push("the upstream is not ready: not checked".into()),
                (Some(_), None) => {
                    problems.push(format!("the upstream publishes no tool `{tool}`"))
                }
                (Some(_), Some(item)) => {
                    problems.extend(manifold_catalog::overrides::apply(&mut item.clone(), o).1);
                    let coalesce = u.config().overrides.get(tool).and_then(|o| o.coalesce);
                    let read_only = item
                        .get("annotations")
                        .and_then(|a| a.get("readOnlyHint"))
                        .and_then(Value::as_bool);
                    if coalesce == Some(true) && read_only != Some(true) {
                        problems.push(
                            "`coalesce = true`, but its annotations do not say readOnlyHint: true: its calls are not coalesced".into(),
                        );
                    }
                }
            }
            let exposed = tools
                .entries()
                .iter()
                .find(|e| *e.upstream == **u.name() && e.original == *tool)
                .map(|e| e.exposed.clone());
            out.push(OverrideFacts {
                upstream: u.name().to_string(),
                tool: tool.clone(),
                exposed,
                problems,
            });
        }
    }
    out
}

fn plural(n: usize, what: &str) -> String {
    format!("{n} {what}{}", if n == 1 { "" } else { "s" })
}

/// What changed in `e`'s name and why; a collision names the item that kept the
/// plain name.
fn change(core: &InProcess, list: &NamedList, e: &Entry, c: &NameChange) -> Change {
    let naming = &core.gw.config().naming;
    let kind = match c {
        NameChange::CharactersReplaced => "characters_replaced",
        NameChange::Shortened => "shortened",
        NameChange::ReplacedAndShortened => "replaced_and_shortened",
        NameChange::Disambiguated => "disambiguated",
    };
    let why = match c {
        NameChange::Shortened | NameChange::ReplacedAndShortened => {
            format!(
                "{} (naming.max_length = {})",
                c.describe(),
                naming.max_length
            )
        }
        NameChange::Disambiguated => {
            // A disambiguated item lost its plain name to another item: recompute the
            // plain name (collisions only get a suffix when names are prefixed).
            let prefix = core
                .upstreams()
                .iter()
                .find(|u| **u.name() == *e.upstream)
                .map(|u| u.config().prefix.clone())
                .unwrap_or_else(|| e.upstream.to_string());
            let (plain, _) = manifold_catalog::naming::expose(
                &e.upstream,
                Some(&prefix),
                &naming.separator,
                &e.original,
                naming.max_length,
            );
            match list.get(&plain) {
                Some(kept) => format!(
                    "{}: `{plain}` is exposed from upstream `{}`",
                    c.describe(),
                    kept.upstream
                ),
                None => c.describe().to_string(),
            }
        }
        NameChange::CharactersReplaced => c.describe().to_string(),
    };
    Change { kind, why }
}
