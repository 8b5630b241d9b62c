//! The named bounds of credential work: the HTTP timeout and body limit of
//! every request to an authorization server, how early a token is refreshed,
//! how long a login may take, and how many step-ups a call may ask for.

use std::time::Duration;

/// The bound on one request to an authorization server or metadata URL.
pub const HTTP_TIMEOUT: Duration = Duration::from_secs(15);
/// The largest metadata or token answer read.
pub const MAX_BODY: usize = 256 * 1024;
/// A token is refreshed when it expires within this margin.
pub const REFRESH_MARGIN: Duration = Duration::from_secs(60);
/// How long `manifold login` waits for the browser to come back.
pub const LOGIN_TIMEOUT: Duration = Duration::from_secs(300);
/// Step-ups (a new authorization after a 403 `insufficient_scope`) one
/// upstream may ask for before Manifold stops asking: the upstream would
/// refuse every scope.
pub const MAX_STEP_UPS: u32 = 3;
