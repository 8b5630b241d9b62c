//! `[tracing]` and `[audit] otlp` against an OTLP/HTTP receiver started by the
//! test: one call's span tree (the request span continuing the client's
//! `traceparent`, with admission, the upstream call and the audit write under
//! it, named and attributed after the MCP conventions), one trace id from the
//! client through Manifold into real upstreams (HTTP header and `_meta` for the
//! HTTP upstream, `_meta` for the stdio one), and the audit records arriving as
//! log records carrying their chain hashes.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use opentelemetry_proto::tonic::common::v1::KeyValue;
use opentelemetry_proto::tonic::trace::v1::Span;
use parking_lot::Mutex;
use prost::Message;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use super::bin;
use crate::commands::TempDir;
use manifold_testkit::harness::{demo_upstream_bin, stateless_meta, DemoHttp, McpClient};

type Received = Arc<Mutex<Vec<(String, Vec<u8>)>>>;

/// An OTLP/HTTP receiver on 127.0.0.1: keeps every body posted to it. It stops
/// when the runtime it was started on is dropped.
async fn receiver() -> (String, Received) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let got: Received = Arc::default();
    let store = got.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let store = store.clone();
            tokio::spawn(async move {
                let svc = hyper::service::service_fn(
                    move |req: hyper::Request<hyper::body::Incoming>| {
                        let store = store.clone();
                        async move {
                            let path = req.uri().path().to_string();
                            let body = req
                                .into_body()
                                .collect()
                                .await
                                .map(|b| b.to_bytes())
                                .unwrap_or_default();
                            store.lock().push((path, body.to_vec()));
                            let mut r = hyper::Response::new(Full::new(Bytes::new()));
                            r.headers_mut()
                                .insert("content-type", "application/x-protobuf".parse().unwrap());
                            Ok::<_, std::convert::Infallible>(r)
                        }
                    },
                );
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), svc)
                    .await;
            });
        }
    });
    (format!("http://{addr}"), got)
}

fn attr<'a>(attrs: &'a [KeyValue], key: &str) -> Option<&'a AnyValue> {
    attrs
        .iter()
        .find(|a| a.key == key)?
        .value
        .as_ref()?
        .value
        .as_ref()
}

fn attr_str<'a>(attrs: &'a [KeyValue], key: &str) -> Option<&'a str> {
    match attr(attrs, key)? {
        AnyValue::StringValue(s) => Some(s),
        _ => None,
    }
}

fn spans(got: &Received) -> Vec<Span> {
    got.lock()
        .iter()
        .filter(|(p, _)| p == "/v1/traces")
        .filter_map(|(_, b)| ExportTraceServiceRequest::decode(b.as_slice()).ok())
        .flat_map(|r| r.resource_spans)
        .flat_map(|r| r.scope_spans)
        .flat_map(|s| s.spans)
        .collect()
}

#[test]
fn spans_and_audit_records_reach_an_otlp_receiver_with_the_clients_trace() {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let (otlp, got) = rt.block_on(receiver());
    let remote = rt
        .block_on(DemoHttp::spawn_bin(demo_upstream_bin(), &["--trace-tool"]))
        .expect("the HTTP demo upstream");
    let dir = TempDir::new("tracing");
    let audit = dir.path().join("audit.jsonl");
    let cfg = dir.write(
        "gateway.toml",
        &format!(
            "[server]\nlisten = \"127.0.0.1:0\"\n\n\
             [upstreams.remote]\nurl = {:?}\n\n\
             [upstreams.local]\ncommand = \"${{MANIFOLD_SELF}}\"\nargs = [\"demo-upstream\", \"--trace-tool\"]\n\n\
             [tracing]\nendpoint = {otlp:?}\nsample_ratio = 1.0\nresource = {{ \"deployment.environment\" = \"test\" }}\n\n\
             [audit]\npath = {:?}\notlp = true\n",
            remote.url,
            audit.display().to_string()
        ),
    );
    let mut child = Command::new(bin())
        .args(["serve", "--config"])
        .arg(&cfg)
        .env("RUST_LOG", "info")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn manifold");
    let stdout = child.stdout.take().expect("stdout");
    let line = BufReader::new(stdout)
        .lines()
        .map_while(Result::ok)
        .next()
        .expect("a line");
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap_or_else(|| panic!("no URL: {line}"))
        .to_string();

    // The client's trace: one call to each upstream, through the header for
    // one and `_meta` for the other.
    let trace_id = "4bf92f3577b34da6a3ce929d0e0e4736";
    let client_span = "00f067aa0ba902b7";
    let traceparent = format!("00-{trace_id}-{client_span}-01");
    let client = McpClient::new(&url);
    let call = |name: &str, extra_meta: Value| {
        let mut meta = stateless_meta(json!({}));
        if let (Some(m), Some(e)) = (meta.as_object_mut(), extra_meta.as_object()) {
            m.extend(e.clone());
        }
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
               "params": {"name": name, "arguments": {}, "_meta": meta}})
    };
    let (status, remote_reply) = rt
        .block_on(client.send_stateless(
            &call("remote__trace", json!({})),
            &[("traceparent", &traceparent)],
        ))
        .expect("remote call");
    assert_eq!(status, 200, "{remote_reply}");
    let (status, local_reply) = rt
        .block_on(client.send_stateless(
            &call("local__trace", json!({"traceparent": traceparent})),
            &[],
        ))
        .expect("local call");
    assert_eq!(status, 200, "{local_reply}");
    let seen = |reply: &Value| -> Value {
        serde_json::from_str(
            reply["result"]["content"][0]["text"]
                .as_str()
                .unwrap_or("null"),
        )
        .unwrap_or(Value::Null)
    };
    let (remote_seen, local_seen) = (seen(&remote_reply), seen(&local_reply));
    for (what, tp) in [
        ("remote _meta", &remote_seen["traceparent"]),
        ("remote header", &remote_seen["http_traceparent"]),
        ("local _meta", &local_seen["traceparent"]),
    ] {
        let tp = tp.as_str().unwrap_or_else(|| {
            panic!("{what}: no traceparent reached the upstream: {remote_seen} {local_seen}")
        });
        assert_eq!(tp.split('-').nth(1), Some(trace_id), "{what}: {tp}");
        assert_ne!(
            tp.split('-').nth(2),
            Some(client_span),
            "{what}: Manifold's own span is the parent"
        );
    }

    // SIGTERM flushes the exporters.
    Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill");
    manifold_testkit::wait::eventually_blocking(
        "manifold stopped",
        Duration::from_secs(20),
        || Ok(child.try_wait()?),
    )
    .expect("stop");
    // The receiver keeps a body before it answers, and the exporters' flush
    // waits for the answer: once the process has exited, everything is here.
    let all = spans(&got);
    let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
    let request = all
        .iter()
        .find(|s| s.name == "tools/call remote__trace")
        .unwrap_or_else(|| {
            panic!(
                "no request span: {:?}",
                all.iter().map(|s| &s.name).collect::<Vec<_>>()
            )
        });
    assert_eq!(hex(&request.trace_id), trace_id);
    assert_eq!(
        hex(&request.parent_span_id),
        client_span,
        "continues the client's span"
    );
    assert_eq!(
        attr_str(&request.attributes, "mcp.method.name"),
        Some("tools/call")
    );
    assert_eq!(
        attr_str(&request.attributes, "gen_ai.tool.name"),
        Some("remote__trace")
    );
    assert_eq!(
        attr_str(&request.attributes, "gen_ai.operation.name"),
        Some("execute_tool")
    );
    assert_eq!(
        attr_str(&request.attributes, "mcp.protocol.version"),
        Some("2026-07-28")
    );
    let children: Vec<&str> = all
        .iter()
        .filter(|s| s.parent_span_id == request.span_id)
        .map(|s| s.name.as_str())
        .collect();
    for phase in ["admission", "tools/call remote", "audit.write"] {
        assert!(
            children.contains(&phase),
            "{phase} is not under the request span: {children:?}"
        );
    }
    let upstream_call = all
        .iter()
        .find(|s| s.name == "tools/call remote")
        .expect("upstream.call");
    let remote_tp = remote_seen["http_traceparent"].as_str().unwrap_or_default();
    assert_eq!(
        remote_tp.split('-').nth(2),
        Some(hex(&upstream_call.span_id).as_str()),
        "the upstream's parent is the upstream call span"
    );
    let local = all
        .iter()
        .find(|s| s.name == "tools/call local__trace")
        .expect("local request span");
    assert_eq!(
        hex(&local.trace_id),
        trace_id,
        "the `_meta` traceparent is followed too"
    );

    // The audit records, as log records with their chain hashes.
    let hashes: Vec<String> = std::fs::read_to_string(&audit)
        .expect("audit log")
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|v| v["hash"].as_str().map(str::to_string))
        .collect();
    assert!(hashes.len() >= 2, "{hashes:?}");
    let exported: Vec<String> = got
        .lock()
        .iter()
        .filter(|(p, _)| p == "/v1/logs")
        .filter_map(|(_, b)| ExportLogsServiceRequest::decode(b.as_slice()).ok())
        .flat_map(|r| r.resource_logs)
        .flat_map(|r| r.scope_logs)
        .flat_map(|s| s.log_records)
        .filter_map(|r| attr_str(&r.attributes, "manifold.audit.hash").map(str::to_string))
        .collect();
    for h in &hashes {
        assert!(
            exported.contains(h),
            "audit record {h} was not exported: {exported:?}"
        );
    }
    drop(remote);
}
