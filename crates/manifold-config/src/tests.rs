use super::*;
use figment::providers::Env;
use std::path::Path;
use std::time::Duration;

fn load_with(text: &str, vars: &[(&str, &str)]) -> Result<GatewayConfig, ConfigError> {
    let owned: Vec<(String, String)> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let lookup = {
        let owned = owned.clone();
        move |k: &str| owned.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone())
    };
    // figment's Env reads the process environment; tests feed overrides through
    // a Jail-free path: the process environment is left untouched and overrides are
    // tested in `env_overrides` with unique variable names.
    load_str(
        Path::new("gateway.toml"),
        text,
        lookup,
        Env::raw().only(&[] as &[&str]),
    )
}

#[test]
fn defaults_are_valid() {
    let cfg = load_with("", &[]).unwrap();
    assert_eq!(cfg.server.listen.to_string(), DEFAULT_LISTEN);
    assert_eq!(cfg.server.path, DEFAULT_PATH);
    assert_eq!(cfg.server.page_size, DEFAULT_PAGE_SIZE);
    assert_eq!(cfg.naming.separator, DEFAULT_SEPARATOR);
    assert_eq!(cfg.naming.prefix_mode, PrefixMode::Always);
    assert_eq!(cfg.limits.max_body_bytes, DEFAULT_MAX_BODY_BYTES);
    assert!(cfg.upstreams.is_empty());
    let d = LimitsConfig::default();
    assert_eq!(d.session_idle_timeout, std::time::Duration::from_secs(3600));
}

#[test]
fn the_issue_example_loads() {
    let text = r#"
[server]
listen = "127.0.0.1:8080"
path = "/mcp"

[naming]
separator = "__"

[upstreams.time]
command = "uvx"
args = ["mcp-server-time"]
env = { TZ = "UTC" }

[upstreams.github]
url = "https://example.com/mcp"
headers = { Authorization = "Bearer ${GITHUB_TOKEN}" }
timeout = "60s"
"#;
    let cfg = load_with(text, &[("GITHUB_TOKEN", "s3cret")]).unwrap();
    let names: Vec<_> = cfg.upstreams.iter().map(|u| u.name.as_str()).collect();
    assert_eq!(names, ["github", "time"]);
    match &cfg.upstreams[0].transport {
        Transport::Http { url, headers, .. } => {
            assert_eq!(url, "https://example.com/mcp");
            assert_eq!(headers["Authorization"], "Bearer s3cret");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(cfg.upstreams[0].timeout, std::time::Duration::from_secs(60));
    match &cfg.upstreams[1].transport {
        Transport::Stdio {
            command, args, env, ..
        } => {
            assert_eq!(command, "uvx");
            assert_eq!(args, &["mcp-server-time"]);
            assert_eq!(env["TZ"], "UTC");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn errors_name_the_key_and_line() {
    let cases: &[(&str, &[&str])] = &[
        (
            "[server]\nlisten = \"127.0.0.1:1\"\nlisen = 3\n",
            &["lisen", "line 3"],
        ),
        ("[nope]\n", &["nope", "line 1"]),
        (
            "[upstreams.a]\ncommand = \"x\"\nbogus = 1\n",
            &["bogus", "line 3"],
        ),
        (
            "[server]\nlisten = \"nowhere\"\n",
            &["server.listen", "nowhere"],
        ),
        (
            "[upstreams.\"bad name\"]\ncommand = \"x\"\n",
            &["upstreams.bad name", "^[A-Za-z0-9_-]"],
        ),
        ("[upstreams.a]\n", &["upstreams.a", "command", "url"]),
        (
            "[upstreams.a]\ncommand = \"x\"\nurl = \"http://h\"\n",
            &["not both"],
        ),
        ("[upstreams.a]\nurl = \"ftp://h\"\n", &["upstreams.a.url"]),
        (
            "[upstreams.a]\nurl = \"http://h\"\ntimeout = \"soon\"\n",
            &["upstreams.a.timeout", "soon"],
        ),
        (
            "[upstreams.a]\nurl = \"http://h\"\nheaders = { X = \"${NOPE}\" }\n",
            &["upstreams.a.headers.X", "NOPE"],
        ),
        ("[naming]\nseparator = \".\"\n", &["naming.separator"]),
        (
            "[naming]\nprefix_mode = \"sometimes\"\n",
            &["naming.prefix_mode", "sometimes"],
        ),
        ("[server]\npage_size = 0\n", &["server.page_size"]),
        ("[server]\npath = \"mcp\"\n", &["server.path"]),
        (
            "[upstreams.a]\ncommand = \"x\"\nheaders = { A = \"b\" }\n",
            &["only HTTP"],
        ),
        ("[server]\nlisten = 5\n", &["listen", "line 2"]),
        (
            "[upstreams.a]\nurl = \"http://h\"\nurls = [\"http://i\"]\n",
            &["upstreams.a", "`url`", "`urls`", "not both"],
        ),
        (
            "[upstreams.a]\nurls = [\"http://h\", \"ftp://i\"]\n",
            &["upstreams.a.urls", "ftp://i"],
        ),
        (
            "[upstreams.a]\nurls = [\"http://h\", \"http://h\"]\n",
            &["upstreams.a.urls", "twice"],
        ),
        (
            "[upstreams.a]\ncommand = \"x\"\ninstances = 0\n",
            &["upstreams.a.instances", "between 1 and 64"],
        ),
        (
            "[upstreams.a]\ncommand = \"x\"\ninstances = 65\n",
            &["upstreams.a.instances"],
        ),
        (
            "[upstreams.a]\nurl = \"http://h\"\ninstances = 2\n",
            &["upstreams.a.instances", "urls"],
        ),
        (
            "[upstreams.a]\ncommand = \"x\"\nurls = [\"http://h\"]\n",
            &["upstreams.a", "not both"],
        ),
    ];
    for (text, needles) in cases {
        let err = load_with(text, &[]).unwrap_err().to_string();
        assert!(err.starts_with("gateway.toml: "), "{err}");
        for n in *needles {
            assert!(
                err.contains(n),
                "error for {text:?} should mention {n:?}: {err}"
            );
        }
    }
}

#[test]
fn env_overrides_apply_after_the_file() {
    // Unique names so parallel tests never see each other's variables.
    std::env::set_var("MANIFOLD_SERVER__PAGE_SIZE", "7");
    std::env::set_var("MANIFOLD_UPSTREAMS__ENVTEST__TIMEOUT", "5s");
    std::env::set_var("MANIFOLD_NOT_A_SECTION", "ignored");
    let text = "[server]\npage_size = 3\n[upstreams.envtest]\ncommand = \"x\"\n";
    let cfg = load_str(Path::new("g.toml"), text, |_| None, Env::raw()).unwrap();
    std::env::remove_var("MANIFOLD_SERVER__PAGE_SIZE");
    std::env::remove_var("MANIFOLD_UPSTREAMS__ENVTEST__TIMEOUT");
    std::env::remove_var("MANIFOLD_NOT_A_SECTION");
    assert_eq!(cfg.server.page_size, 7);
    assert_eq!(cfg.upstreams[0].timeout, std::time::Duration::from_secs(5));
}

#[test]
fn upstream_name_rule() {
    for ok in ["a", "time", "my-tool_2", &"x".repeat(32)] {
        assert!(is_valid_upstream_name(ok), "{ok}");
    }
    for bad in ["", "a.b", "a b", "ü", &"x".repeat(33)] {
        assert!(!is_valid_upstream_name(bad), "{bad}");
    }
}

#[test]
fn prefix_alias_and_filters_load() {
    let text = r#"
[upstreams.github-enterprise]
url = "https://example.com/mcp"
prefix = "gh"
tools = { allow = ["get_*", "list_*"], deny = ["get_secret*"] }
prompts = { deny = ["*"] }

[upstreams.time]
command = "uvx"
"#;
    let cfg = load_with(text, &[]).unwrap();
    let gh = &cfg.upstreams[0];
    assert_eq!(gh.name, "github-enterprise");
    assert_eq!(gh.prefix, "gh");
    assert_eq!(gh.tools.allow, ["get_*", "list_*"]);
    assert_eq!(gh.tools.deny, ["get_secret*"]);
    assert_eq!(gh.prompts.deny, ["*"]);
    assert_eq!(
        cfg.upstreams[1].prefix, "time",
        "the default prefix is the name"
    );
}

#[test]
fn bad_prefix_and_filters_are_errors_naming_the_key() {
    let cases = [
        (
            "[upstreams.a]\ncommand = \"x\"\nprefix = \"has space\"\n",
            "upstreams.a.prefix",
        ),
        (
            "[upstreams.a]\ncommand = \"x\"\ntools = { allow = [\"\"] }\n",
            "upstreams.a.tools",
        ),
        (
            "[upstreams.a]\ncommand = \"x\"\ntools = { alow = [\"x\"] }\n",
            "alow",
        ),
    ];
    for (text, needle) in cases {
        let err = load_with(text, &[]).unwrap_err().to_string();
        assert!(err.contains(needle), "{text}: {err}");
    }
}

#[test]
fn request_state_key_expands_and_must_be_long_enough() {
    let env = |k: &str| (k == "STATE_KEY").then(|| "k".repeat(40));
    let cfg = load_str(
        Path::new("g.toml"),
        "[server]\nrequest_state_key = \"${STATE_KEY}\"\n",
        env,
        figment::providers::Env::raw().only(&[] as &[&str]),
    )
    .expect("valid");
    assert_eq!(cfg.server.request_state_key, Some("k".repeat(40)));
    let err = load_str(
        Path::new("g.toml"),
        "[server]\nrequest_state_key = \"short\"\n",
        |_| None,
        figment::providers::Env::raw().only(&[] as &[&str]),
    )
    .expect_err("too short");
    assert!(
        err.to_string().contains("server.request_state_key"),
        "{err}"
    );
}

#[test]
fn upstream_protocol_is_auto_session_era_or_2026_07_28() {
    let load = |p: &str| {
        load_str(
            Path::new("g.toml"),
            &format!("[upstreams.a]\ncommand = \"x\"\n{p}"),
            |_| None,
            figment::providers::Env::raw().only(&[] as &[&str]),
        )
    };
    assert_eq!(
        load("").expect("ok").upstreams[0].protocol,
        UpstreamProtocol::Auto
    );
    assert_eq!(
        load("protocol = \"legacy\"\n").expect("ok").upstreams[0].protocol,
        UpstreamProtocol::Session
    );
    assert_eq!(
        load("protocol = \"2026-07-28\"\n").expect("ok").upstreams[0].protocol,
        UpstreamProtocol::Stateless
    );
    let err = load("protocol = \"modern\"\n").expect_err("bad value");
    assert!(err.to_string().contains("upstreams.a.protocol"), "{err}");
}

#[test]
fn a_non_loopback_listener_needs_the_opt_in_and_its_hosts() {
    let rows = [
        ("listen = \"127.0.0.1:8080\"", None),
        ("listen = \"[::1]:8080\"", None),
        ("listen = \"0.0.0.0:8080\"", Some("allow_unauthenticated")),
        (
            "listen = \"0.0.0.0:8080\"\nallow_unauthenticated = true",
            Some("allowed_hosts"),
        ),
        (
            "listen = \"10.0.0.5:8080\"\nallow_unauthenticated = true\nallowed_hosts = [\"mcp.internal\"]",
            None,
        ),
    ];
    for (server, want) in rows {
        let cfg = load_with(&format!("[server]\n{server}\n"), &[]).expect(server);
        let got = cfg.exposure_problem();
        match want {
            None => assert_eq!(got, None, "{server}"),
            Some(key) => {
                let msg = got.unwrap_or_else(|| panic!("{server}: no problem found"));
                assert!(msg.contains(key), "{server}: {msg}");
            }
        }
    }
}

#[test]
fn exposure_is_judged_by_the_listener_and_tls_in_force() {
    let in_force_tls = TlsConfig {
        cert: "c.pem".into(),
        key: "k.pem".into(),
        client_ca: Some("ca.pem".into()),
        client_crl: Vec::new(),
        require_client_cert: true,
    };
    let open = load_with(
        "[server]\nlisten = \"0.0.0.0:8080\"\nallowed_hosts = [\"*\"]\n",
        &[],
    )
    .unwrap();
    let any: std::net::SocketAddr = "0.0.0.0:8080".parse().unwrap();
    let lo: std::net::SocketAddr = "127.0.0.1:8080".parse().unwrap();
    // The file's own view: no [auth], no TLS, not loopback.
    assert!(open.exposure_problem().is_some());
    // Client certificates in force protect it, whatever the file says.
    assert_eq!(
        open.exposure_problem_in_force(any, Some(&in_force_tls)),
        None
    );
    // A file on loopback does not move a listener in force elsewhere.
    let loopback = load_with("[server]\nlisten = \"127.0.0.1:8080\"\n", &[]).unwrap();
    assert_eq!(loopback.exposure_problem(), None);
    let msg = loopback
        .exposure_problem_in_force(any, None)
        .expect("exposed");
    assert!(msg.contains("in force"), "{msg}");
    assert_eq!(loopback.exposure_problem_in_force(lo, None), None);
}

#[test]
fn policy_confirm_and_overrides_load() {
    let text = r#"
[upstreams.github]
url = "https://example.com/mcp"

[upstreams.github.overrides.create_issue]
name = "open_issue"
description = "Open an issue in the acme org only."
pin = { owner = "acme", labels = ["triage"], limits = { max = 3 } }
hide = ["debug"]

[[policy]]
who = ["group:ops", "key:ci-bot"]
tools = { allow = ["github__*"], deny = ["github__delete_*"] }
prompts = { allow = ["*"] }
resources = { allow = ["file:///srv/docs/*"] }

[confirm]
tools = ["github__delete_*", "*__drop_*"]
destructive = true
without_elicitation = "allow"
"#;
    let cfg = load_with(text, &[]).unwrap();
    let o = &cfg.upstreams[0].overrides["create_issue"];
    assert_eq!(o.name.as_deref(), Some("open_issue"));
    assert_eq!(
        serde_json::Value::Object(o.pin.clone()),
        serde_json::json!({"owner": "acme", "labels": ["triage"], "limits": {"max": 3}})
    );
    assert_eq!(o.hide, ["debug"]);
    assert_eq!(cfg.policy.len(), 1);
    assert_eq!(
        cfg.policy[0].tools.as_ref().unwrap().deny,
        ["github__delete_*"]
    );
    assert!(cfg.confirm.destructive);
    assert_eq!(cfg.confirm.without_elicitation, WithoutElicitation::Allow);
    let err = load_with("[confirm]\nwithout_elicitation = \"maybe\"\n", &[]).unwrap_err();
    assert!(err.message.contains("without_elicitation"), "{err}");
}

#[test]
fn retries_and_breakers_load_with_the_keys_the_issue_names() {
    let text = r#"
[upstreams.a]
url = "https://example.com/mcp"
retries = {max = 3, budget = 0.2}

[upstreams.a.breaker]
failures = 4
window = "20s"
error_ratio = 0.25
open_for = "5s"

[upstreams.b]
command = "b"

[upstreams.b.overrides.lookup]
retry = true

[upstreams.c]
command = "c"
"#;
    let cfg = load_with(text, &[]).unwrap();
    let (a, b, c) = (&cfg.upstreams[0], &cfg.upstreams[1], &cfg.upstreams[2]);
    assert_eq!(
        a.retries,
        Some(RetryPolicy {
            max: 3,
            budget: 0.2
        })
    );
    let br = a.breaker.unwrap();
    assert_eq!(
        (br.failures, br.window, br.error_ratio, br.open_for),
        (4, Duration::from_secs(20), 0.25, Duration::from_secs(5))
    );
    // An override asking for retries turns them on with the defaults.
    assert_eq!(b.retries, Some(RetryPolicy::default()));
    assert_eq!(b.overrides["lookup"].retry, Some(true));
    assert_eq!((c.retries, c.breaker), (None, None));
    let err = load_with(
        "[upstreams.a]\ncommand = \"a\"\nretries = {max = 2, tries = 3}\n",
        &[],
    )
    .unwrap_err();
    assert!(err.message.contains("tries"), "{err}");
}

#[test]
fn coalesce_is_an_override_key_off_unless_written() {
    let text = r#"
[upstreams.a]
command = "a"

[upstreams.a.overrides.lookup]
coalesce = true

[upstreams.a.overrides.search]
name = "find"
"#;
    let cfg = load_with(text, &[]).unwrap();
    let a = &cfg.upstreams[0];
    assert_eq!(a.overrides["lookup"].coalesce, Some(true));
    assert_eq!(a.overrides["search"].coalesce, None);
    // Coalescing alone turns nothing else on.
    assert_eq!(a.retries, None);
    let err = load_with(
        "[upstreams.a]\ncommand = \"a\"\n[upstreams.a.overrides.t]\ncoalesce = \"yes\"\n",
        &[],
    )
    .unwrap_err();
    assert!(err.message.contains("coalesce"), "{err}");
}

#[test]
fn upstream_credentials_pin_their_authorization_server() {
    let up = |auth: &str| {
        format!(
            "[upstreams.a]\nurl = \"https://mcp.example.com/mcp\"\n[upstreams.a.auth]\n{auth}\n"
        )
    };
    let cc = "type = \"client_credentials\"\nclient_id = \"g\"\nclient_secret = \"s\"\n";
    let te = "type = \"token_exchange\"\nclient_id = \"g\"\nclient_secret = \"s\"\n";
    let jwt = "[auth]\n[[auth.jwt]]\nissuer = \"https://as.example.com\"\njwks_url = \"https://as.example.com/jwks\"\n";
    let intro = |url: &str| {
        format!("[auth]\n[[auth.introspection]]\nurl = \"{url}\"\nclient_id = \"m\"\nclient_secret = \"s\"\n")
    };
    let cases = [
        // Not taken from the upstream: written, or no client_credentials at all.
        (up(cc), "upstreams.a.auth.issuer"),
        (up(te), "upstreams.a.auth.issuer"),
        (
            up(&format!("{cc}issuer = \"http://as.example.com\"")),
            "must be an https:// URL",
        ),
        (
            up(&format!("{cc}issuer = \"https://as.example.com/?tenant=x\"")),
            "no query or fragment",
        ),
        (
            up(&format!("{cc}token_endpoint = \"https://as.example.com/token\"")),
            "needs the `issuer`",
        ),
        (
            up("type = \"static\"\nissuer = \"https://as.example.com\""),
            "`static` takes no",
        ),
        (
            up(&format!(
                "{cc}issuer = \"https://as.example.com\"\nexchange_from = [\"https://as.example.com\"]"
            )),
            "only `token_exchange`",
        ),
        // A caller's token goes only where it already is, or where the operator says.
        (
            up(&format!("{te}issuer = \"https://as.example.com\"")),
            "would exchange no caller's token",
        ),
        (
            format!(
                "{}{jwt}",
                up(&format!("{te}issuer = \"https://other.example.com\""))
            ),
            "would exchange no caller's token",
        ),
        (
            format!(
                "{}{jwt}",
                up(&format!(
                    "{te}issuer = \"https://other.example.com\"\nexchange_from = [\"https://partner.example.com\"]"
                ))
            ),
            "neither an [[auth.jwt]] issuer",
        ),
        (
            format!(
                "{}{}",
                up(&format!("{te}issuer = \"https://other.example.com\"")),
                intro("https://as.example.com/introspect")
            ),
            "not every [[auth.introspection]] endpoint is on its origin",
        ),
    ];
    for (text, needle) in &cases {
        let err = load_with(text, &[]).unwrap_err().to_string();
        assert!(err.contains(needle), "{text}\n=> {err}");
    }

    let auth_of = |cfg: &GatewayConfig| match &cfg.upstreams[0].transport {
        Transport::Http { auth, .. } => auth.clone(),
        Transport::Stdio { .. } => unreachable!(),
    };
    // The issuer's own JWTs, by default; trailing slashes do not matter.
    let cfg = load_with(
        &format!(
            "{}{jwt}",
            up(&format!("{te}issuer = \"https://as.example.com/\""))
        ),
        &[],
    )
    .unwrap();
    let credentials::UpstreamAuth::TokenExchange(c) = auth_of(&cfg) else {
        panic!("not token_exchange");
    };
    assert_eq!(c.issuer.as_deref(), Some("https://as.example.com/"));
    assert_eq!(c.exchange_from.jwt_issuers, ["https://as.example.com"]);
    assert!(!c.exchange_from.introspection);
    // Introspected tokens when the endpoint is on the issuer's origin, or named.
    let cfg = load_with(
        &format!(
            "{}{}",
            up(&format!("{te}issuer = \"https://as.example.com/realms/x\"")),
            intro("https://as.example.com/realms/x/introspect")
        ),
        &[],
    )
    .unwrap();
    let credentials::UpstreamAuth::TokenExchange(c) = auth_of(&cfg) else {
        panic!("not token_exchange");
    };
    assert!(c.exchange_from.introspection && c.exchange_from.jwt_issuers.is_empty());
    let cfg = load_with(
        &format!(
            "{}{}",
            up(&format!(
                "{te}issuer = \"https://exchange.example.com\"\ntoken_endpoint = \"https://sts.example.com/token\"\nexchange_from = [\"https://idp.example.com/introspect\"]"
            )),
            intro("https://idp.example.com/introspect")
        ),
        &[],
    )
    .unwrap();
    let credentials::UpstreamAuth::TokenExchange(c) = auth_of(&cfg) else {
        panic!("not token_exchange");
    };
    assert!(c.exchange_from.introspection);
    assert_eq!(
        c.token_endpoint.as_deref(),
        Some("https://sts.example.com/token")
    );
    // `oauth` may leave it to `manifold login`, or pin it.
    let store = "[credentials]\nstore = \"/tmp/x\"\nkey = \"0123456789abcdef0123456789abcdef\"\n";
    for auth in [
        "type = \"oauth\"",
        "type = \"oauth\"\nissuer = \"https://as.example.com\"",
    ] {
        load_with(&format!("{}{store}", up(auth)), &[]).unwrap();
    }
}

/// Each section says what a reload cannot change; the gateway reads them all,
/// in the order of the file, by value.
#[test]
fn each_section_declares_what_a_reload_cannot_change() {
    let base = "[server]\nlisten = \"127.0.0.1:8080\"\n\n[limits]\nmax_sessions = 10\n\n\
                [naming]\nseparator = \"__\"\n\n[metrics]\nmax_tool_series = 5\n\n\
                [stdio]\nprincipal = \"a\"\n\n[integrity]\nstore = \"/tmp/a.json\"\n";
    let old = load_with(base, &[]).expect("base");
    assert_eq!(old.fixed_at_start(&old), Vec::<String>::new());
    let changed = base
        .replace("127.0.0.1:8080", "127.0.0.1:9090")
        .replace("max_sessions = 10", "max_sessions = 11")
        .replace("separator = \"__\"", "separator = \"-\"")
        .replace("max_tool_series = 5", "max_tool_series = 6")
        .replace("principal = \"a\"", "principal = \"b\"")
        .replace("/tmp/a.json", "/tmp/b.json");
    let new = load_with(&changed, &[]).expect("changed");
    assert_eq!(
        old.fixed_at_start(&new),
        [
            "server.listen",
            "stdio.principal",
            "metrics.max_tool_series",
            "limits.max_sessions",
            "integrity.store"
        ],
        "the separator reloads; the rest is fixed at start"
    );
}

#[test]
fn pools_load_from_instances_or_urls() {
    let c = load_with(
        "[upstreams.kids]\ncommand = \"srv\"\ninstances = 4\n\
         [upstreams.web]\nurls = [\"http://a:1/mcp\", \"http://b:2/mcp\"]\n\
         [upstreams.one]\nurls = [\"http://c:3/mcp\"]\n\
         [upstreams.plain]\ncommand = \"srv\"\n",
        &[],
    )
    .unwrap();
    let by = |n: &str| c.upstreams.iter().find(|u| u.name == n).unwrap().clone();
    let kids = by("kids");
    assert_eq!((kids.instances, kids.is_pool()), (4, true));
    assert_eq!(
        kids.member(3),
        kids,
        "a stdio member runs the command as written"
    );
    let web = by("web");
    assert_eq!(web.instances, 2);
    let url = |u: &crate::upstreams::UpstreamConfig| match &u.transport {
        crate::upstreams::Transport::Http { url, .. } => url.clone(),
        _ => panic!("http"),
    };
    assert_eq!(url(&web), "http://a:1/mcp");
    assert_eq!(url(&web.member(1)), "http://b:2/mcp");
    let one = by("one");
    assert_eq!(
        (one.instances, url(&one)),
        (1, "http://c:3/mcp".to_string())
    );
    assert!(!one.is_pool() && one.pool_urls.is_empty());
    assert_eq!(by("plain").instances, 1);
}

#[test]
fn an_admin_token_may_not_be_a_clients_api_key() {
    let hash = format!("sha256:{}", "ab".repeat(32));
    let other = format!("sha256:{}", "cd".repeat(32));
    let text = |admin_hash: &str| {
        format!(
            "[auth]\n[[auth.api_keys]]\nname = \"ci-bot\"\nhash = \"{hash}\"\n\n\
             [admin]\nlisten = \"127.0.0.1:9090\"\n[[admin.tokens]]\nname = \"ops\"\nhash = \"{admin_hash}\"\n"
        )
    };
    let err = load_with(&text(&hash), &[]).unwrap_err().to_string();
    for needle in ["admin.tokens", "ops", "ci-bot", "admin token"] {
        assert!(err.contains(needle), "{needle} in {err}");
    }
    assert!(load_with(&text(&other), &[]).is_ok());
}

#[test]
fn per_caller_accounts_are_validated_and_need_an_address_browsers_reach() {
    let store = "[credentials]\nstore = \"/tmp/x\"\nkey = \"0123456789abcdef0123456789abcdef\"\n";
    let cfg = |server: &str, auth: &str, store: &str| {
        format!("{server}[upstreams.a]\nurl = \"https://mcp.example.com/mcp\"\n[upstreams.a.auth]\n{auth}\n{store}")
    };
    let oauth = "type = \"user_oauth\"\nissuer = \"https://as.example.com\"\nclient_id = \"gw\"\n";
    // (server section, auth, with store, the error's words; "" loads)
    let table: &[(&str, &str, bool, &str)] = &[
        ("", oauth, true, ""),
        ("", "type = \"user_secret\"\n", true, ""),
        ("", "type = \"user_secret\"\ninject = { query = \"api_key\" }\ncheck = \"tools/list\"\n", true, ""),
        ("", oauth, false, "[credentials]"),
        ("", "type = \"user_oauth\"\nclient_id = \"gw\"\n", true, "auth.issuer"),
        ("", "type = \"user_oauth\"\nissuer = \"https://as.example.com\"\n", true, "client_id"),
        ("", &format!("{oauth}resource = \"not a url\"\n"), true, "auth.resource"),
        ("", "type = \"user_secret\"\ninject = { header = \"X Key\" }\n", true, "inject.header"),
        ("", "type = \"user_secret\"\ninject = { format = \"Token\" }\n", true, "{secret}"),
        ("", "type = \"user_secret\"\ninject = { query = \"k\", header = \"X\" }\n", true, "not both"),
        ("", "type = \"user_secret\"\ncheck = \"ping\"\n", true, "auth.check"),
        ("", "type = \"user_secret\"\nclient_id = \"x\"\n", true, "only `inject`"),
        ("", "type = \"static\"\ncheck = \"tools/list\"\n", true, "belong to `user_secret`"),
        ("[server]\nlisten = \"0.0.0.0:8080\"\nallowed_hosts = [\"mcp.example.com\"]\n", oauth, true, "server.public_url"),
        ("[server]\nlisten = \"0.0.0.0:8080\"\nallowed_hosts = [\"mcp.example.com\"]\npublic_url = \"https://mcp.example.com/\"\n", oauth, true, ""),
        ("[server]\npublic_url = \"https://mcp.example.com/?x=1\"\n", oauth, true, "server.public_url"),
    ];
    for (server, auth, with_store, words) in table {
        let text = cfg(server, auth, if *with_store { store } else { "" });
        match load_with(&text, &[]) {
            Ok(c) => {
                assert_eq!(*words, "", "{text} loaded");
                assert!(matches!(
                    &c.upstreams[0].transport,
                    Transport::Http { auth, .. } if auth.per_user()
                ));
                if server.contains("public_url") {
                    assert_eq!(
                        c.server.public_base().as_deref(),
                        Some("https://mcp.example.com")
                    );
                }
            }
            Err(e) => assert!(
                !words.is_empty() && e.to_string().contains(words),
                "{text}: {e}"
            ),
        }
    }
    // connect_ttl: default 10 minutes, bounded.
    let c = load_with(&cfg("", oauth, store), &[]).unwrap();
    assert_eq!(c.credentials.unwrap().connect_ttl, Duration::from_secs(600));
    let long = store.replace("key =", "connect_ttl = \"2d\"\nkey =");
    assert!(load_with(&cfg("", oauth, &long), &[]).is_err());
}

#[test]
fn signing_browsers_in_needs_one_openid_issuer_of_auth() {
    let store = "[credentials]\nstore = \"/tmp/x\"\nkey = \"0123456789abcdef0123456789abcdef\"\nsign_in_client_id = \"gw\"\n";
    let jwt = |i: &str| format!("[[auth.jwt]]\nissuer = \"{i}\"\njwks_url = \"{i}/jwks\"\n");
    let one = format!("{store}[auth]\n{}", jwt("https://idp.example.com"));
    let c = load_with(&one, &[]).expect("one issuer");
    let s = c.credentials.and_then(|c| c.sign_in).expect("sign_in");
    assert_eq!(
        (s.issuer.as_str(), s.client_id.as_str()),
        ("https://idp.example.com", "gw")
    );
    let e = load_with(store, &[]).expect_err("no [auth]");
    assert!(e.to_string().contains("[[auth.jwt]]"), "{e}");
    let two = format!(
        "{store}[auth]\n{}{}",
        jwt("https://a.example.com"),
        jwt("https://b.example.com")
    );
    let e = load_with(&two, &[]).expect_err("two issuers");
    assert!(e.to_string().contains("sign_in_issuer"), "{e}");
    let chosen = two.replace(
        "sign_in_client_id",
        "sign_in_issuer = \"https://b.example.com\"\nsign_in_client_id",
    );
    let c = load_with(&chosen, &[]).expect("chosen");
    assert_eq!(
        c.credentials.and_then(|c| c.sign_in).map(|s| s.issuer),
        Some("https://b.example.com".into())
    );
    let stray = "[credentials]\nstore = \"/tmp/x\"\nkey = \"0123456789abcdef0123456789abcdef\"\nsign_in_issuer = \"https://a.example.com\"\n";
    assert!(load_with(stray, &[]).is_err());
}
