//! Manifold as an OAuth client of its upstreams, following the MCP
//! authorization specification:
//!
//! - `discovery`: the upstream's `WWW-Authenticate` challenge, its protected
//!   resource metadata (RFC 9728, from the challenge or the well-known URIs
//!   with their fallbacks), then its authorization server's metadata (RFC
//!   8414, then OpenID Connect discovery; the 2025-03-26 root fallbacks);
//! - `login`: the authorization-code flow with PKCE (S256) behind `manifold
//!   login`, with the client identified by a Client ID Metadata Document, a
//!   pre-registered id, or dynamic registration as the last resort; `resource`
//!   (RFC 8707) on every request, `iss` checked (RFC 9207);
//! - `source`: the token a running gateway sends, refreshed before it
//!   expires, reloaded when `manifold login` wrote a new one, and the step-up
//!   a 403 `insufficient_scope` asks for; the client-credentials grant;
//! - `exchange`: RFC 8693 token exchange, a caller's token for one per caller
//!   whose audience is the upstream;
//! - `store`: tokens at rest, encrypted, one file per upstream (both stores
//!   write through `sealed_file`);
//! - `accounts` and `connect`: each caller's own account at a `user_oauth`
//!   or `user_secret` upstream — sealed per (upstream, principal), the flow a
//!   connect page starts and its callback finishes, refreshes, written
//!   through to a [`SharedAccounts`] store when replicas share one;
//! - `sign_in`: the front door's OpenID provider, as a relying party, to
//!   learn who holds a browser before a connect page binds.
//!
//! Invariants: every request to an authorization server is bounded by
//! [`HTTP_TIMEOUT`] and its answer by [`MAX_BODY`]; a token never reaches a
//! log line or an error message; the client's own token is never sent
//! upstream (there is no passthrough).
//!
//! Not here: sending requests to the upstream (manifold-upstream asks a
//! [`TokenSource`] for the token), the command line (the binary).

mod accounts;
mod connect;
mod discovery;
mod error;
mod exchange;
mod guard;
mod http;
mod limits;
mod login;
mod pkce;
mod sealed_file;
mod sign_in;
mod source;
mod store;

pub use accounts::{Account, AccountStore, Summary, MAX_ACCOUNT_FILE};
pub use connect::{Accounts, Begun, Injected, Lookup, SharedAccounts, SharedFuture};
pub use discovery::{parse_challenge, Challenge};
pub use error::CredentialError;
pub use exchange::{Validated, ACCESS_TOKEN_TYPE, MAX_EXCHANGED, TOKEN_EXCHANGE_GRANT};
pub use limits::{HTTP_TIMEOUT, LOGIN_TIMEOUT, MAX_BODY, MAX_STEP_UPS, REFRESH_MARGIN};
pub use login::{browsable, login, LoginOptions};
pub use sign_in::SignInClient;
pub use source::{Refusal, TokenSource};
pub use store::{Record, Store};
