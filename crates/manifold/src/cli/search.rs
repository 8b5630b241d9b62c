//! `manifold search "QUERY"`: the tools `search_tools` would rank for a query,
//! with each ranking's score (lexical BM25F, semantic cosine, fused), on the
//! endpoint at `--endpoint PATH` (default the `[server] path` one) and in the
//! view of `--as WHO` (default everything the endpoint holds): the operator's
//! way to see why a tool is or is not found. With `[discovery.semantic]`, the
//! model is loaded and the endpoint's tools embedded first (bounded by
//! [`EMBED_WAIT`]; the vector cache makes a second run quick).
//!
//! Exit codes: 0 the ranking was printed, 1 an upstream is not ready (its tools
//! are missing from the ranking) or the model could not load, 2 a bad query,
//! `--as`, `--endpoint` or configuration.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use manifold_policy::who;

use super::inproc::InProcess;
use super::table::Table;
use super::{load_config, FAILED, USAGE};

/// How long the endpoint's tools may take to be embedded.
pub const EMBED_WAIT: Duration = Duration::from_secs(600);

pub struct Options<'a> {
    pub query: &'a str,
    pub endpoint: Option<&'a str>,
    pub as_who: Option<&'a str>,
    pub limit: Option<usize>,
    pub json: bool,
}

pub fn run(rt: &tokio::runtime::Runtime, config: &Path, o: Options<'_>) -> ExitCode {
    let cfg = match load_config(config) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let sources = manifold_config::IdentitySources::of(&cfg);
    let viewer = match o.as_who.map(|w| who::identity_for(w, &sources)) {
        None => None,
        Some(Ok(id)) => Some(id),
        Some(Err(e)) => {
            eprintln!("manifold search --as: {e}");
            return ExitCode::from(USAGE);
        }
    };
    let path = o.endpoint.unwrap_or(&cfg.server.path).to_string();
    let semantic = cfg.semantic.is_some();
    let outcome = rt.block_on(async {
        let core = InProcess::start(cfg).await;
        let not_ready: Vec<String> = core
            .not_ready()
            .iter()
            .map(|u| u.name().to_string())
            .collect();
        let ranked = match core.gw.enable_semantic().await {
            Err(e) => Err((FAILED, e.to_string())),
            Ok(()) => core
                .gw
                .explain_search(&path, viewer.as_ref(), o.query, o.limit, EMBED_WAIT)
                .await
                .map_err(|e| (USAGE, e)),
        };
        core.stop().await;
        (ranked, not_ready)
    });
    let (ranked, not_ready) = outcome;
    let ranked = match ranked {
        Ok(r) => r,
        Err((code, e)) => {
            eprintln!("manifold search: {e}");
            return ExitCode::from(code);
        }
    };
    let mut out = String::new();
    if o.json {
        let rows: Vec<serde_json::Value> = ranked
            .iter()
            .map(|s| {
                serde_json::json!({"name": s.name, "fused": s.fused, "lexical": s.lexical,
                                   "semantic": s.semantic})
            })
            .collect();
        out = serde_json::to_string_pretty(&serde_json::json!({"endpoint": path,
            "semantic": semantic, "tools": rows}))
        .unwrap_or_default();
        out.push('\n');
    } else {
        let mut t = Table::new(&["rank", "tool", "fused", "lexical", "semantic"]);
        for (i, s) in ranked.iter().enumerate() {
            t.row(vec![
                (i + 1).to_string(),
                s.name.clone(),
                format!("{:.4}", s.fused),
                match s.lexical {
                    0.0 => String::new(),
                    l => format!("{l:.3}"),
                },
                s.semantic.map(|c| format!("{c:.3}")).unwrap_or_default(),
            ]);
        }
        if t.is_empty() {
            out.push_str("no tool found\n");
        } else {
            t.render(&mut out);
        }
        if !semantic {
            out.push_str("(lexical only: no [discovery.semantic]; fused is the lexical score)\n");
        }
    }
    let _ = std::io::stdout().lock().write_all(out.as_bytes());
    if not_ready.is_empty() {
        return ExitCode::SUCCESS;
    }
    eprintln!(
        "manifold search: upstreams not ready, their tools are missing: {}",
        not_ready.join(", ")
    );
    ExitCode::from(FAILED)
}
