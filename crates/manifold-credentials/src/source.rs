//! [`TokenSource`]: the token a running gateway sends to one upstream.
//!
//! - `oauth`: the record `manifold login` stored; refreshed (and stored again)
//!   when it expires within [`REFRESH_MARGIN`] (or half the lifetime of a
//!   short-lived token); read again from the store when
//!   the upstream refuses it (a new login may have written a new one).
//! - `client_credentials`: the gateway's own token, from the token endpoint
//!   of the pinned issuer (`auth.issuer`, its metadata read from it, or
//!   `auth.token_endpoint`), kept in memory and fetched again before it
//!   expires.
//!
//! Invariants: the gateway's secret and callers' tokens go only to the
//! pinned issuer's token endpoint; an `oauth` record is used only with the
//! issuer it was recorded with (the pinned one, if any), and a challenge
//! naming another makes the upstream `needs_login`; requests reach origins
//! that are not written in the configuration only at public addresses
//! (`http`); one refresh at a time per upstream; a refusal is retried at
//! most once per token (the caller resends only when [`Refusal::Retry`]); a
//! 403 `insufficient_scope` for scopes the token does not have is recorded as
//! a step-up for the next login, at most [`MAX_STEP_UPS`] times; one for
//! scopes it already has is final (the upstream would refuse any login).
//!
//! Not here: the flows' HTTP (`login`), the store's format (`store`).

use parking_lot::Mutex;
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU32, Ordering};

use manifold_config::credentials::{OAuthClient, UpstreamAuth};

use crate::discovery::{discover, Pins};
use crate::http::Client;
use crate::login::{probe, take_tokens, token_request};
use crate::store::{Record, Store};
use crate::{discovery::parse_challenge, error::CredentialError, limits::MAX_STEP_UPS};

/// What the caller does after the upstream refused a token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// A different token is available: send the request again, once.
    Retry,
    /// Nothing Manifold can do alone: the message says what fixes it.
    NeedsLogin(String),
    /// This request needs scopes the token lacks (403 `insufficient_scope`);
    /// the token is still good for others. The message says how to grant them.
    StepUp(String),
    /// The upstream refuses even the scopes it asks for: not worth a login.
    Final(String),
}

enum Mode {
    OAuth(Store),
    ClientCredentials,
    /// Client credentials for the gateway's own requests, exchanges for
    /// callers' (see `exchange`).
    TokenExchange,
}

/// The token source of one upstream.
pub struct TokenSource {
    pub(crate) upstream: String,
    url: String,
    client: OAuthClient,
    mode: Mode,
    pub(crate) http: Client,
    current: Mutex<Option<Record>>,
    refreshing: tokio::sync::Mutex<()>,
    step_ups: AtomicU32,
    /// `client_credentials`, `token_exchange`: what discovery found (and the
    /// challenge's scope), kept for renewals.
    discovered: Mutex<Option<(crate::discovery::Discovered, Option<String>)>>,
    /// `token_exchange`: exchanged tokens by the SHA-256 of the caller's.
    pub(crate) exchanged: Mutex<std::collections::HashMap<String, (String, u64)>>,
}

impl TokenSource {
    /// The source for `auth`; `None` for `static` (headers only).
    pub fn new(upstream: &str, url: &str, auth: &UpstreamAuth) -> Option<TokenSource> {
        let (client, mode) = match auth {
            // Per-caller accounts: the gateway's own requests carry the
            // `headers` only (`connect` holds the callers' credentials).
            UpstreamAuth::Static | UpstreamAuth::UserOAuth(_) | UpstreamAuth::UserSecret(_) => {
                return None
            }
            UpstreamAuth::OAuth(c) => (c.clone(), Mode::OAuth(Store::new(c.store.as_ref()?))),
            UpstreamAuth::ClientCredentials(c) => (c.clone(), Mode::ClientCredentials),
            UpstreamAuth::TokenExchange(c) => (c.clone(), Mode::TokenExchange),
        };
        // Written in the configuration: reached at any address.
        let written: Vec<&str> = [
            Some(url),
            client.issuer.as_deref(),
            client.token_endpoint.as_deref(),
        ]
        .into_iter()
        .flatten()
        .collect();
        let http = Client::unattended(&written);
        Some(TokenSource {
            upstream: upstream.to_string(),
            url: url.to_string(),
            client,
            mode,
            http,
            current: Mutex::new(None),
            refreshing: tokio::sync::Mutex::new(()),
            step_ups: AtomicU32::new(0),
            exchanged: Mutex::new(std::collections::HashMap::new()),
            discovered: Mutex::new(None),
        })
    }

    /// `oauth` or `client_credentials` (for audit records and metrics).
    pub fn mode(&self) -> &'static str {
        match self.mode {
            Mode::OAuth(_) => "oauth",
            Mode::ClientCredentials => "client_credentials",
            Mode::TokenExchange => "token_exchange",
        }
    }

    pub(crate) fn lock_exchanged(
        &self,
    ) -> parking_lot::MutexGuard<'_, std::collections::HashMap<String, (String, u64)>> {
        self.exchanged.lock()
    }

    pub(crate) fn client(&self) -> &OAuthClient {
        &self.client
    }

    pub(crate) fn current_record(&self) -> Option<Record> {
        self.current.lock().clone()
    }

    /// The authorization server this upstream's tokens come from, and
    /// whether the configuration pins it (`false`: the one `manifold login`
    /// recorded, if it ran).
    pub fn issuer(&self) -> Option<(String, bool)> {
        if let Some(i) = &self.client.issuer {
            return Some((i.clone(), true));
        }
        match &self.mode {
            Mode::OAuth(store) => self
                .current
                .lock()
                .clone()
                .or_else(|| store.load(&self.upstream).ok().flatten())
                .and_then(|r| r.authorization_server)
                .map(|i| (i, false)),
            _ => None,
        }
    }

    fn pins(&self) -> Pins<'_> {
        Pins {
            issuer: self.client.issuer.as_deref(),
            token_endpoint: self.client.token_endpoint.as_deref(),
        }
    }

    /// A stored record is used only with the pinned issuer, if any.
    fn check_issuer(&self, r: &Record) -> Result<(), CredentialError> {
        let Some(pinned) = &self.client.issuer else {
            return Ok(());
        };
        let trim = |s: &str| s.trim_end_matches('/').to_string();
        match &r.authorization_server {
            Some(was) if trim(was) == trim(pinned) => Ok(()),
            was => Err(CredentialError::NeedsLogin(format!(
                "the stored token for `{}` was issued by {}, but `auth.issuer` pins {pinned}; {}",
                self.upstream,
                was.as_deref()
                    .unwrap_or("an unrecorded authorization server"),
                self.login_hint()
            ))),
        }
    }

    fn login_hint(&self) -> String {
        format!("run `manifold login {}`", self.upstream)
    }

    /// Reads the store: errors for this upstream only.
    fn reload(&self) -> Result<Option<Record>, CredentialError> {
        match &self.mode {
            Mode::OAuth(store) => {
                let r = store.load(&self.upstream)?;
                if let Some(r) = &r {
                    if let Err(e) = self.check_issuer(r) {
                        *self.current.lock() = None;
                        return Err(e);
                    }
                }
                *self.current.lock() = r.clone();
                Ok(r)
            }
            Mode::ClientCredentials | Mode::TokenExchange => Ok(self.current.lock().clone()),
        }
    }

    /// The token to send now.
    pub async fn token(&self) -> Result<String, CredentialError> {
        let cached = self.current.lock().clone();
        if let Some(r) = cached.as_ref().filter(|r| r.fresh()) {
            return Ok(r.access_token.clone());
        }
        let _one = self.refreshing.lock().await;
        let r = match &self.mode {
            Mode::OAuth(_) => self.reload()?,
            Mode::ClientCredentials | Mode::TokenExchange => self.current.lock().clone(),
        };
        match r {
            Some(r) if r.fresh() => Ok(r.access_token),
            Some(r) if r.refresh_token.is_some() => self.refresh(r).await,
            _ if !matches!(self.mode, Mode::OAuth(_)) => self.client_credentials().await,
            Some(_) => Err(CredentialError::NeedsLogin(format!(
                "the token for `{}` expired and there is no refresh token; {}",
                self.upstream,
                self.login_hint()
            ))),
            None => Err(CredentialError::NeedsLogin(format!(
                "no token for `{}` yet; {}",
                self.upstream,
                self.login_hint()
            ))),
        }
    }

    /// A token request to the endpoint `r` came from, authenticated as the
    /// client `r` was issued to.
    pub(crate) async fn grant(
        &self,
        r: &Record,
        pairs: Vec<(&str, String)>,
    ) -> Result<serde_json::Value, CredentialError> {
        token_request(
            &self.http,
            &r.token_endpoint,
            &r.client_id,
            r.client_secret.as_deref(),
            &r.auth_method,
            pairs,
        )
        .await
    }

    async fn refresh(&self, mut r: Record) -> Result<String, CredentialError> {
        let Some(rt) = r.refresh_token.clone() else {
            return Err(CredentialError::NeedsLogin(self.login_hint()));
        };
        let v = self
            .grant(
                &r,
                vec![
                    ("grant_type", "refresh_token".into()),
                    ("refresh_token", rt),
                    ("resource", r.resource.clone()),
                ],
            )
            .await
            .map_err(|e| {
                let why = format!("refreshing the token for `{}` failed ({e})", self.upstream);
                if e.needs_login() {
                    CredentialError::NeedsLogin(format!("{why}; {}", self.login_hint()))
                } else {
                    // The authorization server's outage: tried again on the next call.
                    CredentialError::Server(why)
                }
            })?;
        let scope = r.scope.clone();
        take_tokens(&mut r, &v, scope.as_deref());
        let token = r.access_token.clone();
        // Kept in memory first: a server that rotates refresh tokens has spent
        // the old one, so the new record must not be lost to a failed write.
        *self.current.lock() = Some(r.clone());
        if let Mode::OAuth(store) = &self.mode {
            if let Err(e) = store.save(&self.upstream, &r) {
                tracing::error!(upstream = %self.upstream, error = %e,
                    "refreshed the access token but could not store it; it is used from memory until a restart");
            }
        }
        tracing::info!(upstream = %self.upstream, "refreshed the upstream's access token");
        Ok(token)
    }

    pub(crate) async fn client_credentials(&self) -> Result<String, CredentialError> {
        // Discovered once; found again only after a grant with it failed.
        let known = self.discovered.lock().clone();
        let (d, challenge_scope) = match known {
            Some(k) => k,
            None => {
                let challenge = probe(&self.http, &self.url).await?;
                let d = discover(&self.http, &self.url, challenge.as_ref(), self.pins()).await?;
                let k = (d, challenge.and_then(|c| c.scope));
                *self.discovered.lock() = Some(k.clone());
                k
            }
        };
        let id = self.client.client_id.clone().unwrap_or_default();
        let secret = self.client.client_secret.clone();
        let supports = |m: &str| d.server.auth_methods.iter().any(|a| a == m);
        let method = if supports("client_secret_basic") || !supports("client_secret_post") {
            "client_secret_basic"
        } else {
            "client_secret_post"
        };
        let scope = crate::login::scopes(&self.client.scopes, challenge_scope.as_deref(), &d, None);
        let mut pairs = vec![
            ("grant_type", "client_credentials".to_string()),
            ("resource", d.resource.clone()),
        ];
        if let Some(s) = &scope {
            pairs.push(("scope", s.clone()));
        }
        let v = token_request(&self.http, &d.server.token_endpoint, &id, secret.as_deref(), method, pairs)
            .await
            .map_err(|e| {
                *self.discovered.lock() = None;
                CredentialError::NeedsLogin(format!(
                    "the client-credentials grant for `{}` failed ({e}); check `auth.client_id` and `auth.client_secret`",
                    self.upstream
                ))
            })?;
        let mut r = Record {
            client_id: id,
            client_secret: secret,
            auth_method: method.into(),
            token_endpoint: d.server.token_endpoint,
            resource: d.resource,
            authorization_server: Some(d.authorization_server),
            ..Record::default()
        };
        take_tokens(&mut r, &v, scope.as_deref());
        r.refresh_token = None;
        let token = r.access_token.clone();
        *self.current.lock() = Some(r);
        Ok(token)
    }

    /// The upstream answered `status` (401 or 403) with `challenge` to a
    /// request carrying `sent` (`None`: no token was sent).
    pub async fn refused(
        &self,
        sent: Option<&str>,
        status: u16,
        challenge: Option<&str>,
    ) -> Refusal {
        let c = challenge.and_then(parse_challenge).unwrap_or_default();
        let _one = self.refreshing.lock().await;
        if !matches!(self.mode, Mode::OAuth(_)) {
            let had = self.current.lock().take();
            if had.as_ref().map(|r| r.access_token.as_str()) != sent && had.is_some() {
                *self.current.lock() = had;
                return Refusal::Retry;
            }
            return match (status, self.client_credentials().await) {
                (401, Ok(t)) if Some(t.as_str()) != sent => Refusal::Retry,
                (_, Err(e)) => Refusal::NeedsLogin(e.to_string()),
                _ => Refusal::Final(format!(
                    "the upstream refuses the gateway's own token (HTTP {status}{})",
                    c.scope.map(|s| format!(", scope {s}")).unwrap_or_default()
                )),
            };
        }
        let stored = match self.reload() {
            Ok(r) => r,
            Err(e) => return Refusal::NeedsLogin(e.to_string()),
        };
        if let Some(r) = &stored {
            if Some(r.access_token.as_str()) != sent {
                return Refusal::Retry;
            }
        }
        let Some(mut r) = stored else {
            return Refusal::NeedsLogin(format!(
                "the upstream requires authorization (HTTP {status}); {}",
                self.login_hint()
            ));
        };
        if status == 403 && c.error.as_deref() == Some("insufficient_scope") {
            let wanted: BTreeSet<&str> = c
                .scope
                .as_deref()
                .unwrap_or("")
                .split_whitespace()
                .collect();
            let granted: BTreeSet<&str> = r
                .scope
                .as_deref()
                .unwrap_or("")
                .split_whitespace()
                .collect();
            if wanted.is_subset(&granted) {
                return Refusal::Final(format!(
                    "the upstream refuses the token although it has the scopes it asks for ({}); not asking for another login",
                    c.scope.unwrap_or_default()
                ));
            }
            if self.step_ups.fetch_add(1, Ordering::Relaxed) >= MAX_STEP_UPS {
                return Refusal::Final(format!(
                    "the upstream asked for more scopes {MAX_STEP_UPS} times; not asking again until a restart"
                ));
            }
            r.step_up = c.scope.clone();
            if let Mode::OAuth(store) = &self.mode {
                if let Err(e) = store.save(&self.upstream, &r) {
                    return Refusal::NeedsLogin(e.to_string());
                }
            }
            return Refusal::StepUp(format!(
                "the upstream needs the scope `{}` (HTTP 403 insufficient_scope); {} to grant it",
                c.scope.unwrap_or_default(),
                self.login_hint()
            ));
        }
        // The upstream moved to another authorization server (SEP-2352): its
        // tokens and client registration are not used there; a login
        // registers anew (and is refused while `auth.issuer` pins the old one).
        // Its resource metadata is read on its own origin only.
        let expected = self
            .client
            .issuer
            .as_deref()
            .or(r.authorization_server.as_deref())
            .map(|s| s.trim_end_matches('/').to_string());
        if let (Some(url), Some(was)) = (
            crate::discovery::metadata_url(&self.http, &self.url, Some(&c)),
            expected,
        ) {
            if let Ok(Some(now)) = crate::discovery::authorization_servers(&self.http, url).await {
                if !now.is_empty() && !now.contains(&was) {
                    return Refusal::NeedsLogin(format!(
                        "the upstream now names another authorization server ({}, was {was}); {} to register and authorize there{}",
                        now.join(", "),
                        self.login_hint(),
                        if self.client.issuer.is_some() {
                            " (after changing `auth.issuer`, if the move is genuine)"
                        } else {
                            ""
                        }
                    ));
                }
            }
        }
        // A 403 that is not about scope refuses this request, not the token.
        if status == 403 {
            return Refusal::Final(format!(
                "the upstream refused this request (HTTP 403{})",
                c.error.map(|e| format!(", {e}")).unwrap_or_default()
            ));
        }
        if r.refresh_token.is_some() {
            r.expires_at = Some(0);
            return match self.refresh(r).await {
                Ok(t) if Some(t.as_str()) != sent => Refusal::Retry,
                Ok(_) => Refusal::NeedsLogin(self.login_hint()),
                Err(e) if e.needs_login() => Refusal::NeedsLogin(e.to_string()),
                Err(e) => Refusal::Final(e.to_string()),
            };
        }
        Refusal::NeedsLogin(format!(
            "the upstream refused the stored token (HTTP {status}); {}",
            self.login_hint()
        ))
    }
}
