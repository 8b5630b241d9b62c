//! The binary's contract: the shipped gateway.toml serves the demo upstreams,
//! configuration errors exit 2 naming the key, SIGTERM stops cleanly; the one-shot
//! commands (`check`, `tools`, `call`, `audit verify`, `pins`) keep their output format and
//! exit codes (see the modules below).

mod audit;
mod commands;
mod docs;
mod import;
mod pins;
mod stdio;
mod tracing;

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use manifold_testkit::process::Proc;

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_manifold")
}

fn repo_file(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(name)
}

#[test]
fn shipped_gateway_toml_serves_both_demo_upstreams_and_stops_on_sigterm() {
    let dir = commands::TempDir::new("shipped");
    let audit = dir.path().join("audit.jsonl");
    let mut cmd = Command::new(bin());
    cmd.args(["serve", "--config"])
        .arg(repo_file("gateway.toml"))
        .env("MANIFOLD_SERVER__LISTEN", "127.0.0.1:0")
        .env("MANIFOLD_ADMIN__LISTEN", "127.0.0.1:0")
        .env("MANIFOLD_AUDIT__PATH", &audit)
        .env("XDG_STATE_HOME", dir.path().join("state"));
    let mut served = Proc::spawn("manifold serve", cmd).expect("spawn manifold");
    let line = Proc::wait_line(&served.stdout, "", Duration::from_secs(30), "serve")
        .expect("the listening line");
    assert!(
        line.starts_with("Manifold listening on http://127.0.0.1:"),
        "{line}"
    );
    assert!(line.contains("(2/2 upstreams ready"), "{line}");
    // The demo upstream ships 12 tools (its 3 fault tools need `--faults`); both
    // copies are merged under their prefixes.
    assert!(line.contains(", 24 tools)"), "{line}");
    // The shipped config turns on the admin listener and the audit log.
    let admin = Proc::wait_line(&served.stdout, "", Duration::from_secs(5), "serve")
        .expect("the admin line");
    assert!(
        admin.starts_with("Manifold admin on http://127.0.0.1:")
            && admin.contains("local admin token"),
        "{admin}"
    );
    // No admin credentials in the shipped file: a local token in the state
    // directory, private, and a one-time console link.
    let link = Proc::wait_line(&served.stdout, "", Duration::from_secs(5), "serve")
        .expect("the console line");
    assert!(
        link.starts_with("Manifold console: open http://127.0.0.1:")
            && link.contains("/ui/login?code="),
        "{link}"
    );
    let token_file = dir.path().join("state/manifold/admin-token");
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&token_file)
            .expect("the token file")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let printed = Command::new(bin())
        .args(["admin", "token", "--config"])
        .arg(repo_file("gateway.toml"))
        .env("MANIFOLD_AUDIT__PATH", &audit)
        .env("XDG_STATE_HOME", dir.path().join("state"))
        .output()
        .expect("manifold admin token");
    assert!(printed.status.success(), "{printed:?}");
    let token = String::from_utf8_lossy(&printed.stdout).trim().to_string();
    assert_eq!(token.len(), 64, "{token}");
    assert_eq!(
        std::fs::read_to_string(&token_file).expect("read").trim(),
        token
    );
    assert!(
        !link.contains(&token),
        "the link carries a code, never the token"
    );
    assert!(audit.exists(), "the audit log was not opened");
    let status = served
        .terminate(Duration::from_secs(15))
        .expect("manifold did not stop on SIGTERM");
    assert!(status.success(), "{status}");
}

/// `manifold check` on the shipped `gateway.toml` (the demo twice) leaves
/// nothing out: the two demos' resources and templates are namespaced
/// (`[naming] namespaced_schemes = ["demo"]`), not collisions.
#[test]
fn shipped_gateway_toml_leaves_nothing_out() {
    let dir = commands::TempDir::new("shipped-check");
    let out = Command::new(bin())
        .args(["check", "--json", "--config"])
        .arg(repo_file("gateway.toml"))
        .env("MANIFOLD_AUDIT__PATH", dir.path().join("audit.jsonl"))
        .env("XDG_STATE_HOME", dir.path().join("state"))
        .output()
        .expect("manifold check");
    assert!(out.status.success(), "{out:?}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["left_out"], serde_json::json!([]), "{}", v["left_out"]);
    let uris: Vec<&str> = v["resources"]
        .as_array()
        .expect("resources")
        .iter()
        .filter_map(|r| r["uri"].as_str().or_else(|| r.as_str()))
        .collect();
    assert!(
        uris.contains(&"demo://demo.readme") && uris.contains(&"demo://demo2.readme"),
        "{}",
        v["resources"]
    );
}

#[test]
fn admin_token_refuses_a_configuration_with_admin_credentials_or_without_admin() {
    let dir = commands::TempDir::new("admin-token");
    let no_admin = dir.write("a.toml", "[upstreams.d]\ncommand = \"true\"\n");
    let with_tokens = dir.write(
        "b.toml",
        &format!(
            "[upstreams.d]\ncommand = \"true\"\n\n[admin]\nlisten = \"127.0.0.1:0\"\n\n\
             [[admin.tokens]]\nname = \"ops\"\nhash = \"sha256:{}\"\n",
            "ab".repeat(32)
        ),
    );
    for config in [no_admin, with_tokens] {
        let out = Command::new(bin())
            .args(["admin", "token", "--config"])
            .arg(&config)
            .output()
            .expect("run");
        assert_eq!(out.status.code(), Some(2), "{out:?}");
        assert!(out.stdout.is_empty(), "{out:?}");
    }
    // A token file others may read is refused, not printed.
    let file = dir.path().join("t/admin-token");
    let open = dir.write(
        "c.toml",
        &format!(
            "[upstreams.d]\ncommand = \"true\"\n\n[admin]\nlisten = \"127.0.0.1:0\"\ntoken_file = {:?}\n",
            file.to_string_lossy()
        ),
    );
    let first = Command::new(bin())
        .args(["admin", "token", "--config"])
        .arg(&open)
        .output()
        .expect("run");
    assert!(first.status.success(), "{first:?}");
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    }
    let out = Command::new(bin())
        .args(["admin", "token", "--config"])
        .arg(&open)
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        out.stdout.is_empty() && String::from_utf8_lossy(&out.stderr).contains("chmod 600"),
        "{out:?}"
    );
}

#[test]
fn configuration_errors_exit_2_and_name_the_key_and_line() {
    let dir = std::env::temp_dir().join(format!("manifold-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cases = [
        ("[server]\nlisen = \"x\"\n", vec!["lisen", "line 2"]),
        (
            "[upstreams.\"a.b\"]\ncommand = \"x\"\n",
            vec!["upstreams.a.b", "^[A-Za-z0-9_-]{1,32}$"],
        ),
        (
            "[upstreams.x]\nurl = \"http://h\"\nheaders = { A = \"${MANIFOLD_TEST_UNSET_VAR}\" }\n",
            vec!["upstreams.x.headers.A", "MANIFOLD_TEST_UNSET_VAR"],
        ),
    ];
    for (i, (text, needles)) in cases.iter().enumerate() {
        let path = dir.join(format!("bad{i}.toml"));
        std::fs::write(&path, text).unwrap();
        let out = Command::new(bin())
            .args(["serve", "--config"])
            .arg(&path)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{text}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(&*path.to_string_lossy()),
            "names the file: {err}"
        );
        for n in needles {
            assert!(err.contains(n), "{text:?}: {err} should mention {n}");
        }
    }
    let out = Command::new(bin())
        .args(["serve", "--config", "/nonexistent/gateway.toml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn serve_refuses_an_open_listener_without_the_opt_in_and_its_hosts() {
    let dir = std::env::temp_dir().join(format!("manifold-open-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cases = [
        (
            "[server]\nlisten = \"0.0.0.0:0\"\n",
            "allow_unauthenticated",
        ),
        (
            "[server]\nlisten = \"0.0.0.0:0\"\nallow_unauthenticated = true\n",
            "allowed_hosts",
        ),
        // [auth] is the other way to serve an open port; it still needs the hosts.
        (
            "[server]\nlisten = \"0.0.0.0:0\"\n\n[[auth.api_keys]]\nname = \"ci\"\n\
             hash = \"sha256:0000000000000000000000000000000000000000000000000000000000000000\"\n",
            "allowed_hosts",
        ),
        // [auth] that lets anonymous callers in is not authentication.
        (
            "[server]\nlisten = \"0.0.0.0:0\"\n\n[auth]\nallow_anonymous = true\n\n[[auth.api_keys]]\n\
             name = \"ci\"\nhash = \"sha256:0000000000000000000000000000000000000000000000000000000000000000\"\n",
            "allow_unauthenticated",
        ),
    ];
    for (i, (text, needle)) in cases.iter().enumerate() {
        let path = dir.join(format!("open{i}.toml"));
        std::fs::write(&path, text).unwrap();
        let out = Command::new(bin())
            .args(["serve", "--config"])
            .arg(&path)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{text}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(needle), "{text}: {err}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `manifold auth hash-key` prints the digest the gateway checks keys against,
/// reads the key from stdin only, and refuses one too short to be a secret.
#[test]
fn auth_hash_key_prints_the_digest_of_the_key_on_stdin() {
    use std::io::Write;
    let run = |input: &str| {
        let mut child = Command::new(bin())
            .args(["auth", "hash-key"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
        child.wait_with_output().unwrap()
    };
    let out = run("0123456789abcdef-key\n");
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        manifold_policy::hash_key("0123456789abcdef-key")
    );
    let out = run("short\n");
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    assert!(String::from_utf8_lossy(&out.stderr).contains("at least 16"));
}

/// `[[endpoint]] naming = "original"` over two upstreams whose tools have the
/// same own names (the demo twice): `serve` refuses to start, naming the
/// endpoint, the name and both exposed names.
#[test]
fn serve_refuses_an_original_named_endpoint_whose_own_names_collide() {
    let dir = commands::TempDir::new("own-names");
    let cfg = dir.path().join("gateway.toml");
    std::fs::write(
        &cfg,
        format!(
            "[server]\nlisten = \"127.0.0.1:0\"\n\n\
             [upstreams.a]\ncommand = {bin:?}\nargs = [\"demo-upstream\"]\n\n\
             [upstreams.b]\ncommand = {bin:?}\nargs = [\"demo-upstream\"]\n\n\
             [[endpoint]]\npath = \"/mcp/own\"\nnaming = \"original\"\n",
            bin = bin()
        ),
    )
    .unwrap();
    let out = Command::new(bin())
        .args(["serve", "--config"])
        .arg(&cfg)
        .env("XDG_STATE_HOME", dir.path().join("state"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("/mcp/own: tool `echo`") && err.contains("a__echo") && err.contains("b__echo"),
        "{err}"
    );
}

/// Logs read well where a person reads them and parse where a machine does:
/// the human format on a terminal (here a pseudo-terminal from util-linux's
/// `script`), JSON lines anywhere else (a pipe, a file, a log collector).
#[test]
fn logs_are_human_on_a_terminal_and_json_elsewhere() {
    let config = repo_file("gateway.toml");
    let piped = Command::new(bin())
        .args(["tools", "--config"])
        .arg(&config)
        .env("RUST_LOG", "info")
        .output()
        .expect("run manifold tools");
    let stderr = String::from_utf8_lossy(&piped.stderr);
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert!(!lines.is_empty(), "no log lines");
    for l in &lines {
        let v: serde_json::Value =
            serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}"));
        assert!(v["level"].is_string() && v["timestamp"].is_string(), "{l}");
    }
    if Command::new("script").arg("--version").output().is_err() {
        eprintln!("util-linux `script` is not installed: the terminal half is not checked");
        return;
    }
    let shell = format!(
        "RUST_LOG=info {} tools --config {} >/dev/null",
        bin(),
        config.display()
    );
    let tty = Command::new("script")
        .args(["-qec", &shell, "/dev/null"])
        .output()
        .expect("run script");
    let text = String::from_utf8_lossy(&tty.stdout);
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    assert!(!lines.is_empty(), "no log lines on the terminal");
    for l in &lines {
        assert!(!l.trim_start().starts_with('{'), "JSON on a terminal: {l}");
    }
    assert!(lines.iter().any(|l| l.contains("INFO")), "{text}");
}
