//! `manifold import` and `manifold connect` on real client configurations of
//! each format (`tests/fixtures/import/`, shaped as each client's docs show
//! them, with made-up secrets marked `SECRETVALUE`): every server becomes an
//! upstream that loads, no secret reaches the file or the output, names are
//! made valid, a merge keeps the file's comments and refuses to overwrite;
//! then a configuration whose server runs is checked at once, and `connect`
//! writes the client's entry (with a backup) and removes what was imported.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::bin;
use super::commands::TempDir;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/import")
        .join(name)
}

/// Runs `manifold ARGS` in `dir` with none of the fixtures' variables set.
fn manifold(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let mut cmd = Command::new(bin());
    cmd.args(args).current_dir(dir);
    for v in [
        "GITHUB_PERSONAL_ACCESS_TOKEN",
        "BRAVE_API_KEY",
        "SENTRY_TOKEN",
        "AIRTABLE_API_KEY",
        "PERPLEXITY_KEY",
        "MY_REMOTE_X_API_KEY",
        "API_KEY",
        "REMOTE_API_KEY",
        "GOOGLE_MAPS_API_KEY",
        "MANIFOLD_CONFIG",
    ] {
        cmd.env_remove(v);
    }
    let out = cmd.output().expect("run manifold");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The configuration at `path`, loaded with every variable set.
fn load(path: &Path) -> manifold_config::GatewayConfig {
    let text = std::fs::read_to_string(path).expect("read");
    manifold_config::load_str(
        path,
        &text,
        |_| Some("v".repeat(40)),
        figment::providers::Env::raw().only(&[] as &[&str]),
    )
    .unwrap_or_else(|e| panic!("{}: {e}\n{text}", path.display()))
}

#[test]
fn every_client_format_imports_without_a_secret_in_the_file() {
    // (fixture, --format, upstreams, variables to export)
    type Row<'a> = (&'a str, Option<&'a str>, &'a [&'a str], &'a [&'a str]);
    let table: &[Row] = &[
        (
            "claude_desktop_config.json",
            None,
            &["Brave-Search", "filesystem", "github", "time"],
            &["BRAVE_API_KEY", "GITHUB_PERSONAL_ACCESS_TOKEN"],
        ),
        (
            "claude_code.mcp.json",
            None,
            &["airtable", "linear", "sentry"],
            &["AIRTABLE_API_KEY", "SENTRY_TOKEN"],
        ),
        (
            "vscode.mcp.json",
            None,
            &["Perplexity", "fetch", "my-remote"],
            &["MY_REMOTE_X_API_KEY", "PERPLEXITY_KEY"],
        ),
        (
            "cursor.mcp.json",
            Some("cursor"),
            &["remote", "server-name"],
            &["API_KEY", "REMOTE_API_KEY"],
        ),
        (
            "windsurf.mcp_config.json",
            None,
            &["figma", "google-maps"],
            &["GOOGLE_MAPS_API_KEY"],
        ),
    ];
    for (name, format, upstreams, vars) in table {
        let dir = TempDir::new(&format!("import-{name}"));
        let path = fixture(name);
        let mut args = vec!["import", path.to_str().expect("path")];
        if let Some(f) = format {
            args.extend(["--format", f]);
        }
        let (code, out, err) = manifold(dir.path(), &args);
        assert_eq!(code, 0, "{name}: {out}\n{err}");
        let written = dir.path().join("gateway.toml");
        let text = std::fs::read_to_string(&written).expect("written");
        assert!(
            !text.contains("SECRETVALUE"),
            "{name}: a secret in the file:\n{text}"
        );
        assert!(
            !out.contains("SECRETVALUE") && !err.contains("SECRETVALUE"),
            "{name}: a secret printed"
        );
        assert!(
            text.contains(&format!("imported from {}", fixture(name).display())),
            "{text}"
        );
        let cfg = load(&written);
        let mut got: Vec<&str> = cfg.upstreams.iter().map(|u| u.name.as_str()).collect();
        got.sort();
        assert_eq!(got, *upstreams, "{name}:\n{text}");
        for v in *vars {
            assert!(
                text.contains(&format!("${{{v}}}")),
                "{name}: no ${{{v}}}:\n{text}"
            );
            assert!(
                out.contains(v),
                "{name}: {v} not named in the output:\n{out}"
            );
        }
        assert!(out.contains("export "), "{name}: {out}");
        // The same file again: refused, nothing changed.
        let (code, _, err) = manifold(dir.path(), &args);
        assert_eq!(code, 2, "{name}: {err}");
        assert!(err.contains("--merge"), "{err}");
    }
    // Details a user relies on: `npx -y` kept, renames and SSE reported.
    let dir = TempDir::new("import-details");
    let (_, out, _) = manifold(
        dir.path(),
        &[
            "import",
            fixture("claude_desktop_config.json").to_str().expect("p"),
        ],
    );
    let text = std::fs::read_to_string(dir.path().join("gateway.toml")).expect("written");
    assert!(
        text.contains("args = [\"-y\", \"@modelcontextprotocol/server-github\"]"),
        "{text}"
    );
    assert!(
        out.contains("renamed `Brave Search` to `Brave-Search`"),
        "{out}"
    );
    let (_, out, _) = manifold(
        dir.path(),
        &[
            "import",
            "--out",
            "b.toml",
            fixture("claude_code.mcp.json").to_str().expect("p"),
        ],
    );
    assert!(out.contains("linear: HTTP+SSE"), "{out}");
}

#[test]
fn a_merge_keeps_the_file_and_replaces_only_with_force() {
    let dir = TempDir::new("import-merge");
    let original = "# my gateway\n[server]\nlisten = \"127.0.0.1:9000\"\n\n# the one I wrote\n[upstreams.github]\nurl = \"https://example.com/mcp\"\n";
    let cfg = dir.write("gateway.toml", original);
    let desktop = fixture("claude_desktop_config.json");
    let (code, _, err) = manifold(
        dir.path(),
        &["import", "--merge", desktop.to_str().expect("p")],
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("upstream `github` is already"), "{err}");
    assert_eq!(
        std::fs::read_to_string(&cfg).expect("read"),
        original,
        "changed on a refusal"
    );
    let (code, out, err) = manifold(
        dir.path(),
        &["import", "--merge", "--force", desktop.to_str().expect("p")],
    );
    assert_eq!(code, 0, "{out}\n{err}");
    let text = std::fs::read_to_string(&cfg).expect("read");
    assert!(
        text.starts_with("# my gateway\n[server]\nlisten = \"127.0.0.1:9000\""),
        "{text}"
    );
    let c = load(&cfg);
    assert_eq!(c.upstreams.len(), 4);
    assert!(
        !text.contains("https://example.com/mcp"),
        "not replaced:\n{text}"
    );
}

#[test]
fn an_imported_server_is_checked_and_connect_points_the_client_at_the_gateway() {
    let dir = TempDir::new("import-connect");
    let me = std::fs::canonicalize(bin()).expect("bin");
    let client = dir.write(
        "claude_desktop_config.json",
        &serde_json::json!({
            "mcpServers": {
                "demo": {"command": me.display().to_string(), "args": ["demo-upstream"]},
                "keep me": {"command": "other"},
            },
            "globalShortcut": "x",
        })
        .to_string(),
    );
    let (code, out, err) = manifold(
        dir.path(),
        &["import", client.to_str().expect("p"), "--out", "gw.toml"],
    );
    // `keep me` cannot start: imported, checked, not ready.
    assert_eq!(code, 1, "{out}\n{err}");
    assert!(out.contains("checking gw.toml"), "{out}");
    assert!(out.contains("demo") && out.contains("ready"), "{out}");
    // Remove the one that cannot start, then check again: all ready.
    let gw = dir.path().join("gw.toml");
    let text = std::fs::read_to_string(&gw).expect("read");
    let trimmed = text
        .split("\n# keep-me:")
        .next()
        .expect("split")
        .to_string();
    std::fs::write(&gw, &trimmed).expect("write");
    let (code, out, err) = manifold(dir.path(), &["check", "--config", "gw.toml"]);
    assert_eq!(code, 0, "{out}\n{err}");

    // The entry, printed: stdio for Claude Desktop, HTTP for the others.
    let (code, out, err) = manifold(dir.path(), &["connect", "claude", "--config", "gw.toml"]);
    assert_eq!(code, 0, "{err}");
    let shown: Value = serde_json::from_str(&out).expect("json");
    let entry = &shown["mcpServers"]["manifold"];
    assert_eq!(entry["command"], me.display().to_string(), "{out}");
    assert_eq!(entry["args"][0], "stdio");
    assert_eq!(
        entry["args"][2],
        std::fs::canonicalize(&gw)
            .expect("abs")
            .display()
            .to_string()
    );
    let (_, out, _) = manifold(dir.path(), &["connect", "vscode", "--config", "gw.toml"]);
    let shown: Value = serde_json::from_str(&out).expect("json");
    assert_eq!(
        shown["servers"]["manifold"]["url"], "http://127.0.0.1:8080/mcp",
        "{out}"
    );
    assert_eq!(shown["servers"]["manifold"]["type"], "http");
    let (code, _, err) = manifold(
        dir.path(),
        &["connect", "claude", "--http", "--config", "gw.toml"],
    );
    assert_eq!(code, 2, "{err}");

    // --write --replace: the imported `demo` goes, `keep me` (not imported now) stays.
    let before = std::fs::read_to_string(&client).expect("read");
    let (code, out, err) = manifold(
        dir.path(),
        &[
            "connect",
            "claude",
            "--config",
            "gw.toml",
            "--write",
            "--file",
            client.to_str().expect("p"),
            "--replace",
        ],
    );
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("removed `demo`"), "{out}");
    let after: Value =
        serde_json::from_str(&std::fs::read_to_string(&client).expect("read")).expect("json");
    let names: Vec<&String> = after["mcpServers"]
        .as_object()
        .expect("servers")
        .keys()
        .collect();
    assert_eq!(names, ["keep me", "manifold"], "{after}");
    assert_eq!(after["globalShortcut"], "x", "other keys kept");
    let backup =
        std::fs::read_to_string(dir.path().join("claude_desktop_config.json.bak")).expect("backup");
    assert_eq!(backup, before);
}
