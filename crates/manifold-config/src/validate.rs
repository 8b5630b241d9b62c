//! From the file model to the validated runtime snapshot: each section is
//! validated by its own file, and the checks that span sections are here
//! (`audit.otlp` needs `[tracing]`; `[auth]` names the resource it protects
//! from `[server]`; upstreams that exchange tokens need `[auth]`; `who`
//! entries are qualified with the identity sources that exist). Every message
//! names the key and says what is wrong and what would be right.

use crate::expand::expand;
use crate::file::FileConfig;
use crate::snapshot::GatewayConfig;

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
    let tls_configured = file.server.tls.is_some();
    let server = crate::server::validate(file.server, lookup)?;
    let naming = crate::naming::validate(file.naming)?;
    let limits = crate::limits::validate(file.limits)?;

    let store = match &file.credentials {
        Some(c) => Some(crate::credentials::validate_store(
            c,
            &|field: &str, v: &str| expand(v, lookup).map_err(|e| format!("key `{field}`: {e}")),
        )?),
        None => None,
    };
    let mut upstreams = crate::upstreams::validate(file.upstreams, lookup, store.as_ref())?;
    let auth = match &file_auth {
        Some(a) => Some(crate::auth::validate_expanding(
            a,
            &format!(
                "{}://{}{}",
                if tls_configured { "https" } else { "http" },
                server.listen,
                server.path
            ),
            &|field: &str, v: &str| expand(v, lookup).map_err(|e| format!("key `{field}`: {e}")),
        )?),
        None => None,
    };
    let http_auth = upstreams.iter_mut().filter_map(|u| match &mut u.transport {
        crate::upstreams::Transport::Http { auth, .. } => Some((u.name.as_str(), auth)),
        _ => None,
    });
    crate::credentials::resolve_exchange(http_auth, auth.as_ref())?;
    let mut store = store;
    if let (Some(c), Some(st)) = (&file.credentials, store.as_mut()) {
        st.sign_in =
            crate::credentials::resolve_sign_in(c, auth.as_ref(), &|field: &str, v: &str| {
                expand(v, lookup).map_err(|e| format!("key `{field}`: {e}"))
            })?;
    }
    let per_user = upstreams.iter().find(|u| {
        matches!(&u.transport, crate::upstreams::Transport::Http { auth, .. } if auth.per_user())
    });
    if let (Some(u), None) = (per_user, server.public_base()) {
        return Err(format!(
            "key `server.public_url`: upstream `{}` sends each caller to a connect page, and the listener's address {} is not one a browser can open; set public_url to the address users reach (e.g. \"https://mcp.example.com\")",
            u.name, server.listen
        ));
    }
    let endpoints = crate::endpoint::validate(
        &file.endpoint,
        &server.path,
        &upstreams.iter().map(|u| u.name.as_str()).collect(),
    )?;

    let mut cfg = GatewayConfig {
        server,
        naming,
        limits,
        upstreams,
        endpoints,
        audit: match &file_audit {
            Some(a) => Some(crate::audit::validate_section(
                a,
                |field: &str, v: &str| expand(v, lookup).map_err(|e| format!("key `{field}`: {e}")),
            )?),
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
        validate_arguments: file.validation.arguments == crate::validation::ArgumentsMode::Enforce,
        validate_output: file.validation.output,
        rate_limits: crate::rate_limit::validate(&file.rate_limit)?,
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
        stdio_principal: crate::stdio::validate(&file.stdio)?,
        principal_label: file.metrics.principal_label,
        max_principal_series: file.metrics.max_principal_series,
        code: crate::code::validate(&file.code)?,
        semantic: crate::semantic::validate(&file.discovery, &|field: &str, v: &str| {
            expand(v, lookup).map_err(|e| format!("key `{field}`: {e}"))
        })?,
    };
    // Needs `[auth]` and `[server.tls]` validated: which sources exist.
    crate::principals::qualify_rules(&mut cfg)?;
    admin_tokens_are_not_client_keys(&cfg)?;
    Ok(cfg)
}

/// An `[[admin.tokens]]` entry with the digest of an `[[auth.api_keys]]`
/// one would make that client's key an admin key (whoever holds it could
/// reload, approve pins and read `/config`): refused.
fn admin_tokens_are_not_client_keys(cfg: &GatewayConfig) -> Result<(), String> {
    let (Some(admin), Some(auth)) = (&cfg.admin, &cfg.auth) else {
        return Ok(());
    };
    for t in &admin.tokens {
        if let Some(k) = auth.api_keys.iter().find(|k| k.sha256 == t.sha256) {
            return Err(format!(
                "key `admin.tokens` ({}): its hash is also `[[auth.api_keys]]` `{}`'s: a client's key \
                 would be an admin token; give the admin plane a key of its own",
                t.name, k.name
            ));
        }
    }
    Ok(())
}
