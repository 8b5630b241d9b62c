//! Server-wide state ([`DemoServer`]): the configuration, the tool catalogue,
//! the event channel for messages tied to no request (`list_changed`,
//! `resources/updated`), and what tools and resources record across sessions
//! (the log level, subscriptions, tasks, arrivals).
//!
//! Invariants: the tool catalogue is server-wide (shared by all HTTP
//! sessions), so `notifications/tools/list_changed` goes out on the event
//! channel rather than on a request's own stream; nothing here holds a lock
//! across an `.await`.
//!
//! Not here: building a server from its configuration (`DemoServer::new`, in
//! `start`: it reads the tool registry, whose handlers take a session, so it
//! sits above both), per-connection state and opening it
//! (`DemoServer::new_session`, in `session`).

use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;

use serde_json::{json, Value};
use tokio::sync::broadcast;

use crate::config::DemoConfig;
use crate::jsonrpc::notification;
use crate::listing::Catalog;
use crate::transport::TransportKind;
use crate::{flaky, modern_tasks};

/// Server-wide state: configuration, the tool catalog and the event channel.
pub struct DemoServer {
    pub(crate) config: DemoConfig,
    transport: TransportKind,
    pub(crate) tools: Catalog,
    /// Messages not tied to any request (tools/list_changed). Transports
    /// forward them: stdout for stdio, each session's GET stream for HTTP.
    events: broadcast::Sender<Value>,
    /// The last `logging/setLevel` (the `log_level` tool reports it).
    pub(crate) log_level: Mutex<Option<String>>,
    /// URIs with a `resources/subscribe` in force (the `touch` tool checks it).
    pub(crate) subscribed: Mutex<std::collections::HashSet<String>>,
    /// URIs in the `resourceSubscriptions` of open `subscriptions/listen`
    /// streams (`--modern`), counted per stream.
    pub(crate) watched: Mutex<HashMap<String, usize>>,
    /// Tasks (`--modern --tasks`).
    pub(crate) task_store: Arc<modern_tasks::Store>,
    /// The pid of the process started at launch (`--spawn-grandchild`).
    pub(crate) grandchild: Option<u32>,
    /// `tools/call`s that arrived, by tool (the `calls` tool reports them).
    pub(crate) arrivals: flaky::Arrivals,
    /// `slow_read` calls that began: each result carries its number.
    pub(crate) slow_reads: std::sync::atomic::AtomicU64,
}

impl DemoServer {
    /// A server with this configuration and tool catalogue; `grandchild` is
    /// the pid of the process started at launch (`--spawn-grandchild`).
    pub(crate) fn assemble(
        config: DemoConfig,
        transport: TransportKind,
        tools: Catalog,
        grandchild: Option<u32>,
    ) -> Arc<Self> {
        let (events, _) = broadcast::channel(64);
        Arc::new(Self {
            grandchild,
            arrivals: Default::default(),
            slow_reads: Default::default(),
            tools,
            config,
            transport,
            events,
            log_level: Mutex::new(None),
            subscribed: Mutex::new(Default::default()),
            watched: Mutex::new(Default::default()),
            task_store: Default::default(),
        })
    }

    pub fn config(&self) -> &DemoConfig {
        &self.config
    }

    pub fn transport(&self) -> TransportKind {
        self.transport
    }

    /// Subscribe to server-wide notifications sent from now on.
    pub fn subscribe_events(&self) -> broadcast::Receiver<Value> {
        self.events.subscribe()
    }

    /// Send a server-wide notification; dropped when nobody listens (the
    /// spec lets a server skip notifications it has no stream for).
    pub(crate) fn broadcast(&self, message: Value) {
        let _ = self.events.send(message);
    }

    /// Adds the tool `name` and announces `list_changed` to every listener;
    /// false (and nothing sent) when the name is taken.
    pub fn add_tool_and_announce(&self, name: &str) -> bool {
        let added = self.tools.add_dynamic(name);
        if added {
            self.broadcast(notification("notifications/tools/list_changed", json!({})));
        }
        added
    }
}
