//! `manifold admin token`: prints the local admin token — the credential of
//! the control endpoints and the console when `[admin]` names none — making
//! it (and its file, readable by this user only) when `serve` has not yet.
//!
//! Not here: checking the token (manifold-server `admin::auth`).

use std::path::Path;
use std::process::ExitCode;

use super::{load_config, FAILED, USAGE};

#[derive(clap::Subcommand)]
pub enum AdminCommand {
    /// Print the local admin token (`Authorization: Bearer <token>` on the
    /// admin listener, or the console's login form). Only when `[admin]` has
    /// no `[[admin.tokens]]` and no `who`; the token is kept in `[admin]
    /// token_file` and made on first use.
    ///
    /// Exit codes: 0 printed, 1 the file cannot be read or made, 2
    /// configuration error or no local admin token in this configuration.
    Token {
        #[command(flatten)]
        config: super::ConfigArg,
    },
}

pub fn run(command: AdminCommand) -> ExitCode {
    let AdminCommand::Token { config } = command;
    token(&config.config)
}

fn token(path: &Path) -> ExitCode {
    let cfg = match load_config(path) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let Some(admin) = cfg.admin.as_ref() else {
        eprintln!("manifold: no [admin] section: there is no admin listener, and no admin token");
        return ExitCode::from(USAGE);
    };
    if admin.has_credentials() {
        eprintln!(
            "manifold: [admin] names its credentials ([[admin.tokens]] or who): use one of those; \
             the local admin token is only for an [admin] without them"
        );
        return ExitCode::from(USAGE);
    }
    let audit = cfg.audit.as_ref().and_then(|a| a.path.as_deref());
    let Some(file) = admin.token_file(audit, |k| std::env::var(k).ok()) else {
        eprintln!("manifold: {}", manifold_server::LocalAdminError::NoPlace);
        return ExitCode::from(USAGE);
    };
    match manifold_server::local_admin_token(&file) {
        Ok(token) => {
            println!("{token}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("manifold: {e}");
            ExitCode::from(FAILED)
        }
    }
}
