//! `manifold credentials list|revoke`: callers' own accounts at `user_oauth`
//! and `user_secret` upstreams, in `[credentials] store`, worked on without a
//! running gateway.
//!
//! - `list [--upstream U] [--principal P] [--json]`: who is connected to
//!   what, how (`oauth` or `secret`), since when, until when — never a token
//!   or key.
//! - `revoke U --principal P`: forgets that account; the principal's next
//!   call to `U` asks them to connect again.
//!
//! Invariants: nothing printed holds a secret; files that cannot be opened
//! (another key, damaged) are reported on stderr and make the exit code 1.
//! Exit codes: 0 done, 1 some account files could not be opened (list) or
//! the file could not be removed (revoke), 2 a configuration without
//! `[credentials]`, an upstream that has no per-caller accounts, or a
//! principal with no account there.

use clap::Subcommand;
use manifold_config::credentials::UpstreamAuth;
use manifold_credentials::AccountStore;
use std::process::ExitCode;
use std::time::{Duration, UNIX_EPOCH};

use super::table::Table;
use super::{ConfigArg, FAILED, USAGE};

#[derive(Subcommand)]
pub enum CredentialsCommand {
    /// Print who is connected to which upstream (`user_oauth`, `user_secret`),
    /// since when and until when; never a token or key.
    ///
    /// Exit codes: 0 printed, 1 some account files cannot be opened, 2
    /// configuration error.
    List {
        #[command(flatten)]
        config: ConfigArg,
        /// Only this upstream's accounts.
        #[arg(long, value_name = "U")]
        upstream: Option<String>,
        /// Only this principal's accounts (as the audit log names it:
        /// `jwt:corp:alice`, `key:ci-bot`).
        #[arg(long, value_name = "P")]
        principal: Option<String>,
        /// Print the same as a JSON array.
        #[arg(long)]
        json: bool,
    },
    /// Forget a principal's account at an upstream: their next call asks them
    /// to connect again.
    ///
    /// Exit codes: 0 revoked, 1 the file could not be removed, 2
    /// configuration error, not a per-caller upstream, or no such account.
    Revoke {
        #[command(flatten)]
        config: ConfigArg,
        /// The upstream's name in the configuration.
        upstream: String,
        /// The principal (as `list` prints it).
        #[arg(long, value_name = "P")]
        principal: String,
    },
}

/// Runs a `credentials` command.
pub fn run(command: CredentialsCommand) -> ExitCode {
    match command {
        CredentialsCommand::List {
            config,
            upstream,
            principal,
            json,
        } => {
            let (cfg, store) = match open(&config) {
                Ok(s) => s,
                Err(code) => return code,
            };
            if let Some(u) = &upstream {
                if let Err(code) = per_user(&cfg, u) {
                    return code;
                }
            }
            let (mut found, problems) = store.list(upstream.as_deref());
            found.retain(|s| principal.as_deref().is_none_or(|p| p == s.principal));
            if json {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&found).unwrap_or_default()
                );
            } else {
                let mut t = Table::new(&[
                    "UPSTREAM",
                    "PRINCIPAL",
                    "KIND",
                    "CONNECTED",
                    "REFRESHED",
                    "EXPIRES",
                    "REFRESHABLE",
                ]);
                for s in &found {
                    t.row(vec![
                        s.upstream.clone(),
                        s.principal.clone(),
                        s.kind.to_string(),
                        time(Some(s.connected_at)),
                        time(s.refreshed_at),
                        time(s.expires_at),
                        if s.kind == "oauth" {
                            s.refreshable.to_string()
                        } else {
                            String::new()
                        },
                    ]);
                }
                let mut out = String::new();
                t.render(&mut out);
                print!("{out}");
            }
            for p in &problems {
                eprintln!("manifold: {p}");
            }
            if problems.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(FAILED)
            }
        }
        CredentialsCommand::Revoke {
            config,
            upstream,
            principal,
        } => {
            let (cfg, store) = match open(&config) {
                Ok(s) => s,
                Err(code) => return code,
            };
            if let Err(code) = per_user(&cfg, &upstream) {
                return code;
            }
            match store.remove(&upstream, &principal) {
                Ok(true) => {
                    eprintln!("manifold: revoked {principal}'s account at `{upstream}`; their next call asks them to connect again");
                    ExitCode::SUCCESS
                }
                Ok(false) => {
                    eprintln!("manifold: {principal} has no account at `{upstream}` (see `manifold credentials list --upstream {upstream}`)");
                    ExitCode::from(USAGE)
                }
                Err(e) => {
                    eprintln!("manifold: {e}");
                    ExitCode::from(FAILED)
                }
            }
        }
    }
}

fn open(config: &ConfigArg) -> Result<(manifold_config::GatewayConfig, AccountStore), ExitCode> {
    let cfg = super::load_config(&config.config)?;
    let Some(settings) = cfg.credentials.clone() else {
        eprintln!("manifold: configuration error: no [credentials] section: there are no accounts to list");
        return Err(ExitCode::from(USAGE));
    };
    Ok((cfg, AccountStore::new(&settings)))
}

/// Whether `name` is an upstream with per-caller accounts.
fn per_user(cfg: &manifold_config::GatewayConfig, name: &str) -> Result<(), ExitCode> {
    let auth = cfg
        .upstreams
        .iter()
        .find(|u| u.name == name)
        .and_then(|u| match &u.transport {
            manifold_config::Transport::Http { auth, .. } => Some(auth),
            _ => None,
        });
    match auth {
        Some(UpstreamAuth::UserOAuth(_) | UpstreamAuth::UserSecret(_)) => Ok(()),
        Some(_) => {
            eprintln!("manifold: upstream `{name}` has no per-caller accounts (its auth.type is not user_oauth or user_secret)");
            Err(ExitCode::from(USAGE))
        }
        None => {
            eprintln!("manifold: no upstream `{name}` in the configuration");
            Err(ExitCode::from(USAGE))
        }
    }
}

fn time(secs: Option<u64>) -> String {
    secs.map(|s| manifold_foundation::time::rfc3339_seconds(UNIX_EPOCH + Duration::from_secs(s)))
        .unwrap_or_default()
}
