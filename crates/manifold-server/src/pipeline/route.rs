//! Phase route: one method table for both eras — which methods exist in which
//! era, which are audited, and the handler of each.
//!
//! | method | session era | 2026-07-28 | audited | handler |
//! |---|---|---|---|---|
//! | `initialize` | yes | 404 | no | `surface::initialize` |
//! | `ping` | yes | 404 | no | `surface::ping` |
//! | `server/discover` | -32601 | yes | no | `surface::discover` |
//! | `tools/list`, `prompts/list`, `resources/list`, `resources/templates/list` | yes | yes | no | `surface::list` |
//! | `tools/call` | yes | yes | yes | `call::tool` |
//! | `prompts/get` | yes | yes | yes | `call::prompt` |
//! | `resources/read` | yes | yes | yes | `call::resource` |
//! | `completion/complete` | yes | yes | yes | `call::completion` |
//! | `resources/subscribe`, `resources/unsubscribe` | yes | 404 | no | `resources` |
//! | `logging/setLevel` | yes | 404 | no | `mcp_logging::set_level` |
//! | `subscriptions/listen` | -32601 | yes | no | `listen::listen` |
//! | `tasks/get` | -32601 | yes | no (counted) | `call::task` |
//! | `tasks/update`, `tasks/cancel` | -32601 | yes | yes | `call::task` |
//! | `tasks/result`, `tasks/list` | -32601 | 404 | no | refused |
//! | `skills/list` | yes | yes | no | `surface::list` |
//! | `skills/get`, `resources/directory/read` | yes | yes | yes | `call::skills` |
//!
//! The Skills extension's methods (SEP-2640) exist in both eras, as the
//! SEP defines them for every revision (2026-07-28 results add `ttlMs` and
//! `cacheScope`); they answer -32601 to a caller whose view holds no upstream
//! that declares the extension.
//!
//! `tasks/get` is forwarded but not audited: a poll reads what the task's
//! records say (its creation, its end) and acts on nothing, so it is counted
//! (`manifold_requests_total{method="tasks/get"}`) and the end it may show is
//! recorded once, as the task's end record. The `tasks/*` rows exist in both
//! eras so that a session-era client is told why (Manifold offers tasks to
//! 2026-07-28 clients only), not just "method not found".
//!
//! The audited methods are the ones that reach an upstream item a client names
//! (the forwarded ones, which go through the call chain, `call`): every exit of
//! theirs writes one audit record (see `observe`).
//!
//! For a 2026-07-28 request to a forwarded method, two things happen before its
//! handler: a retry carrying `requestState` for a call Manifold holds resumes that
//! call (`call::held`: the chain's resolve and resume steps) — after the
//! caller's current view is checked for its target, so a reload that hid a
//! tool stops its held calls — and the
//! `_meta` keys of this era, which are for Manifold, are taken off the params the
//! upstream will see.
//!
//! Not here: admission (`admit`), the handlers themselves (`handlers`, `call`).

use manifold_protocol::methods as m;
use manifold_protocol::tasks;
use serde_json::{Map, Value};

use crate::call;
use crate::era::Era;
use crate::handlers::discovery::{self, Meta};
use crate::handlers::{code, listen, mcp_logging, resources, surface};
use crate::observe::Facts;
use crate::refusal::Refusal;
use crate::reply::Reply;
use crate::request::Request;

/// Where a method exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Eras {
    Both,
    SessionOnly,
    StatelessOnly,
}

/// What serves a method.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Handler {
    Initialize,
    Ping,
    Discover,
    List,
    Tool,
    Prompt,
    Read,
    Complete,
    Subscribe,
    Unsubscribe,
    SetLevel,
    Listen,
    /// `tasks/get`, `tasks/update`, `tasks/cancel`.
    Task,
    /// `tasks/result`, `tasks/list`: tasks forms Manifold does not offer.
    TasksGone,
    /// `skills/get`, `resources/directory/read`.
    Skills,
}

/// One row of the method table.
#[derive(Debug, Clone, Copy)]
struct Method {
    eras: Eras,
    audited: bool,
    handler: Handler,
}

impl Method {
    const fn new(eras: Eras, audited: bool, handler: Handler) -> Method {
        Method {
            eras,
            audited,
            handler,
        }
    }

    fn serves(&self, era: Era) -> bool {
        match self.eras {
            Eras::Both => true,
            Eras::SessionOnly => era == Era::Session,
            Eras::StatelessOnly => era == Era::Stateless,
        }
    }

    /// Forwarded to an upstream (and audited).
    fn forwarded(&self) -> bool {
        matches!(
            self.handler,
            Handler::Tool
                | Handler::Prompt
                | Handler::Read
                | Handler::Complete
                | Handler::Task
                | Handler::Skills
        )
    }
}

fn lookup(method: &str) -> Option<Method> {
    use Eras::*;
    use Handler::*;
    Some(match method {
        m::INITIALIZE => Method::new(SessionOnly, false, Initialize),
        m::PING => Method::new(SessionOnly, false, Ping),
        m::SERVER_DISCOVER => Method::new(StatelessOnly, false, Discover),
        m::TOOLS_LIST | m::PROMPTS_LIST | m::RESOURCES_LIST | m::RESOURCES_TEMPLATES_LIST => {
            Method::new(Both, false, List)
        }
        m::TOOLS_CALL => Method::new(Both, true, Tool),
        m::PROMPTS_GET => Method::new(Both, true, Prompt),
        m::RESOURCES_READ => Method::new(Both, true, Read),
        m::COMPLETION_COMPLETE => Method::new(Both, true, Complete),
        m::RESOURCES_SUBSCRIBE => Method::new(SessionOnly, false, Subscribe),
        m::RESOURCES_UNSUBSCRIBE => Method::new(SessionOnly, false, Unsubscribe),
        m::LOGGING_SET_LEVEL => Method::new(SessionOnly, false, SetLevel),
        m::SUBSCRIPTIONS_LISTEN => Method::new(StatelessOnly, false, Listen),
        tasks::TASKS_GET => Method::new(Both, false, Task),
        tasks::TASKS_UPDATE | tasks::TASKS_CANCEL => Method::new(Both, true, Task),
        tasks::TASKS_RESULT | tasks::TASKS_LIST => Method::new(Both, false, TasksGone),
        m::SKILLS_LIST => Method::new(Both, false, List),
        m::SKILLS_GET | m::RESOURCES_DIRECTORY_READ => Method::new(Both, true, Skills),
        _ => return None,
    })
}

/// A method of the session era that 2026-07-28 removed (its requests get 404).
pub(crate) fn session_era_only(method: &str) -> bool {
    lookup(method).is_some_and(|m| m.eras == Eras::SessionOnly)
}

/// Routes an admitted request to its handler.
pub(crate) async fn route(x: &mut Request, mut msg: Map<String, Value>) -> Result<Reply, Refusal> {
    // Moved out, not cloned: the forwarded params are rewritten in place.
    let mut params = match msg.remove("params") {
        Some(Value::Object(p)) => p,
        _ => Map::new(),
    };
    let Some(method) = lookup(&x.method).filter(|m| m.serves(x.era)) else {
        return Err(Refusal::MethodNotFound(x.method.clone()));
    };
    // A search endpoint's meta-tools: `call_tool` becomes the direct call of
    // the tool it names, before anything else looks at the call (a retry's
    // held call is the real tool's); `search_tools` is answered here.
    let meta = match method.handler {
        Handler::Tool => discovery::meta(x, &params),
        _ => None,
    };
    if meta == Some(Meta::Call) {
        if let Err(r) = discovery::unwrap_call(x, &mut params) {
            if let Some(o) = x.observation() {
                o.audit(&params);
                o.note(Facts::named(discovery::CALL_TOOL));
            }
            return Err(r);
        }
    }
    if x.era == Era::Stateless && method.forwarded() && method.handler != Handler::Task {
        if let Some(reply) = call::held(x, &params).await {
            return reply;
        }
    }
    if x.era == Era::Stateless && method.forwarded() {
        strip_reserved_meta(&mut params);
    }
    if method.audited {
        if let Some(o) = x.observation() {
            o.audit(&params);
            if meta == Some(Meta::Call) {
                o.note(Facts {
                    via: Some(discovery::VIA_CALL_TOOL),
                    ..Facts::default()
                });
            }
        }
    }
    if meta == Some(Meta::Run) {
        // Rate-limited as a tool is, before any work; each of its calls is
        // limited again as the direct call it is.
        // The places are held until the script ends (it may outlive this
        // handler on its stream).
        let places = crate::call::search_places(x, code::RUN_SCRIPT).await?;
        return code::run(x, &params, places).await;
    }
    if meta == Some(Meta::Search) {
        if let Some(o) = x.observation() {
            o.note(Facts::named(discovery::SEARCH_TOOLS));
        }
        // Rate-limited as a tool is, before any work (review 3, finding 7).
        let _places = crate::call::search_places(x, discovery::SEARCH_TOOLS).await?;
        return discovery::search(x, &params).await;
    }
    match method.handler {
        Handler::Initialize => surface::initialize(x, &params),
        Handler::Ping => surface::ping(x),
        Handler::Discover => surface::discover(x),
        Handler::List => surface::list(x, &params),
        Handler::Tool => call::tool(x, params).await,
        Handler::Prompt => call::prompt(x, params).await,
        Handler::Read => call::resource(x, params).await,
        Handler::Complete => call::completion(x, params).await,
        Handler::Subscribe => resources::subscribe(x, params).await,
        Handler::Unsubscribe => resources::unsubscribe(x, params).await,
        Handler::SetLevel => mcp_logging::set_level(x, params).await,
        Handler::Listen => listen::listen(x, params).await,
        Handler::Task => call::task(x, params).await,
        Handler::Skills => call::skills(x, params).await,
        Handler::TasksGone => Err(Refusal::TasksNotOffered(format!(
            "{}: the io.modelcontextprotocol/tasks extension removed it, and Manifold offers \
             no 2025-11-25 tasks; keep the taskId tools/call returned and poll it with tasks/get",
            x.method
        ))),
    }
}

/// The `_meta` keys of the 2026-07-28 revision are for Manifold, not the upstream.
fn strip_reserved_meta(params: &mut Map<String, Value>) {
    if let Some(Value::Object(meta)) = params.get_mut("_meta") {
        meta.retain(|k, _| !k.starts_with(m::meta::RESERVED_PREFIX));
        if meta.is_empty() {
            params.shift_remove("_meta");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stripping_reserved_meta_keeps_the_other_members_in_order() {
        let mut params: Map<String, Value> = serde_json::from_str(
            r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"},"name":"t","arguments":{},"x-extra":1}"#,
        )
        .expect("json");
        strip_reserved_meta(&mut params);
        let keys: Vec<&str> = params.keys().map(String::as_str).collect();
        assert_eq!(keys, ["name", "arguments", "x-extra"]);
    }

    #[test]
    fn the_table_says_where_each_method_exists_and_what_is_audited() {
        let rows = [
            (m::INITIALIZE, true, false, false),
            (m::PING, true, false, false),
            (m::SERVER_DISCOVER, false, true, false),
            (m::TOOLS_LIST, true, true, false),
            (m::RESOURCES_TEMPLATES_LIST, true, true, false),
            (m::TOOLS_CALL, true, true, true),
            (m::PROMPTS_GET, true, true, true),
            (m::RESOURCES_READ, true, true, true),
            (m::COMPLETION_COMPLETE, true, true, true),
            (m::RESOURCES_SUBSCRIBE, true, false, false),
            (m::RESOURCES_UNSUBSCRIBE, true, false, false),
            (m::LOGGING_SET_LEVEL, true, false, false),
            (m::SUBSCRIPTIONS_LISTEN, false, true, false),
            (tasks::TASKS_UPDATE, true, true, true),
            (tasks::TASKS_CANCEL, true, true, true),
            (m::SKILLS_LIST, true, true, false),
            (m::SKILLS_GET, true, true, true),
            (m::RESOURCES_DIRECTORY_READ, true, true, true),
        ];
        for (name, session, stateless, audited) in rows {
            let method = lookup(name).expect(name);
            assert_eq!(method.serves(Era::Session), session, "{name} (session era)");
            assert_eq!(
                method.serves(Era::Stateless),
                stateless,
                "{name} (2026-07-28)"
            );
            assert_eq!(method.audited, audited, "{name} audited");
            assert_eq!(method.forwarded(), audited, "{name}: audited = forwarded");
            assert_eq!(session_era_only(name), session && !stateless, "{name}");
        }
        assert!(lookup("tools/delete").is_none());
        // A poll is forwarded, not audited (see the module doc); the removed
        // tasks methods are rows, so they are refused with a reason.
        let get = lookup(tasks::TASKS_GET).unwrap();
        assert!(get.forwarded() && !get.audited);
        for gone in [tasks::TASKS_RESULT, tasks::TASKS_LIST] {
            let row = lookup(gone).unwrap();
            assert_eq!(row.handler, Handler::TasksGone);
            assert!(row.serves(Era::Stateless) && row.serves(Era::Session));
        }
    }

    #[test]
    fn reserved_meta_keys_are_taken_off_and_others_kept() {
        let mut p: Map<String, Value> = serde_json::from_value(serde_json::json!({
            "name": "t",
            "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "progressToken": 1}
        }))
        .unwrap();
        strip_reserved_meta(&mut p);
        assert_eq!(p["_meta"], serde_json::json!({"progressToken": 1}));
        let mut p: Map<String, Value> = serde_json::from_value(serde_json::json!({
            "_meta": {"io.modelcontextprotocol/clientCapabilities": {}}
        }))
        .unwrap();
        strip_reserved_meta(&mut p);
        assert!(!p.contains_key("_meta"));
    }
}
