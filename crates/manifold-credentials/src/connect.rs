//! [`Accounts`]: each caller's own account at one `user_oauth` or
//! `user_secret` upstream, in use — the credential a call carries for its
//! caller, the authorization-code flow with PKCE a connect page starts
//! ([`Accounts::begin`]) and the callback finishes ([`Accounts::redeem`]),
//! refreshes with rotation, and pasted keys.
//!
//! Invariants: authorization goes only to the pinned issuer (its metadata read
//! from it; the upstream's resource metadata may not name another); the
//! redirect's `iss` is compared exactly (RFC 9207) and a server that promises
//! it must send it; every token request carries the PKCE verifier of its own
//! flow and the configured `resource` (RFC 8707); a refresh the authorization
//! server refuses forgets the account, so the caller is sent through the flow
//! again, while its outage keeps the account (and a still-valid token); one
//! refresh at a time per upstream; no token or key reaches a log line or an
//! error message.
//!
//! Not here: the connect pages, who may open them, the elicitation (server).

use manifold_config::accounts::Inject;
use manifold_config::credentials::{UpstreamAuth, UserOAuth, UserSecret};
use manifold_foundation::time::unix_now;
use parking_lot::Mutex;

use crate::accounts::{Account, AccountStore};
use crate::discovery::{discover, Discovered, Pins};
use crate::error::CredentialError;
use crate::http::Client;
use crate::login::{take_tokens, token_request};
use crate::pkce::s256;
use crate::store::Record;

enum Kind {
    OAuth(UserOAuth),
    Secret(UserSecret),
}

/// Where a caller's credential goes on the request.
#[derive(Clone, PartialEq, Eq)]
pub enum Injected {
    /// A header: name and value.
    Header(String, String),
    /// A query parameter: name and value.
    Query(String, String),
}

impl std::fmt::Debug for Injected {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Injected::Header(n, _) => write!(f, "Header({n}, …)"),
            Injected::Query(n, _) => write!(f, "Query({n}, …)"),
        }
    }
}

/// A caller's credential for the upstream, looked up.
#[derive(Debug)]
pub enum Lookup {
    /// Ready to send; `refreshed`: its tokens were refreshed just now.
    Ready { injected: Injected, refreshed: bool },
    /// The caller has not connected an account.
    Missing,
    /// The account was forgotten: the authorization server refused its
    /// refresh (revoked, expired); the caller connects again.
    Lapsed(String),
}

/// A flow a connect page started: the URL the browser goes to and what the
/// callback needs to finish it.
#[derive(Clone)]
pub struct Begun {
    /// The authorization URL (the browser is redirected there).
    pub url: String,
    verifier: String,
    issuer: Option<String>,
    iss_required: bool,
    discovered: Discovered,
    redirect: String,
}

impl std::fmt::Debug for Begun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Begun").field("url", &self.url).finish()
    }
}

/// A store every replica of a deployment shares (Redis, through the cluster
/// bus), holding the same sealed texts as the account files, by
/// [`AccountStore::shared_field`]. Errors are messages (the store's outage:
/// the replica goes on with what it has).
pub trait SharedAccounts: Send + Sync {
    fn get<'a>(&'a self, field: &'a str) -> SharedFuture<'a, Option<String>>;
    /// Sets the field, or deletes it (`None`).
    fn set<'a>(&'a self, field: &'a str, text: Option<&'a str>) -> SharedFuture<'a, ()>;
}

/// What a [`SharedAccounts`] call returns.
pub type SharedFuture<'a, T> =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<T, String>> + Send + 'a>>;

/// The per-caller accounts of one upstream.
pub struct Accounts {
    upstream: String,
    url: String,
    kind: Kind,
    store: AccountStore,
    http: Client,
    discovered: Mutex<Option<Discovered>>,
    refreshing: tokio::sync::Mutex<()>,
    shared: std::sync::OnceLock<std::sync::Arc<dyn SharedAccounts>>,
}

impl Accounts {
    /// The accounts of a `user_oauth` or `user_secret` upstream; `None` for
    /// any other kind.
    pub fn new(upstream: &str, url: &str, auth: &UpstreamAuth) -> Option<Accounts> {
        let (kind, store, written) = match auth {
            UpstreamAuth::UserOAuth(o) => (
                Kind::OAuth(o.clone()),
                AccountStore::new(o.client.store.as_ref()?),
                vec![
                    Some(url.to_string()),
                    o.client.issuer.clone(),
                    o.client.token_endpoint.clone(),
                ],
            ),
            UpstreamAuth::UserSecret(s) => (
                Kind::Secret(s.clone()),
                AccountStore::new(&s.store),
                vec![Some(url.to_string())],
            ),
            _ => return None,
        };
        let written: Vec<&str> = written.iter().flatten().map(String::as_str).collect();
        Some(Accounts {
            upstream: upstream.to_string(),
            url: url.to_string(),
            kind,
            store,
            http: Client::unattended(&written),
            discovered: Mutex::new(None),
            refreshing: tokio::sync::Mutex::new(()),
            shared: std::sync::OnceLock::new(),
        })
    }

    /// Keeps the accounts in `shared` too (every replica reads them there):
    /// a change is written through, and each lookup reads it first.
    pub fn share_with(&self, shared: std::sync::Arc<dyn SharedAccounts>) {
        let _ = self.shared.set(shared);
    }

    /// The shared store's account of `principal` made this replica's: taken
    /// when it differs, forgotten here when it is gone there. Its outage
    /// leaves this replica's copy as it is.
    async fn pull(&self, principal: &str) -> Result<(), CredentialError> {
        let Some(shared) = self.shared.get() else {
            return Ok(());
        };
        let field = AccountStore::shared_field(&self.upstream, principal);
        let there = match shared.get(&field).await {
            Ok(t) => t,
            Err(e) => {
                tracing::warn!(upstream = %self.upstream, error = %e, "the shared account store is unavailable; using this replica's copy");
                return Ok(());
            }
        };
        let here = self.store.sealed_text(&self.upstream, principal)?;
        match there {
            Some(t) if here.as_deref() != Some(t.as_str()) => {
                self.store.adopt(&self.upstream, principal, &t)?;
            }
            Some(_) => {}
            None => {
                self.store.remove(&self.upstream, principal)?;
            }
        }
        Ok(())
    }

    /// Writes this replica's copy of `principal`'s account through to the
    /// shared store (or its absence).
    async fn push(&self, principal: &str) {
        let Some(shared) = self.shared.get() else {
            return;
        };
        let field = AccountStore::shared_field(&self.upstream, principal);
        let text = self
            .store
            .sealed_text(&self.upstream, principal)
            .ok()
            .flatten();
        if let Err(e) = shared.set(&field, text.as_deref()).await {
            tracing::warn!(upstream = %self.upstream, error = %e, "the account could not be written to the shared store; other replicas do not see this change");
        }
    }

    pub fn upstream(&self) -> &str {
        &self.upstream
    }

    pub fn store(&self) -> &AccountStore {
        &self.store
    }

    /// `user_oauth` (a browser flow) rather than `user_secret` (a form).
    pub fn is_oauth(&self) -> bool {
        matches!(self.kind, Kind::OAuth(_))
    }

    /// `user_secret` with `check = "tools/list"`.
    pub fn checks(&self) -> bool {
        matches!(&self.kind, Kind::Secret(s) if s.check)
    }

    /// The credential `secret` becomes on a request (`user_secret`).
    pub fn inject(&self, secret: &str) -> Injected {
        match &self.kind {
            Kind::Secret(s) => match &s.inject {
                i @ Inject::Header { .. } => {
                    let (n, v) = i.render(secret);
                    Injected::Header(n, v)
                }
                i @ Inject::Query { .. } => {
                    let (n, v) = i.render(secret);
                    Injected::Query(n, v)
                }
            },
            Kind::OAuth(_) => Injected::Header("authorization".into(), format!("Bearer {secret}")),
        }
    }

    /// The credential of `principal`, refreshed when it is about to expire.
    pub async fn credential(&self, principal: &str) -> Result<Lookup, CredentialError> {
        self.pull(principal).await?;
        let Some(a) = self.store.load(&self.upstream, principal)? else {
            return Ok(Lookup::Missing);
        };
        if let Some(s) = &a.secret {
            return Ok(Lookup::Ready {
                injected: self.inject(s),
                refreshed: false,
            });
        }
        let Some(t) = &a.tokens else {
            return Ok(Lookup::Missing);
        };
        if t.fresh() {
            return Ok(Lookup::Ready {
                injected: self.inject(&t.access_token),
                refreshed: false,
            });
        }
        self.refresh(principal).await
    }

    /// Refreshes `principal`'s tokens (read again under the lock: another
    /// call may have just done it).
    async fn refresh(&self, principal: &str) -> Result<Lookup, CredentialError> {
        let _one = self.refreshing.lock().await;
        let Some(mut a) = self.store.load(&self.upstream, principal)? else {
            return Ok(Lookup::Missing);
        };
        let Some(mut t) = a.tokens.clone() else {
            return Ok(Lookup::Missing);
        };
        if t.fresh() {
            return Ok(Lookup::Ready {
                injected: self.inject(&t.access_token),
                refreshed: false,
            });
        }
        let Some(rt) = t.refresh_token.clone() else {
            let expired = t.expires_at.is_some_and(|e| e <= unix_now());
            if expired {
                self.store.remove(&self.upstream, principal)?;
                self.push(principal).await;
                return Ok(Lookup::Lapsed(format!(
                    "the access token for `{}` expired and there is no refresh token",
                    self.upstream
                )));
            }
            return Ok(Lookup::Ready {
                injected: self.inject(&t.access_token),
                refreshed: false,
            });
        };
        let answer = token_request(
            &self.http,
            &t.token_endpoint,
            &t.client_id,
            t.client_secret.as_deref(),
            &t.auth_method,
            vec![
                ("grant_type", "refresh_token".into()),
                ("refresh_token", rt),
                ("resource", t.resource.clone()),
            ],
        )
        .await;
        match answer {
            Ok(v) => {
                let scope = t.scope.clone();
                take_tokens(&mut t, &v, scope.as_deref());
                let token = t.access_token.clone();
                a.tokens = Some(t);
                a.refreshed_at = Some(unix_now());
                // A server that rotates refresh tokens has spent the old one.
                self.store.save(&a)?;
                self.push(principal).await;
                Ok(Lookup::Ready {
                    injected: self.inject(&token),
                    refreshed: true,
                })
            }
            Err(e) if e.needs_login() => {
                self.store.remove(&self.upstream, principal)?;
                self.push(principal).await;
                Ok(Lookup::Lapsed(format!(
                    "refreshing the token for `{}` failed ({e})",
                    self.upstream
                )))
            }
            // The authorization server's outage: a token not yet expired is
            // still sent; else the call fails and the account is kept.
            Err(e) if t.expires_at.is_some_and(|x| x > unix_now()) => {
                tracing::warn!(upstream = %self.upstream, error = %e,
                    "refreshing a caller's token failed; using it until it expires");
                Ok(Lookup::Ready {
                    injected: self.inject(&t.access_token),
                    refreshed: false,
                })
            }
            Err(e) => Err(e),
        }
    }

    /// The pinned issuer's metadata, read once (again after a failure).
    async fn discovered(&self, o: &UserOAuth) -> Result<Discovered, CredentialError> {
        if let Some(d) = self.discovered.lock().clone() {
            return Ok(d);
        }
        let pins = Pins {
            issuer: o.client.issuer.as_deref(),
            token_endpoint: o.client.token_endpoint.as_deref(),
        };
        let mut d = discover(&self.http, &self.url, None, pins).await?;
        d.resource = o.resource.clone();
        crate::login::can_authorize(&d)?;
        *self.discovered.lock() = Some(d.clone());
        Ok(d)
    }

    /// Starts a flow whose redirect carries `state` back to `redirect`, with
    /// the PKCE `verifier` (at least 43 characters of a secret the caller
    /// keeps; the same three give the same flow again, for its callback).
    pub async fn begin(
        &self,
        redirect: &str,
        state: &str,
        verifier: &str,
    ) -> Result<Begun, CredentialError> {
        let Kind::OAuth(o) = &self.kind else {
            return Err(CredentialError::Refused(format!(
                "`{}` takes a pasted key, not an authorization",
                self.upstream
            )));
        };
        let d = self.discovered(o).await?;
        if verifier.len() < 43 {
            return Err(CredentialError::Refused(
                "a PKCE verifier has at least 43 characters (RFC 7636)".into(),
            ));
        }
        let mut url = url::Url::parse(&d.server.authorization_endpoint)
            .map_err(|e| CredentialError::Server(format!("authorization_endpoint: {e}")))?;
        {
            let mut q = url.query_pairs_mut();
            q.append_pair("response_type", "code")
                .append_pair(
                    "client_id",
                    o.client.client_id.as_deref().unwrap_or_default(),
                )
                .append_pair("redirect_uri", redirect)
                .append_pair("state", state)
                .append_pair("code_challenge", &s256(verifier))
                .append_pair("code_challenge_method", "S256")
                .append_pair("resource", &d.resource);
            if !o.client.scopes.is_empty() {
                q.append_pair("scope", &o.client.scopes.join(" "));
            }
        }
        if !crate::http::allowed(url.as_str()) {
            return Err(CredentialError::Refused(format!(
                "the authorization endpoint of {} is {:?}: a browser is sent only to https:// (or http:// on a loopback host)",
                d.authorization_server, d.server.authorization_endpoint
            )));
        }
        Ok(Begun {
            url: url.to_string(),
            verifier: verifier.to_string(),
            issuer: d.server.issuer.clone(),
            iss_required: d.server.iss_parameter,
            redirect: redirect.to_string(),
            discovered: d,
        })
    }

    /// Finishes `begun` with the callback's query `params`, and stores the
    /// tokens for `principal`.
    pub async fn redeem(
        &self,
        principal: &str,
        params: &[(String, String)],
        begun: &Begun,
    ) -> Result<Account, CredentialError> {
        let Kind::OAuth(o) = &self.kind else {
            return Err(CredentialError::Refused("not a user_oauth upstream".into()));
        };
        let get = |k: &str| params.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
        if let Some(e) = get("error") {
            return Err(CredentialError::NeedsLogin(format!(
                "the authorization server refused: {e} {}",
                get("error_description").unwrap_or_default()
            )));
        }
        crate::login::check_iss(get("iss"), begun.issuer.as_deref(), begun.iss_required)?;
        let code = get("code")
            .filter(|c| !c.is_empty())
            .ok_or_else(|| CredentialError::Refused("the redirect has no code".into()))?;
        let d = &begun.discovered;
        let client_id = o.client.client_id.clone().unwrap_or_default();
        let secret = o.client.client_secret.clone();
        let method = crate::login::auth_method(secret.as_deref(), &d.server.auth_methods);
        let v = token_request(
            &self.http,
            &d.server.token_endpoint,
            &client_id,
            secret.as_deref(),
            method,
            vec![
                ("grant_type", "authorization_code".into()),
                ("code", code),
                ("redirect_uri", begun.redirect.clone()),
                ("code_verifier", begun.verifier.clone()),
                ("resource", d.resource.clone()),
            ],
        )
        .await?;
        let asked = (!o.client.scopes.is_empty()).then(|| o.client.scopes.join(" "));
        let mut t = Record {
            client_id,
            client_secret: secret,
            auth_method: method.into(),
            token_endpoint: d.server.token_endpoint.clone(),
            resource: d.resource.clone(),
            authorization_server: Some(d.authorization_server.clone()),
            ..Record::default()
        };
        take_tokens(&mut t, &v, asked.as_deref());
        let account = Account {
            principal: principal.to_string(),
            upstream: self.upstream.clone(),
            connected_at: unix_now(),
            refreshed_at: None,
            tokens: Some(t),
            secret: None,
        };
        self.store.save(&account)?;
        self.push(principal).await;
        Ok(account)
    }

    /// Stores a pasted key for `principal` (`user_secret`).
    pub async fn save_secret(
        &self,
        principal: &str,
        secret: &str,
    ) -> Result<Account, CredentialError> {
        let a = Account {
            principal: principal.to_string(),
            upstream: self.upstream.clone(),
            connected_at: unix_now(),
            refreshed_at: None,
            tokens: None,
            secret: Some(secret.to_string()),
        };
        self.store.save(&a)?;
        self.push(principal).await;
        Ok(a)
    }

    /// Forgets `principal`'s account, here and in the shared store; whether
    /// there was one here.
    pub async fn revoke(&self, principal: &str) -> Result<bool, CredentialError> {
        let had = self.store.remove(&self.upstream, principal)?;
        self.push(principal).await;
        Ok(had)
    }
}
