//! From the file model to the validated runtime snapshot. Every message names the
//! key and says what is wrong and what would be right.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

use crate::expand::expand;
use crate::model::*;

use crate::snapshot::*;

impl Default for LimitsConfig {
    fn default() -> Self {
        // Only fails if the named defaults themselves are malformed, which the
        // `defaults_are_valid` test rules out.
        limits(LimitsSection::default()).unwrap_or(LimitsConfig {
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            max_message_bytes: DEFAULT_MAX_MESSAGE_BYTES,
            max_pending_per_upstream: DEFAULT_MAX_PENDING,
            max_sessions: DEFAULT_MAX_SESSIONS,
            session_idle_timeout: Duration::from_secs(3600),
            connect_timeout: Duration::from_secs(10),
            stream_queue: DEFAULT_STREAM_QUEUE,
            held_call_ttl: Duration::from_secs(120),
            max_held_calls: DEFAULT_MAX_HELD_CALLS,
            max_held_calls_per_principal: DEFAULT_MAX_HELD_CALLS_PER_PRINCIPAL,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            header_read_timeout: Duration::from_secs(30),
            body_read_timeout: Duration::from_secs(30),
            stream_write_timeout: Duration::from_secs(10),
            max_client_info_bytes: DEFAULT_MAX_CLIENT_INFO_BYTES,
            max_sessions_per_peer: DEFAULT_MAX_SESSIONS_PER_PEER,
            max_subscriptions_per_session: DEFAULT_MAX_SUBSCRIPTIONS_PER_SESSION,
            max_listens: DEFAULT_MAX_LISTENS,
            max_calls_per_session: DEFAULT_MAX_CALLS_PER_SESSION,
            max_list_items: DEFAULT_MAX_LIST_ITEMS,
        })
    }
}

/// Upstream names: what may appear in exposed names and metric labels.
pub fn is_valid_upstream_name(name: &str) -> bool {
    (1..=32).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

fn duration(key: &str, value: &str) -> Result<Duration, String> {
    humantime::parse_duration(value.trim()).map_err(|e| {
        format!(
            "key `{key}`: `{value}` is not a duration ({e}); write e.g. \"30s\", \"2m\", \"1h\""
        )
    })
}

fn limits(l: LimitsSection) -> Result<LimitsConfig, String> {
    let positive = |key: &str, v: usize| {
        if v == 0 {
            Err(format!("key `limits.{key}`: must be greater than 0"))
        } else {
            Ok(v)
        }
    };
    Ok(LimitsConfig {
        max_body_bytes: positive("max_body_bytes", l.max_body_bytes)?,
        max_message_bytes: positive("max_message_bytes", l.max_message_bytes)?,
        max_pending_per_upstream: positive("max_pending_per_upstream", l.max_pending_per_upstream)?,
        max_sessions: positive("max_sessions", l.max_sessions)?,
        session_idle_timeout: duration("limits.session_idle_timeout", &l.session_idle_timeout)?,
        connect_timeout: duration("limits.connect_timeout", &l.connect_timeout)?,
        stream_queue: positive("stream_queue", l.stream_queue)?,
        held_call_ttl: duration("limits.held_call_ttl", &l.held_call_ttl)?,
        max_held_calls: positive("max_held_calls", l.max_held_calls)?,
        max_held_calls_per_principal: positive(
            "max_held_calls_per_principal",
            l.max_held_calls_per_principal,
        )?,
        max_connections: positive("max_connections", l.max_connections)?,
        header_read_timeout: duration("limits.header_read_timeout", &l.header_read_timeout)?,
        body_read_timeout: duration("limits.body_read_timeout", &l.body_read_timeout)?,
        stream_write_timeout: duration("limits.stream_write_timeout", &l.stream_write_timeout)?,
        max_client_info_bytes: positive("max_client_info_bytes", l.max_client_info_bytes)?,
        max_sessions_per_peer: positive("max_sessions_per_peer", l.max_sessions_per_peer)?,
        max_subscriptions_per_session: positive(
            "max_subscriptions_per_session",
            l.max_subscriptions_per_session,
        )?,
        max_listens: positive("max_listens", l.max_listens)?,
        max_calls_per_session: positive("max_calls_per_session", l.max_calls_per_session)?,
        max_list_items: positive("max_list_items", l.max_list_items)?,
    })
}

pub(crate) fn validate(
    file: FileConfig,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<GatewayConfig, String> {
    if file.audit.as_ref().is_some_and(|a| a.otlp) && file.tracing.is_none() {
        return Err(
            "key `audit.otlp`: needs a [tracing] section (its endpoint is where the records go)"
                .into(),
        );
    }
    let (file_audit, file_auth, file_admin, max_tool_series) = (
        file.audit.clone(),
        file.auth.clone(),
        file.admin.clone(),
        file.metrics.max_tool_series,
    );
    let listen: SocketAddr = file.server.listen.parse().map_err(|_| {
        format!(
            "key `server.listen`: `{}` is not a socket address; write e.g. \"127.0.0.1:8080\"",
            file.server.listen
        )
    })?;
    let path = file.server.path;
    if !path.starts_with('/') || path.contains(['?', '#', ' ']) {
        return Err(format!(
            "key `server.path`: `{path}` must be an absolute path such as \"/mcp\""
        ));
    }
    if file.server.page_size == 0 {
        return Err("key `server.page_size`: must be greater than 0".into());
    }
    let path_for_resource = path.clone();
    let sep = file.naming.separator;
    if sep.is_empty()
        || sep.len() > 8
        || !sep
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        return Err(format!(
            "key `naming.separator`: `{sep}` must be 1 to 8 characters from [A-Za-z0-9_-] so exposed names stay valid for every LLM provider"
        ));
    }
    let prefix_mode = match file.naming.prefix_mode.as_str() {
        "always" => PrefixMode::Always,
        "multiple" => PrefixMode::Multiple,
        "never" => PrefixMode::Never,
        other => {
            return Err(format!(
            "key `naming.prefix_mode`: `{other}` is not one of \"always\", \"multiple\", \"never\""
        ))
        }
    };
    let max_length = file.naming.max_length;
    if !(16..=128).contains(&max_length) {
        return Err(format!(
            "key `naming.max_length`: {max_length} is outside 16..=128"
        ));
    }
    let limits = limits(file.limits)?;

    let mut upstreams = Vec::with_capacity(file.upstreams.len());
    let request_state_key = match &file.server.request_state_key {
        None => None,
        Some(k) => {
            let k =
                expand(k, lookup).map_err(|e| format!("key `server.request_state_key`: {e}"))?;
            if k.chars().count() < crate::model::MIN_REQUEST_STATE_KEY_LEN {
                return Err(format!(
                    "key `server.request_state_key`: must be at least {} characters (a random secret, e.g. `openssl rand -hex 32`)",
                    crate::model::MIN_REQUEST_STATE_KEY_LEN
                ));
            }
            Some(k)
        }
    };
    let store = match &file.credentials {
        Some(c) => Some(crate::credentials::validate_store(
            c,
            &|field: &str, v: &str| expand(v, lookup).map_err(|e| format!("key `{field}`: {e}")),
        )?),
        None => None,
    };
    for (name, u) in file.upstreams {
        let key = format!("upstreams.{name}");
        if !is_valid_upstream_name(&name) {
            return Err(format!(
                "key `{key}`: the upstream name `{name}` must match ^[A-Za-z0-9_-]{{1,32}}$"
            ));
        }
        let ex = |field: &str, v: &str| {
            expand(v, lookup).map_err(|e| format!("key `{key}.{field}`: {e}"))
        };
        let transport = match (&u.command, &u.url) {
            (Some(_), Some(_)) => {
                return Err(format!(
                    "key `{key}`: give either `command` (stdio) or `url` (HTTP), not both"
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
                let url = ex("url", url)?;
                let lower = url.to_ascii_lowercase();
                let rest = lower
                    .strip_prefix("http://")
                    .or_else(|| lower.strip_prefix("https://"));
                match rest {
                    Some(r) if !r.is_empty() && !r.starts_with('/') => {}
                    _ => {
                        return Err(format!(
                        "key `{key}.url`: `{url}` must be an http:// or https:// URL with a host"
                    ))
                    }
                }
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
                    Some(a) => crate::credentials::validate_auth(&key, a, store.as_ref(), &ex)?,
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
        let filter = |what: &str, f: &crate::model::FilterSection| -> Result<Filter, String> {
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
            Some("legacy") => UpstreamProtocol::Legacy,
            Some("2026-07-28") => UpstreamProtocol::Modern,
            Some(other) => {
                return Err(format!(
                    "key `{key}.protocol`: `{other}` is not one of \"auto\", \"legacy\", \"2026-07-28\""
                ))
            }
        };
        upstreams.push(UpstreamConfig {
            protocol,
            tools: filter("tools", &u.tools)?,
            prompts: filter("prompts", &u.prompts)?,
            name,
            transport,
            timeout,
            ping_interval,
            required: u.required,
            prefix,
            overrides: crate::overrides::validate(&key, &u.overrides)?,
        });
    }
    // BTreeMap iteration already sorted them; make the invariant explicit.
    upstreams.sort_by(|a, b| a.name.cmp(&b.name));
    let auth = match &file_auth {
        Some(a) => Some(crate::auth::validate_expanding(
            a,
            &format!(
                "{}://{listen}{path_for_resource}",
                if file.server.tls.is_some() {
                    "https"
                } else {
                    "http"
                }
            ),
            &|field: &str, v: &str| expand(v, lookup).map_err(|e| format!("key `{field}`: {e}")),
        )?),
        None => None,
    };
    crate::credentials::resolve_exchange(&mut upstreams, auth.as_ref())?;

    let mut cfg = GatewayConfig {
        server: ServerConfig {
            listen,
            path,
            page_size: file.server.page_size,
            allowed_origins: file.server.allowed_origins,
            allowed_hosts: file.server.allowed_hosts,
            allow_unauthenticated: file.server.allow_unauthenticated,
            watch_config: file.server.watch_config,
            shutdown_grace: duration("server.shutdown_grace", &file.server.shutdown_grace)?,
            request_state_key,
            tls: match &file.server.tls {
                Some(t) => Some(tls(t, lookup)?),
                None => None,
            },
        },
        naming: NamingConfig {
            separator: sep,
            prefix_mode,
            max_length,
        },
        limits,
        upstreams,
        audit: match &file_audit {
            Some(a) => Some(audit(a, |field: &str, v: &str| {
                expand(v, lookup).map_err(|e| format!("key `{field}`: {e}"))
            })?),
            None => None,
        },
        auth,
        admin: match &file_admin {
            Some(a) => Some(crate::admin::validate(
                a,
                file_auth.is_some(),
                &|field: &str, v: &str| {
                    expand(v, lookup).map_err(|e| format!("key `{field}`: {e}"))
                },
            )?),
            None => None,
        },
        max_tool_series,
        validate_arguments: file.validation.arguments == ArgumentsMode::Enforce,
        validate_output: file.validation.output,
        rate_limits: crate::limits::validate(&file.rate_limit)?,
        policy: crate::policy::validate(&file.policy)?,
        confirm: crate::policy::validate_confirm(&file.confirm)?,
        effective: serde_json::Value::Null,
        credentials: store.clone(),
        cluster: match &file.cluster {
            Some(c) => Some(crate::cluster::validate(c, &|field: &str, v: &str| {
                expand(v, lookup).map_err(|e| format!("key `{field}`: {e}"))
            })?),
            None => None,
        },
        integrity: crate::integrity::validate(&file.integrity, &|field: &str, v: &str| {
            expand(v, lookup).map_err(|e| format!("key `{field}`: {e}"))
        })?,
        tracing: match &file.tracing {
            Some(t) => Some(crate::telemetry::validate(t)?),
            None => None,
        },
        stdio_principal: match &file.stdio.principal {
            Some(p) if p.trim().is_empty() => {
                return Err("key `stdio.principal`: must not be empty".into())
            }
            p => p.clone(),
        },
        principal_label: file.metrics.principal_label,
        max_principal_series: file.metrics.max_principal_series,
    };
    // Needs `[auth]` and `[server.tls]` validated: which sources exist.
    crate::principals::qualify_rules(&mut cfg)?;
    Ok(cfg)
}

fn tls(
    t: &crate::model::TlsSection,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<crate::snapshot::TlsConfig, String> {
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
    Ok(crate::snapshot::TlsConfig {
        cert: file("cert", &t.cert)?,
        key: file("key", &t.key)?,
        require_client_cert: client_ca.is_some() && t.require_client_cert.unwrap_or(true),
        client_ca,
        client_crl,
    })
}

fn audit(
    a: &crate::model::AuditSection,
    ex: impl Fn(&str, &str) -> Result<String, String>,
) -> Result<crate::audit::AuditSettings, String> {
    use crate::audit::AuditSettings;
    let d = AuditSettings::default();
    let path = match &a.path {
        Some(p) => Some(std::path::PathBuf::from(ex("audit.path", p)?)),
        None => None,
    };
    let parse = |v: &Option<String>| v.as_ref().map(|s| s.trim().to_string());
    let settings = AuditSettings {
        path,
        stdout: a.stdout,
        redact: a.redact.clone().unwrap_or(d.redact),
        include_arguments: a.include_arguments.unwrap_or(d.include_arguments),
        max_bytes: a.max_bytes.unwrap_or(d.max_bytes),
        keep: a.keep.unwrap_or(d.keep),
        fsync: match parse(&a.fsync) {
            Some(s) => s.parse().map_err(|e| format!("key `audit.fsync`: {e}"))?,
            None => d.fsync,
        },
        on_failure: match parse(&a.on_failure) {
            Some(s) => s
                .parse()
                .map_err(|e| format!("key `audit.on_failure`: {e}"))?,
            None => d.on_failure,
        },
        queue: a.queue.unwrap_or(d.queue),
        max_value_bytes: a.max_value_bytes.unwrap_or(d.max_value_bytes),
        otlp: a.otlp,
    };
    settings
        .validate()
        .map_err(|e| format!("section `[audit]`: {e}"))?;
    Ok(settings)
}
