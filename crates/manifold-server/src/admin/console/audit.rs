//! The audit view: the newest records first, filtered by principal, tool,
//! upstream, outcome, method and time range, a page at a time, each record
//! expandable to all its members; and the chain's status for the current
//! file and each rotated one ("intact up to record N").
//!
//! Invariants: pages are read by manifold-audit's `reader` on a blocking
//! thread (bounded by its block, line and scan budgets); the chain is checked
//! by one background task at a time, resumed where the last one stopped
//! (`chain_status`), so a look at the page never re-reads a whole log; only
//! the file the gateway writes (`[audit] path` at start) is read.
//!
//! Not here: writing records (manifold-audit's writer), `manifold audit verify`.

use http::StatusCode;
use manifold_audit::chain_status::{self, FileStatus};
use manifold_audit::reader::{self, Cursor, Filter, Page};
use maud::{html, Markup};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use super::answer::Query;
use super::layout;
use super::session::Viewer;
use crate::state::Gateway;

/// Records per page.
pub const AUDIT_PAGE: usize = 50;

/// The outcomes a record can have (manifold-audit `Outcome`).
const OUTCOMES: [&str; 7] = [
    "ok",
    "tool_error",
    "protocol_error",
    "timeout",
    "upstream_unavailable",
    "cancelled",
    "refused",
];

/// The filter fields, as the form and the query name them.
const FIELDS: [&str; 7] = [
    "principal",
    "tool",
    "upstream",
    "outcome",
    "method",
    "from",
    "to",
];

fn filter_of(q: &Query) -> Filter {
    let get = |k| q.get(k).map(str::to_string);
    Filter {
        principal: get("principal"),
        tool: get("tool"),
        upstream: get("upstream"),
        outcome: get("outcome"),
        method: get("method"),
        from: get("from"),
        to: get("to"),
    }
}

pub(super) async fn page(
    gw: &Arc<Gateway>,
    viewer: &Viewer,
    query: &Query,
) -> Result<Markup, (StatusCode, String)> {
    let Some(path) = gw.started.audit.as_ref().and_then(|a| a.path.clone()) else {
        let hint = if gw.started.audit.is_some() {
            html! { "[audit] writes to standard output only here: add " code { "path = \"audit.jsonl\"" } " to browse it in the console." }
        } else {
            html! { "Add an " code { "[audit]" } " section with a " code { "path" } " (docs/audit.md) and restart: every call is then one hash-chained line." }
        };
        let body = layout::empty("No audit log file is configured.", hint);
        return Ok(layout::page(viewer, "Audit", "/ui/audit", false, body));
    };
    let filter = filter_of(query);
    let before = match query.get("before").map(str::parse::<Cursor>) {
        None => None,
        Some(Ok(c)) => Some(c),
        Some(Err(e)) => return Err((StatusCode::BAD_REQUEST, e)),
    };
    refresh_chain(gw, path.clone());
    let (p, f) = (path.clone(), filter.clone());
    let read = tokio::task::spawn_blocking(move || {
        reader::read_page(&p, &f, before, AUDIT_PAGE, reader::DEFAULT_SCAN_BUDGET)
    })
    .await
    .map_err(|e| (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?;
    let first = before.is_none();
    let body = html! {
        (filters(gw, query))
        (chain(gw, &path))
        @match read {
            Ok(page) => (records(&page, query, first)),
            Err(manifold_audit::AuditError::StaleCursor) => p.error role="alert" {
                "The log has rotated past this page. " a href="/ui/audit" { "Start again from the newest records" }
            },
            Err(e) => p.error role="alert" { "The audit log cannot be read: " (e.to_string()) },
        }
    };
    Ok(layout::page(viewer, "Audit", "/ui/audit", first, body))
}

fn filters(gw: &Gateway, q: &Query) -> Markup {
    let upstreams: Vec<String> = gw
        .upstreams()
        .iter()
        .map(|u| u.name().to_string())
        .collect();
    let active = FIELDS.iter().any(|f| q.get(f).is_some());
    html! {
        form.filters method="get" action="/ui/audit" role="search" {
            label { "Principal " input type="text" name="principal" value=[q.get("principal")] placeholder="api_key:alice" data-search; }
            label { "Tool " input type="text" name="tool" value=[q.get("tool")] placeholder="echo"; }
            label { "Upstream "
                select name="upstream" {
                    option value="" { "any" }
                    @for u in &upstreams { option value=(u) selected[q.get("upstream") == Some(u.as_str())] { (u) } }
                }
            }
            label { "Outcome "
                select name="outcome" {
                    option value="" { "any" }
                    @for o in OUTCOMES { option value=(o) selected[q.get("outcome") == Some(o)] { (o) } }
                }
            }
            label { "Method " input type="text" name="method" value=[q.get("method")] placeholder="tools/call" size="12"; }
            label { "From (UTC) " input type="text" name="from" value=[q.get("from")] placeholder="2026-11-26T13:00" size="17"; }
            label { "To (UTC) " input type="text" name="to" value=[q.get("to")] placeholder="2026-11-26T14" size="17"; }
            button type="submit" { "Filter" }
            @if active { " " a href="/ui/audit" { "Clear" } }
        }
    }
}

/// Starts a check of the chain unless one is running.
fn refresh_chain(gw: &Arc<Gateway>, path: PathBuf) {
    let known = {
        let mut c = gw.console.chain.lock();
        if c.running {
            return;
        }
        c.running = true;
        c.files.clone()
    };
    let g = gw.clone();
    gw.life.background.spawn(async move {
        let checked = tokio::task::spawn_blocking(move || check_all(&path, known))
            .await
            .map_err(|e| e.to_string())
            .and_then(|r| r);
        let mut c = g.console.chain.lock();
        c.running = false;
        c.checked_at = Some(SystemTime::now());
        match checked {
            Ok(files) => {
                c.files = files.into_iter().map(|f| (f.ino, f)).collect();
                c.error = None;
            }
            Err(e) => c.error = Some(e),
        }
    });
}

/// Every file's status, oldest first, resuming what was known.
fn check_all(
    path: &Path,
    mut known: std::collections::HashMap<u64, FileStatus>,
) -> Result<Vec<FileStatus>, String> {
    let files = match manifold_audit::log_files(path) {
        Ok(f) => f,
        Err(manifold_audit::AuditError::Io { source, .. })
            if source.kind() == std::io::ErrorKind::NotFound =>
        {
            return Ok(Vec::new())
        }
        Err(e) => return Err(e.to_string()),
    };
    let mut out = Vec::with_capacity(files.len());
    for f in files {
        use std::os::unix::fs::MetadataExt;
        let ino = match std::fs::metadata(&f) {
            Ok(m) => m.ino(),
            Err(_) => continue,
        };
        let live = f == path;
        match chain_status::check_file(&f, live, known.remove(&ino)) {
            Ok(s) => out.push(s),
            Err(e) => return Err(e.to_string()),
        }
    }
    Ok(out)
}

fn chain(gw: &Gateway, path: &Path) -> Markup {
    let (mut files, running, checked_at, error) = {
        let c = gw.console.chain.lock();
        (
            c.files.values().cloned().collect::<Vec<_>>(),
            c.running,
            c.checked_at,
            c.error.clone(),
        )
    };
    // Oldest first, as the chain runs: rotated files by number, highest first.
    let order = |f: &FileStatus| -> u64 {
        if f.path == path {
            return u64::MAX;
        }
        let n = f
            .path
            .extension()
            .and_then(|e| e.to_str())
            .and_then(|e| e.parse::<u64>().ok())
            .unwrap_or(0);
        u64::MAX - 1 - n
    };
    files.sort_by_key(order);
    let links = chain_status::links(&files);
    let name = |p: &Path| {
        p.file_name()
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_default()
    };
    html! {
        section #chain data-live="chain" aria-labelledby="chain-h" {
            h2 #chain-h { "Hash chain" }
            @if let Some(e) = &error { p.error role="alert" { "The last check failed: " (e) } }
            @if files.is_empty() {
                p.muted { @if running || checked_at.is_none() { "Checking…" } @else { "No log file yet: nothing has been audited." } }
            } @else {
                ul.chain {
                    @for (f, link) in files.iter().zip(&links).rev() {
                        li {
                            code { (name(&f.path)) } ": "
                            @match &f.problem {
                                None => { span.badge.ok { "intact" } " " (f.records) " records" @if f.lines > f.records { ", " (f.lines - f.records) " writer events" } }
                                Some(p) => {
                                    span.badge.bad { "broken" } " intact up to record " (p.at.line.saturating_sub(1))
                                    "; line " (p.at.line) ": " (p.kind.to_string()) ": " (p.detail)
                                }
                            }
                            @match link {
                                Some(true) => span.muted { " · continues the file before it" },
                                Some(false) => { " " span.badge.bad { "does not continue the file before it" } " (a file is missing or out of order)" },
                                None => {},
                            }
                        }
                    }
                }
                p.muted {
                    @if running { "Checking new lines… " }
                    @if let Some(t) = checked_at { "Checked at " (manifold_foundation::time::rfc3339_seconds(t)) ". " }
                    "Run " code { "manifold audit verify" } " for the full report."
                }
            }
        }
    }
}

fn records(page: &Page, q: &Query, first: bool) -> Markup {
    let keep: Vec<(&str, &str)> = FIELDS
        .iter()
        .filter_map(|f| q.get(f).map(|v| (*f, v)))
        .collect();
    let older = page.next.map(|c| {
        let mut pairs = keep.clone();
        let cursor = c.to_string();
        pairs.push(("before", cursor.as_str()));
        format!("/ui/audit?{}", layout::query_string(pairs))
    });
    let newest = format!("/ui/audit?{}", layout::query_string(keep.clone()));
    html! {
        section #records data-live="records" aria-labelledby="records-h" {
            h2 #records-h { "Records" @if !first { " (older)" } }
            @if page.records.is_empty() {
                p.muted {
                    @if page.budget_spent { "No matching records in the " (page.scanned_bytes / (1024 * 1024)) " MiB searched so far." }
                    @else if first { "No records match." }
                    @else { "No older records match." }
                }
            }
            ol.records {
                @for r in &page.records { li { (record(r)) } }
            }
            @if page.skipped_long_lines + page.unreadable_lines > 0 {
                p.muted { (page.skipped_long_lines) " over-long and " (page.unreadable_lines) " unreadable lines skipped (manifold audit verify says where)." }
            }
            nav.pager aria-label="Pages" {
                @if !first { a href=(newest) { "← Newest" } }
                @if let Some(o) = &older {
                    a href=(o) rel="next" { @if page.budget_spent { "Search older records →" } @else { "Older →" } }
                }
            }
        }
    }
}

fn record(found: &reader::Found) -> Markup {
    let r = &found.record;
    let text = |k: &str| r.get(k).and_then(|v| v.as_str()).unwrap_or("");
    let time = text("time");
    let id = format!("rec-{:x}-{}", found.offset, text("request_id"));
    if let Some(event) = found.event() {
        return html! {
            details id=(id) {
                summary { span.time { (time) } " " span.badge.warn { "writer event" } " " code { (event) } }
                (layout::json_block(&serde_json::Value::Object(r.clone())))
            }
        };
    }
    let outcome = text("outcome");
    let class = match outcome {
        "ok" => "ok",
        "tool_error" | "cancelled" => "warn",
        _ => "bad",
    };
    let latency = r
        .get("latency_us")
        .and_then(|v| v.as_u64())
        .map(|us| layout::duration(std::time::Duration::from_micros(us)));
    html! {
        details id=(id) {
            summary {
                span.time { (time.get(..23).unwrap_or(time)) }
                " " span.principal { (text("principal")) }
                " " code { (text("method")) }
                " " code { (text("name")) }
                @if !text("upstream").is_empty() { " on " (text("upstream")) }
                " " span class={ "badge " (class) } { (outcome) }
                @if let Some(l) = latency { " " span.muted { (l) } }
            }
            (layout::json_block(&serde_json::Value::Object(r.clone())))
            p.muted { (found.file.display().to_string()) " at byte " (found.offset) }
        }
    }
}
