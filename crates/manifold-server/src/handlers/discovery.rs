//! Tool search on an endpoint with `discovery = "search"`: its `tools/list`
//! holds the meta-tools `search_tools` and `call_tool` (and the
//! `always_visible` tools) instead of every tool; `search_tools {query,
//! limit?}` answers with the full definitions of the best matches in the
//! caller's view of the endpoint, ranked; `call_tool {name, arguments}` is
//! turned into the direct `tools/call` of `name`, which then goes through the
//! whole call chain (`call`) like any other.
//!
//! Invariants: a search sees only the caller's view of its endpoint (the
//! endpoint's index, filtered by the view: never a hidden tool, never a tool
//! of another endpoint); found definitions are the pre-serialized bytes
//! `tools/list` would send (lossless); nothing is kept per session except,
//! with `discovery_expand`, the names a session found (bounded,
//! `MAX_FOUND_TOOLS`); `call_tool` of a tool outside the view answers exactly
//! as of one that does not exist; every refusal here is a tool error a model
//! can act on.
//!
//! Not here: the index and its ranking (manifold-catalog `search`), views
//! and endpoints (`state::views`, `state::endpoints`), the call chain.

use bytes::Bytes;
use manifold_catalog::search::{SearchRequest, DEFAULT_LIMIT, MAX_LIMIT, MAX_QUERY_CHARS};
use manifold_catalog::Catalog;
use manifold_protocol::jsonrpc;
use serde_json::{json, Map, Value};
use std::sync::{Arc, OnceLock};

use crate::era::Era;
use crate::refusal::{Refusal, ToolError};
use crate::reply::Reply;
use crate::request::Request;
use crate::state::endpoints::Endpoint;

/// The search meta-tool's name.
pub const SEARCH_TOOLS: &str = "search_tools";
/// The call meta-tool's name.
pub const CALL_TOOL: &str = "call_tool";
/// `via` in the audit record of a tool called through `call_tool`.
pub const VIA_CALL_TOOL: &str = "call_tool";

/// Which meta-tool a `tools/call` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Meta {
    Search,
    Call,
    /// `run_script`, on a code endpoint (`handlers/code`).
    Run,
}

/// The meta-tool a `tools/call` on a search or code endpoint names, if any.
/// On such an endpoint the meta-tools own their names: an upstream tool
/// exposed as `search_tools` or `call_tool` is reached through `call_tool`
/// (search) or a script's `call` (code).
pub(crate) fn meta(x: &Request, params: &Map<String, Value>) -> Option<Meta> {
    let endpoint = x.access_endpoint();
    let discovery = endpoint.as_ref().map(|e| &e.discovery)?;
    match params.get("name").and_then(Value::as_str) {
        Some(SEARCH_TOOLS) if discovery.is_search() => Some(Meta::Search),
        Some(CALL_TOOL) if discovery.is_search() && !discovery.is_code() => Some(Meta::Call),
        Some(super::code::tool::RUN_SCRIPT) if discovery.is_code() => Some(Meta::Run),
        _ => None,
    }
}

/// The meta-tools' definitions, serialized once: `search_tools` of a search
/// endpoint, `call_tool`, and `search_tools` of a code endpoint.
fn meta_tools() -> &'static (Bytes, Bytes, Bytes) {
    static TOOLS: OnceLock<(Bytes, Bytes, Bytes)> = OnceLock::new();
    TOOLS.get_or_init(|| {
        let how = |then: &str| {
            format!(
                "Find the tools of this server that fit a task. Describe the task in a few words \
                 (\"create a pull request\", \"restart a deployment\"); the answer holds the full \
                 definitions of the best matches, best first (`tools`). {then}"
            )
        };
        let mut search = json!({
            "name": SEARCH_TOOLS,
            "title": "Search tools",
            "description": how(&format!("Call one with {CALL_TOOL}, by its exact name, with arguments that fit its inputSchema.")),
            "inputSchema": {
                "type": "object",
                "properties": {
                    "query": {
                        "type": "string",
                        "description": "The task, in a few words.",
                        "minLength": 1,
                        "maxLength": MAX_QUERY_CHARS,
                    },
                    "limit": {
                        "type": "integer",
                        "description": "How many tools to return at most.",
                        "minimum": 1,
                        "maximum": MAX_LIMIT,
                        "default": DEFAULT_LIMIT,
                    },
                },
                "required": ["query"],
            },
            "outputSchema": {
                "type": "object",
                "properties": {
                    "tools": {
                        "type": "array",
                        "description": "The matching tools' definitions, as tools/list gives them, best first.",
                        "items": {"type": "object"},
                    },
                },
                "required": ["tools"],
            },
            "annotations": {"readOnlyHint": true, "openWorldHint": false},
        });
        let call = json!({
            "name": CALL_TOOL,
            "title": "Call a tool",
            "description": format!(
                "Call a tool found with {SEARCH_TOOLS}: its exact `name` and its `arguments` \
                 (an object that fits the tool's inputSchema). The answer is the tool's own result."
            ),
            "inputSchema": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "description": "The tool's name, as search_tools gave it."},
                    "arguments": {"type": "object", "description": "The tool's arguments."},
                },
                "required": ["name"],
            },
        });
        let bytes = |v: &Value| Bytes::from(v.to_string());
        let (search_bytes, call_bytes) = (bytes(&search), bytes(&call));
        search["description"] = Value::String(how(&format!(
            "Then call them from one {} script, by their exact names: `call(name, arguments)`.",
            super::code::tool::RUN_SCRIPT
        )));
        (search_bytes, call_bytes, bytes(&search))
    })
}

/// A search endpoint's `tools/list` page: the meta-tools, then the tools of
/// `view` the endpoint keeps visible, then `found` (tools a session's
/// searches found, `discovery_expand`) that the view still holds.
fn page(endpoint: &Endpoint, view: &Catalog, found: &[String], run: Option<&[u8]>) -> Bytes {
    let (search, call, search_code) = meta_tools();
    let (search, second): (&[u8], &[u8]) = match run {
        Some(run) => (search_code, run),
        None => (search, call),
    };
    let mut out = Vec::with_capacity(search.len() + second.len() + 64);
    out.extend_from_slice(b"{\"tools\":[");
    out.extend_from_slice(search);
    out.push(b',');
    out.extend_from_slice(second);
    let mut listed = std::collections::HashSet::new();
    for e in view.tools.entries() {
        if endpoint.always_visible(&e.exposed) {
            listed.insert(e.exposed.as_str());
            out.push(b',');
            out.extend_from_slice(e.json());
        }
    }
    for name in found {
        if let Some(e) = view
            .tools
            .get(name)
            .filter(|e| !listed.contains(e.exposed.as_str()))
        {
            out.push(b',');
            out.extend_from_slice(e.json());
        }
    }
    out.extend_from_slice(b"]}");
    Bytes::from(out)
}

/// `tools/list` on a search endpoint (one page: it is short by design).
pub(crate) fn list(x: &Request, cursor: Option<&str>) -> Result<Bytes, Refusal> {
    if cursor.is_some() {
        return Err(Refusal::InvalidParams(
            "Invalid cursor: this endpoint's tools/list has one page (find the other tools with search_tools)".into(),
        ));
    }
    let access = x.access();
    let Some(endpoint) = access.endpoint.clone() else {
        return Ok(page_for_nothing());
    };
    let found = match (endpoint.discovery.expand, x.caller.session()) {
        (true, Some(s)) => s.found_tools(),
        _ => Vec::new(),
    };
    // A code endpoint's second meta-tool: run_script, described with the
    // limits in force.
    let run = endpoint
        .discovery
        .is_code()
        .then(|| super::code::tool::definition(&x.gw.cfg().code).to_string());
    let run = run.as_deref().map(str::as_bytes);
    if found.is_empty() {
        return Ok(access.search_list(&|view| page(&endpoint, view, &[], run)));
    }
    // A session's own list: built for it (bounded by MAX_FOUND_TOOLS).
    Ok(page(&endpoint, &access.catalog, &found, run))
}

fn page_for_nothing() -> Bytes {
    Bytes::from_static(b"{\"tools\":[]}")
}

/// Searches run at once, each on a blocking thread (never an async
/// worker: a flood of long queries must not delay other callers' calls, and
/// the first search after a catalogue change builds the index); the rest
/// wait their turn.
pub const MAX_CONCURRENT_SEARCHES: usize = 2;

/// `search_tools`: the best matches in the caller's view of its endpoint.
pub(crate) async fn search(x: &Request, params: &Map<String, Value>) -> Result<Reply, Refusal> {
    let empty = Map::new();
    let args = match params.get("arguments") {
        None | Some(Value::Null) => &empty,
        Some(Value::Object(a)) => a,
        Some(_) => {
            return Err(ToolError::Search(
                "`arguments` must be an object: {\"query\": \"…\", \"limit\": 8}".into(),
            )
            .into())
        }
    };
    let request =
        SearchRequest::from_arguments(args).map_err(|e| ToolError::Search(e.to_string()))?;
    let tools = found(x, request, true).await?;
    let structured = String::from_utf8_lossy(&tools);
    // The text content carries the same JSON, for clients that read text only.
    let text = Value::String(structured.to_string()).to_string();
    let complete = match x.era {
        Era::Stateless => ",\"resultType\":\"complete\"",
        Era::Session => "",
    };
    let result = format!(
        "{{\"content\":[{{\"type\":\"text\",\"text\":{text}}}],\"structuredContent\":{structured}{complete}}}"
    );
    Ok(Reply::ok(jsonrpc::response_bytes_from_json(
        &x.rpc_id,
        result.as_bytes(),
    )))
}

/// The definitions `request` finds in the caller's view of its endpoint, as
/// `{"tools":[…]}` bytes (each definition as `tools/list` sends it); with
/// `expand`, a session of a `discovery_expand` endpoint keeps what it found.
pub(crate) async fn found(
    x: &Request,
    request: SearchRequest,
    expand: bool,
) -> Result<Vec<u8>, ToolError> {
    // A turn among MAX_CONCURRENT_SEARCHES (the semaphore is never closed).
    let turn = x.gw.search_turns.clone().acquire_owned().await.ok();
    let access = x.access();
    // Without `[discovery.semantic]` nothing more is cloned or done.
    let semantic =
        x.gw.semantic
            .get()
            .map(|s| (s.clone(), x.gw.life.stop.clone()));
    let (access, names) = tokio::task::spawn_blocking(move || {
        let _turn = turn;
        let index = access.search_index();
        let view = &access.catalog;
        // The endpoint's index, filtered by the caller's view: what the view
        // does not hold is never a candidate.
        let keep = |id| index.name(id).is_some_and(|n| view.tools.get(n).is_some());
        let names: Vec<String> = match semantic {
            None => index
                .search(&request, &keep)
                .iter()
                .map(|h| h.name.to_string())
                .collect(),
            Some((semantic, stop)) => hybrid(&access, &index, &semantic, &stop, &request, &keep)
                .into_iter()
                .filter_map(|f| index.name(f.id).map(str::to_string))
                .collect(),
        };
        (access, names)
    })
    .await
    .map_err(|e| ToolError::Search(format!("the search did not finish: {e}")))?;
    let entries: Vec<&manifold_catalog::Entry> = names
        .iter()
        .filter_map(|n| access.catalog.tools.get(n))
        .collect();
    if let (true, Some(endpoint), Some(session)) = (expand, &access.endpoint, x.caller.session()) {
        let names: Vec<&str> = entries.iter().map(|e| e.exposed.as_str()).collect();
        if endpoint.discovery.expand && session.found(&names) {
            // Its tools/list changed: tell it (on its GET stream, if open).
            let note = manifold_protocol::jsonrpc::notification_bytes(
                manifold_protocol::methods::NOTIF_TOOLS_LIST_CHANGED,
                None,
            );
            session.push(Bytes::from(note));
        }
    }
    let mut tools = Vec::with_capacity(entries.iter().map(|e| e.json().len() + 1).sum());
    tools.extend_from_slice(b"{\"tools\":[");
    for (i, e) in entries.iter().enumerate() {
        if i > 0 {
            tools.push(b',');
        }
        tools.extend_from_slice(e.json());
    }
    tools.extend_from_slice(b"]}");
    Ok(tools)
}

/// The hybrid ranking (`[discovery.semantic]`) of `request` over the caller's
/// endpoint, best first with each list's score; lexical alone (and counted) while its
/// tools are being embedded or when the query's vector cannot be had.
/// Blocking: the query is embedded here.
fn hybrid(
    access: &crate::state::views::Access,
    index: &manifold_catalog::search::SearchIndex,
    semantic: &Arc<crate::state::semantic::Semantic>,
    stop: &tokio_util::sync::CancellationToken,
    request: &SearchRequest,
    keep: &dyn Fn(manifold_catalog::search::ToolId) -> bool,
) -> Vec<manifold_semantic::fuse::Fused> {
    use manifold_semantic::fuse;
    let empty = manifold_semantic::dense::DenseIndex::default();
    let dense = access.dense_index(semantic, stop);
    let query = match &dense {
        None => {
            semantic.fell_back("the catalogue's tools are still being embedded");
            None
        }
        Some(_) => match semantic.query_vector(request.text()) {
            Ok(v) => Some(v),
            Err(e) => {
                semantic.fell_back(&e.to_string());
                None
            }
        },
    };
    let dense = dense.as_deref().unwrap_or(&empty);
    fuse::search(
        index,
        dense,
        query.as_deref(),
        request,
        keep,
        fuse::Fusion::default(),
    )
}

/// One tool `manifold search` ranks, with what each ranking said of it.
#[derive(Debug, Clone, PartialEq)]
pub struct Scored {
    pub name: String,
    /// The BM25F score (0: the lexical ranking did not find it).
    pub lexical: f32,
    /// The cosine of the tool's and the query's vectors (`None`: not among
    /// the nearest, or no `[discovery.semantic]`).
    pub semantic: Option<f32>,
    /// What it was ranked by: the fused score (the lexical one without
    /// `[discovery.semantic]`).
    pub fused: f32,
}

impl crate::state::Gateway {
    /// What `search_tools` ranks for `query` (at most `limit`) on the endpoint
    /// at `path`, in `viewer`'s view (`None`: everything the endpoint holds),
    /// with each ranking's score: the operator's way to see why a tool is or
    /// is not found. With `[discovery.semantic]`, waits up to `wait` for the
    /// endpoint's tools to be embedded (lexical only past it, or at once when
    /// their embedding failed).
    pub async fn explain_search(
        self: &Arc<Self>,
        path: &str,
        viewer: Option<&manifold_policy::Identity>,
        query: &str,
        limit: Option<usize>,
        wait: std::time::Duration,
    ) -> Result<Vec<Scored>, String> {
        let request = SearchRequest::new(query, limit).map_err(|e| e.to_string())?;
        let generation = self.generation.load_full();
        if generation.views.endpoints().at(path).is_none() {
            return Err(format!("no endpoint is served at `{path}`"));
        }
        let access = crate::state::views::Access::of(
            &generation.views,
            &generation.validators,
            path,
            viewer,
        );
        let semantic = self.semantic.get().cloned();
        if let Some(s) = &semantic {
            // Lexical past it, or at once when the embedding failed.
            let _ = access.dense_index_within(s, &self.life.stop, wait).await;
        }
        let stop = self.life.stop.clone();
        tokio::task::spawn_blocking(move || {
            let index = access.search_index();
            let view = &access.catalog;
            let keep = |id| index.name(id).is_some_and(|n| view.tools.get(n).is_some());
            let fused = match &semantic {
                Some(s) => hybrid(&access, &index, s, &stop, &request, &keep),
                None => manifold_semantic::fuse::search(
                    &index,
                    &manifold_semantic::dense::DenseIndex::default(),
                    None,
                    &request,
                    &keep,
                    manifold_semantic::fuse::Fusion::default(),
                ),
            };
            fused
                .into_iter()
                .filter_map(|f| {
                    Some(Scored {
                        name: index.name(f.id)?.to_string(),
                        lexical: f.lexical,
                        semantic: f.semantic,
                        fused: f.score,
                    })
                })
                .collect()
        })
        .await
        .map_err(|e| format!("the search did not finish: {e}"))
    }
}

/// `call_tool {name, arguments}`: `params` becomes the direct `tools/call` of
/// `name` (every other member — `_meta`, a `requestState` — kept), for the
/// chain to take as it is. A name the caller's view does not hold is an
/// unknown tool, whether it exists elsewhere or not.
pub(crate) fn unwrap_call(x: &mut Request, params: &mut Map<String, Value>) -> Result<(), Refusal> {
    let args = match params.get("arguments") {
        Some(Value::Object(a)) => a.clone(),
        _ => {
            return Err(ToolError::CallTool(
                "its arguments must be an object: {\"name\": \"<tool>\", \"arguments\": {…}}"
                    .into(),
            )
            .into())
        }
    };
    let Some(Value::String(name)) = args.get("name") else {
        return Err(ToolError::CallTool(
            "`name` must be a string: the exact name of a tool search_tools gave".into(),
        )
        .into());
    };
    let arguments = match args.get("arguments") {
        None | Some(Value::Null) => Value::Object(Map::new()),
        Some(Value::Object(a)) => Value::Object(a.clone()),
        Some(other) => {
            return Err(ToolError::CallTool(format!(
                "`arguments` must be an object (the tool's arguments by name), not {}",
                manifold_foundation::json::type_name(other)
            ))
            .into())
        }
    };
    if x.access().catalog.tools.get(name).is_none() {
        return Err(ToolError::UnknownTool(name.clone()).into());
    }
    params.insert("name".into(), Value::String(name.clone()));
    params.insert("arguments".into(), arguments);
    Ok(())
}
