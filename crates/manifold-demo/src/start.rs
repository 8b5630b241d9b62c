//! Starting a demo server from its configuration ([`DemoServer::new`]): the
//! tool catalogue the configuration asks for (a served catalogue's tools, or
//! the registry's with the synthetic tools, the fault tools with `--faults`
//! and the diagnostic tools their flags switch on), the grandchild process of
//! `--spawn-grandchild`, and the stderr flood of `--misbehave`.
//!
//! Invariants: a diagnostic tool is in the catalogue exactly when its flag is
//! set; the grandchild is started once, here, and never waited for.
//!
//! Not here: the server's state (`server`); this sits above the tool registry
//! (whose handlers take a session), which the server's state must not import.

use std::sync::Arc;

use crate::config::DemoConfig;
use crate::listing::Catalog;
use crate::rogue;
use crate::server::DemoServer;
use crate::tools;
use crate::transport::TransportKind;

impl DemoServer {
    /// A server for `transport` that behaves as `config` says.
    pub fn new(config: DemoConfig, transport: TransportKind) -> Arc<Self> {
        let mut diagnostics = Vec::new();
        if config.env_tool {
            diagnostics.push("env");
        }
        if config.trace_tool {
            diagnostics.push("trace");
        }
        // Not waited for: it is meant to outlive this process unless its process
        // group is stopped with it.
        let grandchild = config
            .spawn_grandchild
            .then(|| std::process::Command::new("sleep").arg("3600").spawn().ok())
            .flatten()
            .map(|c| c.id());
        if grandchild.is_some() {
            diagnostics.push("grandchild");
        }
        if config.slow_read_tool {
            diagnostics.push("slow_read");
        }
        if config.flaky.is_on() || config.slow_read_tool {
            diagnostics.push("calls");
        }
        if config.misbehave.has(rogue::Misbehaviour::BrokenSchema) {
            diagnostics.push("broken_schema");
        }
        if config.misbehave.has(rogue::Misbehaviour::RugPull) {
            diagnostics.push("rug_pull");
        }
        let tools = match &config.catalog {
            Some(served) => Catalog::listing(served.tools().to_vec()),
            None => tools::catalog(config.synthetic_tools, config.faults, &diagnostics),
        };
        Self::assemble(config, transport, tools, grandchild)
    }
}
