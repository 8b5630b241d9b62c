//! What an upstream (and each member of its pool) reports about itself: its
//! [`State`] and [`UpstreamStatus`], as `/readyz`, `/upstreams` and `manifold
//! check` show them.
//!
//! Not here: who changes them (`upstream`), how a pool's is made of its
//! members' (`upstream`, `pool`).

use std::time::Duration;

use crate::facts::ServerFacts;

/// The state an upstream is in, as `/readyz` and `manifold check` report it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    Starting,
    Ready,
    Down,
    /// Its credentials need a person: `manifold login <name>`.
    NeedsLogin,
    Stopped,
}

impl State {
    pub fn as_str(self) -> &'static str {
        match self {
            State::Starting => "starting",
            State::Ready => "ready",
            State::Down => "down",
            State::NeedsLogin => "needs_login",
            State::Stopped => "stopped",
        }
    }
}

#[derive(Debug, Clone)]
pub struct UpstreamStatus {
    pub state: State,
    pub last_error: Option<String>,
    pub restarts: u64,
    pub last_exit_code: Option<i32>,
    pub facts: Option<ServerFacts>,
    /// How long the current lists are kept before a refetch: a 2026-07-28 upstream's
    /// shortest list `ttlMs` (at least `MIN_LIST_TTL`). `None`: until a
    /// `list_changed` (session-era upstreams, and stateless ones that gave no `ttlMs`).
    pub list_ttl: Option<Duration>,
    /// Where Manifold's own stateful requests (resource subscriptions, the log
    /// level) go while it is ready: when this changes they are made again.
    pub holder: Option<Holder>,
    /// Connections made so far, by all its members (it changes when any
    /// member reconnects).
    pub connections: u64,
}

/// The member holding Manifold's stateful requests, and which of its
/// connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Holder {
    pub member: usize,
    pub connection: u64,
}

/// The status before anything happened.
pub(crate) fn starting() -> UpstreamStatus {
    UpstreamStatus {
        state: State::Starting,
        last_error: None,
        restarts: 0,
        last_exit_code: None,
        facts: None,
        list_ttl: None,
        holder: None,
        connections: 0,
    }
}
