//! `manifold check`, `tools` and `call` against the demo upstream built into the
//! binary (`${MANIFOLD_SELF} demo-upstream`), run in-process without a listener.

use manifold_testkit::process::Proc;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use super::bin;

/// A directory under the system temp dir, removed on drop.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        let p = std::env::temp_dir().join(format!("manifold-cmd-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).expect("create temp dir");
        TempDir(p)
    }
    pub fn path(&self) -> &Path {
        &self.0
    }
    pub fn write(&self, name: &str, text: &str) -> PathBuf {
        let p = self.0.join(name);
        std::fs::write(&p, text).expect("write file");
        p
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `demo`, with `crash` hidden, and `twin`: the same server under the same prefix,
/// showing only `echo`, so its `echo` collides with demo's and gets a hash suffix.
const DEMO: &str = r#"
[upstreams.demo]
command = "${MANIFOLD_SELF}"
args = ["demo-upstream", "--faults"]
tools = { deny = ["crash"] }

[upstreams.twin]
command = "${MANIFOLD_SELF}"
args = ["demo-upstream", "--faults"]
prefix = "demo"
tools = { allow = ["echo"] }
"#;

/// A pool of two demo children.
const POOL: &str = r#"
[upstreams.kids]
command = "${MANIFOLD_SELF}"
args = ["demo-upstream"]
instances = 2
"#;

const GONE: &str = r#"
[upstreams.gone]
command = "/nonexistent"
"#;

fn run(config: &Path, args: &[&str]) -> Output {
    Command::new(bin())
        .args(args)
        .arg("--config")
        .arg(config)
        .env_remove("RUST_LOG")
        .output()
        .expect("run manifold")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The rows of a table whose cells are exactly `cells` (split on whitespace).
fn has_row(out: &str, cells: &[&str]) -> bool {
    out.lines()
        .any(|l| l.split_whitespace().collect::<Vec<_>>() == cells)
}

#[test]
fn check_prints_the_catalog_left_out_items_and_status_and_exits_0() {
    let dir = TempDir::new("check-ok");
    let cfg = dir.write("gateway.toml", DEMO);
    let out = run(&cfg, &["check"]);
    let stdout = text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        text(&out.stderr)
    );
    assert!(stdout.contains("\nTOOLS (15)\n"), "{stdout}");
    assert!(
        has_row(&stdout, &["EXPOSED", "UPSTREAM", "ORIGINAL", "CHANGE"]),
        "{stdout}"
    );
    assert!(
        has_row(&stdout, &["demo__echo", "demo", "echo", "-"]),
        "{stdout}"
    );
    assert!(
        has_row(&stdout, &["demo__greet", "demo", "greet", "-"]),
        "{stdout}"
    );
    let twin = stdout
        .lines()
        .find(|l| l.starts_with("demo__echo_") && l.contains(" twin "))
        .unwrap_or_else(|| panic!("the disambiguated echo: {stdout}"));
    assert!(
        twin.contains("hash suffix added to resolve a collision: `demo__echo` is exposed from upstream `demo`"),
        "{twin}"
    );
    assert!(!stdout.contains("demo__crash"), "{stdout}");
    let crash = stdout
        .lines()
        .find(|l| l.split_whitespace().take(3).eq(["tool", "demo", "crash"]))
        .unwrap_or_else(|| panic!("crash left out: {stdout}"));
    assert!(crash.contains("allow/deny"), "{crash}");
    assert!(stdout.contains("demo://readme"), "resources: {stdout}");
    assert!(stdout.contains("demo://item/{id}"), "templates: {stdout}");
    // TOOLS counts what the upstream lists, before filters.
    for name in ["demo", "twin"] {
        assert!(
            has_row(
                &stdout,
                // No issuer (a stdio upstream), no last error.
                &[name, "stdio", "ready", "2025-11-25", "15", "0", "-", "-"]
            ),
            "{stdout}"
        );
    }
    assert!(stdout.contains("\n2/2 upstreams ready;"), "{stdout}");
    // Every line of a table is one row: no trailing spaces.
    assert!(stdout.lines().all(|l| !l.ends_with(' ')), "{stdout}");
}

#[test]
fn check_json_reports_the_same_facts() {
    let dir = TempDir::new("check-json");
    let cfg = dir.write("gateway.toml", DEMO);
    let out = run(&cfg, &["check", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert_eq!(v["ready"], true);
    assert_eq!(v["upstreams_total"], 2);
    let tools = v["tools"].as_array().expect("tools");
    assert_eq!(tools.len(), 15);
    let echo = tools
        .iter()
        .find(|t| t["exposed"] == "demo__echo")
        .expect("echo");
    assert_eq!(echo["upstream"], "demo");
    assert_eq!(echo["original"], "echo");
    assert_eq!(echo["change"], Value::Null);
    let twin = tools
        .iter()
        .find(|t| t["upstream"] == "twin")
        .expect("twin");
    assert_eq!(twin["change"]["kind"], "disambiguated");
    let crash = v["left_out"]
        .as_array()
        .expect("left_out")
        .iter()
        .find(|l| l["name"] == "crash")
        .expect("crash");
    assert_eq!(crash["kind"], "tool");
    assert_eq!(crash["reason"]["kind"], "filtered");
    let up = &v["upstreams"][0];
    assert_eq!(up["name"], "demo");
    assert_eq!(up["transport"], "stdio");
    assert_eq!(up["state"], "ready");
    assert_eq!(up["tools"], 15);
}

/// `check --as WHO`: the catalogue a caller would see under `[[policy]]`, each
/// hidden item with the rule that hides it; overrides are reported with what
/// they did or could not do.
#[test]
fn check_as_shows_a_callers_view_and_why_items_are_hidden() {
    let dir = TempDir::new("check-as");
    let policy = r#"
[upstreams.demo.overrides.add]
name = "plus"
[upstreams.demo.overrides.echo]
hide = ["text"]
[upstreams.demo.overrides.nonesuch]
description = "x"
[upstreams.demo.overrides.sleep]
coalesce = true

[[policy]]
who = ["group:ops"]
tools = { allow = ["demo__*"], deny = ["demo__sleep"] }

[[policy]]
who = ["key:ci-bot"]
tools = { allow = ["demo__echo"] }
resources = { allow = ["demo://readme"] }
"#;
    let cfg = dir.write("gateway.toml", &format!("{DEMO}{policy}"));
    let out = run(&cfg, &["check", "--as", "group:ops"]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert!(
        has_row(&stdout, &["demo__plus", "demo", "add", "-"]),
        "{stdout}"
    );
    assert!(
        !stdout.lines().any(|l| l.starts_with("demo__sleep ")),
        "{stdout}"
    );
    assert!(stdout.contains("\nHIDDEN FROM group:ops ("), "{stdout}");
    let sleep = stdout
        .lines()
        .find(|l| l.starts_with("tool ") && l.contains("demo__sleep"))
        .unwrap_or_else(|| panic!("sleep's hidden row: {stdout}"));
    assert!(
        sleep.contains("denied by policy[0].tools.deny `demo__sleep`"),
        "{sleep}"
    );
    assert!(
        stdout.contains("no rule that applies to this caller allows it"),
        "{stdout}"
    );
    // Overrides: applied, not applied in full, and one naming no tool.
    assert!(
        has_row(&stdout, &["demo", "add", "demo__plus", "applied"]),
        "{stdout}"
    );
    assert!(
        stdout.contains("`text` is required by the tool's inputSchema"),
        "{stdout}"
    );
    assert!(
        stdout.contains("the upstream publishes no tool `nonesuch`"),
        "{stdout}"
    );
    // `sleep` is not read-only: coalescing it is refused at run time, and said.
    assert!(
        stdout.contains("`coalesce = true`, but its annotations do not say readOnlyHint: true"),
        "{stdout}"
    );

    let out = run(&cfg, &["check", "--json", "--as", "key:ci-bot"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert_eq!(v["as"], "key:ci-bot");
    let exposed: Vec<&str> = v["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["exposed"].as_str())
        .collect();
    assert_eq!(exposed, ["demo__echo"]);
    assert_eq!(v["resources"].as_array().expect("resources").len(), 1);
    let hidden = v["hidden"].as_array().expect("hidden");
    assert!(
        hidden
            .iter()
            .any(|h| h["kind"] == "prompt" && h["name"] == "demo__greet"),
        "{hidden:?}"
    );

    let out = run(&cfg, &["check", "--as", "team:x"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("`team:x` is not a caller"),
        "{}",
        text(&out.stderr)
    );
}

/// `check --endpoint PATH`: only what that `[[endpoint]]` holds; a path no
/// endpoint is served at is a usage error.
#[test]
fn check_endpoint_shows_what_an_endpoint_holds() {
    let dir = TempDir::new("check-endpoint");
    let endpoint = r#"
[[endpoint]]
path = "/mcp/ops"
tools = { allow = ["demo__add", "demo__echo"], deny = ["demo__echo"] }
prompts = { deny = ["*"] }
"#;
    let cfg = dir.write("gateway.toml", &format!("{DEMO}{endpoint}"));
    let out = run(&cfg, &["check", "--json", "--endpoint", "/mcp/ops"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert_eq!(v["endpoint"], "/mcp/ops");
    let exposed: Vec<&str> = v["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["exposed"].as_str())
        .collect();
    assert_eq!(exposed, ["demo__add"]);
    assert_eq!(v["prompts"].as_array().expect("prompts").len(), 0);
    let out = run(&cfg, &["check", "--endpoint", "/mcp/ops"]);
    assert!(text(&out.stdout).contains("Endpoint: /mcp/ops\n"));
    let out = run(&cfg, &["check", "--endpoint", "/mcp/none"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("no endpoint is served at `/mcp/none`"),
        "{}",
        text(&out.stderr)
    );
}

/// `check --as` with two identity sources: a subject is named with its
/// source (`subject:corp:alice`), a certificate with its name type; a bare
/// `subject:alice` could be either issuer's and is refused with the forms to
/// write instead.
#[test]
fn check_as_takes_principals_qualified_by_their_source() {
    let dir = TempDir::new("check-as-qualified");
    let auth = r#"
[auth]
resource = "http://mcp.test/mcp"

[[auth.jwt]]
name = "corp"
issuer = "https://corp.test"
jwks_url = "http://127.0.0.1:9/corp/certs"

[[auth.jwt]]
name = "partner"
issuer = "https://partner.test"
jwks_url = "http://127.0.0.1:9/partner/certs"

[[policy]]
who = ["subject:corp:alice"]
tools = { allow = ["demo__*"] }
"#;
    let cfg = dir.write("gateway.toml", &format!("{DEMO}{auth}"));
    let exposed = |who: &str| -> Vec<String> {
        let out = run(&cfg, &["check", "--json", "--as", who]);
        assert_eq!(out.status.code(), Some(0), "{who}: {}", text(&out.stderr));
        let v: Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
        v["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .filter_map(|t| t["exposed"].as_str().map(str::to_owned))
            .collect()
    };
    assert!(!exposed("subject:corp:alice").is_empty());
    assert!(
        exposed("subject:partner:alice").is_empty(),
        "another issuer's alice"
    );
    assert!(exposed("cert:cn:alice").is_empty(), "a certificate's CN");
    let out = run(&cfg, &["check", "--as", "subject:alice"]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains("`subject:corp:alice`") && err.contains("`subject:partner:alice`"),
        "{err}"
    );
}

#[test]
fn check_exits_1_when_an_upstream_is_not_ready() {
    let dir = TempDir::new("check-down");
    let cfg = dir.write("gateway.toml", &format!("{DEMO}{GONE}"));
    let out = run(&cfg, &["check"]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    let gone = stdout
        .lines()
        .find(|l| l.split_whitespace().take(3).eq(["gone", "stdio", "down"]))
        .unwrap_or_else(|| panic!("gone's status row: {stdout}"));
    assert!(gone.contains("cannot start `/nonexistent`"), "{gone}");
    assert!(stdout.contains("\n2/3 upstreams ready;"), "{stdout}");
    // The ready ones are still listed.
    assert!(
        has_row(&stdout, &["demo__echo", "demo", "echo", "-"]),
        "{stdout}"
    );
}

#[test]
fn check_shows_each_upstreams_pinned_issuer() {
    let dir = TempDir::new("check-issuer");
    // Nothing listens on port 9: the upstream is down, its issuer still shown.
    let cfg = dir.write(
        "gateway.toml",
        r#"
[upstreams.api]
url = "http://127.0.0.1:9/mcp"
timeout = "2s"

[upstreams.api.auth]
type = "client_credentials"
client_id = "gateway"
client_secret = "not-a-real-secret"
issuer = "https://login.example.com/tenant"
"#,
    );
    let out = run(&cfg, &["check"]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("ISSUER"), "{stdout}");
    let api = stdout
        .lines()
        .find(|l| l.starts_with("api "))
        .unwrap_or_else(|| panic!("api's status row: {stdout}"));
    assert!(api.contains("https://login.example.com/tenant"), "{api}");
    let out = run(&cfg, &["check", "--json"]);
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    let api = &v["upstreams"][0];
    assert_eq!(api["name"], "api", "{v}");
    assert_eq!(api["auth"], "client_credentials", "{api}");
    assert_eq!(api["issuer"], "https://login.example.com/tenant", "{api}");
    assert_eq!(api["issuer_pinned"], true, "{api}");
    assert!(!text(&out.stdout).contains("not-a-real-secret"));
}

#[test]
fn configuration_errors_exit_2_for_every_command() {
    let dir = TempDir::new("bad-config");
    let cfg = dir.write("gateway.toml", "[server]\nlisen = \"x\"\n");
    for args in [
        &["check"][..],
        &["check", "--json"],
        &["tools"],
        &["call", "demo__echo"],
    ] {
        let out = run(&cfg, args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(out.stdout.is_empty(), "{args:?}: {}", text(&out.stdout));
        let err = text(&out.stderr);
        assert!(
            err.contains("configuration error") && err.contains("lisen"),
            "{err}"
        );
    }
}

#[test]
fn tools_prints_sorted_names_and_exits_1_while_an_upstream_is_down() {
    let dir = TempDir::new("tools");
    let cfg = dir.write("gateway.toml", DEMO);
    let out = run(&cfg, &["tools"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let names: Vec<String> = text(&out.stdout).lines().map(str::to_string).collect();
    assert_eq!(names.len(), 15, "{names:?}");
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted);
    assert!(names.iter().any(|n| n == "demo__echo"));
    assert!(names.iter().any(|n| n.starts_with("demo__echo_")));

    let cfg = dir.write("down.toml", &format!("{DEMO}{GONE}"));
    let out = run(&cfg, &["tools"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        text(&out.stdout).lines().collect::<Vec<_>>(),
        names,
        "the ready upstreams' names are still printed"
    );
    assert!(text(&out.stderr).contains("gone"), "{}", text(&out.stderr));
}

#[test]
fn call_prints_the_result_and_maps_outcomes_to_exit_codes() {
    let dir = TempDir::new("call");
    let cfg = dir.write("gateway.toml", DEMO);

    let out = run(&cfg, &["call", "demo__echo", r#"{"text":"hi"}"#]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let result: Value = serde_json::from_slice(&out.stdout).expect("the result as JSON");
    assert_eq!(result["content"][0]["text"], "hi");
    assert!(text(&out.stdout).contains("\n  \"content\""), "pretty");

    // The disambiguated name reaches the twin under its original name.
    let twin = text(&run(&cfg, &["tools"]).stdout)
        .lines()
        .find(|n| n.starts_with("demo__echo_"))
        .expect("twin echo")
        .to_string();
    let out = run(&cfg, &["call", &twin, r#"{"text":"twin"}"#]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("\"twin\""));

    let out = run(&cfg, &["call", "demo__fail"]);
    assert_eq!(out.status.code(), Some(1));
    let result: Value = serde_json::from_slice(&out.stdout).expect("the result as JSON");
    assert_eq!(result["isError"], true);
    assert!(text(&out.stderr).contains("this tool always fails"));

    let out = run(&cfg, &["call", "demo__ecoh", "{}"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    let err = text(&out.stderr);
    assert!(err.contains("Unknown tool: demo__ecoh"), "{err}");
    let hint = err
        .lines()
        .find(|l| l.starts_with("Did you mean: "))
        .unwrap_or_else(|| panic!("a hint: {err}"));
    assert!(hint.starts_with("Did you mean: demo__echo,"), "{hint}");
    assert!(hint.matches(", ").count() <= 4, "at most 5 names: {hint}");

    for bad in ["[1]", "{x", "\"text\""] {
        let out = run(&cfg, &["call", "demo__echo", bad]);
        assert_eq!(out.status.code(), Some(2), "{bad}");
        assert!(out.stdout.is_empty());
        assert!(
            text(&out.stderr).contains("arguments"),
            "{}",
            text(&out.stderr)
        );
    }
}

/// A demo upstream serving Streamable HTTP on a free port; stopped on drop.
struct HttpDemo {
    _proc: Proc,
    url: String,
}

impl HttpDemo {
    fn start() -> HttpDemo {
        let mut cmd = Command::new(bin());
        cmd.args(["demo-upstream", "--http", "127.0.0.1:0"]);
        let proc = Proc::spawn("the HTTP demo", cmd).expect("spawn the HTTP demo");
        let line = Proc::wait_line(
            &proc.stdout,
            "listening on ",
            Duration::from_secs(30),
            "demo",
        )
        .expect("the listening line");
        let url = line
            .trim()
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("{line}"))
            .to_string();
        HttpDemo { _proc: proc, url }
    }
}

#[test]
fn check_and_call_through_an_http_upstream() {
    let demo = HttpDemo::start();
    let dir = TempDir::new("http");
    let cfg = dir.write(
        "gateway.toml",
        &format!("[upstreams.web]\nurl = \"{}\"\n", demo.url),
    );
    let out = run(&cfg, &["check"]);
    let stdout = text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        text(&out.stderr)
    );
    assert!(
        stdout
            .lines()
            .any(|l| l.split_whitespace().take(3).eq(["web", "http", "ready"])),
        "{stdout}"
    );
    let out = run(&cfg, &["call", "web__echo", r#"{"text":"over http"}"#]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("over http"));
}

/// A 2026-07-28 upstream that asks for input: the operator sees its
/// `InputRequiredResult` as it is (there is no client to bridge the question
/// to), and the command succeeds.
#[test]
fn call_prints_a_stateless_upstreams_input_request_as_it_is() {
    let dir = TempDir::new("modern-call");
    let cfg = dir.write(
        "gateway.toml",
        r#"
[upstreams.m]
command = "${MANIFOLD_SELF}"
args = ["demo-upstream", "--modern"]
"#,
    );
    let out = run(&cfg, &["call", "m__ask", "{}"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let result: Value = serde_json::from_slice(&out.stdout).expect("the result as JSON");
    assert_eq!(result["resultType"], "input_required", "{result}");
    assert!(result["inputRequests"]["answer"].is_object(), "{result}");
}

/// A tool whose inputSchema does not compile stays listed and callable,
/// unchecked, and `check` says why (text and JSON).
#[test]
fn check_names_the_tools_whose_arguments_are_not_validated() {
    let dir = TempDir::new("check-unvalidated");
    let cfg = dir.write(
        "gateway.toml",
        r#"
[upstreams.b]
command = "${MANIFOLD_SELF}"
args = ["demo-upstream", "--misbehave", "broken-schema"]
"#,
    );
    let out = run(&cfg, &["check"]);
    let stdout = text(&out.stdout);
    assert!(stdout.contains("\nNOT VALIDATED (1)\n"), "{stdout}");
    let section = stdout
        .split("\nNOT VALIDATED (1)\n")
        .nth(1)
        .unwrap_or_default();
    let row = section
        .lines()
        .find(|l| l.starts_with("b__broken_schema "))
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(row.contains("does not compile"), "{row}");
    let out = run(&cfg, &["check", "--json"]);
    let v: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(v["unvalidated"][0]["tool"], "b__broken_schema", "{v}");
    // Callable, unchecked: the upstream answers.
    let out = run(&cfg, &["call", "b__broken_schema", r#"{"x":1}"#]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains(r#"{\"x\":1}"#),
        "{}",
        text(&out.stdout)
    );
    // A validated tool's bad arguments never reach the upstream.
    let out = run(&cfg, &["call", "b__echo", r#"{"text":5}"#]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stdout).contains("/text: 5 is not of type"),
        "{}",
        text(&out.stdout)
    );
}

#[test]
fn check_shows_a_pools_members() {
    let dir = TempDir::new("check-pool");
    let cfg = dir.write("gateway.toml", POOL);
    let out = run(&cfg, &["check"]);
    let stdout = text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        text(&out.stderr)
    );
    assert!(
        has_row(
            &stdout,
            &[
                "kids",
                "stdio",
                "ready",
                "(2/2",
                "members)",
                "2025-11-25",
                "12",
                "0",
                "-",
                "-"
            ]
        ),
        "{stdout}"
    );
    let out = run(&cfg, &["check", "--json"]);
    let v: Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert_eq!(
        v["upstreams"][0]["pool"],
        json!({"members": 2, "serving": 2}),
        "{v}"
    );
}

#[test]
fn search_ranks_a_query_with_each_rankings_score_within_an_endpoint_and_a_view() {
    let dir = TempDir::new("search");
    let endpoint = r#"
[[endpoint]]
path = "/mcp/ops"
tools = { deny = ["demo__add"] }
"#;
    let cfg = dir.write("gateway.toml", &format!("{DEMO}{endpoint}"));
    let out = run(
        &cfg,
        &["search", "add two numbers", "--json", "--limit", "3"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert_eq!(v["semantic"], false);
    let tools = v["tools"].as_array().expect("tools");
    assert_eq!(tools[0]["name"], "demo__add", "{v}");
    assert!(tools[0]["lexical"].as_f64().is_some_and(|s| s > 0.0), "{v}");
    assert!(tools[0]["semantic"].is_null(), "{v}");
    assert!(tools.len() <= 3);
    // The endpoint hides it: it never ranks there.
    let out = run(
        &cfg,
        &[
            "search",
            "add two numbers",
            "--json",
            "--endpoint",
            "/mcp/ops",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    let names: Vec<&str> = v["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(!names.contains(&"demo__add"), "{names:?}");
    // The table says what it ranked by.
    let out = run(&cfg, &["search", "add two numbers"]);
    let table = text(&out.stdout);
    assert!(table.starts_with("rank  tool"), "{table}");
    assert!(table.contains("lexical only"), "{table}");
    for (args, why) in [
        (vec!["search", "the a of"], "no words to search for"),
        (
            vec!["search", "add", "--endpoint", "/mcp/none"],
            "no endpoint is served at `/mcp/none`",
        ),
        (vec!["search", "add", "--as", "nobody:x"], "--as"),
    ] {
        let out = run(&cfg, &args);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            text(&out.stderr)
        );
        assert!(
            text(&out.stderr).contains(why),
            "{args:?}: {}",
            text(&out.stderr)
        );
    }
}
