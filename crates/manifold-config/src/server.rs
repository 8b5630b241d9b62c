//! `[server]` and `[server.tls]`: the downstream endpoint — its address and
//! path, list paging, the Origin and Host checks, HTTPS and client
//! certificates, the key of minted `requestState`s, shutdown's grace.
//!
//! A reload cannot change the listener's address, its TLS, the state key (held
//! calls would stop verifying) or `watch_config` ([`FIXED_AT_START`]).
//!
//! Invariants: a validated path is absolute; TLS files exist when the
//! configuration is loaded; a state key has at least
//! [`MIN_REQUEST_STATE_KEY_LEN`] characters.
//!
//! Not here: serving (manifold-server).

use serde::{Deserialize, Serialize};
use std::net::SocketAddr;
use std::time::Duration;

use crate::expand::expand;
use crate::limits::duration;

/// Default `[server] listen`.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:8080";
/// Default `[server] path`.
pub const DEFAULT_PATH: &str = "/mcp";
/// Default `[server] page_size`: large enough that typical catalogs arrive in one page
/// for clients that never follow `nextCursor`.
pub const DEFAULT_PAGE_SIZE: usize = 500;
/// Default `[server] shutdown_grace`: how long calls in flight get to finish once
/// shutdown begins.
pub const DEFAULT_SHUTDOWN_GRACE: &str = "10s";
/// Shortest `server.request_state_key` accepted.
pub const MIN_REQUEST_STATE_KEY_LEN: usize = 32;

/// `[server]`: the downstream endpoint.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ServerSection {
    /// Socket address to listen on (`DEFAULT_LISTEN`).
    #[serde(default = "default_listen")]
    pub listen: String,
    /// The MCP endpoint path (`DEFAULT_PATH`).
    #[serde(default = "default_path")]
    pub path: String,
    /// Items per page of merged lists (`DEFAULT_PAGE_SIZE`).
    #[serde(default = "default_page_size")]
    pub page_size: usize,
    /// `Origin` values accepted besides a loopback listener's own loopback origins,
    /// e.g. `["https://app.example.com"]`. Requests without `Origin` are accepted.
    #[serde(default)]
    pub allowed_origins: Vec<String>,
    /// `Host` values accepted (e.g. the DNS name clients or a proxy use). A loopback
    /// listener also accepts loopback hosts; any other listener accepts only these,
    /// and needs at least one (`"*"` accepts any host: no DNS-rebinding protection).
    #[serde(default)]
    pub allowed_hosts: Vec<String>,
    /// Serve a listener that is not on a loopback address without authentication
    /// (default false: `manifold serve` refuses to). Anyone who can reach the port
    /// then acts with the upstreams' credentials.
    #[serde(default)]
    pub allow_unauthenticated: bool,
    /// Reload the configuration when this file changes (checked every 2 s),
    /// as on SIGHUP (default false).
    #[serde(default)]
    pub watch_config: bool,
    /// Secret that keys the HMAC of the `requestState` Manifold mints when it
    /// bridges a session-era upstream's mid-call request for a 2026-07-28 client (at
    /// least `MIN_REQUEST_STATE_KEY_LEN` characters; `${VAR}` expands). Unset: a
    /// random key per process, so states die with it.
    pub request_state_key: Option<String>,
    /// How long calls in flight get to finish once shutdown begins (SIGTERM,
    /// SIGINT), `DEFAULT_SHUTDOWN_GRACE`. Past it they are cancelled, audited as
    /// such, and the process exits anyway.
    #[serde(default = "default_shutdown_grace")]
    pub shutdown_grace: String,
    /// `[server.tls]`: serve HTTPS (and verify client certificates).
    #[serde(default)]
    pub tls: Option<TlsSection>,
    /// The default endpoint's discovery: `"list"` (default) or `"search"`
    /// (see `[[endpoint]] discovery`).
    #[serde(default)]
    pub discovery: crate::endpoint::DiscoveryMode,
    /// With `discovery = "search"`: tool-name globs listed besides the
    /// meta-tools.
    #[serde(default)]
    pub always_visible: Vec<String>,
    /// With `discovery = "search"`: a session's found tools join its
    /// `tools/list` (default false).
    #[serde(default)]
    pub discovery_expand: bool,
    /// The address browsers reach this listener at (`https://mcp.example.com`),
    /// for the links Manifold hands out (a `user_oauth` or `user_secret`
    /// upstream's connect pages, `/oauth/callback`). Default: the listener's
    /// own address; required when that is not what users reach (a wildcard
    /// address, a proxy in front).
    #[serde(default)]
    pub public_url: Option<String>,
    /// Serve each endpoint's MCP server card (SEP-2127) at
    /// `/.well-known/mcp/server-card[/<endpoint>]` and `<endpoint>/server-card`
    /// (`DEFAULT_SERVER_CARD`).
    #[serde(default = "default_server_card")]
    pub server_card: bool,
}

/// Default `[server] server_card`: on (a card holds only public facts).
pub const DEFAULT_SERVER_CARD: bool = true;

fn default_server_card() -> bool {
    DEFAULT_SERVER_CARD
}

impl Default for ServerSection {
    fn default() -> Self {
        ServerSection {
            listen: default_listen(),
            path: default_path(),
            page_size: DEFAULT_PAGE_SIZE,
            allowed_origins: Vec::new(),
            allowed_hosts: Vec::new(),
            allow_unauthenticated: false,
            watch_config: false,
            request_state_key: None,
            shutdown_grace: default_shutdown_grace(),
            tls: None,
            discovery: Default::default(),
            always_visible: Vec::new(),
            discovery_expand: false,
            public_url: None,
            server_card: DEFAULT_SERVER_CARD,
        }
    }
}

/// `[server.tls]`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TlsSection {
    /// PEM certificate chain (leaf first).
    pub cert: String,
    /// PEM private key (PKCS#8, PKCS#1 or SEC1).
    pub key: String,
    /// PEM CA certificates client certificates must chain to; set, clients
    /// present certificates and the certificate's subject becomes the principal.
    #[serde(default)]
    pub client_ca: Option<String>,
    /// With `client_ca`: refuse a connection without a client certificate
    /// (default true). False: such clients authenticate by `[auth]` instead.
    #[serde(default)]
    pub require_client_cert: Option<bool>,
    /// With `client_ca`: certificate revocation lists (PEM), one file or a
    /// list; a client certificate they revoke is refused at the handshake.
    /// Read again, with the certificates, when a file changes.
    #[serde(default)]
    pub client_crl: Option<PathList>,
}

/// One path, or a list of them.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(untagged)]
pub enum PathList {
    One(String),
    Many(Vec<String>),
}

impl PathList {
    /// The paths, in order.
    pub fn paths(&self) -> Vec<&str> {
        match self {
            PathList::One(p) => vec![p.as_str()],
            PathList::Many(v) => v.iter().map(String::as_str).collect(),
        }
    }
}

#[derive(Debug, Clone)]
pub struct ServerConfig {
    pub listen: SocketAddr,
    pub path: String,
    pub page_size: usize,
    pub allowed_origins: Vec<String>,
    pub allowed_hosts: Vec<String>,
    /// `server.allow_unauthenticated`.
    pub allow_unauthenticated: bool,
    /// `server.watch_config`: reload when the file changes.
    pub watch_config: bool,
    /// `server.shutdown_grace`.
    pub shutdown_grace: Duration,
    /// `server.request_state_key`, expanded (`None`: generate one at start).
    pub request_state_key: Option<String>,
    /// `[server.tls]`: HTTPS on the listener.
    pub tls: Option<TlsConfig>,
    /// The default endpoint's `discovery`, `always_visible`, `discovery_expand`.
    pub discovery: crate::endpoint::DiscoverySettings,
    /// `server.public_url`, without a trailing `/`.
    pub public_url: Option<String>,
    /// `server.server_card`.
    pub server_card: bool,
}

impl ServerConfig {
    /// Where browsers reach this listener: `public_url`, else the listener's
    /// own `http(s)://address` (`None` for a wildcard address, which no
    /// browser can open).
    pub fn public_base(&self) -> Option<String> {
        self.public_url
            .clone()
            .or_else(|| self.listener_base(self.listen))
    }

    /// `http(s)://<listen>` for a listener bound at `listen` (the configured
    /// address may say port 0); `None` for a wildcard address.
    pub fn listener_base(&self, listen: SocketAddr) -> Option<String> {
        if listen.ip().is_unspecified() {
            return None;
        }
        let scheme = if self.tls.is_some() { "https" } else { "http" };
        Some(format!("{scheme}://{listen}"))
    }
}

/// `[server.tls]`, validated: the files exist when the configuration is loaded
/// (their contents are parsed when the listener starts, and again when they
/// change).
#[derive(Debug, Clone, PartialEq)]
pub struct TlsConfig {
    pub cert: std::path::PathBuf,
    pub key: std::path::PathBuf,
    pub client_ca: Option<std::path::PathBuf>,
    /// Whether a client certificate is required (only with `client_ca`).
    pub require_client_cert: bool,
    /// Certificate revocation lists (PEM) client certificates are checked
    /// against (only with `client_ca`).
    pub client_crl: Vec<std::path::PathBuf>,
}

/// `server.public_url`: an absolute `http(s)` URL with no query or fragment,
/// kept without its trailing `/`.
fn public_url(u: &str) -> Result<String, String> {
    match url::Url::parse(u) {
        Ok(p)
            if matches!(p.scheme(), "http" | "https")
                && p.host().is_some()
                && p.query().is_none()
                && p.fragment().is_none()
                && p.username().is_empty()
                && p.password().is_none() =>
        {
            Ok(u.trim_end_matches('/').to_string())
        }
        _ => Err(format!(
            "key `server.public_url`: {u:?} must be an absolute http(s) URL with no credentials, query or fragment, e.g. \"https://mcp.example.com\""
        )),
    }
}

/// `[server]` validated.
pub(crate) fn validate(
    s: ServerSection,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<ServerConfig, String> {
    let listen: SocketAddr = s.listen.parse().map_err(|_| {
        format!(
            "key `server.listen`: `{}` is not a socket address; write e.g. \"127.0.0.1:8080\"",
            s.listen
        )
    })?;
    let path = s.path;
    if !path.starts_with('/') || path.contains(['?', '#', ' ']) {
        return Err(format!(
            "key `server.path`: `{path}` must be an absolute path such as \"/mcp\""
        ));
    }
    let public_url = match &s.public_url {
        None => None,
        Some(u) => Some(public_url(u)?),
    };
    if s.page_size == 0 {
        return Err("key `server.page_size`: must be greater than 0".into());
    }
    let request_state_key = match &s.request_state_key {
        None => None,
        Some(k) => {
            let k =
                expand(k, lookup).map_err(|e| format!("key `server.request_state_key`: {e}"))?;
            if k.chars().count() < MIN_REQUEST_STATE_KEY_LEN {
                return Err(format!(
                    "key `server.request_state_key`: must be at least {MIN_REQUEST_STATE_KEY_LEN} characters (a random secret, e.g. `openssl rand -hex 32`)"
                ));
            }
            Some(k)
        }
    };
    Ok(ServerConfig {
        listen,
        path,
        page_size: s.page_size,
        allowed_origins: s.allowed_origins,
        allowed_hosts: s.allowed_hosts,
        allow_unauthenticated: s.allow_unauthenticated,
        watch_config: s.watch_config,
        shutdown_grace: duration("server.shutdown_grace", &s.shutdown_grace)?,
        request_state_key,
        public_url,
        server_card: s.server_card,
        tls: match &s.tls {
            Some(t) => Some(tls(t, lookup)?),
            None => None,
        },
        discovery: crate::endpoint::discovery(
            "server",
            s.discovery,
            &s.always_visible,
            s.discovery_expand,
        )?,
    })
}

fn tls(t: &TlsSection, lookup: &dyn Fn(&str) -> Option<String>) -> Result<TlsConfig, String> {
    let file = |field: &str, v: &str| -> Result<std::path::PathBuf, String> {
        let v = expand(v, lookup).map_err(|e| format!("key `server.tls.{field}`: {e}"))?;
        let p = std::path::PathBuf::from(v.trim());
        if !p.is_file() {
            return Err(format!(
                "key `server.tls.{field}`: `{}` is not a readable file",
                p.display()
            ));
        }
        Ok(p)
    };
    let client_ca = match &t.client_ca {
        Some(c) => Some(file("client_ca", c)?),
        None => None,
    };
    if t.require_client_cert.is_some() && client_ca.is_none() {
        return Err(
            "key `server.tls.require_client_cert`: only means something with `client_ca`".into(),
        );
    }
    let mut client_crl = Vec::new();
    if let Some(list) = &t.client_crl {
        if client_ca.is_none() {
            return Err(
                "key `server.tls.client_crl`: only means something with `client_ca`".into(),
            );
        }
        if list.paths().is_empty() {
            return Err(
                "key `server.tls.client_crl`: name at least one CRL file (or leave it out)".into(),
            );
        }
        for p in list.paths() {
            client_crl.push(file("client_crl", p)?);
        }
    }
    Ok(TlsConfig {
        cert: file("cert", &t.cert)?,
        key: file("key", &t.key)?,
        require_client_cert: client_ca.is_some() && t.require_client_cert.unwrap_or(true),
        client_ca,
        client_crl,
    })
}

fn default_listen() -> String {
    DEFAULT_LISTEN.into()
}
fn default_path() -> String {
    DEFAULT_PATH.into()
}
fn default_page_size() -> usize {
    DEFAULT_PAGE_SIZE
}
fn default_shutdown_grace() -> String {
    DEFAULT_SHUTDOWN_GRACE.into()
}
