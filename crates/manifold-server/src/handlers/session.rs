//! Session-era operations that are not JSON-RPC requests: opening the session's
//! stream for notifications outside any request (HTTP GET), and ending the session
//! (HTTP DELETE).
//!
//! Not here: finding the session (the admit phase).

use std::sync::Arc;

use crate::reply::Reply;
use crate::state::sessions::ClientSession;
use crate::state::{Gateway, SessionEnd};

/// The session's stream: list changes, resource updates, log messages.
pub(crate) fn open_stream(gw: &Gateway, session: &ClientSession) -> Reply {
    Reply::Stream(session.open_stream(gw.cfg().limits.stream_queue))
}

/// Ends the session on the client's request.
pub(crate) fn end(gw: &Arc<Gateway>, session: &ClientSession) -> Reply {
    gw.end_session(&session.id, SessionEnd::Deleted);
    Reply::Ended
}
