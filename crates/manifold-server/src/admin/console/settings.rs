//! The configuration page: the effective configuration with secrets redacted
//! (exactly what `/config` answers), the last reload's result (what was
//! added, removed, restarted, and what needs a restart, or why nothing
//! changed), and a reload button.
//!
//! Invariants: the configuration shown is `inspect::config`, never the
//! expanded one; a reload from here is the same as `POST /reload` (one
//! reload at a time, the file read again), logged with the admin principal.
//!
//! Not here: reloading (`runtime::reload`).

use bytes::Bytes;
use http::{Response, StatusCode};
use http_body_util::Full;
use maud::{html, Markup};
use std::sync::Arc;

use super::answer::Query;
use super::layout;
use super::session::Viewer;
use crate::state::Gateway;

pub(super) fn page(
    gw: &Gateway,
    viewer: &Viewer,
    query: &Query,
) -> Result<Markup, (StatusCode, String)> {
    let path = gw.config_path.get().map(|p| p.display().to_string());
    let last = gw.console.last_reload();
    let done = query.get("reloaded");
    let body = html! {
        section #reload data-live="reload" aria-labelledby="reload-h" {
            h2 #reload-h { "Reload" }
            @match done {
                Some("ok") => p.note role="status" { "Reloaded." },
                Some("failed") => p.error role="alert" { "The reload failed; the configuration in force is unchanged (below)." },
                _ => {},
            }
            @match &path {
                Some(p) => p { "File: " code { (p) } },
                None => p.muted { "The gateway was not started from a file: there is nothing to reload." },
            }
            @match &last {
                None => p.muted { "No reload since the gateway started." },
                Some(l) => {
                    p { "Last reload at " (manifold_foundation::time::rfc3339_seconds(l.at)) ": "
                        @match &l.result { Ok(_) => span.badge.ok { "applied" }, Err(_) => span.badge.bad { "refused" } } }
                    @match &l.result {
                        Ok(report) => (report_list(report)),
                        Err(e) => p.error { (e) },
                    }
                }
            }
            @if path.is_some() {
                form method="post" action="/ui/reload" {
                    input type="hidden" name="csrf" value=(viewer.csrf);
                    button.primary type="submit" { "Reload the configuration file" }
                }
            }
        }
        section aria-labelledby="config-h" {
            h2 #config-h { "Effective configuration" }
            p.hint { "After defaults and " code { "MANIFOLD_*" } " overrides, before " code { "${VAR}" } " expansion; secrets redacted. The same as " code { "GET /config" } "." }
            (layout::json_block(&super::super::inspect::config(gw)))
        }
    };
    Ok(layout::page(
        viewer,
        "Configuration",
        "/ui/config",
        true,
        body,
    ))
}

fn report_list(report: &serde_json::Value) -> Markup {
    let rows = [
        ("added", "Upstreams started"),
        ("removed", "Upstreams stopping"),
        ("restarted", "Upstreams restarted with new settings"),
        ("needs_restart", "Changed settings that need a restart"),
    ];
    html! {
        dl.facts {
            @for (key, label) in rows {
                div { dt { (label) } dd {
                    @match report[key].as_array().filter(|a| !a.is_empty()) {
                        None => span.muted { "none" },
                        Some(items) => { @for (i, v) in items.iter().enumerate() { @if i > 0 { ", " } code { (v.as_str().unwrap_or("")) } } },
                    }
                } }
            }
        }
    }
}

/// `POST /ui/reload`.
pub(super) async fn reload(gw: &Arc<Gateway>, viewer: &Viewer) -> Response<Full<Bytes>> {
    tracing::info!(principal = %viewer.principal.display_name(), "console: reload");
    let ok = gw.reload_from_file().await.is_ok();
    super::answer::redirect(if ok {
        "/ui/config?reloaded=ok"
    } else {
        "/ui/config?reloaded=failed"
    })
}
