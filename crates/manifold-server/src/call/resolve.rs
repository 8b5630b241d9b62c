//! Step resolve: from what the client names (an exposed tool or prompt name, a
//! URI, a completion reference) to the upstream that owns it in the caller's
//! view, with the request rewritten for that upstream — its own name, an
//! override's pins and hidden arguments, the canonical URI, the `Mcp-Method`
//! and `Mcp-Name` headers.
//!
//! Invariants: names resolve through the catalog's table, never by splitting
//! the string; what the caller may not see answers exactly as what does not
//! exist; the audit record names what the client asked for even when it is
//! refused here.
//!
//! Not here: the `Mcp-Param-*` headers and the schema check (`validate`), URI
//! URI ownership (`Gateway::owner_of`, `state::learned`).

use manifold_catalog::Kind;
use manifold_protocol::headers::standard_headers;
use manifold_protocol::methods as m;
use manifold_upstream::Upstream;
use serde_json::{Map, Value};

use super::context::{Call, Expected, OutputCheck, ResultShape, TaskHook, What};
use crate::era::Era;
use crate::observe::Facts;
use crate::refusal::Refusal;
use crate::request::{Caller, Request};
use crate::state::tasks::{endpoint_digest, NotOpened};
use crate::state::uris::to_upstream;
use crate::state::views::Access;
use crate::state::Gateway;

/// A string member of `params`, or the refusal that names it.
pub(crate) fn required_str(
    params: &Map<String, Value>,
    key: &str,
    method: &str,
) -> Result<String, Refusal> {
    params
        .get(key)
        .and_then(Value::as_str)
        .map(str::to_string)
        .ok_or_else(|| Refusal::InvalidParams(format!("{method} needs params.{key} (a string)")))
}

/// `tools/call`: the exposed `name` to its upstream.
pub(crate) fn tool(x: &mut Request, params: Map<String, Value>) -> Result<Call, Refusal> {
    named(x, What::Tool, params)
}

/// `prompts/get`: the exposed `name` to its upstream.
pub(crate) fn prompt(x: &mut Request, params: Map<String, Value>) -> Result<Call, Refusal> {
    named(x, What::Prompt, params)
}

/// A tool or prompt: `params.name` becomes the upstream's own; a tool's
/// override pins and hides arguments (the arguments as sent are kept for the
/// schema check when they are validated).
///
/// A tool name that is no exposed name may be an upstream's own name for a
/// tool (an MCP App inside a host calls its server's tools so): with
/// `[naming] resolve_original`, it names the one tool of the caller's view
/// its upstream calls so.
fn named(x: &mut Request, what: What, mut params: Map<String, Value>) -> Result<Call, Refusal> {
    let (kind, noun) = match what {
        What::Tool => (Kind::Tools, "tool"),
        _ => (Kind::Prompts, "prompt"),
    };
    let name = required_str(&params, "name", &x.method)?;
    // The caller's view (an `Arc`, not a guard): what it may not see is
    // unknown. The entry is borrowed from it; nothing of it is copied but the
    // names the upstream needs.
    let access = x.access();
    let (view, validators) = (access.catalog, access.validators);
    let mut found = view.list(kind).get(&name);
    if found.is_none() && kind == Kind::Tools && x.gw.cfg().naming.resolve_original {
        found = by_own_name(&view.tools, &name)?;
    }
    let resolved = found.and_then(|entry| Some((x.gw.upstream(&entry.upstream)?, entry)));
    let Some((upstream, entry)) = resolved else {
        let held = x.gw.integrity.withholds(kind, &name);
        let unknown = Refusal::UnknownName { kind: noun, name };
        return Err(x.gw.unknown_or_quarantined(held, unknown));
    };
    let task = match what {
        What::Tool => task_hook(x, &upstream, &mut params, &entry.exposed, &entry.original)?,
        _ => TaskHook::None,
    };
    let cfg = x.gw.cfg();
    let mut sent_arguments = None;
    let mut injected = None;
    if let Some(adjust) = &entry.adjust {
        if what == What::Tool && cfg.validate_arguments {
            sent_arguments = Some(params.get("arguments").cloned().unwrap_or(Value::Null));
        }
        adjust.apply(&mut params);
        if !adjust.pin.is_empty() {
            injected = Some(Value::Object(adjust.pin.clone()));
        }
    }
    let original = entry.original.clone();
    let headers = standard_headers(&x.method, Some(&original));
    params.insert("name".into(), Value::String(original.clone()));
    // What rules, validators and limits key on: the exposed name, whichever
    // name found the entry (an own name, on an app's call or an endpoint
    // with `naming = "original"`).
    let exposed = if entry.exposed == name {
        name
    } else {
        entry.exposed.clone()
    };
    let output_check = (what == What::Tool
        && cfg.validate_output != manifold_config::OutputMode::Off)
        .then(|| OutputCheck {
            tool: exposed.clone(),
            validators: validators.clone(),
        });
    let shape = match what {
        What::Tool => ResultShape::Tool,
        _ => ResultShape::Rpc,
    };
    Ok(Call {
        what,
        exposed,
        view: Some(view.clone()),
        validators: Some(validators),
        params,
        sent_arguments,
        upstream,
        headers,
        shape,
        output_check,
        permit: None,
        confirmed: false,
        task,
        expected: None,
        facts: Facts {
            original: Some(original),
            injected,
            ..Facts::default()
        },
    })
}

/// A `tools/call`'s tasks: a 2026-07-28 call may be answered with a task
/// (sealed for its caller), a session-era one never (a task an upstream
/// answers it with is refused); the 2025-11-25 `task` parameter is not relayed —
/// ignored by the extension, it is taken off before a session-era upstream
/// (which would make a task no one could read through Manifold), and refused
/// from a session-era client, which Manifold offers no 2025-11-25 tasks.
fn task_hook(
    x: &Request,
    upstream: &Upstream,
    params: &mut Map<String, Value>,
    tool: &str,
    original: &str,
) -> Result<TaskHook, Refusal> {
    match &x.caller {
        Caller::Stateless(c) => {
            if !upstream.is_stateless() {
                params.shift_remove("task");
            }
            Ok(TaskHook::Create {
                owner: x.principal.audit_name(),
                declared: manifold_protocol::tasks::declares_extension(&c.capabilities),
                endpoint: endpoint_digest(&upstream.config().transport),
                tool: tool.to_string(),
                original: original.to_string(),
                path: x.arrival.endpoint.to_string(),
            })
        }
        Caller::Session(_) if params.contains_key("task") => Err(Refusal::TasksNotOffered(
            "Manifold relays no 2025-11-25 task augmentation (`task` in tools/call): it offers \
             tasks only to 2026-07-28 clients that declare io.modelcontextprotocol/tasks; call \
             the tool without `task`"
                .into(),
        )),
        // Whichever member answers: only an extension task (`resultType:
        // "task"`, which a session-era upstream never sends) is refused; the
        // operator's `manifold call` cannot hold one either.
        Caller::Session(_) | Caller::Operator(_) => Ok(TaskHook::Unwanted),
        Caller::Initializing => Ok(TaskHook::None),
    }
}

/// `tasks/get`, `tasks/update`, `tasks/cancel`: the client's task id to the
/// upstream that made the task, for its owner only, with the upstream's own
/// id in `params.taskId`. Refused, in this order: a session-era client (no
/// tasks are offered there); a request that does not declare the extension
/// (before the id is looked at); a malformed request; an id that does not
/// open for this caller, or whose upstream is gone or re-pointed (all alike:
/// an unknown task); an expired one; `tasks/update` for a tool the caller's
/// current view no longer holds (a reload hid it: as unknown).
pub(crate) async fn task(x: &mut Request, mut params: Map<String, Value>) -> Result<Call, Refusal> {
    let Caller::Stateless(c) = &x.caller else {
        return Err(Refusal::TasksNotOffered(format!(
            "{}: Manifold relays tasks (the io.modelcontextprotocol/tasks extension) to \
             2026-07-28 clients only, and issues no 2025-11-25 task ids",
            x.method
        )));
    };
    if x.era != Era::Stateless || !manifold_protocol::tasks::declares_extension(&c.capabilities) {
        return Err(Refusal::TasksExtensionRequired {
            method: x.method.clone(),
        });
    }
    let client_id = required_str(&params, "taskId", &x.method)?;
    if x.method == manifold_protocol::tasks::TASKS_UPDATE
        && !params.get("inputResponses").is_some_and(Value::is_object)
    {
        return Err(Refusal::InvalidParams(
            "tasks/update needs params.inputResponses (an object)".into(),
        ));
    }
    let facts = match x
        .gw
        .tables
        .mcp_tasks
        .open(&client_id, &x.principal.audit_name())
    {
        Ok(f) => f,
        Err(NotOpened::Unknown) => return Err(Refusal::UnknownTask),
        Err(NotOpened::Expired(facts)) => return Err(task_expired(x, &client_id, &facts).await),
    };
    let decided = Facts {
        name: Some(facts.tool.clone()),
        original: Some(facts.original.clone()),
        task: Some(manifold_audit::TaskEvent {
            id: crate::state::tasks::record_id(&client_id),
            stage: manifold_audit::TaskStage::Relayed,
            duration_us: None,
            is_error: false,
        }),
        ..Facts::default()
    };
    // Made through another endpoint: unknown here, as another principal's.
    if facts
        .path
        .as_deref()
        .is_some_and(|p| p != &*x.arrival.endpoint)
    {
        return Err(Refusal::UnknownTask);
    }
    let upstream =
        x.gw.upstream(&facts.upstream)
            .filter(|u| endpoint_digest(&u.config().transport) == facts.endpoint)
            .ok_or(Refusal::UnknownTask)?;
    if x.method == manifold_protocol::tasks::TASKS_UPDATE
        && x.access()
            .catalog
            .list(Kind::Tools)
            .get(&facts.tool)
            .is_none()
    {
        return Err(Refusal::UnknownTask);
    }
    params.insert("taskId".into(), Value::String(facts.upstream_id.clone()));
    Ok(Call {
        what: What::Task,
        exposed: facts.tool.clone(),
        view: None,
        validators: None,
        params,
        sent_arguments: None,
        headers: standard_headers(&x.method, Some(&facts.upstream_id)),
        upstream,
        shape: ResultShape::Rpc,
        output_check: None,
        permit: None,
        confirmed: false,
        task: TaskHook::Relay {
            client_id,
            facts: Box::new(facts),
            method: x.method.clone(),
        },
        expected: None,
        facts: decided,
    })
}

/// `resources/read`: the URI to its owner (URIs are never renamed). Under
/// resource rules `params.uri` becomes the form the rules matched
/// ([`Access::resource_uri`]): what is checked is what the upstream reads.
pub(crate) fn resource(x: &mut Request, mut params: Map<String, Value>) -> Result<Call, Refusal> {
    let asked = required_str(&params, "uri", &x.method)?;
    let (gw, access) = (&x.gw, x.access());
    let base = access.base().clone();
    let uri = access.resource_uri(&base, &asked)?;
    // A URI only a withheld template routes is not read by a guess either
    // (`owner_of` would fall back to the only upstream serving resources);
    // nor is a file of a withheld skill.
    let held = (base.resources.owner(&uri).is_none() && gw.integrity.withholds_uri(&uri))
        || gw.integrity.withholds_skill_path(&uri);
    // A file of a skill the caller's view does not hold is hidden with it.
    let hidden_skill = base
        .skills
        .holding(&uri)
        .is_some_and(|skill| access.catalog.skills.owner(skill).is_none());
    let owner = (access.may_read(&base, &uri) && !held && !hidden_skill)
        .then(|| gw.owner_of(&uri))
        .flatten()
        .filter(|u| access.reaches(u.name()));
    let Some(upstream) = owner else {
        // The URI as asked: a hidden URI answers exactly as an unknown one.
        let unknown = Refusal::ResourceNotFound { uri: asked };
        return Err(gw.unknown_or_quarantined(held, unknown));
    };
    // A namespaced URI goes as its upstream wrote it (`[naming] resources`).
    let uris = gw.live().uris.clone();
    let exposed = uri;
    let uri = to_upstream(&uris, upstream.name(), &exposed).into_owned();
    if uri != asked {
        params.insert("uri".into(), Value::String(uri.clone()));
    }
    // A file a skill announced with a digest: its bytes are checked.
    let expected = access.catalog.skills.file(&exposed).map(|file| Expected {
        uri: exposed.clone(),
        original: uri.clone(),
        file: file.clone(),
    });
    Ok(Call {
        what: What::Resource,
        exposed: String::new(),
        view: None,
        validators: None,
        params,
        sent_arguments: None,
        upstream,
        headers: standard_headers(&x.method, Some(&uri)),
        shape: ResultShape::Read,
        output_check: None,
        permit: None,
        confirmed: false,
        task: TaskHook::None,
        expected,
        facts: Facts::original(uri),
    })
}

/// `skills/get` (SEP-2640): the skill's `SKILL.md` URI to the upstream that
/// serves it: the one its namespace names, the listed owner, or (a skill no
/// listing holds) the only upstream that declares Skills. A skill the
/// caller's view hides (`skills` rules, an endpoint's upstreams, resource
/// rules on its URI) or `[integrity]` holds answers as one no one serves.
pub(crate) fn skill(x: &mut Request, mut params: Map<String, Value>) -> Result<Call, Refusal> {
    let asked = required_str(&params, "uri", &x.method)?;
    let target = skill_target(x, &asked, manifold_protocol::extensions::declares_skills);
    let Some((upstream, uri)) = target else {
        let held = x.gw.integrity.withholds_skill_path(&asked);
        let unknown = Refusal::InvalidParams(format!("No skill is served at {asked}"));
        return Err(x.gw.unknown_or_quarantined(held, unknown));
    };
    Ok(skills_call(
        x,
        What::Skill,
        &mut params,
        upstream,
        uri,
        &asked,
    ))
}

/// `resources/directory/read` (SEP-2640): the directory's URI to the
/// upstream that serves it, which must declare `directoryRead`; a directory
/// of a skill the caller may not see answers as no directory.
pub(crate) fn directory(x: &mut Request, mut params: Map<String, Value>) -> Result<Call, Refusal> {
    let asked = required_str(&params, "uri", &x.method)?;
    let target = skill_target(
        x,
        &asked,
        manifold_protocol::extensions::declares_directory_read,
    );
    let Some((upstream, uri)) = target else {
        let held = x.gw.integrity.withholds_skill_path(&asked);
        let unknown = Refusal::InvalidParams(format!(
            "{asked} is not a directory resource Manifold can read: no upstream that declares \
             directoryRead (io.modelcontextprotocol/skills) serves it"
        ));
        return Err(x.gw.unknown_or_quarantined(held, unknown));
    };
    Ok(skills_call(
        x,
        What::Directory,
        &mut params,
        upstream,
        uri,
        &asked,
    ))
}

/// The upstream a Skills request for `asked` goes to, and the URI as that
/// upstream writes it; `None` when the caller may not reach it, it is held,
/// or no upstream that `serves` (by its capabilities) owns it.
fn skill_target(
    x: &mut Request,
    asked: &str,
    serves: impl Fn(&Map<String, Value>) -> bool,
) -> Option<(Upstream, String)> {
    let (gw, access) = (&x.gw, x.access());
    let base = access.base().clone();
    let hidden = base
        .skills
        .holding(asked)
        .is_some_and(|skill| access.catalog.skills.owner(skill).is_none());
    if hidden || gw.integrity.withholds_skill_path(asked) || !access.may_use_uri(asked) {
        return None;
    }
    let serving = |u: &Upstream| u.status().facts.is_some_and(|f| serves(&f.capabilities));
    let uris = gw.live().uris.clone();
    let owner = match uris.resolve(asked) {
        Some((name, _)) => gw.upstream(name),
        None => match access.catalog.skills.holding(asked) {
            Some(skill) => access
                .catalog
                .skills
                .owner(skill)
                .and_then(|name| gw.upstream(name)),
            // A namespaced scheme's URI that names no upstream: no one's.
            None if uris.claims(asked) => None,
            // Unlisted: the one upstream that serves these requests.
            None => {
                let mut all = gw.upstreams().into_iter().filter(|u| serving(u));
                match (all.next(), all.next()) {
                    (Some(only), None) => Some(only),
                    _ => None,
                }
            }
        },
    }
    .filter(|u| serving(u) && access.reaches(u.name()))?;
    let uri = to_upstream(&uris, owner.name(), asked).into_owned();
    Some((owner, uri))
}

/// A Skills request's [`Call`]: `params.uri` as the upstream writes it.
fn skills_call(
    x: &Request,
    what: What,
    params: &mut Map<String, Value>,
    upstream: Upstream,
    uri: String,
    asked: &str,
) -> Call {
    if uri != asked {
        params.insert("uri".into(), Value::String(uri.clone()));
    }
    Call {
        what,
        exposed: String::new(),
        view: None,
        validators: None,
        params: std::mem::take(params),
        sent_arguments: None,
        headers: standard_headers(&x.method, Some(&uri)),
        upstream,
        // A skill's entry carries cache hints in the 2026-07-28 era, as a
        // read does; a directory's listing does not.
        shape: match what {
            What::Skill => ResultShape::Read,
            _ => ResultShape::Rpc,
        },
        output_check: None,
        permit: None,
        confirmed: false,
        task: TaskHook::None,
        expected: None,
        facts: Facts::original(uri),
    }
}

/// `completion/complete`: a `ref/prompt` goes to the prompt's upstream with its
/// original name (rewritten in `params`); a `ref/resource` to the owner of the
/// URI or template.
pub(crate) fn completion(x: &mut Request, mut params: Map<String, Value>) -> Result<Call, Refusal> {
    let upstream = completion_target(&x.gw, &x.access(), &mut params)?;
    Ok(Call {
        what: What::Completion,
        exposed: String::new(),
        view: None,
        validators: None,
        params,
        sent_arguments: None,
        upstream,
        headers: standard_headers(m::COMPLETION_COMPLETE, None),
        shape: ResultShape::Rpc,
        output_check: None,
        permit: None,
        confirmed: false,
        task: TaskHook::None,
        expected: None,
        facts: Facts::default(),
    })
}

/// The one tool of `tools` (a caller's view) whose upstream calls it `name`;
/// `None` when none does; refused, naming them, when several do.
fn by_own_name<'a>(
    tools: &'a manifold_catalog::NamedList,
    name: &str,
) -> Result<Option<&'a manifold_catalog::Entry>, Refusal> {
    let mut matching = tools.entries().iter().filter(|e| e.original == name);
    let Some(first) = matching.next() else {
        return Ok(None);
    };
    let rest: Vec<&manifold_catalog::Entry> = matching.collect();
    if rest.is_empty() {
        return Ok(Some(first));
    }
    let candidates: Vec<String> = std::iter::once(first)
        .chain(rest)
        .map(|e| format!("`{}` ({})", e.exposed, e.upstream))
        .collect();
    Err(Refusal::InvalidParams(format!(
        "Unknown tool: {name}. Several upstreams have a tool of that own name: {}. Call one by its \
         exposed name, or give each app server its own [[endpoint]] so that an app's calls reach \
         its own server",
        candidates.join(", ")
    )))
}

/// The upstream a completion's reference goes to; its prompt name or URI is
/// rewritten in `params`.
fn completion_target(
    gw: &Gateway,
    access: &Access,
    params: &mut Map<String, Value>,
) -> Result<Upstream, Refusal> {
    let bad = |m: &str| Refusal::InvalidParams(m.to_string());
    let Some(reference) = params.get_mut("ref").and_then(Value::as_object_mut) else {
        return Err(bad("completion/complete needs params.ref (an object)"));
    };
    let kind = reference.get("type").and_then(Value::as_str).unwrap_or("");
    let upstream = match kind {
        "ref/prompt" => {
            let Some(name) = reference.get("name").and_then(Value::as_str) else {
                return Err(bad("ref/prompt needs a `name` (a string)"));
            };
            let Some(entry) = access.catalog.prompts.get(name) else {
                let held = gw.integrity.withholds(Kind::Prompts, name);
                let unknown = Refusal::InvalidParams(format!("Unknown prompt: {name}"));
                return Err(gw.unknown_or_quarantined(held, unknown));
            };
            reference.insert("name".into(), Value::String(entry.original.clone()));
            gw.upstream(&entry.upstream)
        }
        "ref/resource" => {
            let Some(uri) = reference.get("uri").and_then(Value::as_str) else {
                return Err(bad("ref/resource needs a `uri` (a string)"));
            };
            // URI rules go by pattern: refusing here tells nothing of what
            // exists.
            let base = access.base();
            if base.resources.template_owner(uri).is_none()
                && base.resources.owner(uri).is_none()
                && gw.integrity.withholds_uri(uri)
            {
                let unknown = bad("No upstream owns what this completion refers to");
                return Err(gw.unknown_or_quarantined(true, unknown));
            }
            match base.resources.template_owner(uri).cloned() {
                // A template the upstream listed goes back as it listed it.
                Some(name) => access
                    .may_use_uri(uri)
                    .then(|| gw.upstream(&name))
                    .flatten()
                    .filter(|u| access.reaches(u.name())),
                None => {
                    let uri = access.resource_uri(base, uri)?;
                    let owner = access
                        .may_use_uri(&uri)
                        .then(|| gw.owner_of(&uri))
                        .flatten()
                        .filter(|u| access.reaches(u.name()));
                    reference.insert("uri".into(), Value::String(uri));
                    owner
                }
            }
        }
        other => {
            return Err(Refusal::InvalidParams(format!(
                "Unknown ref type `{other}`: expected ref/prompt or ref/resource"
            )))
        }
    };
    let upstream =
        upstream.ok_or_else(|| bad("No upstream owns what this completion refers to"))?;
    // A namespaced URI or template goes back as its upstream wrote it.
    if let Some(Value::String(u)) = reference.get_mut("uri") {
        let uris = gw.live().uris.clone();
        if let std::borrow::Cow::Owned(original) = to_upstream(&uris, upstream.name(), u) {
            *u = original;
        }
    }
    Ok(upstream)
}

/// The upstream a `tools/call`, `prompts/get`, `resources/read` or
/// `completion/complete` would go to in the caller's view, without rewriting
/// anything (a 2026-07-28 retry asks whose `requestState` it carries, and
/// whether the caller may still reach it); `None` when it names nothing the
/// caller may use.
pub(crate) fn upstream_of(
    gw: &Gateway,
    access: &Access,
    method: &str,
    params: &Map<String, Value>,
) -> Option<Upstream> {
    let name = |k: &str| params.get(k).and_then(Value::as_str);
    let kind = match method {
        m::TOOLS_CALL => Kind::Tools,
        m::PROMPTS_GET => Kind::Prompts,
        m::RESOURCES_READ => {
            let base = access.base();
            let uri = access.resource_uri(base, name("uri")?).ok()?;
            return access
                .may_read(base, &uri)
                .then(|| gw.owner_of(&uri))
                .flatten()
                .filter(|u| access.reaches(u.name()));
        }
        m::COMPLETION_COMPLETE => {
            // Resolved on a copy: the real resolution rewrites the reference.
            return completion_target(gw, access, &mut params.clone()).ok();
        }
        _ => return None,
    };
    let entry = access.catalog.list(kind).get(name("name")?)?;
    gw.upstream(&entry.upstream)
}

/// A task id that opened for its owner but is past its expiry: its end is
/// recorded as `expired` (once), and the refusal says so.
async fn task_expired(
    x: &Request,
    client_id: &str,
    facts: &crate::state::tasks::TaskFacts,
) -> Refusal {
    let end = crate::observe::TaskEnd {
        client_record_id: crate::state::tasks::record_id(client_id),
        facts,
        outcome: manifold_audit::Outcome::Expired,
        is_error: false,
        owner: x.principal.audit_name(),
    };
    crate::observe::task_end(&x.gw, end, x.obs.as_ref()).await;
    Refusal::TaskExpired
}
