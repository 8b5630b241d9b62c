//! The bodies of the fuzz targets for this crate's codecs (`fuzz/fuzz_targets/`),
//! kept here so that the ordinary test suite runs them too: `tests/fuzz_corpus.rs`
//! replays every checked-in seed (`fuzz/corpus/<target>/`) through the same
//! function the fuzzer calls, so a target cannot rot unnoticed when nobody fuzzes.
//!
//! Each function takes arbitrary bytes and checks invariants a user relies on, not
//! only that nothing panics. A broken invariant panics (`assert!`): that is how
//! libFuzzer and the replay test see a bug. Nothing in the gateway calls these
//! functions; they perform no I/O.
//!
//! - [`jsonrpc`]: classification of any body never panics; a message keeps its id
//!   and members, re-serializes losslessly, and a reply carries its id back.
//! - [`sse`]: the decoder gives the same events (or the same error) however the
//!   bytes are chunked, never an event over the limit, and a decoded event
//!   re-encodes to itself.
//! - [`headers`]: any string round-trips through the header value encoding into
//!   visible ASCII; a decodable value re-encodes to itself; a schema's
//!   `x-mcp-header` annotations, mirrored into headers, match the body values.

use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::errors::ErrorCode;
use crate::headers::{
    decode_header_value, encode_header_value, header_matches_value, header_params, param_headers,
    ParamKind,
};
use crate::jsonrpc::{error_bytes, response_bytes, Incoming, MessageError, RequestId};
use crate::sse::{encode_event, SseDecoder, SseError, SseEvent};

/// Target `jsonrpc`: a body as an HTTP POST or an upstream line would carry it.
pub fn jsonrpc(data: &[u8]) {
    let is_json = serde_json::from_slice::<Value>(data).is_ok();
    let msg = match Incoming::parse(data) {
        Ok(msg) => msg,
        Err(e) => {
            // Parse errors are exactly the bodies that are not JSON.
            assert_eq!(matches!(e, MessageError::Parse(_)), !is_json, "{e:?}");
            let code = e.to_rpc_error().code;
            assert!(
                code == ErrorCode::PARSE_ERROR || code == ErrorCode::INVALID_REQUEST,
                "{code:?}"
            );
            if let Some(id) = e.id() {
                assert!(id.as_value().is_string() || id.as_value().is_number());
            }
            return;
        }
    };
    let (kind, id, whole) = classify(&msg);
    // The id is the `id` member exactly; the kind follows from the members.
    assert_eq!(id.map(RequestId::as_value), whole.get("id"));
    assert_eq!(whole.get("jsonrpc").and_then(Value::as_str), Some("2.0"));
    match kind {
        Kind::Request | Kind::Notification => {
            assert_eq!(
                msg.method(),
                whole.get("method").and_then(Value::as_str),
                "method"
            );
        }
        Kind::Response => {
            assert!(whole.contains_key("result") != whole.contains_key("error"));
        }
    }
    // Re-serializing is lossless: it classifies the same way, with the same id
    // and the same bytes again (members in arrival order).
    let again = serde_json::to_vec(whole).expect("a parsed message serializes");
    let msg2 = Incoming::parse(&again).expect("a re-serialized message parses");
    let (kind2, id2, whole2) = classify(&msg2);
    assert_eq!(kind, kind2);
    assert_eq!(id, id2);
    assert_eq!(
        serde_json::to_vec(whole2).expect("serializes"),
        again,
        "stable"
    );
    // A reply carries the request's id back, equal as a JSON value.
    if let Some(id) = id {
        let empty: Box<RawValue> = serde_json::from_str("{}").expect("literal");
        for reply in [
            response_bytes(id, &empty),
            error_bytes(
                Some(id),
                &crate::errors::RpcError::new(ErrorCode::INTERNAL_ERROR, "x"),
            ),
        ] {
            match Incoming::parse(&reply) {
                Ok(Incoming::Response { id: back, .. }) => assert_eq!(&back, id),
                other => panic!("a reply is a response: {other:?}"),
            }
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Request,
    Notification,
    Response,
}

fn classify(msg: &Incoming) -> (Kind, Option<&RequestId>, &Map<String, Value>) {
    match msg {
        Incoming::Request { id, msg, .. } => (Kind::Request, Some(id), msg),
        Incoming::Notification { msg, .. } => (Kind::Notification, None, msg),
        Incoming::Response { id, msg } => (Kind::Response, Some(id), msg),
    }
}

/// The event limit the `sse` target decodes with: small, so the limit is reached.
pub const SSE_LIMIT: usize = 256;

/// Target `sse`: the first byte picks chunk sizes, the rest is the stream.
pub fn sse(data: &[u8]) {
    let Some((&seed, body)) = data.split_first() else {
        return;
    };
    let whole = feed_chunked(body, &[body.len().max(1)]);
    // Chunk sizes 1..=8 in a pattern picked by the seed, then byte at a time.
    let sizes: Vec<usize> = (0..4)
        .map(|i| usize::from((seed >> (2 * i)) & 7) + 1)
        .collect();
    for chunked in [feed_chunked(body, &sizes), feed_chunked(body, &[1])] {
        assert_eq!(whole, chunked, "chunk boundaries changed the outcome");
    }
    let Ok((events, _)) = whole else {
        return;
    };
    for e in &events {
        assert!(e.data.len() <= SSE_LIMIT, "event over the limit");
        // A decoded event re-encodes to itself (`retry` is not encoded).
        let bytes = encode_event(e.id.as_deref(), e.event.as_deref(), &e.data);
        let back = SseDecoder::new(usize::MAX)
            .feed(&bytes)
            .expect("an encoded event decodes");
        let want = SseEvent {
            retry: None,
            ..e.clone()
        };
        assert_eq!(back, vec![want], "re-encoding changed the event");
    }
}

/// Feeds `bytes` in chunks of `sizes` (cycled): the events and the last event
/// id, or the error (which poisons the decoder, so later chunks repeat it).
fn feed_chunked(
    bytes: &[u8],
    sizes: &[usize],
) -> Result<(Vec<SseEvent>, Option<String>), SseError> {
    let mut d = SseDecoder::new(SSE_LIMIT);
    let mut events = Vec::new();
    let mut rest = bytes;
    for &size in sizes.iter().cycle() {
        if rest.is_empty() {
            break;
        }
        let (chunk, tail) = rest.split_at(size.min(rest.len()));
        events.extend(d.feed(chunk)?);
        rest = tail;
    }
    Ok((events, d.last_event_id().map(str::to_owned)))
}

/// Target `headers`: the bytes as a header value (when UTF-8) and as a tool's
/// `inputSchema` (when JSON).
pub fn headers(data: &[u8]) {
    if let Ok(s) = std::str::from_utf8(data) {
        header_value(s);
    }
    if let Ok(schema) = serde_json::from_slice::<Value>(data) {
        schema_annotations(&schema, std::str::from_utf8(data).unwrap_or(""));
    }
}

fn is_header_text(s: &str) -> bool {
    s.bytes()
        .all(|b| b == b' ' || b == b'\t' || (0x21..=0x7e).contains(&b))
}

fn header_value(s: &str) {
    let encoded = encode_header_value(s);
    assert!(is_header_text(&encoded), "not a header value: {encoded:?}");
    assert_eq!(
        decode_header_value(&encoded).as_deref(),
        Ok(s),
        "round trip"
    );
    // What a client sent and we could decode re-encodes to something that
    // decodes to the same string; a plain value travels as itself.
    if let Ok(decoded) = decode_header_value(s) {
        let again = encode_header_value(&decoded);
        assert_eq!(decode_header_value(&again).as_deref(), Ok(decoded.as_str()));
        if !s.starts_with("=?") {
            assert_eq!(decoded, s, "a literal decodes to itself");
            // Tabs are legal inside a received value, but we encode them.
            if !s.contains('\t') {
                assert_eq!(again, s, "a plain value is sent as is");
            }
        }
    }
}

/// Every annotation found is on a reachable, typed property with a unique token
/// name, and a value of its kind placed at its path becomes a header that the
/// server-side check accepts.
fn schema_annotations(schema: &Value, text: &str) {
    let Ok(params) = header_params(schema) else {
        return;
    };
    for (i, p) in params.iter().enumerate() {
        assert!(!p.path.is_empty());
        assert!(!p.name.is_empty());
        assert!(
            params[..i]
                .iter()
                .all(|q| !q.name.eq_ignore_ascii_case(&p.name)),
            "duplicate {}",
            p.name
        );
        let value = match p.kind {
            ParamKind::String => Value::from(text),
            ParamKind::Integer => Value::from(-(text.len() as i64)),
            ParamKind::Boolean => Value::from(text.len() % 2 == 0),
        };
        let mut args = value.clone();
        for key in p.path.iter().rev() {
            let mut m = Map::new();
            m.insert(key.clone(), args);
            args = Value::Object(m);
        }
        let headers =
            param_headers(std::slice::from_ref(p), Some(&args)).expect("a value of its kind");
        assert_eq!(headers.len(), 1);
        let (name, encoded) = &headers[0];
        assert_eq!(name, &p.header_name());
        assert!(is_header_text(encoded));
        let decoded = decode_header_value(encoded).expect("our encoding decodes");
        assert!(
            header_matches_value(&decoded, &p.kind, &value),
            "{decoded:?} vs {value}"
        );
    }
}
