//! `manifold login UPSTREAM`: the authorization-code flow (PKCE) for an
//! upstream with `auth.type = "oauth"`, ending with its tokens in the
//! `[credentials]` store, where a running gateway finds them (it reads the
//! store again when the upstream refuses its token).
//!
//! The authorization server is printed on stdout (`issuer: <url>`, with
//! whether `auth.issuer` pinned it or the upstream named it), then the
//! authorization URL (`open: <url>`), which, unless `--no-browser`, is handed
//! to the desktop's opener only when it is `https://` (or `http://` to a
//! loopback host); the browser comes back to a loopback address this command
//! listens on. The issuer is recorded with the tokens: `serve` uses them with
//! that issuer only.
//!
//! Exit codes: 0 logged in, 1 the flow failed (the message says where), 2 a
//! configuration error or an upstream that is not an `oauth` one.

use std::path::Path;
use std::process::ExitCode;

use manifold_config::credentials::UpstreamAuth;
use manifold_config::Transport;

pub fn run(rt: &tokio::runtime::Runtime, config: &Path, upstream: &str, browser: bool) -> ExitCode {
    let cfg = match super::load_config(config) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let Some(u) = cfg.upstreams.iter().find(|u| u.name == upstream) else {
        let names: Vec<&str> = cfg.upstreams.iter().map(|u| u.name.as_str()).collect();
        eprintln!(
            "manifold login: no upstream `{upstream}` (configured: {})",
            names.join(", ")
        );
        return ExitCode::from(super::USAGE);
    };
    let (url, client) = match &u.transport {
        Transport::Http {
            url,
            auth: UpstreamAuth::OAuth(c),
            ..
        } => (url.clone(), c.clone()),
        _ => {
            eprintln!(
                "manifold login: `{upstream}` does not use `auth.type = \"oauth\"`; nothing to log in to"
            );
            return ExitCode::from(super::USAGE);
        }
    };
    let Some(store) = client.store.as_ref().map(manifold_credentials::Store::new) else {
        eprintln!("manifold login: `[credentials]` is missing");
        return ExitCode::from(super::USAGE);
    };
    let pinned = client.issuer.is_some();
    let options = manifold_credentials::LoginOptions {
        upstream: upstream.to_string(),
        url,
        client,
        store,
        show: Box::new(move |issuer: &str, auth_url: &str| {
            println!(
                "issuer: {issuer} ({})",
                if pinned {
                    "pinned by auth.issuer"
                } else {
                    "named by the upstream; pin it with auth.issuer"
                }
            );
            println!("open: {auth_url}");
            use std::io::Write;
            let _ = std::io::stdout().flush();
            // The flow refuses other schemes before this; checked again where
            // the URL meets the desktop's opener.
            if browser && manifold_credentials::browsable(auth_url) {
                for opener in ["xdg-open", "open"] {
                    if std::process::Command::new(opener)
                        .arg(auth_url)
                        .stdout(std::process::Stdio::null())
                        .stderr(std::process::Stdio::null())
                        .spawn()
                        .is_ok()
                    {
                        break;
                    }
                }
            }
        }),
    };
    match rt.block_on(manifold_credentials::login(options)) {
        Ok(r) => {
            println!(
                "logged in to `{upstream}`{}{}",
                r.authorization_server
                    .map(|i| format!(" at {i}"))
                    .unwrap_or_default(),
                r.scope
                    .map(|s| format!(" (scope: {s})"))
                    .unwrap_or_default()
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("manifold login {upstream}: {e}");
            ExitCode::from(super::FAILED)
        }
    }
}
