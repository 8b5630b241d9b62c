//! `[upstreams.<name>]`: the upstream MCP servers — a stdio `command` or a
//! Streamable-HTTP `url`, with its credentials, TLS, timeout, liveness pings,
//! prefix, `tools`/`prompts` filters, protocol era and tool overrides.
//!
//! A reload may add, change or remove upstreams (an unchanged one keeps its
//! connection; a changed one is restarted): nothing here is fixed at start.
//!
//! Invariants: a validated upstream has exactly one transport; names and
//! prefixes match `^[A-Za-z0-9_-]{1,32}$`; `${VAR}`s are expanded; files it
//! names exist; upstreams are sorted by name (the order collisions resolve in).
//!
//! Not here: credentials' own rules (`credentials`), connecting
//! (manifold-upstream).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Duration;

use crate::expand::expand;
use crate::limits::duration;

/// Default per-call timeout of an upstream.
pub const DEFAULT_TIMEOUT: &str = "60s";
/// Default `[upstreams.<name>] ping_interval`: how often a ready upstream is
/// pinged to prove it still answers.
pub const DEFAULT_PING_INTERVAL: &str = "30s";

/// The most members a pool may have (`instances`, or `urls` entries).
pub const MAX_INSTANCES: u32 = 64;

/// `[upstreams.<name>]`: either a stdio command or a Streamable-HTTP `url`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct UpstreamSection {
    /// stdio: the program to spawn (looked up on `PATH`).
    pub command: Option<String>,
    /// stdio: its arguments.
    #[serde(default)]
    pub args: Vec<String>,
    /// stdio: the child's environment variables. The child gets these, plus
    /// `PATH`, `HOME` and `LANG` from the gateway's environment, and nothing else
    /// (one upstream's secrets never reach another) unless `inherit_env` is true.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// stdio: give the child the gateway's whole environment (default false).
    #[serde(default)]
    pub inherit_env: bool,
    /// stdio: working directory.
    pub cwd: Option<String>,
    /// HTTP: the upstream's MCP endpoint URL (`http://` or `https://`).
    pub url: Option<String>,
    /// HTTP: a pool — several instances of the same server, one URL each
    /// (instead of `url`); calls are spread over them (see `docs/reliability.md`).
    #[serde(default)]
    pub urls: Vec<String>,
    /// stdio: a pool of this many children of `command` (default 1, at most
    /// [`MAX_INSTANCES`]); calls are spread over them.
    pub instances: Option<u32>,
    /// HTTP: headers sent on every request (credentials go here, never the client's).
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// HTTP: how Manifold authenticates (`static` headers by default).
    pub auth: Option<crate::credentials::UpstreamAuthSection>,
    /// HTTPS: PEM CA certificates trusted for this upstream, besides the
    /// built-in web roots (a private CA).
    pub ca: Option<String>,
    /// HTTPS: PEM client certificate chain presented to this upstream (mTLS);
    /// with `client_key`.
    pub client_cert: Option<String>,
    /// HTTPS: the PEM private key of `client_cert`.
    pub client_key: Option<String>,
    /// Per-call timeout (`DEFAULT_TIMEOUT`), e.g. `"30s"`, `"2m"`.
    pub timeout: Option<String>,
    /// How often a ready upstream is pinged to prove it still answers
    /// (`DEFAULT_PING_INTERVAL`); `"0s"` turns the pings off. Two pings in a row
    /// unanswered within `timeout` restart it (a hung but live child, a server that
    /// stopped answering).
    pub ping_interval: Option<String>,
    /// `/readyz` fails while a required upstream is not ready (default false).
    #[serde(default)]
    pub required: bool,
    /// Used instead of the upstream's name in exposed names (`<prefix><separator>
    /// <tool>`), e.g. a short alias for a long upstream name. Same rules as
    /// upstream names. Default: the upstream's name.
    pub prefix: Option<String>,
    /// Which of the upstream's tools are exposed (globs over its own tool names).
    #[serde(default)]
    pub tools: FilterSection,
    /// Which of the upstream's prompts are exposed (globs over its own prompt names).
    #[serde(default)]
    pub prompts: FilterSection,
    /// Which protocol era to speak to it: `auto` (default: probe with
    /// `server/discover`, fall back to `initialize`), `session-era` (`initialize` only,
    /// 2025-11-25 and older) or `2026-07-28` (stateless only; no fallback).
    pub protocol: Option<String>,
    /// Per-tool fixes by the upstream's own tool name: exposed name,
    /// description, pinned and hidden arguments, whether calls may be retried.
    #[serde(default)]
    pub overrides: BTreeMap<String, crate::overrides::ToolOverride>,
    /// Retries of calls that may be repeated (`{max = 2, budget = 0.1}`);
    /// none unless written (or an override says `retry = true`).
    pub retries: Option<crate::resilience::RetriesSection>,
    /// The circuit breaker; none unless written.
    pub breaker: Option<crate::resilience::BreakerSection>,
}

/// `allow` / `deny` glob lists (`*` any run, `?` one character). An item is exposed
/// when it matches an `allow` glob (or `allow` is empty) and no `deny` glob. Hidden
/// items are not callable.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct FilterSection {
    /// Globs of names to expose; empty = all.
    #[serde(default)]
    pub allow: Vec<String>,
    /// Globs of names to hide; deny wins over allow.
    #[serde(default)]
    pub deny: Vec<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct UpstreamConfig {
    pub name: String,
    pub transport: Transport,
    pub timeout: Duration,
    /// Liveness pings (`ping_interval`); `None` when turned off.
    pub ping_interval: Option<Duration>,
    pub required: bool,
    /// The prefix used in exposed names (the name unless `prefix` is set).
    pub prefix: String,
    /// `tools.allow` / `tools.deny` globs.
    pub tools: Filter,
    /// `prompts.allow` / `prompts.deny` globs.
    pub prompts: Filter,
    /// The protocol era spoken to this upstream.
    pub protocol: UpstreamProtocol,
    /// `overrides.<tool>`, by the upstream's own tool name.
    pub overrides: std::collections::BTreeMap<String, crate::overrides::ToolOverride>,
    /// `retries`: `Some` when written, or when an override says `retry =
    /// true` (then the defaults).
    pub retries: Option<crate::resilience::RetryPolicy>,
    /// `breaker`, when written.
    pub breaker: Option<crate::resilience::BreakerPolicy>,
    /// Members of its pool: `instances` children of a stdio command, or one
    /// per `urls` entry; 1 when it is not a pool.
    pub instances: usize,
    /// An HTTP pool's member URLs (`urls`), the first also the transport's
    /// `url`; empty otherwise.
    pub pool_urls: Vec<String>,
}

impl UpstreamConfig {
    /// Whether it is a pool of several members.
    pub fn is_pool(&self) -> bool {
        self.instances > 1
    }

    /// The configuration one member of its pool connects with: an HTTP
    /// pool's member gets its own URL; a stdio child is the command as
    /// written.
    pub fn member(&self, index: usize) -> UpstreamConfig {
        let mut c = self.clone();
        if let (Transport::Http { url, .. }, Some(u)) =
            (&mut c.transport, self.pool_urls.get(index))
        {
            *url = u.clone();
        }
        c
    }
}

/// `upstreams.<name>.protocol`: which era Manifold speaks to an upstream.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum UpstreamProtocol {
    /// Probe with `server/discover`; any answer that is not a 2026-07-28 discover
    /// result falls back to `initialize`.
    #[default]
    Auto,
    /// The session era only: `initialize` (2025-11-25 and older); written
    /// `"legacy"`.
    Session,
    /// 2026-07-28 (stateless) only: a failed probe is a failed start.
    Stateless,
}

/// Validated `allow` / `deny` globs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    pub allow: Vec<String>,
    pub deny: Vec<String>,
}

// One per upstream, built once per configuration and never moved on a hot
// path: boxing the HTTP side's OAuth client would only complicate every match.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum Transport {
    Stdio {
        command: String,
        args: Vec<String>,
        env: BTreeMap<String, String>,
        cwd: Option<String>,
        /// Pass the gateway's whole environment, not only `PATH`, `HOME`, `LANG`.
        inherit_env: bool,
    },
    Http {
        url: String,
        headers: BTreeMap<String, String>,
        /// `auth`: static headers, or an OAuth client.
        auth: crate::credentials::UpstreamAuth,
        /// `ca`, `client_cert`, `client_key`.
        tls: UpstreamTls,
    },
}

/// TLS towards one HTTP upstream, beyond the built-in web roots.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UpstreamTls {
    /// More CA certificates to trust (PEM).
    pub ca: Option<std::path::PathBuf>,
    /// A client certificate chain and its key (PEM), presented to the upstream.
    pub client_cert: Option<(std::path::PathBuf, std::path::PathBuf)>,
}

impl Transport {
    pub fn kind(&self) -> &'static str {
        match self {
            Transport::Stdio { .. } => "stdio",
            Transport::Http { .. } => "http",
        }
    }
}

/// Upstream names: what may appear in exposed names and metric labels.
pub fn is_valid_upstream_name(name: &str) -> bool {
    (1..=32).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// `url`, or `urls` (a pool), expanded and checked: the first URL (the
/// transport's) and, for a pool, all of them.
#[allow(clippy::type_complexity)]
fn pool_urls(
    key: &str,
    u: &UpstreamSection,
    ex: &dyn Fn(&str, &str) -> Result<String, String>,
) -> Result<(Option<String>, Vec<String>), String> {
    let checked = |field: &str, raw: &str| -> Result<String, String> {
        let url = ex(field, raw)?;
        let lower = url.to_ascii_lowercase();
        let rest = lower
            .strip_prefix("http://")
            .or_else(|| lower.strip_prefix("https://"));
        match rest {
            Some(r) if !r.is_empty() && !r.starts_with('/') => Ok(url),
            _ => Err(format!(
                "key `{key}.{field}`: `{url}` must be an http:// or https:// URL with a host"
            )),
        }
    };
    match (&u.url, u.urls.as_slice()) {
        (Some(_), [_, ..]) => Err(format!(
            "key `{key}`: give either `url` (one instance) or `urls` (a pool), not both"
        )),
        (Some(url), []) => Ok((Some(checked("url", url)?), Vec::new())),
        (None, []) => Ok((None, Vec::new())),
        (None, urls) => {
            if urls.len() > MAX_INSTANCES as usize {
                return Err(format!(
                    "key `{key}.urls`: {} URLs; a pool has at most {MAX_INSTANCES}",
                    urls.len()
                ));
            }
            let mut out = Vec::with_capacity(urls.len());
            for raw in urls {
                let url = checked("urls", raw)?;
                if out.contains(&url) {
                    return Err(format!("key `{key}.urls`: `{url}` is listed twice"));
                }
                out.push(url);
            }
            let first = out.first().cloned();
            let pool = if out.len() > 1 { out } else { Vec::new() };
            Ok((first, pool))
        }
    }
}

/// `[upstreams.*]` validated, sorted by name; `store` is `[credentials]`
/// (OAuth upstreams keep their tokens there).
pub(crate) fn validate(
    sections: BTreeMap<String, UpstreamSection>,
    lookup: &dyn Fn(&str) -> Option<String>,
    store: Option<&crate::credentials::StoreSettings>,
) -> Result<Vec<UpstreamConfig>, String> {
    let mut upstreams = Vec::with_capacity(sections.len());
    for (name, u) in sections {
        let key = format!("upstreams.{name}");
        if !is_valid_upstream_name(&name) {
            return Err(format!(
                "key `{key}`: the upstream name `{name}` must match ^[A-Za-z0-9_-]{{1,32}}$"
            ));
        }
        let ex = |field: &str, v: &str| {
            expand(v, lookup).map_err(|e| format!("key `{key}.{field}`: {e}"))
        };
        let (first_url, pool_urls) = pool_urls(&key, &u, &ex)?;
        let transport = match (&u.command, &first_url) {
            (Some(_), Some(_)) => {
                return Err(format!(
                    "key `{key}`: give either `command` (stdio) or `url`/`urls` (HTTP), not both"
                ))
            }
            (None, None) => {
                return Err(format!(
                "key `{key}`: needs `command` (a stdio server) or `url` (a Streamable-HTTP server)"
            ))
            }
            (Some(command), None) => {
                if !u.headers.is_empty() {
                    return Err(format!(
                        "key `{key}.headers`: only HTTP upstreams (`url`) take headers"
                    ));
                }
                if u.auth.is_some() {
                    return Err(format!(
                        "key `{key}.auth`: only HTTP upstreams (`url`) authenticate; a stdio child gets its credentials from `env`"
                    ));
                }
                if u.ca.is_some() || u.client_cert.is_some() || u.client_key.is_some() {
                    return Err(format!(
                        "key `{key}`: `ca`, `client_cert` and `client_key` apply to HTTP upstreams (`url`)"
                    ));
                }
                let command = ex("command", command)?;
                if command.trim().is_empty() {
                    return Err(format!("key `{key}.command`: must not be empty"));
                }
                let mut args = Vec::with_capacity(u.args.len());
                for a in &u.args {
                    args.push(ex("args", a)?);
                }
                let mut env = BTreeMap::new();
                for (k, v) in &u.env {
                    env.insert(k.clone(), ex(&format!("env.{k}"), v)?);
                }
                let cwd = match &u.cwd {
                    Some(c) => Some(ex("cwd", c)?),
                    None => None,
                };
                Transport::Stdio {
                    command,
                    args,
                    env,
                    cwd,
                    inherit_env: u.inherit_env,
                }
            }
            (None, Some(url)) => {
                let file = |field: &str,
                            v: &Option<String>|
                 -> Result<Option<std::path::PathBuf>, String> {
                    let Some(v) = v else { return Ok(None) };
                    let p = std::path::PathBuf::from(ex(field, v)?.trim());
                    if !p.is_file() {
                        return Err(format!(
                            "key `{key}.{field}`: `{}` is not a readable file",
                            p.display()
                        ));
                    }
                    Ok(Some(p))
                };
                let tls = UpstreamTls {
                    ca: file("ca", &u.ca)?,
                    client_cert: match (
                        file("client_cert", &u.client_cert)?,
                        file("client_key", &u.client_key)?,
                    ) {
                        (Some(c), Some(k)) => Some((c, k)),
                        (None, None) => None,
                        _ => {
                            return Err(format!(
                                "key `{key}`: `client_cert` and `client_key` go together"
                            ))
                        }
                    },
                };
                if !u.args.is_empty() || !u.env.is_empty() || u.cwd.is_some() || u.inherit_env {
                    return Err(format!(
                        "key `{key}`: `args`, `env`, `inherit_env` and `cwd` apply to stdio upstreams (`command`), not to `url`"
                    ));
                }
                let url = url.clone();
                let mut headers = BTreeMap::new();
                for (k, v) in &u.headers {
                    let valid_name = !k.is_empty()
                        && k.bytes()
                            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
                    if !valid_name {
                        return Err(format!(
                            "key `{key}.headers`: `{k}` is not a valid header name"
                        ));
                    }
                    let v = ex(&format!("headers.{k}"), v)?;
                    if v.bytes().any(|b| b < 0x20 && b != b'\t' || b == 0x7f) {
                        return Err(format!(
                            "key `{key}.headers.{k}`: the value contains control characters"
                        ));
                    }
                    headers.insert(k.clone(), v);
                }
                let auth = match &u.auth {
                    Some(a) => crate::credentials::validate_auth(&key, &url, a, store, &ex)?,
                    None => Default::default(),
                };
                Transport::Http {
                    url,
                    headers,
                    auth,
                    tls,
                }
            }
        };
        let ping_interval = duration(
            &format!("{key}.ping_interval"),
            u.ping_interval.as_deref().unwrap_or(DEFAULT_PING_INTERVAL),
        )?;
        let ping_interval = (!ping_interval.is_zero()).then_some(ping_interval);
        let timeout = duration(
            &format!("{key}.timeout"),
            u.timeout.as_deref().unwrap_or(DEFAULT_TIMEOUT),
        )?;
        if timeout.is_zero() {
            return Err(format!("key `{key}.timeout`: must be greater than 0"));
        }
        let prefix = match &u.prefix {
            Some(p) if !is_valid_upstream_name(p) => {
                return Err(format!(
                    "key `{key}.prefix`: `{p}` must match ^[A-Za-z0-9_-]{{1,32}}$ (it becomes part of tool names)"
                ))
            }
            Some(p) => p.clone(),
            None => name.clone(),
        };
        let filter = |what: &str, f: &FilterSection| -> Result<Filter, String> {
            for g in f.allow.iter().chain(&f.deny) {
                if g.is_empty() {
                    return Err(format!("key `{key}.{what}`: a glob must not be empty"));
                }
            }
            Ok(Filter {
                allow: f.allow.clone(),
                deny: f.deny.clone(),
            })
        };
        let protocol = match u.protocol.as_deref() {
            None | Some("auto") => UpstreamProtocol::Auto,
            Some("legacy") => UpstreamProtocol::Session,
            Some("2026-07-28") => UpstreamProtocol::Stateless,
            Some(other) => {
                return Err(format!(
                    "key `{key}.protocol`: `{other}` is not one of \"auto\", \"legacy\", \"2026-07-28\""
                ))
            }
        };
        let instances = match (u.instances, &transport) {
            (None, _) => pool_urls.len().max(1),
            (Some(n), Transport::Stdio { .. }) if (1..=MAX_INSTANCES).contains(&n) => n as usize,
            (Some(n), Transport::Stdio { .. }) => {
                return Err(format!(
                    "key `{key}.instances`: {n} is not between 1 and {MAX_INSTANCES}"
                ))
            }
            (Some(_), Transport::Http { .. }) => {
                return Err(format!(
                    "key `{key}.instances`: applies to stdio upstreams (`command`); an HTTP pool lists its instances in `urls`"
                ))
            }
        };
        let overrides = crate::overrides::validate(&key, &u.overrides)?;
        let retries = crate::resilience::retries(&key, u.retries.as_ref())?.or_else(|| {
            overrides
                .values()
                .any(|o| o.retry == Some(true))
                .then(crate::resilience::RetryPolicy::default)
        });
        upstreams.push(UpstreamConfig {
            retries,
            breaker: crate::resilience::breaker(&key, u.breaker.as_ref())?,
            protocol,
            tools: filter("tools", &u.tools)?,
            prompts: filter("prompts", &u.prompts)?,
            name,
            transport,
            timeout,
            ping_interval,
            required: u.required,
            prefix,
            overrides,
            instances,
            pool_urls,
        });
    }
    // BTreeMap iteration already sorted them; make the invariant explicit.
    upstreams.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(upstreams)
}
