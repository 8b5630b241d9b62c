//! Property tests for the codecs that read untrusted bytes: the SSE decoder under
//! any chunking, JSON-RPC classification, and header value encoding. Each
//! property is one a user relies on; "no panic on arbitrary input" is one of
//! them for each codec. The fuzz targets' own checks (`manifold_protocol::fuzzing`)
//! also run here on generated input.

use manifold_protocol::headers::{
    decode_header_value, encode_header_value, header_matches_value, param_headers, HeaderParam,
    ParamKind,
};
use manifold_protocol::jsonrpc::{error_bytes, response_bytes};
use manifold_protocol::sse::{encode_comment, encode_event, SseDecoder, SseError, SseEvent};
use manifold_protocol::{fuzzing, ErrorCode, Incoming, RpcError};
use proptest::prelude::*;
use serde_json::value::RawValue;
use serde_json::{json, Value};

/// Decodes `bytes` fed in the given chunk sizes (cycled).
fn decode_chunked(bytes: &[u8], sizes: &[usize]) -> Result<Vec<SseEvent>, String> {
    let mut d = SseDecoder::new(1 << 20);
    let mut out = Vec::new();
    let mut at = 0;
    let mut i = 0;
    while at < bytes.len() {
        let n = sizes[i % sizes.len()].max(1).min(bytes.len() - at);
        out.extend(d.feed(&bytes[at..at + n]).map_err(|e| e.to_string())?);
        at += n;
        i += 1;
    }
    Ok(out)
}

fn event_text() -> impl Strategy<Value = String> {
    // Any text, line breaks and multi-byte characters included.
    prop::collection::vec(
        prop_oneof![
            Just("\n".to_string()),
            Just("\r\n".to_string()),
            Just("é".to_string()),
            Just("🦀".to_string()),
            "[ -~]{0,8}",
        ],
        0..8,
    )
    .prop_map(|parts| parts.concat())
}

/// JSON-RPC ids as clients send them: integers over the whole i64 and u64
/// range, and any string (quotes, backslashes, controls, non-ASCII).
fn request_id() -> impl Strategy<Value = Value> {
    prop_oneof![
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        Just(Value::from(u64::MAX)),
        Just(Value::from(i64::MIN)),
        any::<String>().prop_map(Value::from),
        "[\"\\\\/\u{0}-\u{1f}a-z]{0,8}".prop_map(Value::from),
    ]
}

fn id_text() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9_-]{1,12}"
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// The same stream gives the same events however it is split, even inside
    /// a multi-byte character or a CRLF.
    #[test]
    fn sse_events_do_not_depend_on_chunk_boundaries(
        events in prop::collection::vec((prop::option::of(id_text()), event_text()), 1..6),
        sizes in prop::collection::vec(1usize..9, 1..6),
    ) {
        let mut bytes = Vec::new();
        for (id, data) in &events {
            bytes.extend_from_slice(&encode_event(id.as_deref(), Some("message"), data));
        }
        let whole = decode_chunked(&bytes, &[bytes.len()]).expect("decodes whole");
        let chunked = decode_chunked(&bytes, &sizes).expect("decodes chunked");
        prop_assert_eq!(&whole, &chunked);
        prop_assert_eq!(whole.len(), events.len());
        for (got, (id, data)) in whole.iter().zip(&events) {
            // A data line break of either kind comes back as \n.
            prop_assert_eq!(&got.data, &data.replace("\r\n", "\n"));
            prop_assert_eq!(&got.id, id);
        }
    }

    /// Arbitrary bytes in arbitrary chunks: events or an error, never a panic,
    /// and never an event larger than the limit.
    #[test]
    fn sse_decoder_survives_arbitrary_bytes(
        bytes in prop::collection::vec(any::<u8>(), 0..512),
        sizes in prop::collection::vec(1usize..64, 1..4),
    ) {
        let mut d = SseDecoder::new(128);
        let mut at = 0;
        let mut i = 0;
        while at < bytes.len() {
            let n = sizes[i % sizes.len()].min(bytes.len() - at);
            match d.feed(&bytes[at..at + n]) {
                Ok(events) => {
                    for e in events {
                        prop_assert!(e.data.len() <= 128);
                    }
                }
                Err(_) => break,
            }
            at += n;
            i += 1;
        }
    }

    /// Any string survives the header encoding, and the encoded form is always
    /// a valid HTTP header value of visible ASCII.
    #[test]
    fn header_values_round_trip(s in any::<String>()) {
        let encoded = encode_header_value(&s);
        prop_assert!(
            encoded.bytes().all(|b| b == b' ' || b == b'\t' || (0x21..=0x7e).contains(&b)),
            "{:?}", encoded
        );
        prop_assert_eq!(decode_header_value(&encoded).expect("decodes"), s);
    }

    /// Decoding what a client sent never panics; what decodes re-encodes to
    /// the same string, and a plain value is sent as itself (the `headers` fuzz
    /// target's checks).
    #[test]
    fn header_decoding_survives_anything(
        s in prop_oneof![any::<String>(), "=\\?base64\\?[A-Za-z0-9+/=]{0,12}\\?=", "[ -~\t]{0,16}"],
    ) {
        fuzzing::headers(s.as_bytes());
    }

    /// A generated request, notification or response is classified as what it
    /// is, with its id, method and members exactly as sent (member order too:
    /// it re-serializes to the same bytes), and a reply carries the id back.
    #[test]
    fn jsonrpc_messages_are_classified_with_their_ids(
        kind in 0u8..4,
        id in request_id(),
        method in "[a-z][a-z/_]{0,19}",
        extra in any::<String>(),
        members in prop::collection::vec(("[a-z]{1,6}", any::<i64>()), 0..4),
    ) {
        let mut msg = serde_json::Map::new();
        msg.insert("jsonrpc".into(), json!("2.0"));
        // Unknown members before and after the envelope, in generated order.
        for (k, v) in &members {
            msg.insert(format!("x-{k}"), json!(v));
        }
        match kind {
            0 => {
                msg.insert("id".into(), id.clone());
                msg.insert("method".into(), json!(method));
                msg.insert("params".into(), json!({"x": extra, "_meta": {"progressToken": id}}));
            }
            1 => {
                msg.insert("method".into(), json!(method));
                msg.insert("x-extra".into(), json!(extra));
            }
            2 => {
                msg.insert("id".into(), id.clone());
                msg.insert("result".into(), json!({"x": extra}));
            }
            _ => {
                msg.insert("id".into(), id.clone());
                msg.insert("error".into(), json!({"code": -1, "message": extra}));
            }
        }
        let bytes = serde_json::to_vec(&msg).expect("json");
        let parsed = Incoming::parse(&bytes);
        let (got_id, whole) = match (kind, &parsed) {
            (0, Ok(Incoming::Request { id, method: m, msg })) => {
                prop_assert_eq!(m, &method);
                (Some(id), msg)
            }
            (1, Ok(Incoming::Notification { method: m, msg })) => {
                prop_assert_eq!(m, &method);
                (None, msg)
            }
            (2 | 3, Ok(Incoming::Response { id, msg })) => (Some(id), msg),
            (k, other) => return Err(TestCaseError::fail(format!("kind {k}: {other:?}"))),
        };
        prop_assert_eq!(serde_json::to_vec(whole).expect("json"), bytes, "lossless");
        if let Some(got) = got_id {
            prop_assert_eq!(got.as_value(), &id);
            let result: Box<RawValue> = serde_json::from_str(r#"{"ok":true}"#).expect("json");
            let err = RpcError::new(ErrorCode::INTERNAL_ERROR, "x");
            for reply in [response_bytes(got, &result), error_bytes(Some(got), &err)] {
                let back: Value = serde_json::from_slice(&reply).expect("reply is JSON");
                prop_assert_eq!(&back["id"], &id, "reply id");
            }
        }
    }

    /// Arbitrary bytes: a message or an error, never a panic, and whatever
    /// classifies keeps its id through a re-serialization and a reply (the
    /// `jsonrpc` fuzz target's checks).
    #[test]
    fn jsonrpc_parsing_survives_arbitrary_bytes(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        fuzzing::jsonrpc(&bytes);
    }

    /// Any JSON value with an envelope around it: classified or refused, with
    /// the fuzz target's checks holding.
    #[test]
    fn jsonrpc_envelopes_of_any_shape(
        id in prop_oneof![request_id(), Just(Value::Null), Just(json!([1])), Just(json!({}))],
        method in prop_oneof![Just(json!("ping")), Just(json!(5)), Just(Value::Null)],
        params in prop_oneof![Just(json!({})), Just(json!([])), Just(json!("p"))],
        mask in 0u8..32,
    ) {
        let mut m = serde_json::Map::new();
        let members = [
            ("jsonrpc", json!("2.0")),
            ("id", id),
            ("method", method),
            ("params", params),
            ("result", json!({})),
        ];
        for (i, (k, v)) in members.into_iter().enumerate() {
            if mask & (1 << i) != 0 {
                m.insert(k.into(), v);
            }
        }
        fuzzing::jsonrpc(&serde_json::to_vec(&Value::Object(m)).expect("json"));
    }

    /// A byte stream made of SSE syntax (fields, comments, every line ending,
    /// a BOM, multi-byte and invalid UTF-8) decodes to the same events, the same
    /// last event id, or the same error, however it is chunked; and every
    /// decoded event re-encodes to itself (the `sse` fuzz target's checks).
    #[test]
    fn sse_outcome_does_not_depend_on_chunking(stream in sse_soup(), seed in any::<u8>()) {
        let mut data = vec![seed];
        data.extend_from_slice(&stream);
        fuzzing::sse(&data);
    }

    /// Event types and ids survive encoding (minus the line breaks and NULs an
    /// SSE field cannot carry); comments between events add no events.
    #[test]
    fn sse_event_fields_round_trip(
        events in prop::collection::vec((prop::option::of(any::<String>()), prop::option::of(any::<String>()), event_text()), 1..5),
        comment in any::<String>(),
    ) {
        let mut bytes = Vec::new();
        for (id, event, data) in &events {
            bytes.extend_from_slice(&encode_comment(&comment));
            bytes.extend_from_slice(&encode_event(id.as_deref(), event.as_deref(), data));
        }
        let got = SseDecoder::new(1 << 20).feed(&bytes).expect("decodes");
        prop_assert_eq!(got.len(), events.len());
        for (g, (id, event, _)) in got.iter().zip(&events) {
            let want_id = id.as_ref().map(|s| s.replace(['\r', '\n', '\0'], ""));
            let want_event = event
                .as_ref()
                .map(|s| s.replace(['\r', '\n'], ""))
                .filter(|e| !e.is_empty());
            prop_assert_eq!(&g.id, &want_id);
            prop_assert_eq!(&g.event, &want_event);
        }
    }

    /// An event over the limit is an error, never truncated or passed on; one
    /// whose whole encoding fits is decoded.
    #[test]
    fn sse_limit_is_enforced(data in "[a-z\n]{0,300}", limit in 16usize..256) {
        let bytes = encode_event(None, None, &data);
        let got = SseDecoder::new(limit).feed(&bytes);
        if data.len() > limit {
            prop_assert_eq!(got, Err(SseError::EventTooLarge { limit }));
        } else if bytes.len() <= limit {
            prop_assert_eq!(got.map(|e| e.len()), Ok(1));
        }
    }

    /// What a client mirrors into `Mcp-Param-*` for an argument of the
    /// annotated kind is a valid header value that the server-side check
    /// accepts against the same body value, at any path depth.
    #[test]
    fn mirrored_arguments_match_on_the_server(
        path in prop::collection::vec("[a-zA-Z_]{1,6}", 1..4),
        value in prop_oneof![
            any::<String>().prop_map(Value::from),
            (-(1i64 << 53) + 1..(1i64 << 53)).prop_map(Value::from),
            any::<bool>().prop_map(Value::from),
        ],
    ) {
        let kind = match &value {
            Value::String(_) => ParamKind::String,
            Value::Number(_) => ParamKind::Integer,
            _ => ParamKind::Boolean,
        };
        let param = HeaderParam { name: "P".into(), path: path.clone(), kind: kind.clone() };
        let mut args = value.clone();
        for key in path.iter().rev() {
            args = json!({ key.clone(): args });
        }
        let headers = param_headers(std::slice::from_ref(&param), Some(&args)).expect("in range");
        prop_assert_eq!(headers.len(), 1);
        let (name, encoded) = &headers[0];
        prop_assert_eq!(name, "Mcp-Param-P");
        prop_assert!(encoded.bytes().all(|b| b == b' ' || b == b'\t' || (0x21..=0x7e).contains(&b)));
        let decoded = decode_header_value(encoded).expect("decodes");
        prop_assert!(header_matches_value(&decoded, &kind, &value));
        // A different body value of the same kind does not match.
        let other = match &value {
            Value::String(s) => Value::from(format!("{s}x")),
            Value::Number(n) => Value::from(n.as_i64().unwrap_or(0) ^ 1),
            Value::Bool(b) => Value::from(!b),
            _ => Value::Null,
        };
        prop_assert!(!header_matches_value(&decoded, &kind, &other));
    }

    /// Integers beyond ±(2^53−1) are refused rather than mirrored inexactly.
    #[test]
    fn unsafe_integers_are_refused(n in prop_oneof![(1i64 << 53)..i64::MAX, i64::MIN..-(1i64 << 53) + 1]) {
        let param = HeaderParam { name: "N".into(), path: vec!["n".into()], kind: ParamKind::Integer };
        let args = json!({"n": n});
        prop_assert!(param_headers(&[param], Some(&args)).is_err());
    }
}

/// Bytes that are mostly SSE syntax, so that generated streams reach every
/// branch of the decoder rather than failing on the first invalid byte.
fn sse_soup() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        Just(b"data:".to_vec()),
        Just(b"data: ".to_vec()),
        Just(b"id: ".to_vec()),
        Just(b"id".to_vec()),
        Just(b"event:".to_vec()),
        Just(b"retry: ".to_vec()),
        Just(b"123".to_vec()),
        Just(b": comment".to_vec()),
        Just(b"\n".to_vec()),
        Just(b"\r".to_vec()),
        Just(b"\r\n".to_vec()),
        Just(b"\n\n".to_vec()),
        Just(b"\xEF\xBB\xBF".to_vec()),
        Just("é🦀".as_bytes().to_vec()),
        Just(b"\0".to_vec()),
        Just(b"\xC3".to_vec()),
        "[ -~]{0,12}".prop_map(String::into_bytes),
    ];
    prop::collection::vec(piece, 0..24).prop_map(|p| p.concat())
}
