//! Catalogue mode (`--catalog PATH --catalog-server NAME`) over stdio: the
//! server's tools listed byte for byte as the file gives them, calls echoed, and
//! nothing of the demo's own tools left.

use std::path::PathBuf;
use std::process::Stdio;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{ChildStdin, ChildStdout, Command};
use tokio::time::timeout;

use crate::{call, init, req, spawn, text_of, BIN, WAIT};

/// A catalogue file in a fresh directory, removed on drop.
struct TempCatalog(PathBuf);

impl TempCatalog {
    fn new(tag: &str, catalog: &str) -> TempCatalog {
        let dir = std::env::temp_dir().join(format!(
            "manifold-demo-catalog-{tag}-{}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).expect("temp dir");
        std::fs::write(dir.join("catalog.json"), catalog).expect("write catalog");
        TempCatalog(dir)
    }
    fn path(&self) -> String {
        self.0.join("catalog.json").display().to_string()
    }
}

impl Drop for TempCatalog {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Requests in, raw response lines out (one request at a time).
struct Peer {
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
}

impl Peer {
    async fn start(args: &[&str]) -> (tokio::process::Child, Peer) {
        let mut child = spawn(args);
        let stdin = child.stdin.take().expect("stdin");
        let lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        (child, Peer { stdin, lines })
    }

    /// The response line to `message`.
    async fn raw(&mut self, message: Value) -> String {
        let line = format!("{message}\n");
        self.stdin.write_all(line.as_bytes()).await.expect("write");
        self.stdin.flush().await.expect("flush");
        loop {
            let line = timeout(WAIT, self.lines.next_line())
                .await
                .expect("timed out")
                .expect("read")
                .expect("stdout closed");
            let parsed: Value = serde_json::from_str(&line).expect("JSON line");
            if parsed.get("id") == message.get("id") && parsed.get("method").is_none() {
                return line;
            }
        }
    }

    async fn request(&mut self, message: Value) -> Value {
        serde_json::from_str(&self.raw(message).await).expect("JSON")
    }
}

/// The `"tools":[…]` array of a raw `tools/list` response, as sent.
fn tools_text(line: &str) -> &str {
    let start = line.find("\"tools\":").expect("a tools member") + "\"tools\":".len();
    let value: Value = serde_json::from_str(line).expect("JSON");
    let len = value["result"]["tools"].to_string().len();
    &line[start..start + len]
}

const CATALOG: &str = r#"{"servers": [
  {"name": "other", "tools": [{"name": "elsewhere", "inputSchema": {"type": "object"}}]},
  {"name": "shop", "source": "x@y", "tools": [
    {"name": "whoami", "title": "Who", "description": "Ünïcode — and \"quotes\"", "inputSchema": {"type": "object", "properties": {"z": {"type": "number", "maximum": 1.5e300}, "a": {"type": "string"}}}, "annotations": {"readOnlyHint": true}},
    {"name": "create-order", "inputSchema": {"type": "object"}, "x-extra": {"z": 1, "a": [3, 1, 2]}, "_meta": {"k": null}}
  ]}
]}"#;

#[tokio::test]
async fn lists_the_servers_tools_as_given_and_echoes_calls() {
    let file = TempCatalog::new("shop", CATALOG);
    let path = file.path();
    // `spawn` passes --faults too: catalogue mode has none of the demo's tools.
    let (_child, mut peer) = Peer::start(&["--catalog", &path, "--catalog-server", "shop"]).await;
    let response = peer.request(init(0, "2025-11-25", json!({}))).await;
    assert!(response.get("result").is_some(), "{response}");
    let line = peer.raw(req(1, "tools/list", json!({}))).await;
    let given: Value = serde_json::from_str(CATALOG).unwrap();
    assert_eq!(
        tools_text(&line),
        given["servers"][1]["tools"].to_string(),
        "members, order and numbers as the file gives them"
    );
    let echoed = peer
        .request(call(
            2,
            "create-order",
            json!({"items": [1, 2], "note": "é"}),
        ))
        .await;
    assert_eq!(
        serde_json::from_str::<Value>(text_of(&echoed)).unwrap(),
        json!({"tool": "create-order", "arguments": {"items": [1, 2], "note": "é"}})
    );
    for (id, unknown) in [
        (3, "echo"),
        (4, "fail"),
        (5, "elsewhere"),
        (6, "synthetic_0000"),
    ] {
        let refused = peer.request(call(id, unknown, json!({}))).await;
        assert_eq!(refused["error"]["code"], -32602, "{unknown}: {refused}");
    }
}

#[tokio::test]
async fn modern_mode_lists_and_calls_the_catalogue_only() {
    let file = TempCatalog::new("modern", CATALOG);
    let path = file.path();
    let (_child, mut peer) =
        Peer::start(&["--modern", "--catalog", &path, "--catalog-server", "shop"]).await;
    let meta = json!({"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}
    }});
    let list = peer.request(req(1, "tools/list", meta.clone())).await;
    let names: Vec<&str> = list["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(names, ["whoami", "create-order"], "{list}");
    // The catalogue's `whoami` is echoed, not the modern demo's own.
    let mut params = meta;
    params["name"] = json!("whoami");
    params["arguments"] = json!({"a": "b"});
    let called = peer.request(req(2, "tools/call", params)).await;
    assert_eq!(
        serde_json::from_str::<Value>(text_of(&called)).unwrap(),
        json!({"tool": "whoami", "arguments": {"a": "b"}}),
        "{called}"
    );
}

#[tokio::test]
async fn a_bad_catalogue_stops_the_start_with_the_reason() {
    let file = TempCatalog::new("bad", CATALOG);
    let path = file.path();
    let missing = std::env::temp_dir().join("manifold-demo-no-such-catalog.json");
    for (args, says) in [
        (
            vec!["--catalog", path.as_str(), "--catalog-server", "nope"],
            "no server named \"nope\"; it has: other, shop",
        ),
        (
            vec![
                "--catalog",
                missing.to_str().unwrap(),
                "--catalog-server",
                "shop",
            ],
            "cannot read the catalogue",
        ),
    ] {
        let out = timeout(
            WAIT,
            Command::new(BIN)
                .args(&args)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .kill_on_drop(true)
                .output(),
        )
        .await
        .expect("exits")
        .expect("runs");
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
    // Both flags or neither (clap: exit 2).
    let out = Command::new(BIN)
        .args(["--catalog", &path])
        .stdin(Stdio::null())
        .output()
        .await
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
}

/// With the real catalogue at hand (../shared/data/tool-catalog/catalog.json from
/// the workspace root, or `MANIFOLD_TOOL_CATALOG`), every server's list is the
/// file's, byte for byte; without it the test says it is skipped.
#[tokio::test]
async fn the_real_catalogue_round_trips() {
    let path = match std::env::var_os("MANIFOLD_TOOL_CATALOG") {
        Some(p) => PathBuf::from(p),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../../shared/data/tool-catalog/catalog.json"),
    };
    let Ok(text) = std::fs::read_to_string(&path) else {
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "the_real_catalogue_round_trips: SKIPPED: no tool catalogue at {} (set MANIFOLD_TOOL_CATALOG)",
            path.display()
        );
        return;
    };
    let catalog: Value = serde_json::from_str(&text).expect("catalog.json");
    let path = path.display().to_string();
    let mut tools = 0;
    for server in catalog["servers"].as_array().expect("servers") {
        let name = server["name"].as_str().expect("name");
        let (_child, mut peer) = Peer::start(&["--catalog", &path, "--catalog-server", name]).await;
        peer.request(init(0, "2025-11-25", json!({}))).await;
        let line = peer.raw(req(1, "tools/list", json!({}))).await;
        assert_eq!(tools_text(&line), server["tools"].to_string(), "{name}");
        tools += server["tools"].as_array().map_or(0, Vec::len);
    }
    assert!(tools > 0);
}
