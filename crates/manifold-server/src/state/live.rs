//! [`Live`]: the configuration in force and everything built from it, as one
//! value a reload swaps whole.
//!
//! Invariants: built only from a validated configuration; a part whose settings
//! did not change is carried over from the previous `Live` (the same `Arc`), so
//! a reload that does not touch `[auth]` keeps the token cache, one that does
//! not touch `[[rate_limit]]` keeps the buckets, one that does not touch
//! `[[policy]]` keeps the views; upstreams are in name order.
//!
//! Not here: starting or stopping upstreams (`runtime`).

use manifold_catalog::{Glob, ItemFilter};
use manifold_config::GatewayConfig;
use manifold_upstream::Upstream;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

use super::Live;

impl Live {
    /// Everything built from `config`, with `upstreams` (each with its stop
    /// token); what `previous` built from the same settings is kept.
    pub(crate) fn new(
        config: Arc<GatewayConfig>,
        mut upstreams: Vec<(Upstream, CancellationToken)>,
        previous: Option<&Live>,
        stop: &CancellationToken,
    ) -> Live {
        upstreams.sort_by(|a, b| a.0.name().cmp(b.0.name()));
        let same = |f: &dyn Fn(&GatewayConfig) -> bool| previous.filter(|p| f(&p.config));
        let (auth, auth_stop) = match same(&|p| p.auth == config.auth) {
            Some(p) => (p.auth.clone(), p.auth_stop.clone()),
            None => (
                config
                    .auth
                    .clone()
                    .map(|a| Arc::new(manifold_policy::Authenticator::new(a))),
                stop.child_token(),
            ),
        };
        let policy = match same(&|p| p.policy == config.policy) {
            Some(p) => p.policy.clone(),
            None => Arc::new(manifold_policy::Policy::new(&config.policy)),
        };
        let rate_limits = match same(&|p| p.rate_limits == config.rate_limits) {
            Some(p) => p.rate_limits.clone(),
            None => Arc::new(manifold_policy::RateLimits::new(&config.rate_limits)),
        };
        let confirm = match same(&|p| p.confirm == config.confirm) {
            Some(p) => p.confirm.clone(),
            None => Arc::new(manifold_policy::ConfirmRules::new(&config.confirm)),
        };
        let endpoints = match same(&|p| {
            p.endpoints == config.endpoints
                && p.server.path == config.server.path
                && p.server.discovery == config.server.discovery
        }) {
            Some(p) => p.endpoints.clone(),
            None => Arc::new(super::endpoints::Endpoints::new(&config)),
        };
        let by_name: foldhash::HashMap<Arc<str>, Upstream> = upstreams
            .iter()
            .map(|(u, _)| (u.name().clone(), u.clone()))
            .collect();
        let stops = upstreams
            .iter()
            .map(|(u, t)| (u.name().clone(), t.clone()))
            .collect();
        let filters = upstreams
            .iter()
            .map(|(u, _)| (u.name().clone(), Arc::new(item_filter(u.config()))))
            .collect();
        let overrides = upstreams
            .iter()
            .map(|(u, _)| (u.name().clone(), Arc::new(tool_overrides(u.config()))))
            .collect();
        let uris = Arc::new(manifold_catalog::namespace::UriNamespaces::new(
            super::naming::resource_naming(config.naming.resources),
            &config.naming.namespaced_schemes,
            config
                .upstreams
                .iter()
                .map(|u| (u.prefix.clone(), u.name.clone())),
        ));
        Live {
            config,
            uris,
            upstreams: upstreams.into_iter().map(|(u, _)| u).collect(),
            by_name,
            stops,
            filters,
            overrides,
            auth,
            policy,
            rate_limits,
            confirm,
            endpoints,
            auth_stop,
        }
    }
}

/// An upstream's `overrides.<tool>`, as the catalog applies them.
pub fn tool_overrides(u: &manifold_config::UpstreamConfig) -> manifold_catalog::Overrides {
    u.overrides
        .iter()
        .map(|(tool, o)| {
            let o = manifold_catalog::Override {
                name: o.name.clone(),
                description: o.description.clone(),
                pin: o.pin.clone(),
                hide: o.hide.clone(),
            };
            (tool.clone(), o)
        })
        .collect()
}

pub(crate) fn item_filter(u: &manifold_config::UpstreamConfig) -> ItemFilter {
    let rules = |f: &manifold_config::Filter| manifold_catalog::filter::Rules {
        allow: f.allow.iter().map(|g| Glob::new(g)).collect(),
        deny: f.deny.iter().map(|g| Glob::new(g)).collect(),
    };
    ItemFilter {
        tools: rules(&u.tools),
        prompts: rules(&u.prompts),
    }
}
