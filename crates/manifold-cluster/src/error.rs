//! Why a cluster operation failed ([`ClusterError`]): each error knows its
//! JSON-RPC code and HTTP status, and Redis' own errors map onto it.
//!
//! Not here: the bounds named in the messages (`limits`).

use crate::limits::{MAX_MESSAGE_BYTES, OP_TIMEOUT};

/// Why a cluster operation failed. Each knows how the server answers a
/// request that needed it.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// Not connected to Redis (it is down, unreachable or refusing us).
    #[error("the cluster's Redis is unavailable: {0}")]
    Unavailable(String),
    /// Redis did not answer within [`OP_TIMEOUT`].
    #[error("the cluster's Redis did not answer within {}ms", OP_TIMEOUT.as_millis())]
    Timeout,
    /// The message exceeds [`MAX_MESSAGE_BYTES`].
    #[error("a cluster message of {0} bytes exceeds the limit of {MAX_MESSAGE_BYTES}")]
    TooLarge(usize),
    /// The bus cannot be set up as configured (a URL the client cannot parse,
    /// a CA file that is not a PEM certificate): a start-up error.
    #[error("{0}")]
    Config(String),
}

impl ClusterError {
    /// Redis could not be reached or did not answer (the relay may work again
    /// later; the request itself was fine).
    pub fn is_unavailable(&self) -> bool {
        matches!(self, ClusterError::Unavailable(_) | ClusterError::Timeout)
    }
    /// JSON-RPC code of a request refused because of it (internal error).
    pub fn jsonrpc_code(&self) -> i64 {
        -32603
    }
    /// HTTP status of a request refused because of it.
    pub fn http_status(&self) -> u16 {
        if matches!(self, ClusterError::TooLarge(_)) {
            413
        } else {
            503
        }
    }
}

pub(crate) fn unavailable(e: redis::RedisError) -> ClusterError {
    if e.is_timeout() {
        ClusterError::Timeout
    } else {
        ClusterError::Unavailable(e.to_string())
    }
}
