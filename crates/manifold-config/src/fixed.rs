//! What a running gateway keeps from its start: one row per setting a reload
//! may not change ([`Fixed`]), grouped by section in the order of the file. A
//! reload that changes one is refused, naming the key; a restart takes it.
//!
//! Invariants: settings are compared by value, never by their debug text;
//! every section with a setting taken at start has its rows here.
//!
//! Not here: the settings themselves (each section's module), the reload
//! (manifold-server's `runtime::reload`).

use crate::snapshot::GatewayConfig;

/// A setting a running gateway keeps from its start: a reload that changes it
/// is refused (it names the key), and a restart takes the new value.
struct Fixed {
    /// The key as the file writes it (`server.listen`), or a whole section.
    key: &'static str,
    /// Whether it differs between the configuration in force and a new one.
    changed: fn(&GatewayConfig, &GatewayConfig) -> bool,
}

/// Every section's settings fixed at start, in the order of the file.
const FIXED_AT_START: [&[Fixed]; 11] = [
    SERVER, ADMIN, CLUSTER, TELEMETRY, STDIO, AUDIT, METRICS, LIMITS, INTEGRITY, CODE, DISCOVERY,
];

/// What a reload cannot change in `[discovery]`: the semantic model (loaded,
/// and its vectors computed, at start).
const DISCOVERY: &[Fixed] = &[Fixed {
    key: "discovery.semantic",
    changed: |a, b| a.semantic != b.semantic,
}];

/// What a reload cannot change in `[code]`: the size of the worker pool.
const CODE: &[Fixed] = &[
    Fixed {
        key: "code.workers",
        changed: |a, b| a.code.workers != b.code.workers,
    },
    Fixed {
        key: "code.max_queued",
        changed: |a, b| a.code.max_queued != b.code.max_queued,
    },
];

/// What a reload cannot change in `[server]`.
const SERVER: &[Fixed] = &[
    Fixed {
        key: "server.listen",
        changed: |a, b| a.server.listen != b.server.listen,
    },
    Fixed {
        key: "server.tls",
        changed: |a, b| a.server.tls != b.server.tls,
    },
    Fixed {
        key: "server.request_state_key",
        changed: |a, b| a.server.request_state_key != b.server.request_state_key,
    },
    Fixed {
        key: "server.watch_config",
        changed: |a, b| a.server.watch_config != b.server.watch_config,
    },
];

/// What a reload cannot change in `[admin]`: the admin listener's address.
const ADMIN: &[Fixed] = &[
    Fixed {
        key: "admin.listen",
        changed: |a, b| a.admin.as_ref().map(|a| a.listen) != b.admin.as_ref().map(|a| a.listen),
    },
    Fixed {
        key: "admin.token_file",
        changed: |a, b| {
            a.admin.as_ref().map(|a| &a.token_file) != b.admin.as_ref().map(|a| &a.token_file)
        },
    },
];

/// What a reload cannot change in `[cluster]`: the session keys (sessions
/// sealed under them), the bus and its channel.
const CLUSTER: &[Fixed] = &[Fixed {
    key: "cluster",
    changed: |a, b| a.cluster != b.cluster,
}];

/// What a reload cannot change in `[tracing]`: the exporters are set up at
/// start.
const TELEMETRY: &[Fixed] = &[Fixed {
    key: "tracing",
    changed: |a, b| a.tracing != b.tracing,
}];

/// What a reload cannot change in `[stdio]`.
const STDIO: &[Fixed] = &[Fixed {
    key: "stdio.principal",
    changed: |a, b| a.stdio_principal != b.stdio_principal,
}];

/// What a reload cannot change in `[audit]`: the writer runs from start to
/// shutdown with the settings it started with.
const AUDIT: &[Fixed] = &[Fixed {
    key: "audit",
    changed: |a, b| a.audit != b.audit,
}];

/// What a reload cannot change in `[metrics]`.
const METRICS: &[Fixed] = &[
    Fixed {
        key: "metrics.max_tool_series",
        changed: |a, b| a.max_tool_series != b.max_tool_series,
    },
    Fixed {
        key: "metrics.principal_label",
        changed: |a, b| a.principal_label != b.principal_label,
    },
    Fixed {
        key: "metrics.max_principal_series",
        changed: |a, b| a.max_principal_series != b.max_principal_series,
    },
];

/// What a reload cannot change in `[limits]`.
const LIMITS: &[Fixed] = &[
    // The tables were sized with these.
    Fixed {
        key: "limits.max_sessions",
        changed: |a, b| a.limits.max_sessions != b.limits.max_sessions,
    },
    Fixed {
        key: "limits.max_sessions_per_peer",
        changed: |a, b| a.limits.max_sessions_per_peer != b.limits.max_sessions_per_peer,
    },
    Fixed {
        key: "limits.max_calls_per_session",
        changed: |a, b| a.limits.max_calls_per_session != b.limits.max_calls_per_session,
    },
    Fixed {
        key: "limits.max_listens",
        changed: |a, b| a.limits.max_listens != b.limits.max_listens,
    },
    Fixed {
        key: "limits.held_call_ttl",
        changed: |a, b| a.limits.held_call_ttl != b.limits.held_call_ttl,
    },
    Fixed {
        key: "limits.max_held_calls",
        changed: |a, b| a.limits.max_held_calls != b.limits.max_held_calls,
    },
    Fixed {
        key: "limits.max_held_calls_per_principal",
        changed: |a, b| {
            a.limits.max_held_calls_per_principal != b.limits.max_held_calls_per_principal
        },
    },
    // Taken by an upstream connection when it starts.
    Fixed {
        key: "limits.connect_timeout",
        changed: |a, b| a.limits.connect_timeout != b.limits.connect_timeout,
    },
    Fixed {
        key: "limits.max_message_bytes",
        changed: |a, b| a.limits.max_message_bytes != b.limits.max_message_bytes,
    },
    Fixed {
        key: "limits.max_pending_per_upstream",
        changed: |a, b| a.limits.max_pending_per_upstream != b.limits.max_pending_per_upstream,
    },
    Fixed {
        key: "limits.max_list_items",
        changed: |a, b| a.limits.max_list_items != b.limits.max_list_items,
    },
    Fixed {
        key: "limits.max_list_bytes",
        changed: |a, b| a.limits.max_list_bytes != b.limits.max_list_bytes,
    },
    Fixed {
        key: "limits.max_item_bytes",
        changed: |a, b| a.limits.max_item_bytes != b.limits.max_item_bytes,
    },
];

/// What a reload cannot change in `[integrity]`: the store (the running
/// gateway watches and writes the file it started with; a restart takes a new
/// one).
const INTEGRITY: &[Fixed] = &[Fixed {
    key: "integrity.store",
    changed: |a, b| a.integrity.store != b.integrity.store,
}];

impl GatewayConfig {
    /// The settings `new` changes that a running gateway started with `self`
    /// cannot change: listeners, TLS, the audit writer, metrics label bounds,
    /// the limits its tables were sized with (each section's rows say which).
    pub fn fixed_at_start(&self, new: &GatewayConfig) -> Vec<String> {
        FIXED_AT_START
            .iter()
            .flat_map(|section| section.iter())
            .filter(|f| (f.changed)(self, new))
            .map(|f| f.key.to_string())
            .collect()
    }
}
