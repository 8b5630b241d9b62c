//! Property tests for the codecs that read untrusted bytes: the SSE decoder under
//! any chunking, JSON-RPC classification, and header value encoding. Each
//! property is one a user relies on; "no panic on arbitrary input" is one of
//! them for each codec.

use manifold_protocol::headers::{decode_header_value, encode_header_value};
use manifold_protocol::sse::{encode_event, SseDecoder, SseEvent};
use manifold_protocol::Incoming;
use proptest::prelude::*;
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

    /// Decoding what a client sent never panics.
    #[test]
    fn header_decoding_survives_anything(s in any::<String>()) {
        let _ = decode_header_value(&s);
    }

    /// A generated request, notification or response is classified as what it
    /// is, with its id, method and members exactly as sent.
    #[test]
    fn jsonrpc_messages_are_classified_with_their_ids(
        kind in 0u8..3,
        num in any::<i64>(),
        text in any::<String>(),
        use_text in any::<bool>(),
        method in "[a-z][a-z/_]{0,19}",
        extra in any::<String>(),
    ) {
        let id = if use_text { json!(text) } else { json!(num) };
        let msg = match kind {
            0 => json!({"jsonrpc": "2.0", "id": id, "method": method, "params": {"x": extra}}),
            1 => json!({"jsonrpc": "2.0", "method": method, "x-extra": extra}),
            _ => json!({"jsonrpc": "2.0", "id": id, "result": {"x": extra}}),
        };
        let bytes = serde_json::to_vec(&msg).expect("json");
        match (kind, Incoming::parse(&bytes)) {
            (0, Ok(Incoming::Request { id: got, method: m, msg: whole })) => {
                prop_assert_eq!(got.as_value(), &id);
                prop_assert_eq!(m, method);
                prop_assert_eq!(Value::Object(whole), msg);
            }
            (1, Ok(Incoming::Notification { method: m, msg: whole })) => {
                prop_assert_eq!(m, method);
                prop_assert_eq!(Value::Object(whole), msg);
            }
            (2, Ok(Incoming::Response { id: got, .. })) => prop_assert_eq!(got.as_value(), &id),
            (k, other) => prop_assert!(false, "kind {}: {:?}", k, other),
        }
    }

    /// Arbitrary bytes: a message or an error, never a panic.
    #[test]
    fn jsonrpc_parsing_survives_arbitrary_bytes(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        let _ = Incoming::parse(&bytes);
    }
}
