//! Every crate of the workspace under the architecture check: its top-level
//! modules in layers (imports point down only), no file importing one that
//! imports it back, and a crate root that is only the crate's public face.
//!
//! The tables below are each crate's layers, top first; the server and the
//! upstream crate keep theirs in their own `tests/architecture.rs` (with the
//! checks only they need: the call chain, the finish sites, the refusal
//! table), and this test holds them to having one. A crate the workspace
//! gains fails here until it is given its layers.

use std::path::{Path, PathBuf};

/// Crates that keep their own architecture test (with their layer table).
const OWN_TESTS: [&str; 2] = ["crates/manifold-server", "crates/manifold-upstream"];

/// Each crate's layers, top first.
const TABLES: &[(&str, manifold_architecture::Layers<'static>)] = &[
    // What several crates need and none should own; `mac` builds on `aead`'s key.
    (
        "crates/manifold-foundation",
        &[
            &["mac"],
            &[
                "aead",
                "backoff",
                "ct",
                "glob",
                "http",
                "json",
                "log_budget",
                "rate",
                "redact",
                "text",
                "time",
                "uri",
                "watch",
            ],
        ],
    ),
    // The wire: fuzzing entry points over the codecs, codecs over the values.
    (
        "crates/manifold-protocol",
        &[
            &["fuzzing"],
            &["extensions", "headers", "jsonrpc"],
            &[
                "errors", "lists", "logging", "methods", "results", "sse", "tasks", "version",
            ],
        ],
    ),
    // Loading over validating over the validated snapshot over the sections.
    (
        "crates/manifold-config",
        &[
            &["load"],
            &["validate"],
            &["effective", "fixed", "principals"],
            &["file", "snapshot"],
            &["server", "upstreams"],
            &[
                "admin",
                "credentials",
                "endpoint",
                "rate_limit",
                "resilience",
            ],
            &["accounts", "code", "semantic"],
            &[
                "audit",
                "auth",
                "cluster",
                "expand",
                "integrity",
                "limits",
                "metrics",
                "naming",
                "overrides",
                "policy",
                "stdio",
                "telemetry",
                "validation",
            ],
        ],
    ),
    // The merge: the whole catalogue over each kind's list over the entries
    // and the naming, filtering and URI rules they are made with.
    (
        "crates/manifold-catalog",
        &[
            &["own_names", "search"],
            &["catalog"],
            &["skills"],
            &["list", "resources"],
            &["input"],
            &["filter", "page"],
            &["members"],
            &["entry"],
            &[
                "fingerprint",
                "namespace",
                "naming",
                "overrides",
                "template",
                "uri",
            ],
        ],
    ),
    // Deciding over the store file and the replicas' sharing over the store.
    (
        "crates/manifold-integrity",
        &[
            &["decide", "file"],
            &["approve", "replica"],
            &["store"],
            &["item"],
        ],
    ),
    // Reading and checking the log over writing it over the record's form.
    (
        "crates/manifold-audit",
        &[
            &["chain_status", "reader", "writer"],
            &["sink", "verify"],
            &["chain", "record"],
            &["canonical", "error", "redact", "testutil"],
        ],
    ),
    // Authorization and limits over who is calling over identity, validation
    // and confirmation.
    (
        "crates/manifold-policy",
        &[
            &["authz", "limits"],
            &["who"],
            &["confirm", "identity", "validation"],
        ],
    ),
    // The bus over its seal and errors over the named bounds and messages.
    (
        "crates/manifold-cluster",
        &[&["bus"], &["auth", "error"], &["limits", "message", "rate"]],
    ),
    // Exchanging over token sources over logins over discovery over HTTP.
    (
        "crates/manifold-credentials",
        &[
            &["exchange"],
            &["source", "connect", "sign_in"],
            &["login", "accounts"],
            &["discovery"],
            &["http", "pkce", "store"],
            &["sealed_file"],
            &["error", "guard", "limits"],
        ],
    ),
    // Code mode's shared words: the wire over the limits and outcomes it
    // carries (the engine is manifold-code-worker, outside the workspace).
    (
        "crates/manifold-code",
        &[&["wire"], &["digest", "limits", "outcome"]],
    ),
    // Semantic search: the fusion over the dense index and the stores, over
    // the model, over a tool's text and the errors.
    (
        "crates/manifold-semantic",
        &[
            &["fuse"],
            &["dense", "store"],
            &["local"],
            &["error", "text"],
        ],
    ),
    // The load generator: scenarios over measuring over the command line,
    // peers and processes (the relay among them).
    (
        "crates/manifold-bench",
        &[
            &["code_endpoint", "pool", "search_endpoint"],
            &["measure"],
            &["args", "callgrind"],
            &["peers"],
            &["relay", "soak", "targets"],
            &["search_index"],
            &["semantic_index", "session"],
        ],
    ),
    // The demo upstream (a test peer, sharing no code under test): front
    // doors over requests over methods over the session over the server's
    // state over its configuration, the wire and its pieces.
    (
        "crates/manifold-demo",
        &[
            &["bin"],
            &["cli"],
            &["http", "stdio"],
            &["request", "start"],
            &["modern"],
            &["methods"],
            &["tools"],
            &["resources", "session"],
            &["server"],
            &["config", "modern_tasks"],
            &["app", "catalog", "flaky", "listing", "rogue", "skill"],
            &["jsonrpc"],
            &["codes", "identity", "transport"],
        ],
    ),
    // Test helpers: processes over the harness and bounded waits.
    (
        "crates/manifold-testkit",
        &[&["process"], &["harness", "wait"]],
    ),
    // The binary: commands over the tracing set-up.
    ("crates/manifold", &[&["cli"], &["telemetry"]]),
    // The checker itself: its checks over the import graph over text.
    (
        "crates/manifold-architecture",
        &[&["chain", "layers"], &["find", "imports"], &["text"]],
    ),
    // End-to-end tests' helpers: one file.
    ("tests/e2e", &[]),
];

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The workspace's members, as its `Cargo.toml` lists them.
fn members() -> Vec<String> {
    let text = std::fs::read_to_string(workspace().join("Cargo.toml")).expect("Cargo.toml");
    let start = text.find("members = [").expect("a members list");
    let end = start + text[start..].find(']').expect("the list's end");
    text[start..end]
        .lines()
        .filter_map(|l| {
            let l = l.trim().trim_end_matches(',');
            l.strip_prefix('"')?.strip_suffix('"').map(str::to_string)
        })
        .collect()
}

#[test]
fn every_crate_imports_down_its_layers_without_cycles_and_its_root_is_a_face() {
    let mut problems = Vec::new();
    let members = members();
    assert!(members.len() >= 15, "members not found: {members:?}");
    for member in &members {
        if OWN_TESTS.contains(&member.as_str()) {
            let own = workspace().join(member).join("tests/architecture.rs");
            match std::fs::read_to_string(&own) {
                Ok(text) if text.contains("manifold_architecture::check(") => {}
                _ => problems.push(format!(
                    "{member}: keeps its own layers, but tests/architecture.rs does not run manifold_architecture::check"
                )),
            }
            continue;
        }
        let Some((_, layers)) = TABLES.iter().find(|(c, _)| c == member) else {
            problems.push(format!(
                "{member}: no layers; add the crate's top-level modules, top first, to TABLES in {}",
                file!()
            ));
            continue;
        };
        let src = workspace().join(member).join("src");
        problems.extend(
            manifold_architecture::check(&src, layers)
                .into_iter()
                .map(|p| format!("{member}: {p}")),
        );
    }
    for (c, _) in TABLES {
        if !members.contains(&c.to_string()) {
            problems.push(format!("{c}: in TABLES but no member of the workspace"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Code mode's worker is built on its own (not a member: its starlark
/// dependency must not reach the gateway's build), and keeps its layers too.
#[test]
fn the_code_worker_outside_the_workspace_imports_down_its_layers() {
    let src = workspace().join("crates/manifold-code-worker/src");
    let problems = manifold_architecture::check(&src, &[&["worker"], &["engine"]]);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
