//! The overview: each upstream (transport, state with its last error and the
//! command that fixes `needs_login`, era, protocol version, item counts,
//! calls per second, error rate and p50/p99 over the last minutes, restarts)
//! and the gateway (version, uptime, sessions by protocol version, listen
//! streams, held calls, the cluster, the audit log).
//!
//! Invariants: one status reading per upstream; the recent-call numbers are
//! the gateway's own (`state::recent`), never Prometheus'.
//!
//! Not here: the JSON views (`inspect`).

use http::StatusCode;
use maud::{html, Markup};
use std::collections::BTreeMap;

use super::layout;
use super::session::Viewer;
use crate::state::recent::RECENT_WINDOW;
use crate::state::Gateway;

pub(super) fn page(gw: &Gateway, viewer: &Viewer) -> Result<Markup, (StatusCode, String)> {
    Ok(layout::page(
        viewer,
        "Overview",
        "/ui",
        true,
        html! {
            (gateway(gw))
            (upstreams(gw))
        },
    ))
}

fn gateway(gw: &Gateway) -> Markup {
    let uptime = gw.console.started_instant.elapsed();
    let mut by_version: BTreeMap<String, usize> = BTreeMap::new();
    for s in gw.tables.sessions.all() {
        *by_version.entry(s.protocol_version.clone()).or_default() += 1;
    }
    let (held, confirmations) = gw.tables.held.counts();
    let audit = match gw.auditor.as_ref() {
        None => html! { span.muted { "not configured" } },
        Some(a) => match a.check() {
            Ok(()) => {
                let s = a.stats();
                html! { span.badge.ok { "writing" } " " (s.written) " written, " (s.lost) " lost, " (s.queue_depth) " queued" }
            }
            Err(e) => html! { span.badge.bad { "failing" } " " (e.to_string()) },
        },
    };
    let cluster = match gw.cluster_health() {
        None => html! { span.muted { "single replica (no [cluster] redis)" } },
        Some(h) if h.connected => {
            html! { span.badge.ok { "Redis connected" } " " (h.dropped) " dropped, " (h.rejected) " rejected" }
        }
        Some(h) => html! {
            span.badge.bad { "Redis unreachable" } " "
            (h.last_error.unwrap_or_else(|| "no connection yet".into()))
        },
    };
    html! {
        section #gateway data-live="gateway" aria-labelledby="gateway-h" {
            h2 #gateway-h { "Gateway" }
            dl.facts {
                div { dt { "Version" } dd { (crate::handlers::surface::SERVER_VERSION) } }
                div { dt { "Up for" } dd { (layout::uptime(uptime)) span.muted { " since " (manifold_foundation::time::rfc3339_seconds(gw.console.started)) } } }
                div {
                    dt { "Sessions" }
                    dd {
                        @if by_version.is_empty() { "none" }
                        @for (v, n) in &by_version { span.pill { (v) ": " (n) } " " }
                    }
                }
                div { dt { "Listen streams (2026-07-28)" } dd { (gw.tables.listeners.len()) } }
                div { dt { "Held calls" } dd { (held) " waiting for input, " (confirmations) " confirmations open" } }
                div { dt { "Cluster" } dd { (cluster) } }
                div { dt { "Audit log" } dd { (audit) } }
                div { dt { "Console logins" } dd { (gw.console.logins()) } }
                div { dt { "Draining" } dd { @if gw.draining() { span.badge.warn { "shutting down" } } @else { "no" } } }
            }
        }
    }
}

fn upstreams(gw: &Gateway) -> Markup {
    let list = gw.upstreams();
    let config_path = gw.config_path.get().map(|p| p.display().to_string());
    let window = RECENT_WINDOW.as_secs() / 60;
    html! {
        section #upstreams data-live="upstreams" aria-labelledby="upstreams-h" {
            h2 #upstreams-h { "Upstreams" }
            @if list.is_empty() {
                (layout::empty("No upstreams are configured.", html! { "Add an " code { "[upstreams.NAME]" } " section to the configuration and reload." }))
            } @else {
                p.hint { "Calls, errors and latency over the last " (window) " minutes, counted by the gateway." }
                div.scroll {
                    table {
                        thead { tr {
                            th scope="col" { "Upstream" } th scope="col" { "Transport" } th scope="col" { "State" }
                            th scope="col" { "Era" } th scope="col" { "Protocol" } th scope="col" { "Items" }
                            th.num scope="col" { "Calls/s" } th.num scope="col" { "Errors" }
                            th.num scope="col" { "p50" } th.num scope="col" { "p99" }
                            th.num scope="col" { "In flight" } th.num scope="col" { "Restarts" }
                        } }
                        tbody {
                            @for u in &list {
                                (row(gw, u, config_path.as_deref()))
                            }
                        }
                    }
                }
            }
        }
    }
}

fn row(gw: &Gateway, u: &manifold_upstream::Upstream, config_path: Option<&str>) -> Markup {
    let st = u.status();
    let facts = st.facts.as_ref();
    let lists = u.lists();
    let recent = gw.console.recent.summary(u.name());
    let state = st.state.as_str();
    let era = facts.map(|f| {
        if f.is_stateless() {
            "2026-07-28 (stateless)"
        } else {
            "session"
        }
    });
    let login = match config_path {
        Some(p) => format!("manifold login {} --config {p}", u.name()),
        None => format!("manifold login {}", u.name()),
    };
    html! {
        tr id={ "upstream-" (u.name()) } {
            th scope="row" { (u.name()) @if u.config().required { " " span.pill title="required = true: readiness waits for it" { "required" } } }
            td { (u.config().transport.kind()) }
            td {
                (layout::state_badge(state))
                @if st.state == manifold_upstream::State::Down && st.restarts > 0 { " " span.muted { "restarting" } }
                @if let Some(e) = &st.last_error { div.lasterr { (e) } }
                @if st.state == manifold_upstream::State::NeedsLogin {
                    div.fix { "Run " code { (login) } }
                }
                @if let Some(code) = st.last_exit_code { div.muted { "last exit code " (code) } }
            }
            td { (era.unwrap_or("—")) }
            td.nowrap { (facts.map(|f| f.protocol_version.as_str()).unwrap_or("—")) }
            td {
                @match &lists {
                    Some(l) => {
                        (count(l.tools.len(), "tool")) ", " (count(l.prompts.len(), "prompt")) ", "
                        (count(l.resources.len(), "resource")) ", " (count(l.resource_templates.len(), "template"))
                    }
                    None => span.muted { "not fetched" },
                }
            }
            td.num { (format!("{:.2}", recent.per_second())) }
            td.num {
                @if recent.calls == 0 { span.muted { "—" } }
                @else {
                    span class={ "rate" @if recent.failed > 0 { " bad" } } { (format!("{:.1} %", recent.error_rate() * 100.0)) }
                    @if recent.tool_errors > 0 { div.muted { (recent.tool_errors) " tool errors" } }
                }
            }
            td.num { (recent.p50.map(layout::duration).unwrap_or_else(|| "—".into())) }
            td.num { (recent.p99.map(layout::duration).unwrap_or_else(|| "—".into())) }
            td.num { (u.in_flight()) }
            td.num { (st.restarts) }
        }
    }
}

/// `1 tool`, `3 tools`.
fn count(n: usize, what: &str) -> String {
    format!("{n} {what}{}", if n == 1 { "" } else { "s" })
}
