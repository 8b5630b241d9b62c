//! [`SignInClient`]: Manifold as an OpenID Connect relying party of the front
//! door's own issuer (`[credentials] sign_in_client_id`), to learn who holds a
//! browser before a connect page links an account: the authorization-code flow
//! with PKCE (S256), `nonce` and `state`, `scope=openid`; the ID token comes
//! back from the token endpoint and is verified by the caller (against the
//! `[auth]` issuer's keys: manifold-policy).
//!
//! Invariants: requests go only to the configured issuer (its metadata read
//! from it) and are bounded like every other token request; the browser is
//! sent only to an `https://` (or loopback `http://`) authorization endpoint;
//! no code, token or secret reaches a log line or an error message.
//!
//! Not here: verifying the ID token, cookies, pages (the server).

use manifold_config::credentials::SignIn;
use parking_lot::Mutex;

use crate::discovery::{discover, Discovered, Pins};
use crate::error::CredentialError;
use crate::http::Client;
use crate::login::token_request;
use crate::pkce::s256;

/// The front door's issuer, as a relying party.
pub struct SignInClient {
    settings: SignIn,
    http: Client,
    discovered: Mutex<Option<Discovered>>,
}

impl SignInClient {
    pub fn new(settings: &SignIn) -> SignInClient {
        SignInClient {
            http: Client::unattended(&[settings.issuer.as_str()]),
            settings: settings.clone(),
            discovered: Mutex::new(None),
        }
    }

    pub fn issuer(&self) -> &str {
        &self.settings.issuer
    }

    pub fn client_id(&self) -> &str {
        &self.settings.client_id
    }

    async fn metadata(&self) -> Result<Discovered, CredentialError> {
        if let Some(d) = self.discovered.lock().clone() {
            return Ok(d);
        }
        let pins = Pins {
            issuer: Some(&self.settings.issuer),
            token_endpoint: None,
        };
        let d = discover(&self.http, &self.settings.issuer, None, pins).await?;
        crate::login::can_authorize(&d)?;
        *self.discovered.lock() = Some(d.clone());
        Ok(d)
    }

    /// Where the browser signs in: the authorization URL for `redirect`,
    /// `state`, `nonce` and the PKCE `verifier`.
    pub async fn authorize_url(
        &self,
        redirect: &str,
        state: &str,
        nonce: &str,
        verifier: &str,
    ) -> Result<String, CredentialError> {
        let d = self.metadata().await?;
        let mut url = url::Url::parse(&d.server.authorization_endpoint)
            .map_err(|e| CredentialError::Server(format!("authorization_endpoint: {e}")))?;
        url.query_pairs_mut()
            .append_pair("response_type", "code")
            .append_pair("client_id", &self.settings.client_id)
            .append_pair("redirect_uri", redirect)
            .append_pair("scope", "openid")
            .append_pair("state", state)
            .append_pair("nonce", nonce)
            .append_pair("code_challenge", &s256(verifier))
            .append_pair("code_challenge_method", "S256");
        if !crate::http::allowed(url.as_str()) {
            return Err(CredentialError::Refused(format!(
                "the authorization endpoint of {} is not https:// (or http:// on a loopback host)",
                self.settings.issuer
            )));
        }
        Ok(url.to_string())
    }

    /// The ID token the callback's `params` redeem to (not yet verified).
    pub async fn id_token(
        &self,
        params: &[(String, String)],
        redirect: &str,
        verifier: &str,
    ) -> Result<String, CredentialError> {
        let get = |k: &str| params.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
        if let Some(e) = get("error") {
            return Err(CredentialError::NeedsLogin(format!(
                "the sign-in was refused: {e}"
            )));
        }
        let d = self.metadata().await?;
        crate::login::check_iss(
            get("iss"),
            d.server.issuer.as_deref(),
            d.server.iss_parameter,
        )?;
        let code = get("code")
            .filter(|c| !c.is_empty())
            .ok_or_else(|| CredentialError::Refused("the redirect has no code".into()))?;
        let secret = self.settings.client_secret.as_deref();
        let method = crate::login::auth_method(secret, &d.server.auth_methods);
        let v = token_request(
            &self.http,
            &d.server.token_endpoint,
            &self.settings.client_id,
            secret,
            method,
            vec![
                ("grant_type", "authorization_code".into()),
                ("code", code),
                ("redirect_uri", redirect.to_string()),
                ("code_verifier", verifier.to_string()),
            ],
        )
        .await?;
        v["id_token"]
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| CredentialError::Server("the token endpoint gave no id_token".into()))
    }
}
