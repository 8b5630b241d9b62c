//! Beyond tools, through Manifold with both official SDK clients: prompts,
//! resources, templates, resource links, subscriptions, completion and logging.

use super::*;

// ---------------------------------------------------------------- beyond tools

const FEATURES: &str = "demo://resource/static/document/features.md";
const STATIC_DOCS: &str = "demo://resource/static/document/";
const TEXT_TEMPLATE: &str = "demo://resource/dynamic/text/{resourceId}";
const BLOB_TEMPLATE: &str = "demo://resource/dynamic/blob/{resourceId}";
/// Registered on `everything_http` only, by its gzip-file-as-resource tool.
const SESSION_RES: &str = "demo://resource/session/manifold-interop.txt.gz";
const UPSTREAMS: [&str; 2] = ["everything", "everything_http"];
/// Subscribed by the bystander session only.
const STARTUP_DOC: &str = "demo://resource/static/document/startup.md";
use manifold_protocol::logging::LEVELS;

/// A plan whose steps are found again by label.
#[derive(Default)]
struct Plan {
    steps: Vec<Value>,
    labels: Vec<&'static str>,
}

impl Plan {
    fn add(&mut self, label: &'static str, step: Value) {
        assert!(
            !self.labels.contains(&label),
            "duplicate step label {label}"
        );
        self.labels.push(label);
        self.steps.push(step);
    }
    fn at(&self, label: &str) -> usize {
        self.labels
            .iter()
            .position(|l| *l == label)
            .unwrap_or_else(|| panic!("no step labelled {label}"))
    }
    /// `mode: session-era`: the Python client uses the `initialize` handshake (2025-11-25), the
    /// era of resources/subscribe and logging/setLevel, whatever Manifold would negotiate.
    fn json(&self) -> Value {
        json!({"steps": self.steps, "timeoutMs": 30000, "mode": "legacy"})
    }
}

fn call(name: &str, arguments: Value) -> Value {
    json!({"op": "call_tool", "name": name, "arguments": arguments})
}

fn read(uri: &str) -> Value {
    json!({"op": "read_resource", "uri": uri})
}

fn wait(method: &str, since: usize, count: usize, timeout_ms: u64) -> Value {
    json!({"op": "wait_notifications", "method": method, "since": since, "count": count, "timeoutMs": timeout_ms})
}

/// Prompts, resources, resource links, subscriptions, completion and logging of both
/// server-everything upstreams (stdio `everything`, HTTP `everything_http`). Each
/// `toggle-*` tool is called twice so that the upstream state is the same for the
/// next client.
fn surface_plan() -> Plan {
    let mut p = Plan::default();
    p.add(
        "level_debug",
        json!({"op": "set_logging_level", "level": "debug"}),
    );
    p.add("prompts", json!({"op": "list_prompts"}));
    p.add(
        "args_prompt",
        json!({"op": "get_prompt", "name": "everything__args-prompt", "arguments": {"city": "Austin", "state": "TX"}}),
    );
    p.add(
        "simple_prompt",
        json!({"op": "get_prompt", "name": "everything_http__simple-prompt"}),
    );
    p.add(
        "resource_prompt",
        json!({"op": "get_prompt", "name": "everything__resource-prompt", "arguments": {"resourceType": "Text", "resourceId": "3"}}),
    );
    p.add("resources", json!({"op": "list_resources"}));
    p.add("templates", json!({"op": "list_resource_templates"}));
    p.add("read_listed", read(FEATURES));
    p.add(
        "read_text_template",
        read("demo://resource/dynamic/text/42"),
    );
    p.add("read_blob_template", read("demo://resource/dynamic/blob/7"));
    p.add(
        "read_unknown",
        read("demo://resource/static/document/no-such.md"),
    );
    p.add(
        "links",
        call("everything_http__get-resource-links", json!({"count": 4})),
    );
    p.add("read_link", read("demo://resource/dynamic/text/4"));
    p.add(
        "gzip_link",
        call(
            "everything_http__gzip-file-as-resource",
            json!({"name": "manifold-interop.txt.gz", "data": "data:text/plain,hello%20manifold", "outputType": "resourceLink"}),
        ),
    );
    p.add("read_gzip_link", read(SESSION_RES));
    p.add(
        "complete_prompt",
        json!({"op": "complete", "ref": {"type": "ref/prompt", "name": "everything__completable-prompt"},
               "argument": {"name": "department", "value": "E"}}),
    );
    p.add(
        "complete_prompt_context",
        json!({"op": "complete", "ref": {"type": "ref/prompt", "name": "everything_http__completable-prompt"},
               "argument": {"name": "name", "value": ""}, "context": {"arguments": {"department": "Sales"}}}),
    );
    p.add(
        "complete_template",
        json!({"op": "complete", "ref": {"type": "ref/resource", "uri": TEXT_TEMPLATE},
               "argument": {"name": "resourceId", "value": "12"}}),
    );
    // FEATURES is owned by `everything` (sorts first), SESSION_RES by `everything_http`.
    p.add(
        "subscribe_doc",
        json!({"op": "subscribe_resource", "uri": FEATURES}),
    );
    p.add(
        "subscribe_session",
        json!({"op": "subscribe_resource", "uri": SESSION_RES}),
    );
    // Each toggle sends one update per subscribed URI at once, then every 5 s.
    p.add(
        "updates_on_stdio",
        call("everything__toggle-subscriber-updates", json!({})),
    );
    p.add(
        "updates_on_http",
        call("everything_http__toggle-subscriber-updates", json!({})),
    );
    let since = p.at("updates_on_stdio");
    p.add(
        "updated",
        wait("notifications/resources/updated", since, 2, 10_000),
    );
    p.add(
        "updates_off_stdio",
        call("everything__toggle-subscriber-updates", json!({})),
    );
    p.add(
        "updates_off_http",
        call("everything_http__toggle-subscriber-updates", json!({})),
    );
    // server-everything logs (info) every subscribe. Only the HTTP upstream's reaches
    // clients: on stdio it is tied to Manifold's own resources/subscribe call.
    let since = p.at("subscribe_doc");
    p.add(
        "subscribe_logs",
        wait("notifications/message", since, 1, 10_000),
    );
    // Each toggle sends one random-level message at once, then every 5 s.
    p.add(
        "logging_on_stdio",
        call("everything__toggle-simulated-logging", json!({})),
    );
    p.add(
        "logging_on_http",
        call("everything_http__toggle-simulated-logging", json!({})),
    );
    let since = p.at("logging_on_stdio");
    p.add(
        "simulated_logs",
        wait("notifications/message", since, 2, 10_000),
    );
    p.add(
        "logging_off_stdio",
        call("everything__toggle-simulated-logging", json!({})),
    );
    p.add(
        "logging_off_http",
        call("everything_http__toggle-simulated-logging", json!({})),
    );
    p.add(
        "unsubscribe_doc",
        json!({"op": "unsubscribe_resource", "uri": FEATURES}),
    );
    p.add(
        "unsubscribe_session",
        json!({"op": "unsubscribe_resource", "uri": SESSION_RES}),
    );
    // Manifold unsubscribes upstream after answering: let both upstreams' info logs of
    // it arrive before the level changes, so that neither can land after that step. Both,
    // counted from the first unsubscribe: the stdio upstream's log of `unsubscribe_doc`
    // may arrive after `unsubscribe_session` answered, and waiting for one log from there
    // would then end before the HTTP upstream's.
    let since = p.at("unsubscribe_doc");
    p.add(
        "unsubscribe_logs",
        wait("notifications/message", since, 2, 10_000),
    );
    // At level `error` the info-level subscribe/unsubscribe logs must not arrive.
    p.add(
        "level_error",
        json!({"op": "set_logging_level", "level": "error"}),
    );
    p.add(
        "resubscribe_session",
        json!({"op": "subscribe_resource", "uri": SESSION_RES}),
    );
    p.add(
        "reunsubscribe_session",
        json!({"op": "unsubscribe_resource", "uri": SESSION_RES}),
    );
    let since = p.at("level_error");
    p.add(
        "filtered_logs",
        wait("notifications/message", since, 1, 1_000),
    );
    p
}

fn base64_decode(s: &str) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    let (mut acc, mut bits) = (0u32, 0u32);
    for c in s.bytes().filter(|c| *c != b'=') {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => bail!("not base64: {s:?}"),
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    Ok(out)
}

fn names_of<'a>(items: &'a Value, key: &str) -> Vec<&'a str> {
    items
        .as_array()
        .map(|a| a.iter().filter_map(|i| i[key].as_str()).collect())
        .unwrap_or_default()
}

/// A `logger` Manifold may send: the upstream's name, or `<upstream>/<logger>`.
fn names_upstream(logger: &str) -> bool {
    UPSTREAMS
        .iter()
        .any(|u| logger == *u || logger.starts_with(&format!("{u}/")))
}

fn check_surface(
    client: &str,
    plan: &Plan,
    out: &Value,
    docs_dir: &std::path::Path,
    schema: &Schema,
    wire: &std::path::Path,
) -> Result<()> {
    use anyhow::ensure;
    let results = out["results"].as_array().context("no results")?;
    ensure!(
        results.len() == plan.steps.len(),
        "{client}: {} results for {} steps",
        results.len(),
        plan.steps.len()
    );
    let r = |label: &str| &results[plan.at(label)];

    // The only failure is the read of an unknown URI: -32002.
    let failed: Vec<&Value> = out["errors"].as_array().context("errors")?.iter().collect();
    ensure!(
        failed.len() == 1 && failed[0]["step"] == plan.at("read_unknown"),
        "{client}: unexpected failures: {failed:?}"
    );
    ensure!(
        r("read_unknown")["error"]["code"] == -32002,
        "{client}: unknown URI gave {}",
        r("read_unknown")
    );

    // Every result against its own schema type (the wire log check only knows shapes).
    for (i, step) in plan.steps.iter().enumerate() {
        let res = &results[i];
        let label = plan.labels[i];
        if label == "read_unknown" {
            continue;
        }
        let ctx = || format!("{client}: step {label}");
        let each = |def: &str, v: &Value| -> Result<()> {
            for item in v.as_array().with_context(ctx)? {
                schema.check(def, item).with_context(ctx)?;
            }
            Ok(())
        };
        match step["op"].as_str().unwrap_or_default() {
            "list_prompts" => each("Prompt", res)?,
            "list_resources" => each("Resource", res)?,
            "list_resource_templates" => each("ResourceTemplate", res)?,
            "get_prompt" => schema.check("GetPromptResult", res).with_context(ctx)?,
            "read_resource" => schema.check("ReadResourceResult", res).with_context(ctx)?,
            "call_tool" => schema.check("CallToolResult", res).with_context(ctx)?,
            "complete" => schema.check("CompleteResult", res).with_context(ctx)?,
            "subscribe_resource" | "unsubscribe_resource" | "set_logging_level" => {
                ensure!(*res == json!({}), "{}: gave {res}", ctx());
            }
            "wait_notifications" => match step["method"].as_str().unwrap_or_default() {
                "notifications/message" => each("LoggingMessageNotificationParams", res)?,
                _ => each("ResourceUpdatedNotificationParams", res)?,
            },
            op => bail!("{}: no check for op {op}", ctx()),
        }
    }

    // Prompts: every prompt of both upstreams, prefixed, sorted, arguments intact.
    let prompts = names_of(r("prompts"), "name");
    for up in UPSTREAMS {
        for p in [
            "args-prompt",
            "completable-prompt",
            "resource-prompt",
            "simple-prompt",
        ] {
            let name = format!("{up}__{p}");
            ensure!(
                prompts.contains(&name.as_str()),
                "{client}: {name} missing from {prompts:?}"
            );
        }
    }
    ensure!(
        prompts.len() == 8,
        "{client}: expected 8 prompts, got {prompts:?}"
    );
    ensure!(
        prompts.windows(2).all(|w| w[0] < w[1]),
        "{client}: prompts/list not sorted: {prompts:?}"
    );
    let args_prompt = r("prompts")
        .as_array()
        .and_then(|a| a.iter().find(|p| p["name"] == "everything__args-prompt"))
        .context("args-prompt")?;
    ensure!(
        args_prompt["arguments"][0]["name"] == "city"
            && args_prompt["arguments"][0]["required"] == true,
        "{client}: args-prompt arguments lost: {args_prompt}"
    );
    let prompt_text = |label: &str, i: usize| r(label)["messages"][i]["content"]["text"].clone();
    ensure!(
        prompt_text("args_prompt", 0) == "What's weather in Austin, TX?",
        "{client}: args-prompt gave {}",
        r("args_prompt")
    );
    ensure!(
        prompt_text("simple_prompt", 0) == "This is a simple prompt without arguments.",
        "{client}: simple-prompt gave {}",
        r("simple_prompt")
    );
    let embedded = &r("resource_prompt")["messages"][1]["content"];
    ensure!(
        embedded["type"] == "resource"
            && embedded["resource"]["uri"] == "demo://resource/dynamic/text/3"
            && embedded["resource"]["text"]
                .as_str()
                .is_some_and(|t| t.starts_with("Resource 3: This is a plaintext resource")),
        "{client}: resource-prompt gave {}",
        r("resource_prompt")
    );

    // Resources: merged, sorted by URI, each once, URIs as the upstreams gave them.
    let uris = names_of(r("resources"), "uri");
    ensure!(
        uris.windows(2).all(|w| w[0] < w[1]),
        "{client}: resources/list not sorted by URI or has duplicates: {uris:?}"
    );
    let mut docs: Vec<String> = std::fs::read_dir(docs_dir)?
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    docs.sort();
    ensure!(docs.len() >= 5, "only {docs:?} in {}", docs_dir.display());
    let listed_docs: Vec<&str> = uris
        .iter()
        .filter_map(|u| u.strip_prefix(STATIC_DOCS))
        .collect();
    ensure!(
        listed_docs == docs,
        "{client}: static documents {listed_docs:?}, expected {docs:?}"
    );
    ensure!(
        uris.iter()
            .all(|u| u.starts_with(STATIC_DOCS) || *u == SESSION_RES),
        "{client}: unexpected resources {uris:?}"
    );
    let templates = names_of(r("templates"), "uriTemplate");
    ensure!(
        templates == [BLOB_TEMPLATE, TEXT_TEMPLATE],
        "{client}: resources/templates/list gave {templates:?}"
    );

    // Reads: a listed resource, URIs matching each template, an unknown URI (above).
    let content = |label: &str| r(label)["contents"][0].clone();
    let features = std::fs::read_to_string(docs_dir.join("features.md"))?;
    ensure!(
        content("read_listed")["uri"] == FEATURES
            && content("read_listed")["mimeType"] == "text/markdown"
            && content("read_listed")["text"] == features.as_str(),
        "{client}: {FEATURES} read as {}",
        r("read_listed")
    );
    ensure!(
        content("read_text_template")["uri"] == "demo://resource/dynamic/text/42"
            && content("read_text_template")["text"]
                .as_str()
                .is_some_and(|t| t.starts_with("Resource 42: This is a plaintext resource")),
        "{client}: text template read as {}",
        r("read_text_template")
    );
    let blob = base64_decode(
        content("read_blob_template")["blob"]
            .as_str()
            .unwrap_or("!"),
    )?;
    ensure!(
        content("read_blob_template")["uri"] == "demo://resource/dynamic/blob/7"
            && blob.starts_with(b"Resource 7: This is a base64 blob"),
        "{client}: blob template read as {}",
        r("read_blob_template")
    );

    // A tool result with resource links; one linked URI read back.
    let links: Vec<&Value> = r("links")["content"]
        .as_array()
        .context("links content")?
        .iter()
        .filter(|c| c["type"] == "resource_link")
        .collect();
    let link_uris: Vec<&str> = links.iter().filter_map(|l| l["uri"].as_str()).collect();
    ensure!(
        link_uris
            == [
                "demo://resource/dynamic/blob/1",
                "demo://resource/dynamic/text/2",
                "demo://resource/dynamic/blob/3",
                "demo://resource/dynamic/text/4",
            ]
            && links.iter().all(|l| l["name"].is_string()),
        "{client}: get-resource-links gave {}",
        r("links")
    );
    let linked = plan.steps[plan.at("read_link")]["uri"]
        .as_str()
        .unwrap_or_default();
    ensure!(
        link_uris.contains(&linked)
            && content("read_link")["uri"] == linked
            && content("read_link")["text"]
                .as_str()
                .is_some_and(|t| t.starts_with("Resource 4: ")),
        "{client}: linked {linked} read as {}",
        r("read_link")
    );
    // A link to a resource only `everything_http` has, created by the call: routed there.
    let gz_link = &r("gzip_link")["content"][0];
    ensure!(
        gz_link["type"] == "resource_link"
            && gz_link["uri"] == SESSION_RES
            && gz_link["mimeType"] == "application/gzip",
        "{client}: gzip-file-as-resource gave {}",
        r("gzip_link")
    );
    let gz = base64_decode(content("read_gzip_link")["blob"].as_str().unwrap_or("!"))?;
    ensure!(
        content("read_gzip_link")["uri"] == SESSION_RES && gz.starts_with(&[0x1f, 0x8b]),
        "{client}: {SESSION_RES} read as {}",
        r("read_gzip_link")
    );

    // Completion by prefixed prompt name (with context) and by template URI.
    for (label, want) in [
        ("complete_prompt", json!(["Engineering"])),
        ("complete_prompt_context", json!(["David", "Eve", "Frank"])),
        ("complete_template", json!(["12"])),
    ] {
        ensure!(
            r(label)["completion"]["values"] == want,
            "{client}: {label} gave {}, expected values {want}",
            r(label)
        );
    }

    // Resource updates of both upstreams' subscriptions reached the client.
    let updated = names_of(r("updated"), "uri");
    for uri in [FEATURES, SESSION_RES] {
        ensure!(
            updated.contains(&uri),
            "{client}: no notifications/resources/updated for {uri}: {updated:?}"
        );
    }

    // Log messages name their upstream; the session's level filters them.
    let subscribe_logs = r("subscribe_logs").as_array().context("subscribe_logs")?;
    let subscribed = format!("Received Subscribe Resource request for URI: {SESSION_RES}");
    ensure!(
        subscribe_logs
            .iter()
            .any(|m| m["logger"] == "everything_http"
                && m["data"].as_str().is_some_and(|d| d.contains(&subscribed))),
        "{client}: no subscribe log from everything_http: {subscribe_logs:?}"
    );
    let unsubscribe_logs = r("unsubscribe_logs")
        .as_array()
        .context("unsubscribe_logs")?;
    let unsubscribed = format!("Received Unsubscribe Resource request: {SESSION_RES}");
    ensure!(
        unsubscribe_logs
            .iter()
            .any(|m| m["logger"] == "everything_http"
                && m["data"]
                    .as_str()
                    .is_some_and(|d| d.contains(&unsubscribed))),
        "{client}: no unsubscribe log from everything_http: {unsubscribe_logs:?}"
    );
    let mut loggers = names_of(r("simulated_logs"), "logger");
    loggers.sort();
    loggers.dedup();
    ensure!(
        loggers == UPSTREAMS,
        "{client}: simulated logs came from {loggers:?}: {}",
        r("simulated_logs")
    );
    ensure!(
        r("filtered_logs") == &json!([]),
        "{client}: at level error, got {}",
        r("filtered_logs")
    );

    // Everything that arrived, whichever step saw it.
    let text = std::fs::read_to_string(wire)?;
    let subscribed_uris = [FEATURES, SESSION_RES];
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let m: Value = serde_json::from_str(line)?;
        match m["method"].as_str() {
            Some("notifications/message") => ensure!(
                m["params"]["logger"].as_str().is_some_and(names_upstream),
                "{client}: a log message names no upstream: {m}"
            ),
            Some("notifications/resources/updated") => ensure!(
                m["params"]["uri"]
                    .as_str()
                    .is_some_and(|u| subscribed_uris.contains(&u)),
                "{client}: an update for a URI never subscribed: {m}"
            ),
            _ => {}
        }
    }
    Ok(())
}

/// A second session (TS driver), open while the Python client runs the surface plan:
/// at level `error`, subscribed to STARTUP_DOC only. Its first wait ends when the other
/// client's `everything__toggle-subscriber-updates` makes the stdio upstream send an
/// update for every URI Manifold subscribed there; it then listens 2 s more.
fn bystander_plan() -> Value {
    json!({"steps": [
        {"op": "set_logging_level", "level": "error"},
        {"op": "subscribe_resource", "uri": STARTUP_DOC},
        {"op": "wait_notifications", "method": "notifications/resources/updated", "count": 1, "timeoutMs": 30000},
        {"op": "wait_notifications", "method": "notifications/message", "count": 1000, "timeoutMs": 2000},
        {"op": "unsubscribe_resource", "uri": STARTUP_DOC}
    ], "timeoutMs": 30000})
}

/// The bystander got updates for its own subscription only, and only log messages at
/// or above its own level.
fn check_bystander(out: &Value, wire: &std::path::Path, schema: &Schema) -> Result<()> {
    use anyhow::ensure;
    ensure!(
        out["errors"] == json!([]),
        "bystander: failures {}",
        out["errors"]
    );
    let results = &out["results"];
    for i in [0, 1, 4] {
        ensure!(
            results[i] == json!({}),
            "bystander: step {i} gave {}",
            results[i]
        );
    }
    let updated = names_of(&results[2], "uri");
    ensure!(
        !updated.is_empty() && updated.iter().all(|u| *u == STARTUP_DOC),
        "bystander: updates {}",
        results[2]
    );
    let n = schema.check_wire_log(wire)?;
    let text = std::fs::read_to_string(wire)?;
    let error = LEVELS.iter().position(|l| *l == "error");
    let mut logs = 0;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let m: Value = serde_json::from_str(line)?;
        match m["method"].as_str() {
            Some("notifications/resources/updated") => ensure!(
                m["params"]["uri"] == STARTUP_DOC,
                "bystander: got an update for another session's subscription: {m}"
            ),
            Some("notifications/message") => {
                logs += 1;
                let level = m["params"]["level"]
                    .as_str()
                    .and_then(|l| LEVELS.iter().position(|x| *x == l));
                ensure!(
                    level >= error && m["params"]["logger"].as_str().is_some_and(names_upstream),
                    "bystander: at level error, got {m}"
                );
            }
            _ => {}
        }
    }
    eprintln!("bystander: {n} messages validated; {logs} log messages, all at error or above");
    Ok(())
}

#[test]
fn sdk_clients_use_prompts_resources_completion_and_logging_through_manifold() -> Result<()> {
    let setup = start("surface")?;
    let docs_dir = setup
        .peers
        .node_modules
        .join("@modelcontextprotocol/server-everything/dist/docs");
    let plan = surface_plan();
    for client in ["ts", "py"] {
        let bystander = if client == "py" {
            let wire = setup.dir.0.join("bystander-wire.jsonl");
            let cmd = driver(&setup, "ts", &bystander_plan(), &wire);
            let proc = Proc::spawn("bystander", cmd)?;
            // Subscribed and listening before the other client starts.
            Proc::wait_line(
                &proc.stderr,
                "waiting for 1 notifications/resources/updated",
                STARTUP,
                "bystander",
            )?;
            Some((proc, wire))
        } else {
            None
        };
        let started = std::time::Instant::now();
        let (out, wire) = run_driver(&setup, client, &plan.json())?;
        let version = out["protocolVersion"]
            .as_str()
            .context("no protocolVersion")?
            .to_string();
        anyhow::ensure!(version == "2025-11-25", "{client}: negotiated {version}");
        let caps = &out["capabilities"];
        anyhow::ensure!(
            caps["prompts"].is_object()
                && caps["resources"]["subscribe"] == true
                && caps["completions"].is_object()
                && caps["logging"].is_object(),
            "{client}: capabilities {caps}"
        );
        let schema = Schema::load(&version)?;
        let n = schema.check_wire_log(&wire)?;
        check_surface(client, &plan, &out, &docs_dir, &schema, &wire)?;
        anyhow::ensure!(
            n >= plan.steps.len(),
            "{client}: only {n} messages in the wire log"
        );
        if let Some((proc, wire)) = bystander {
            let line = Proc::wait_line(&proc.stdout, "\"results\"", STARTUP, "bystander output")?;
            let out: Value = serde_json::from_str(&line).context("bystander output")?;
            check_bystander(&out, &wire, &schema)?;
        }
        eprintln!(
            "{client}: {} steps in {:.1?}; {n} messages from Manifold validated against the {version} schema",
            plan.steps.len(),
            started.elapsed()
        );
    }
    drop(setup.gateway);
    Ok(())
}
