//! The caller's own account at a `user_oauth` or `user_secret` upstream: its
//! credential rides on the call (refreshed first when about to expire); a
//! caller without one gets a connect link, in the form its client can act on
//! (`refusal::AccountAsk`); a 2026-07-28 retry answering that question is
//! taken back here.
//!
//! Invariants: only an authenticated principal has an account (anonymous
//! callers and `manifold call` are refused, never given a shared one); the
//! credential is looked up for the principal the front door admitted, never
//! for a name the request carries; the lookup (with its refresh) is bounded by
//! the upstream's `timeout`; a request carrying the credential is marked
//! ([`manifold_upstream::ON_BEHALF`]) so a refusal of it is that caller's.
//!
//! Not here: the links (`state::connects`), the pages (`front::connect`).

use manifold_credentials::{Accounts, Injected, Lookup};
use serde_json::{Map, Value};

use crate::call::context::Call;
use crate::refusal::{AccountAsk, AskForm, Refusal, ToolError, CONNECT_INPUT_KEY};
use crate::request::{Caller, Request};
use crate::state::held_calls::CONNECT_PREFIX;

/// Puts the caller's credential on `call`, or asks the caller to connect.
pub(super) async fn attach(
    x: &Request,
    call: &mut Call,
    accounts: &Accounts,
) -> Result<(), Refusal> {
    let upstream = call.upstream.name().to_string();
    let kind = call_kind(accounts);
    let Some(principal) = x.principal.session_owner() else {
        return Err(Refusal::AccountUnavailable {
            upstream,
            why: "it acts as each caller with their own account, and this caller is not authenticated (an anonymous caller or `manifold call` has no account of its own)".into(),
        });
    };
    let answered = connect_answer(x, &mut call.params)?;
    let within = call.upstream.config().timeout;
    let lookup = match tokio::time::timeout(within, accounts.credential(&principal)).await {
        Ok(Ok(l)) => l,
        // A file that cannot be opened: connecting again replaces it.
        Ok(Err(e)) if e.needs_login() => Lookup::Lapsed(e.to_string()),
        Ok(Err(e)) => {
            return Err(Refusal::AccountUnavailable {
                upstream,
                why: e.to_string(),
            })
        }
        Err(_) => {
            return Err(Refusal::AccountUnavailable {
                upstream,
                why: format!("refreshing the caller's token took longer than the upstream's timeout ({within:?})"),
            })
        }
    };
    let lapsed = match lookup {
        Lookup::Ready {
            injected,
            refreshed,
        } => {
            if refreshed {
                crate::observe::account_event(
                    &x.gw,
                    &upstream,
                    kind,
                    &principal,
                    "refreshed",
                    false,
                );
            }
            match injected {
                Injected::Header(n, v) => call.headers.push((n.to_ascii_lowercase(), v)),
                Injected::Query(n, v) => call
                    .headers
                    .push((format!("{}{n}", manifold_upstream::QUERY_PARAM_PREFIX), v)),
            }
            call.headers
                .push((manifold_upstream::ON_BEHALF.to_string(), String::new()));
            return Ok(());
        }
        Lookup::Missing => None,
        Lookup::Lapsed(why) => {
            lapsed(&x.gw, accounts, &principal);
            Some(why)
        }
    };
    // The caller answered our question, but there is still no account.
    if let Some(action) = answered.filter(|a| a != "accept") {
        return Err(not_connected(x, &upstream, &action));
    }
    Err(ask(x, call, upstream, principal, lapsed))
}

/// Records that `principal`'s account was forgotten after the upstream or
/// its authorization server refused it.
pub(super) fn lapsed(gw: &crate::state::Gateway, accounts: &Accounts, principal: &str) {
    crate::observe::account_event(
        gw,
        accounts.upstream(),
        call_kind(accounts),
        principal,
        "lapsed",
        true,
    );
}

fn call_kind(accounts: &Accounts) -> &'static str {
    if accounts.is_oauth() {
        "user_oauth"
    } else {
        "user_secret"
    }
}

/// A 2026-07-28 retry answering our connect question: its state is taken
/// (single use, bound to the request and principal) and removed with the
/// answer; the answer's `action`.
fn connect_answer(x: &Request, params: &mut Map<String, Value>) -> Result<Option<String>, Refusal> {
    let Caller::Stateless(c) = &x.caller else {
        return Ok(None);
    };
    let Some(state) = params
        .get("requestState")
        .and_then(Value::as_str)
        .filter(|s| s.starts_with(CONNECT_PREFIX))
    else {
        return Ok(None);
    };
    x.gw.tables
        .held
        .take_connect(state, &c.digest)
        .map_err(Refusal::InvalidRequestState)?;
    let responses = params.shift_remove("inputResponses");
    params.shift_remove("requestState");
    Ok(Some(
        responses
            .as_ref()
            .and_then(|r| r.get(CONNECT_INPUT_KEY))
            .and_then(|r| r.get("action"))
            .and_then(Value::as_str)
            .unwrap_or("cancel")
            .to_string(),
    ))
}

/// The caller declined or dismissed connecting.
fn not_connected(x: &Request, upstream: &str, action: &str) -> Refusal {
    let why = format!(
        "the caller chose `{action}` instead of connecting an account at upstream `{upstream}`; nothing was sent to it"
    );
    if x.method == manifold_protocol::methods::TOOLS_CALL {
        Refusal::Tool(ToolError::CallTool(why))
    } else {
        Refusal::AccountUnavailable {
            upstream: upstream.to_string(),
            why,
        }
    }
}

/// Whether declared client capabilities allow a URL elicitation.
fn url_elicitation(capabilities: &Map<String, Value>) -> bool {
    capabilities
        .get("elicitation")
        .and_then(Value::as_object)
        .is_some_and(|e| e.contains_key("url"))
}

/// The question for a caller without an account.
fn ask(
    x: &Request,
    call: &Call,
    upstream: String,
    principal: String,
    lapsed: Option<String>,
) -> Refusal {
    let gw = &x.gw;
    let session = match &x.caller {
        Caller::Session(s) => Some(s.digest.as_str()),
        _ => None,
    };
    let Some(opened) = gw
        .tables
        .connects
        .open(call.upstream.name(), &principal, session)
    else {
        return Refusal::AccountUnavailable {
            upstream,
            why: format!(
                "too many connect links are open (at most {} per caller, {} in all); finish or let one expire first",
                crate::state::connects::MAX_PENDING_PER_PRINCIPAL,
                crate::state::connects::MAX_PENDING_CONNECTS
            ),
        };
    };
    let cfg = gw.cfg();
    // Validation makes sure there is one whenever an upstream has accounts.
    let base = gw.public_base().unwrap_or_default();
    let url = format!(
        "{base}{}/connect/{}",
        cfg.server.path.trim_end_matches('/'),
        opened.id
    );
    let form = match &x.caller {
        Caller::Session(s)
            if url_elicitation(&s.capabilities) && s.protocol_version.as_str() >= "2025-11-25" =>
        {
            AskForm::UrlElicitation
        }
        Caller::Stateless(c) if url_elicitation(&c.capabilities) => {
            match gw.tables.held.ask_connect(&c.digest, &principal) {
                Some(state) => AskForm::InputRequired { state },
                None => AskForm::Link,
            }
        }
        _ => AskForm::Link,
    };
    let link = matches!(form, AskForm::Link);
    let ask = Box::new(AccountAsk {
        upstream,
        url,
        code: opened.code,
        elicitation_id: opened.elicitation_id,
        form,
        lapsed,
    });
    if link && x.method == manifold_protocol::methods::TOOLS_CALL {
        Refusal::Tool(ToolError::AccountRequired(ask))
    } else {
        Refusal::AccountRequired(ask)
    }
}
