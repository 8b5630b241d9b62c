//! `[tracing]`: OpenTelemetry traces over OTLP (and the collector `[audit]
//! otlp` exports audit records to). The file model and its validated form; the
//! exporter itself lives in the binary.
//!
//! Invariants: a validated endpoint is an `http://` or `https://` URL;
//! `sample_ratio` is within 0..=1; resource attribute names are not empty.
//!
//! Not here: spans and attributes (manifold-server), the SDK (the binary).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Default `[tracing] sample_ratio`: every trace a client did not already
/// decide about (a sampled parent is always followed).
pub const DEFAULT_SAMPLE_RATIO: f64 = 1.0;
/// Default `[tracing] service_name` (the `service.name` resource attribute).
pub const DEFAULT_SERVICE_NAME: &str = "manifold";

/// `[tracing]` in the file.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TracingSection {
    /// The collector: `http://collector:4318` for `http/protobuf` (signals go
    /// to `/v1/traces` and `/v1/logs` under it), `http://collector:4317` for
    /// `grpc`.
    pub endpoint: String,
    /// `"http/protobuf"` (default) or `"grpc"`.
    #[serde(default)]
    pub protocol: Option<String>,
    /// Share of new traces kept, 0 to 1 (default 1); a client's sampling
    /// decision in `traceparent` is followed.
    #[serde(default)]
    pub sample_ratio: Option<f64>,
    /// `service.name` (default `manifold`).
    #[serde(default)]
    pub service_name: Option<String>,
    /// More resource attributes (`deployment.environment`, `k8s.pod.name`…).
    #[serde(default)]
    pub resource: BTreeMap<String, String>,
    /// Follow a client's sampling decision (the flag in its `traceparent`);
    /// `false` applies `sample_ratio` to every trace, so an untrusted client
    /// cannot make every one of its requests exported (default true).
    #[serde(default)]
    pub follow_client_sampling: Option<bool>,
}

/// How spans travel to the collector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OtlpProtocol {
    HttpProtobuf,
    Grpc,
}

/// The validated `[tracing]`.
#[derive(Debug, Clone, PartialEq)]
pub struct TracingSettings {
    pub endpoint: String,
    pub protocol: OtlpProtocol,
    pub sample_ratio: f64,
    pub service_name: String,
    pub resource: Vec<(String, String)>,
    pub follow_client_sampling: bool,
}

pub(crate) fn validate(t: &TracingSection) -> Result<TracingSettings, String> {
    let endpoint = t.endpoint.trim().trim_end_matches('/').to_string();
    if !(endpoint.starts_with("http://") || endpoint.starts_with("https://")) {
        return Err(format!(
            "key `tracing.endpoint`: `{}` is not an http:// or https:// URL",
            t.endpoint
        ));
    }
    let protocol = match t.protocol.as_deref().unwrap_or("http/protobuf") {
        "http/protobuf" => OtlpProtocol::HttpProtobuf,
        "grpc" => OtlpProtocol::Grpc,
        other => {
            return Err(format!(
                "key `tracing.protocol`: `{other}` is not \"http/protobuf\" or \"grpc\""
            ))
        }
    };
    let sample_ratio = t.sample_ratio.unwrap_or(DEFAULT_SAMPLE_RATIO);
    if !(0.0..=1.0).contains(&sample_ratio) {
        return Err(format!(
            "key `tracing.sample_ratio`: {sample_ratio} is not between 0 and 1"
        ));
    }
    if let Some(k) = t.resource.keys().find(|k| k.trim().is_empty()) {
        return Err(format!(
            "key `tracing.resource`: an empty attribute name (`{k}`)"
        ));
    }
    Ok(TracingSettings {
        endpoint,
        protocol,
        sample_ratio,
        service_name: t
            .service_name
            .clone()
            .unwrap_or_else(|| DEFAULT_SERVICE_NAME.to_string()),
        resource: t.resource.clone().into_iter().collect(),
        follow_client_sampling: t.follow_client_sampling.unwrap_or(true),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn section(endpoint: &str) -> TracingSection {
        TracingSection {
            endpoint: endpoint.into(),
            protocol: None,
            sample_ratio: None,
            service_name: None,
            resource: BTreeMap::new(),
            follow_client_sampling: None,
        }
    }

    #[test]
    fn defaults_and_errors_name_the_key() {
        let t = validate(&section("http://collector:4318/")).unwrap();
        assert_eq!(t.endpoint, "http://collector:4318");
        assert_eq!(
            (t.protocol, t.sample_ratio),
            (OtlpProtocol::HttpProtobuf, 1.0)
        );
        assert_eq!(t.service_name, "manifold");
        for (s, wanted) in [
            (section("collector:4318"), "key `tracing.endpoint`"),
            (
                TracingSection {
                    protocol: Some("udp".into()),
                    ..section("http://c")
                },
                "key `tracing.protocol`",
            ),
            (
                TracingSection {
                    sample_ratio: Some(1.5),
                    ..section("http://c")
                },
                "key `tracing.sample_ratio`",
            ),
        ] {
            let e = validate(&s).unwrap_err();
            assert!(e.starts_with(wanted), "{e}");
        }
    }
}
