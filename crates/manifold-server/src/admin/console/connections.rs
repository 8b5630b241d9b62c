//! Connections: callers' own accounts at `user_oauth` and `user_secret`
//! upstreams — who is connected to what, how, since when, until when — and a
//! revoke button for each.
//!
//! A revoke forgets the account in the store (the caller's next call asks them
//! to connect again), is audited (`manifold/account`, `revoked`, the account's
//! principal) and logged with the admin principal who did it.
//!
//! Invariants: nothing shown is a secret (`manifold_credentials::Summary`);
//! the store is read and written on a blocking thread; the upstream and the
//! principal a revoke names must be one the page could show.
//!
//! Not here: the accounts themselves (manifold-credentials), connecting
//! (`crate::connect`).

use http::StatusCode;
use manifold_credentials::{AccountStore, Summary};
use maud::{html, Markup};

use super::answer::Query;
use super::layout;
use super::session::Viewer;
use crate::state::Gateway;

fn per_user(gw: &Gateway) -> Vec<(String, &'static str)> {
    crate::state::connects::per_user_upstreams(&gw.cfg())
}

fn store(gw: &Gateway) -> Option<AccountStore> {
    gw.cfg().credentials.as_ref().map(AccountStore::new)
}

fn time(secs: Option<u64>) -> String {
    secs.map(|s| {
        manifold_foundation::time::rfc3339_seconds(
            std::time::UNIX_EPOCH + std::time::Duration::from_secs(s),
        )
    })
    .unwrap_or_else(|| "—".into())
}

pub(super) async fn page(
    gw: &Gateway,
    viewer: &Viewer,
    query: &Query,
    error: Option<String>,
) -> Result<Markup, (StatusCode, String)> {
    let upstreams = per_user(gw);
    let (Some(store), false) = (store(gw), upstreams.is_empty()) else {
        let body = layout::empty(
            "No upstream has per-caller accounts.",
            html! {
                "An upstream with " code { "auth.type = \"user_oauth\"" } " or " code { "\"user_secret\"" }
                " acts as each caller with the account they connect once through a link their client shows; the accounts appear here (docs/configuration.md)."
            },
        );
        return Ok(layout::page(
            viewer,
            "Connections",
            "/ui/connections",
            false,
            body,
        ));
    };
    let names: Vec<String> = upstreams.iter().map(|(n, _)| n.clone()).collect();
    let listed = tokio::task::spawn_blocking(move || {
        let mut all: Vec<Summary> = Vec::new();
        let mut problems = Vec::new();
        for n in &names {
            let (found, bad) = store.list(Some(n));
            all.extend(found);
            problems.extend(bad);
        }
        (all, problems)
    })
    .await
    .map_err(|e| (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?;
    let (accounts, problems) = listed;
    let body = html! {
        section aria-labelledby="accounts-h" {
            h2 #accounts-h { "Accounts" }
            @if let Some(done) = query.get("revoked") { p.note role="status" { "Revoked the account of " code { (done) } "." } }
            @if let Some(e) = &error { p.error role="alert" { (e) } }
            p.hint { "Upstreams with per-caller accounts: "
                @for (i, (n, kind)) in upstreams.iter().enumerate() { @if i > 0 { ", " } code { (n) } " (" (kind) ")" } "." }
            @if accounts.is_empty() {
                p.muted { "Nobody has connected an account yet." }
            } @else {
                table {
                    thead { tr { th { "Upstream" } th { "Principal" } th { "Kind" } th { "Connected" } th { "Refreshed" } th { "Expires" } th { "" } } }
                    tbody {
                        @for a in &accounts {
                            tr {
                                td { code { (a.upstream) } }
                                td { code { (manifold_foundation::text::printable(&a.principal)) } }
                                td { (a.kind) }
                                td { (time(Some(a.connected_at))) }
                                td { (time(a.refreshed_at)) }
                                td { (time(a.expires_at)) }
                                td {
                                    form method="post" action="/ui/connections/revoke" {
                                        input type="hidden" name="csrf" value=(viewer.csrf);
                                        input type="hidden" name="upstream" value=(a.upstream);
                                        input type="hidden" name="principal" value=(a.principal);
                                        button.danger type="submit" { "Revoke" }
                                    }
                                }
                            }
                        }
                    }
                }
            }
            @for p in &problems { p.error { (p) } }
        }
    };
    Ok(layout::page(
        viewer,
        "Connections",
        "/ui/connections",
        false,
        body,
    ))
}

/// `POST /ui/connections/revoke`: the principal whose account was revoked.
pub(super) async fn revoke(
    gw: &Gateway,
    viewer: &Viewer,
    form: &Query,
) -> Result<String, (StatusCode, String)> {
    let bad = |why: String| (StatusCode::BAD_REQUEST, why);
    let field = |k: &str| {
        form.get(k)
            .ok_or_else(|| bad(format!("the form has no `{k}`")))
    };
    let (upstream, principal) = (
        field("upstream")?.to_string(),
        field("principal")?.to_string(),
    );
    let Some((_, kind)) = per_user(gw).into_iter().find(|(n, _)| *n == upstream) else {
        return Err(bad(format!("`{upstream}` has no per-caller accounts")));
    };
    let removed = gw
        .forget_account(&upstream, &principal)
        .await
        .map_err(|e| (StatusCode::INTERNAL_SERVER_ERROR, e))?;
    if !removed {
        return Err(bad(format!("{principal} has no account at `{upstream}`")));
    }
    tracing::info!(admin = %viewer.principal.display_name(), %upstream, %principal, "console: revoked an upstream account");
    crate::observe::account_event(gw, &upstream, kind, &principal, "revoked", false);
    Ok(principal)
}
