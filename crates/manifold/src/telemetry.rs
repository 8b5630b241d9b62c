//! OpenTelemetry for the binary (`[tracing]`): the OTLP span exporter behind a
//! `tracing-opentelemetry` layer, the W3C trace-context propagator, sampling
//! (`sample_ratio`, following a client's decision), resource attributes, and,
//! with `[audit] otlp`, an OTLP log exporter the audit writer copies each
//! record to (body: the line; attributes: its hash).
//!
//! `serve` and `stdio` set logging up once the configuration is read
//! ([`defer_logging`], then [`init_logging`] with the layer), because the
//! layer must be in the subscriber from the start (a reloadable layer would
//! hide it from the spans' context lookups). Log lines carry `trace_id`.
//!
//! Invariants: exporting never blocks a request (batching processors on the
//! tokio runtime, bounded queues); [`Telemetry::shutdown`] flushes what is
//! queued, bounded by the exporter timeout.
//!
//! Not here: what spans exist and their attributes (manifold-server).

use anyhow::Context;
use manifold_config::telemetry::{OtlpProtocol, TracingSettings};
use opentelemetry::logs::{AnyValue, LogRecord as _, Logger as _, LoggerProvider as _, Severity};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry::KeyValue;
use opentelemetry_otlp::{Protocol, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::logs::SdkLoggerProvider;
use opentelemetry_sdk::trace::{Sampler, SdkTracerProvider};
use opentelemetry_sdk::Resource;
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use tracing_subscriber::layer::Layered;
use tracing_subscriber::{EnvFilter, Registry};

/// How long one export may take before it is abandoned.
pub const EXPORT_TIMEOUT: Duration = Duration::from_secs(10);

/// What a binary built without the `otlp-grpc` feature says of `protocol = "grpc"`.
#[cfg(not(feature = "otlp-grpc"))]
const NO_GRPC: &str = "[tracing] protocol = \"grpc\": this binary was built without the gRPC \
     exporter (cargo feature `otlp-grpc`, on by default); use protocol = \"http/protobuf\" \
     or a build with the feature";

/// The subscriber below the OpenTelemetry layer.
pub type Base = Layered<EnvFilter, Registry>;
/// The layer that turns `tracing` spans into OpenTelemetry spans.
pub type OtelLayer =
    tracing_opentelemetry::OpenTelemetryLayer<Base, opentelemetry_sdk::trace::SdkTracer>;

/// How logs are written: JSON or text, and the level without `RUST_LOG`.
#[derive(Debug, Clone, Copy)]
pub struct LogSetup {
    pub json: bool,
    pub default_level: &'static str,
}

static DEFERRED: OnceLock<LogSetup> = OnceLock::new();

/// Remembers the setup for [`init_deferred`].
pub fn defer_logging(setup: LogSetup) {
    let _ = DEFERRED.set(setup);
}

/// Sets logging up as deferred by `main`, with the OpenTelemetry layer if any.
pub fn init_deferred(otel: Option<OtelLayer>) {
    if let Some(setup) = DEFERRED.get() {
        init_logging(*setup, otel);
    }
}

/// The subscriber: the level filter, the OpenTelemetry layer (if any), and the
/// log lines on stderr.
pub fn init_logging(setup: LogSetup, otel: Option<OtelLayer>) {
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    use tracing_subscriber::Layer;
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(setup.default_level));
    let fmt = tracing_subscriber::fmt::layer().with_writer(std::io::stderr);
    let fmt = if setup.json {
        fmt.json()
            .flatten_event(true)
            .with_current_span(true)
            .boxed()
    } else {
        fmt.boxed()
    };
    let _ = tracing_subscriber::registry()
        .with(filter)
        .with(otel)
        .with(fmt)
        .try_init();
}

/// The running exporters.
pub struct Telemetry {
    traces: SdkTracerProvider,
    logs: Option<SdkLoggerProvider>,
}

/// Starts exporting per `[tracing]` (and `[audit] otlp`). Needs the tokio
/// runtime.
pub fn start(
    settings: &TracingSettings,
    audit_otlp: bool,
) -> anyhow::Result<(Telemetry, OtelLayer)> {
    let mut attributes = vec![KeyValue::new(
        "service.version",
        env!("CARGO_PKG_VERSION").to_string(),
    )];
    attributes.extend(
        settings
            .resource
            .iter()
            .map(|(k, v)| KeyValue::new(k.clone(), v.clone())),
    );
    let resource = Resource::builder()
        .with_service_name(settings.service_name.clone())
        .with_attributes(attributes)
        .build();
    let spans = match settings.protocol {
        OtlpProtocol::HttpProtobuf => opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_http_client(http_client())
            .with_protocol(Protocol::HttpBinary)
            .with_endpoint(format!("{}/v1/traces", settings.endpoint))
            .with_timeout(EXPORT_TIMEOUT)
            .build(),
        #[cfg(feature = "otlp-grpc")]
        OtlpProtocol::Grpc => opentelemetry_otlp::SpanExporter::builder()
            .with_tonic()
            .with_endpoint(settings.endpoint.clone())
            .with_timeout(EXPORT_TIMEOUT)
            .build(),
        #[cfg(not(feature = "otlp-grpc"))]
        OtlpProtocol::Grpc => anyhow::bail!(NO_GRPC),
    }
    .context("[tracing]: the OTLP span exporter")?;
    let processor =
        opentelemetry_sdk::trace::span_processor_with_async_runtime::BatchSpanProcessor::builder(
            spans,
            opentelemetry_sdk::runtime::Tokio,
        )
        .build();
    let traces = SdkTracerProvider::builder()
        .with_span_processor(processor)
        .with_sampler({
            let ratio = Sampler::TraceIdRatioBased(settings.sample_ratio);
            if settings.follow_client_sampling {
                Sampler::ParentBased(Box::new(ratio))
            } else {
                ratio
            }
        })
        .with_resource(resource.clone())
        .build();
    opentelemetry::global::set_text_map_propagator(
        opentelemetry_sdk::propagation::TraceContextPropagator::new(),
    );
    let layer = tracing_opentelemetry::layer().with_tracer(traces.tracer("manifold"));
    let logs = if audit_otlp {
        let exporter = match settings.protocol {
            OtlpProtocol::HttpProtobuf => opentelemetry_otlp::LogExporter::builder()
                .with_http()
                .with_http_client(http_client())
                .with_protocol(Protocol::HttpBinary)
                .with_endpoint(format!("{}/v1/logs", settings.endpoint))
                .with_timeout(EXPORT_TIMEOUT)
                .build(),
            #[cfg(feature = "otlp-grpc")]
            OtlpProtocol::Grpc => opentelemetry_otlp::LogExporter::builder()
                .with_tonic()
                .with_endpoint(settings.endpoint.clone())
                .with_timeout(EXPORT_TIMEOUT)
                .build(),
            #[cfg(not(feature = "otlp-grpc"))]
            OtlpProtocol::Grpc => anyhow::bail!(NO_GRPC),
        }
        .context("[audit] otlp: the OTLP log exporter")?;
        let processor =
            opentelemetry_sdk::logs::log_processor_with_async_runtime::BatchLogProcessor::builder(
                exporter,
                opentelemetry_sdk::runtime::Tokio,
            )
            .build();
        Some(
            SdkLoggerProvider::builder()
                .with_log_processor(processor)
                .with_resource(resource)
                .build(),
        )
    } else {
        None
    };
    Ok((Telemetry { traces, logs }, layer))
}

/// HTTP(S) to the collector, with the web's root certificates (the shared
/// bounded client's connector: connecting is bounded by the export timeout).
fn http_client() -> opentelemetry_http::hyper::HyperClient<
    hyper_rustls::HttpsConnector<hyper_util::client::legacy::connect::HttpConnector>,
> {
    let options = manifold_foundation::http::Options::new(EXPORT_TIMEOUT);
    let https = manifold_foundation::http::connector(
        hyper_util::client::legacy::connect::dns::GaiResolver::new(),
        &options,
    );
    opentelemetry_http::hyper::HyperClient::new(https, EXPORT_TIMEOUT, None)
}

/// Audit lines as OTLP log records (`[audit] otlp`).
struct AuditExport {
    logger: opentelemetry_sdk::logs::SdkLogger,
}

impl manifold_audit::Export for AuditExport {
    fn export(&self, line: &[u8], hash: &str) {
        let mut record = self.logger.create_log_record();
        record.set_event_name("manifold.audit");
        record.set_severity_number(Severity::Info);
        record.set_severity_text("INFO");
        record.set_body(AnyValue::from(String::from_utf8_lossy(line).into_owned()));
        record.add_attribute("manifold.audit.hash", hash.to_string());
        self.logger.emit(record);
    }
}

impl Telemetry {
    /// The audit writer's export, when `[audit] otlp` is on.
    pub fn audit_export(&self) -> Option<Arc<dyn manifold_audit::Export>> {
        let logs = self.logs.as_ref()?;
        Some(Arc::new(AuditExport {
            logger: logs.logger("manifold.audit"),
        }))
    }

    /// Flushes and stops the exporters.
    pub fn shutdown(self) {
        if let Err(e) = self.traces.shutdown() {
            tracing::warn!(error = %e, "flushing spans at shutdown");
        }
        if let Some(logs) = self.logs {
            if let Err(e) = logs.shutdown() {
                tracing::warn!(error = %e, "flushing audit log records at shutdown");
            }
        }
    }
}
