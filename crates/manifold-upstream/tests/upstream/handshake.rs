//! The handshake (`src/handshake.rs`) against a scripted Streamable-HTTP
//! upstream: `initialize` asks for Manifold's newest revision and speaks the
//! one the server answers when Manifold speaks it (the newest both share),
//! and refuses any other with a clear error; the `server/discover` probe
//! finds a 2026-07-28 server (asking again after -32022 with a revision the
//! server lists), falls back to `initialize` when the server offers no
//! revision Manifold speaks, and fails the start when the era is pinned; what
//! the server says about itself and its lists is kept as it said it, unknown
//! members included; lists are fetched across pages and a cursor loop is
//! refused.

use manifold_config::UpstreamProtocol;
use manifold_protocol::ErrorCode;
use manifold_upstream::{ClientFacts, State, UPSTREAM_PROTOCOL_VERSION};
use serde_json::{json, Value};
use std::time::Duration;

use crate::support::http::{session_basics, HttpFake, Req, Resp};
use crate::support::{bounded, config, outcome, result, text, tool, Running};

const META_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
const META_CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
const META_CLIENT_CAPS: &str = "io.modelcontextprotocol/clientCapabilities";

/// A session-era server speaking `version` with one tool.
async fn session_server(version: &'static str) -> HttpFake {
    HttpFake::start(move |req: Req| async move {
        let caps = json!({"tools": {}});
        if let Some(r) = session_basics(&req, version, &caps) {
            return r;
        }
        match req.rpc() {
            Some("tools/list") => Resp::result(
                &req,
                json!({"tools": [{"name": "t", "inputSchema": {"type": "object"}}]}),
            ),
            _ => Resp::error(&req, ErrorCode::METHOD_NOT_FOUND, "no"),
        }
    })
    .await
}

/// The JSON-RPC methods the fake received, in order (GET and DELETE by name).
fn methods(fake: &HttpFake) -> Vec<String> {
    fake.requests()
        .iter()
        .map(|r| r.rpc().map_or_else(|| r.method.to_string(), str::to_string))
        .collect()
}

#[tokio::test]
async fn initialize_asks_for_the_newest_revision_and_speaks_the_one_the_server_answers() {
    bounded(async {
        // A current server answers what Manifold asked; older ones their own
        // newest, which Manifold speaks too.
        for version in ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"] {
            let fake = session_server(version).await;
            let run = Running::spawn(config("web", fake.transport()));
            let status = run.ready().await;
            let facts = status.facts.expect("facts once ready");
            assert_eq!(facts.protocol_version, version);
            assert!(!facts.is_stateless() && !run.up.is_stateless());

            let init = &fake.calls("initialize")[0];
            assert_eq!(
                init.param("/protocolVersion"),
                Some(&json!(UPSTREAM_PROTOCOL_VERSION))
            );
            assert_eq!(
                UPSTREAM_PROTOCOL_VERSION,
                manifold_protocol::version::SESSION_SUPPORTED[0]
            );
            assert_eq!(init.param("/clientInfo/name"), Some(&json!("manifold")));
            let caps = init.param("/capabilities").expect("capabilities");
            assert!(
                caps.get("sampling").is_some() && caps.get("elicitation").is_some(),
                "{caps}"
            );
            assert!(
                caps.get("roots").is_none(),
                "roots is never declared: {caps}"
            );
            assert_eq!(init.header("mcp-protocol-version"), None, "not known yet");

            // Then `initialized`, then the lists, in the negotiated revision
            // and the server's session.
            let order = methods(&fake);
            let at = |m: &str| order.iter().position(|x| x == m);
            assert!(
                at("initialize") < at("notifications/initialized"),
                "{order:?}"
            );
            assert!(
                at("notifications/initialized") < at("tools/list"),
                "{order:?}"
            );
            let list = &fake.calls("tools/list")[0];
            assert_eq!(list.header("mcp-protocol-version"), Some(version));
            assert_eq!(list.header("mcp-session-id"), Some("s-1"));
            assert!(
                fake.calls("server/discover").is_empty(),
                "the session era is pinned"
            );
            assert_eq!(run.up.lists().expect("lists").tools.len(), 1);
            run.stop().await;
        }
    })
    .await
}

#[tokio::test]
async fn a_server_answering_a_revision_manifold_does_not_speak_is_refused_with_a_clear_error() {
    bounded(async {
        let fake = session_server("2099-01-01").await;
        let run = Running::spawn(config("web", fake.transport()));
        let why = run.failed().await;
        assert!(
            why.contains("`web`")
                && why.contains("2099-01-01")
                && why.contains("which Manifold does not speak"),
            "{why}"
        );
        assert_ne!(run.up.status().state, State::Ready);
        assert!(run.up.lists().is_none());
        // Nothing is sent in a revision it never agreed to.
        assert!(fake.calls("notifications/initialized").is_empty());
        assert!(fake.calls("tools/list").is_empty());
        let err = run
            .up
            .call("tools/call", tool("t", json!({})), vec![])
            .await
            .err()
            .expect("not connected");
        assert!(
            err.is_unavailable() && err.to_string().contains("2099-01-01"),
            "{err}"
        );

        // An answer without a revision at all is refused as clearly.
        let fake = HttpFake::start(|req: Req| async move {
            match req.rpc() {
                Some("initialize") => Resp::result(
                    &req,
                    json!({"capabilities": {}, "serverInfo": {"name": "x"}}),
                ),
                _ => session_basics(&req, "2025-11-25", &json!({}))
                    .unwrap_or_else(|| Resp::status(500, "unexpected")),
            }
        })
        .await;
        let run = Running::spawn(config("web", fake.transport()));
        let why = run.failed().await;
        assert!(
            why.contains("initialize result has no protocolVersion"),
            "{why}"
        );
    })
    .await
}

/// A 2026-07-28 server: `server/discover` (after `refusals` answers of
/// -32022 listing the revisions it speaks), one tool, no `initialize`.
async fn stateless_server(refusals: usize, offered: Value) -> HttpFake {
    let refused = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    HttpFake::start(move |req: Req| {
        let (refused, offered) = (refused.clone(), offered.clone());
        async move {
            match req.rpc() {
                Some("server/discover") => {
                    if refused.fetch_add(1, std::sync::atomic::Ordering::SeqCst) < refusals {
                        let body = json!({"jsonrpc": "2.0", "id": req.id(), "error": {
                            "code": ErrorCode::UNSUPPORTED_PROTOCOL_VERSION.0,
                            "message": "Unsupported protocol version",
                            "data": {"supported": offered, "requested": "?"}}});
                        let mut r = Resp::json(&body);
                        r.status = 400;
                        return r;
                    }
                    Resp::result(&req, json!({
                        "supportedVersions": offered,
                        "capabilities": {"tools": {}},
                        "instructions": "Stateless and proud.",
                        "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "fake-2026", "version": "2.0.0"}},
                    }))
                }
                Some("tools/list") => Resp::result(&req, json!({
                    "tools": [{"name": "t", "inputSchema": {"type": "object"}}], "ttlMs": 60000})),
                Some("tools/call") => Resp::result(&req, text("stateless answer")),
                Some(_) => Resp::status(500, "this server speaks 2026-07-28 only"),
                None => Resp::status(405, "no GET stream"),
            }
        }
    })
    .await
}

#[tokio::test]
async fn a_2026_07_28_server_is_found_by_server_discover_and_spoken_to_statelessly() {
    bounded(async {
        let fake = stateless_server(0, json!(["2026-07-28"])).await;
        let mut cfg = config("web", fake.transport());
        cfg.protocol = UpstreamProtocol::Auto;
        let run = Running::spawn(cfg);
        let status = run.ready().await;
        let facts = status.facts.expect("facts");
        assert_eq!(facts.protocol_version, "2026-07-28");
        assert!(facts.is_stateless() && run.up.is_stateless());
        assert_eq!(
            facts.server_info,
            json!({"name": "fake-2026", "version": "2.0.0"})
        );
        assert_eq!(facts.instructions.as_deref(), Some("Stateless and proud."));
        assert_eq!(status.list_ttl, Some(Duration::from_secs(60)));
        assert!(
            fake.calls("initialize").is_empty(),
            "no initialize after a successful probe"
        );

        let discover = &fake.calls("server/discover")[0];
        assert_eq!(discover.header("mcp-method"), Some("server/discover"));
        assert_eq!(discover.header("mcp-protocol-version"), Some("2026-07-28"));
        let meta = discover.param("/_meta").expect("the probe's _meta");
        assert_eq!(meta[META_VERSION], "2026-07-28");
        assert_eq!(meta[META_CLIENT_INFO]["name"], "manifold");

        // Every later request says who asks and in which revision; there is
        // no session.
        let list = &fake.calls("tools/list")[0];
        assert_eq!(list.header("mcp-protocol-version"), Some("2026-07-28"));
        assert_eq!(list.header("mcp-session-id"), None);
        assert_eq!(
            list.param("/_meta").map(|m| &m[META_VERSION]),
            Some(&json!("2026-07-28"))
        );

        let caller = ClientFacts {
            capabilities: json!({"elicitation": {}})
                .as_object()
                .cloned()
                .unwrap_or_default(),
            ..ClientFacts::default()
        };
        let mut call = run
            .up
            .forward(
                "tools/call",
                tool("t", json!({"x": 1})),
                vec![],
                Some(&caller),
                false,
            )
            .await
            .expect("sent");
        assert_eq!(result(outcome(&mut call).await), text("stateless answer"));
        let sent = &fake.calls("tools/call")[0];
        let meta = sent.param("/_meta").expect("_meta");
        assert_eq!(meta[META_CLIENT_CAPS], json!({"elicitation": {}}), "{meta}");
        assert_eq!(meta[META_VERSION], "2026-07-28");
        assert_eq!(sent.param("/arguments"), Some(&json!({"x": 1})));
    })
    .await
}

#[tokio::test]
async fn a_refused_revision_is_asked_again_with_one_the_server_lists() {
    bounded(async {
        let fake = stateless_server(1, json!(["2099-01-01", "2026-07-28"])).await;
        let mut cfg = config("web", fake.transport());
        cfg.protocol = UpstreamProtocol::Auto;
        let run = Running::spawn(cfg);
        let facts = run.ready().await.facts.expect("facts");
        // The newest revision both speak, of those the server listed.
        assert_eq!(facts.protocol_version, "2026-07-28");
        let probes = fake.calls("server/discover");
        assert_eq!(probes.len(), 2, "asked once more after -32022");
        assert_eq!(probes[1].header("mcp-protocol-version"), Some("2026-07-28"));
        assert!(fake.calls("initialize").is_empty());
    })
    .await
}

#[tokio::test]
async fn a_discover_offering_no_revision_manifold_speaks_falls_back_to_initialize_unless_pinned() {
    bounded(async {
        let server = || {
            HttpFake::start(|req: Req| async move {
                if req.rpc() == Some("server/discover") {
                    return Resp::result(
                        &req,
                        json!({"supportedVersions": ["2099-01-01"], "capabilities": {}}),
                    );
                }
                session_basics(&req, "2025-11-25", &json!({}))
                    .unwrap_or_else(|| Resp::error(&req, ErrorCode::METHOD_NOT_FOUND, "no"))
            })
        };
        // Probed: not a server Manifold can speak 2026-07-28 to, so the
        // session era.
        let fake = server().await;
        let mut cfg = config("web", fake.transport());
        cfg.protocol = UpstreamProtocol::Auto;
        let run = Running::spawn(cfg.clone());
        let facts = run.ready().await.facts.expect("facts");
        assert_eq!(facts.protocol_version, "2025-11-25");
        assert_eq!(methods(&fake)[..2], ["server/discover", "initialize"]);
        run.stop().await;

        // Pinned to 2026-07-28: the start fails, saying why.
        let fake = server().await;
        cfg.transport = fake.transport();
        cfg.protocol = UpstreamProtocol::Stateless;
        let run = Running::spawn(cfg);
        let why = run.failed().await;
        assert!(
            why.contains(r#"`protocol = "2026-07-28"` is configured"#)
                && why.contains("2099-01-01"),
            "{why}"
        );
        assert!(fake.calls("initialize").is_empty());
    })
    .await
}

#[tokio::test]
async fn what_the_server_says_about_itself_and_its_lists_is_kept_as_it_said_it() {
    bounded(async {
        // Members in no sorted order, fields no revision defines, at every level.
        let capabilities = json!({
            "tools": {"listChanged": false, "x-vendor": {"deep": [1, 2.5, null]}},
            "zz-new-capability": {"b": 1, "a": 2},
            "experimental": {"z": {}},
        });
        let server_info = json!({
            "version": "9", "name": "fake", "title": "Fake",
            "icons": [{"src": "https://example.com/i.png", "sizes": ["48x48"]}],
            "websiteUrl": "https://example.com", "x-extra": {"k": "v"},
        });
        let tools = json!([{
            "name": "t", "title": "T", "zeta": 1,
            "icons": [{"src": "https://example.com/t.png"}],
            "inputSchema": {"type": "object", "properties": {"b": {}, "a": {}}},
            "outputSchema": {"type": "object"},
            "annotations": {"readOnlyHint": true, "x-hint": "kept"},
            "execution": {"taskSupport": "optional"},
            "_meta": {"x-vendor/key": [true]},
        }]);
        let init = json!({
            "protocolVersion": "2025-11-25",
            "capabilities": capabilities,
            "serverInfo": server_info,
            "instructions": "Use it well.",
        });
        let (init2, tools2) = (init.clone(), tools.clone());
        let fake = HttpFake::start(move |req: Req| {
            let (init, tools) = (init2.clone(), tools2.clone());
            async move {
                match req.rpc() {
                    Some("initialize") => {
                        Resp::result(&req, init).with_header("mcp-session-id", "s-1")
                    }
                    Some("tools/list") => {
                        Resp::result(&req, json!({"tools": tools, "x-page-extra": 1}))
                    }
                    _ => session_basics(&req, "2025-11-25", &json!({}))
                        .unwrap_or_else(|| Resp::error(&req, ErrorCode::METHOD_NOT_FOUND, "no")),
                }
            }
        })
        .await;
        let run = Running::spawn(config("web", fake.transport()));
        let facts = run.ready().await.facts.expect("facts");
        // Compared as text: same members, same values, same order.
        assert_eq!(
            Value::Object(facts.capabilities).to_string(),
            capabilities.to_string()
        );
        assert_eq!(facts.server_info.to_string(), server_info.to_string());
        assert_eq!(facts.instructions.as_deref(), Some("Use it well."));
        let lists = run.up.lists().expect("lists");
        let got = Value::Array(lists.tools.iter().cloned().map(Value::Object).collect());
        assert_eq!(got.to_string(), tools.to_string());
    })
    .await
}

#[tokio::test]
async fn lists_are_fetched_across_pages_and_a_cursor_loop_is_refused() {
    bounded(async {
        let paged = |looping: bool| {
            HttpFake::start(move |req: Req| async move {
                if req.rpc() != Some("tools/list") {
                    return session_basics(&req, "2025-11-25", &json!({"tools": {}}))
                        .unwrap_or_else(|| Resp::error(&req, ErrorCode::METHOD_NOT_FOUND, "no"));
                }
                let tool = |n: &str| json!({"name": n, "inputSchema": {"type": "object"}});
                match req.param("/cursor").and_then(Value::as_str) {
                    None => Resp::result(&req, json!({"tools": [tool("one")], "nextCursor": "c1"})),
                    Some("c1") => {
                        Resp::result(&req, json!({"tools": [tool("two")], "nextCursor": "c2"}))
                    }
                    Some(_) if looping => {
                        Resp::result(&req, json!({"tools": [tool("again")], "nextCursor": "c1"}))
                    }
                    Some(_) => Resp::result(&req, json!({"tools": [tool("three")]})),
                }
            })
        };
        let fake = paged(false).await;
        let run = Running::spawn(config("web", fake.transport()));
        run.ready().await;
        let names: Vec<Value> = run
            .up
            .lists()
            .expect("lists")
            .tools
            .iter()
            .map(|t| t["name"].clone())
            .collect();
        assert_eq!(names, [json!("one"), json!("two"), json!("three")]);
        let asked: Vec<Option<Value>> = fake
            .calls("tools/list")
            .iter()
            .map(|r| r.param("/cursor").cloned())
            .collect();
        assert_eq!(asked, [None, Some(json!("c1")), Some(json!("c2"))]);
        run.stop().await;

        let fake = paged(true).await;
        let run = Running::spawn(config("web", fake.transport()));
        let why = run.failed().await;
        assert!(
            why.contains(r#"returned the cursor "c1" twice (a pagination loop)"#),
            "{why}"
        );
    })
    .await
}
