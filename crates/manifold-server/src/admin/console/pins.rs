//! Quarantine and pins (`[integrity]`): the items waiting for approval with
//! a diff against their approved definition, the pins with who approved them,
//! the store's journal; approve and revoke buttons.
//!
//! An approval names the fingerprint the operator was shown, so a definition
//! that changed again since is refused as stale, never approved unseen; both
//! go through the gateway's pin keeper (`Gateway::approve_pins`,
//! `revoke_pins`: the store's lock on the file as it is then, its journal by
//! the admin principal, one audit record per change — method `pins/approve`
//! or `pins/revoke`, the principal, the item, the fingerprint —, the other
//! replicas told, the lists rebuilt).
//!
//! Invariants: without `[integrity] store` the page says so and changes
//! nothing; the store file is read and written on a blocking thread; text
//! from upstreams (descriptions, names) is escaped like any other.
//!
//! Not here: deciding what is held (manifold-integrity `decide`), withholding
//! held items from clients (the gateway's integrity wiring).

use http::StatusCode;
use manifold_integrity::{ItemKind, ItemRef, Pending, Pin, PinStore, Selection, StoreFile, Wanted};
use maud::{html, Markup};
use serde_json::{Map, Value};
use std::sync::Arc;

use super::answer::Query;
use super::layout;
use super::session::Viewer;
use crate::state::integrity::keeper::PinsError;
use crate::state::Gateway;

/// Journal entries shown, newest first.
const JOURNAL_SHOWN: usize = 20;

fn store_file(gw: &Gateway) -> Option<StoreFile> {
    gw.cfg().integrity.store.as_ref().map(StoreFile::new)
}

async fn load(file: StoreFile) -> Result<PinStore, String> {
    tokio::task::spawn_blocking(move || file.load().map_err(|e| e.to_string()))
        .await
        .map_err(|e| format!("reading the pin store failed: {e}"))?
}

pub(super) async fn page(
    gw: &Gateway,
    viewer: &Viewer,
    query: &Query,
    error: Option<String>,
) -> Result<Markup, (StatusCode, String)> {
    let Some(file) = store_file(gw) else {
        let body = layout::empty(
            "No pin store is configured.",
            html! {
                "Tool integrity keeps what an operator approved of each upstream's tools in "
                code { "[integrity] store" } ". Set " code { "store = \"/var/lib/manifold/pins.json\"" }
                " (and " code { "mode" } ") to see held items here and approve them (docs/configuration.md)."
            },
        );
        return Ok(layout::page(viewer, "Pins", "/ui/pins", false, body));
    };
    let path = file.path().display().to_string();
    let mode = gw.cfg().integrity.mode.as_str();
    let store = load(file).await;
    let done = match query.get("done") {
        Some("approved") => Some("Approved: the held definition is now the pin."),
        Some("revoked") => Some("Revoked: the item is new again at its next sight."),
        _ => None,
    };
    let body = html! {
        p.hint { "Store " code { (path) } ", " code { "[integrity] mode = \"" (mode) "\"" } "." }
        @if let Some(d) = done { p.note role="status" { (d) } }
        @if let Some(e) = &error { p.error role="alert" { (e) } }
        @match &store {
            Err(e) => p.error role="alert" { "The pin store cannot be read: " (e) },
            Ok(store) => {
                (pending(store, viewer))
                (pinned(store, viewer))
                (journal(store))
            }
        }
    };
    Ok(layout::page(viewer, "Pins", "/ui/pins", true, body))
}

fn pending(store: &PinStore, viewer: &Viewer) -> Markup {
    let items: Vec<(ItemRef, &Pending, Option<&Pin>)> = store.pending_items().collect();
    html! {
        section #pending data-live="pending" aria-labelledby="pending-h" {
            h2 #pending-h { "Waiting for approval " span.count { (items.len()) } }
            @if items.is_empty() {
                p.muted { "Nothing is held: every item matches its pin." }
            }
            @for (item, p, pin) in &items {
                article.held id={ "held-" (item.upstream) "-" (item.kind.as_str()) "-" (layout::encode(&item.name)) } {
                    h3 { code { (item.name) } " " span.pill { (item.kind.as_str()) } " from " (item.upstream) " " span class={ "badge " @if p.reason.as_str() == "new" { "warn" } @else { "bad" } } { (p.reason.as_str()) } }
                    p.muted { "First seen " (p.first_seen) ", fingerprint " code { (p.fingerprint.short(16)) }
                        @if let Some(pin) = pin { "; approved " code { (pin.fingerprint.short(16)) } " by " (pin.approved_by) } }
                    (diff(p, *pin))
                    div.actions {
                        form method="post" action="/ui/pins/approve" data-confirm={ "Approve this definition of " (item.name) "?" } {
                            input type="hidden" name="csrf" value=(viewer.csrf);
                            input type="hidden" name="upstream" value=(item.upstream);
                            input type="hidden" name="kind" value=(item.kind.as_str());
                            input type="hidden" name="name" value=(layout::encode(&item.name));
                            input type="hidden" name="fingerprint" value=(p.fingerprint.to_string());
                            button.primary type="submit" { "Approve" }
                        }
                    }
                }
            }
        }
    }
}

fn diff(p: &Pending, pin: Option<&Pin>) -> Markup {
    match p.diff(pin) {
        None => html! {
            details open {
                summary { "New item: its definition" }
                (layout::json_block(&Value::Object(p.definition.clone())))
            }
        },
        Some(d) => html! {
            p { "Changed: " @for (i, f) in d.fields.iter().enumerate() { @if i > 0 { ", " } code { (f) } } }
            @if let Some(t) = &d.description {
                div.desc-diff {
                    div.old { h4 { "Approved description" } pre.text { (t.old.as_deref().unwrap_or("(none)")) } }
                    div.new { h4 { "Published now" } pre.text { (t.new.as_deref().unwrap_or("(none)")) } }
                }
            }
            details open {
                summary { (d.changes.len()) " changed values" @if d.more > 0 { " (and " (d.more) " more)" } }
                table.diff {
                    thead { tr { th scope="col" { "Where" } th scope="col" { "Change" } th scope="col" { "Approved" } th scope="col" { "Now" } } }
                    tbody { @for c in &d.changes { tr {
                        th scope="row" { code { (c.pointer) } }
                        td { (format!("{:?}", c.kind).to_lowercase()) }
                        td { @if let Some(o) = &c.old { code.old { (o.to_string()) } } }
                        td { @if let Some(n) = &c.new { code.new { (n.to_string()) } } }
                    } } }
                }
            }
        },
    }
}

fn pinned(store: &PinStore, viewer: &Viewer) -> Markup {
    let pins: Vec<(ItemRef, &Pin)> = store.pins().collect();
    html! {
        section #pinned data-live="pinned" aria-labelledby="pinned-h" {
            h2 #pinned-h { "Pinned " span.count { (pins.len()) } }
            @if pins.is_empty() {
                p.muted { "No pins yet: an upstream's items are pinned at first sight (trust_on_first_use) or when approved." }
            } @else {
                div.scroll { table {
                    thead { tr { th scope="col" { "Upstream" } th scope="col" { "Kind" } th scope="col" { "Name" } th scope="col" { "Fingerprint" } th scope="col" { "Approved by" } th scope="col" { "At" } th scope="col" { span.sr { "Revoke" } } } }
                    tbody { @for (item, pin) in &pins { tr {
                        td { (item.upstream) } td { (item.kind.as_str()) } th scope="row" { code { (item.name) } }
                        td { code { (pin.fingerprint.short(16)) } } td { (pin.approved_by) } td { (pin.approved_at) }
                        td {
                            form method="post" action="/ui/pins/revoke" data-confirm={ "Revoke the pin of " (item.name) "? It is new again at its next sight." } {
                                input type="hidden" name="csrf" value=(viewer.csrf);
                                input type="hidden" name="upstream" value=(item.upstream);
                                input type="hidden" name="kind" value=(item.kind.as_str());
                                input type="hidden" name="name" value=(layout::encode(&item.name));
                                button type="submit" { "Revoke" }
                            }
                        }
                    } } }
                } }
            }
        }
    }
}

fn journal(store: &PinStore) -> Markup {
    let entries: Vec<_> = store.journal.iter().rev().take(JOURNAL_SHOWN).collect();
    html! {
        section aria-labelledby="journal-h" {
            h2 #journal-h { "Journal" }
            @if entries.is_empty() { p.muted { "No approvals or revocations yet." } }
            @else {
                div.scroll { table {
                    thead { tr { th scope="col" { "#" } th scope="col" { "At" } th scope="col" { "Action" } th scope="col" { "Item" } th scope="col" { "By" } } }
                    tbody { @for e in entries { tr {
                        td { (e.seq) } td { (e.at) } td { (e.action) }
                        td { (e.upstream) "/" code { (e.name) } " (" (e.kind.as_str()) ")" }
                        td { (e.by) }
                    } } }
                } }
            }
        }
    }
}

/// Approves (or revokes) the item a form names, as the viewer; the flash
/// code of the page to go back to, or why not.
pub(super) async fn change(
    gw: &Arc<Gateway>,
    viewer: &Viewer,
    form: &Query,
    approve: bool,
) -> Result<&'static str, (StatusCode, String)> {
    let bad = |why: String| (StatusCode::BAD_REQUEST, why);
    if store_file(gw).is_none() {
        return Err(bad("no [integrity] store is configured".into()));
    }
    let field = |k: &str| {
        form.get(k)
            .ok_or_else(|| bad(format!("the form has no `{k}`")))
    };
    let kind: ItemKind = field("kind")?.parse().map_err(bad)?;
    // Names travel percent-encoded in the form (an upstream's hidden
    // characters never sit raw in the page).
    let name = crate::admin::inspect::percent_decode(field("name")?).map_err(bad)?;
    let item = ItemRef::new(field("upstream")?, kind, &name);
    let by = viewer.principal.display_name();
    let fingerprint = if approve {
        Some(
            field("fingerprint")?
                .parse::<manifold_integrity::Fingerprint>()
                .map_err(|e| bad(e.to_string()))?,
        )
    } else {
        None
    };
    // Through the gateway's keeper: the store's lock, the journal, one audit
    // record per change (when the keeper picks the journal up), the other
    // replicas told, and clients served at once.
    let outcome = if approve {
        let wanted = Wanted {
            item: item.clone(),
            fingerprint,
        };
        gw.approve_pins(Selection::Items(vec![wanted]), by.clone())
            .await
            .map(|_| ())
    } else {
        gw.revoke_pins(vec![item.clone()], by.clone())
            .await
            .map(|_| ())
    };
    match outcome {
        Ok(()) => {}
        Err(PinsError::Approve(e)) => return Err((StatusCode::CONFLICT, e.to_string())),
        Err(e) => return Err((StatusCode::SERVICE_UNAVAILABLE, e.to_string())),
    }
    let action = if approve {
        "pins/approve"
    } else {
        "pins/revoke"
    };
    tracing::info!(principal = %by, item = %item, action, "console: pin changed");
    Ok(if approve { "approved" } else { "revoked" })
}

/// What the tool page says of a tool's pin.
pub(super) fn tool_pin(
    gw: &Gateway,
    upstream: &str,
    original: &str,
    published: Option<&Map<String, Value>>,
) -> Markup {
    let Some(file) = store_file(gw) else {
        return html! { p.muted { "No [integrity] store: tool definitions are not pinned." } };
    };
    // A small file, read here (the tool page is not a hot path).
    let store = match file.load() {
        Ok(s) => s,
        Err(e) => return html! { p.error { "The pin store cannot be read: " (e.to_string()) } },
    };
    let item = ItemRef::new(upstream, ItemKind::Tool, original);
    let now = published.map(manifold_integrity::Fingerprint::of);
    let pending = store.pending(&item);
    html! {
        @match store.pin(&item) {
            None => p { "Not pinned." @if pending.is_some() { " Held: " a href="/ui/pins" { "waiting for approval" } "." } },
            Some(pin) => dl.facts {
                div { dt { "Pinned" } dd { code { (pin.fingerprint.to_string()) } } }
                div { dt { "Approved by" } dd { (pin.approved_by) " at " (pin.approved_at) } }
                div { dt { "Published now" } dd {
                    @match now {
                        Some(fp) if fp == pin.fingerprint => span.badge.ok { "matches the pin" },
                        Some(_) => { span.badge.bad { "differs from the pin" } " " a href="/ui/pins" { "see the diff" } },
                        None => span.muted { "upstream not ready" },
                    }
                } }
            },
        }
    }
}
