use super::*;

fn ev(id: Option<&str>, event: Option<&str>, data: &str) -> SseEvent {
    SseEvent {
        id: id.map(str::to_owned),
        event: event.map(str::to_owned),
        data: data.to_owned(),
        retry: None,
    }
}

fn decode_all(bytes: &[u8]) -> Result<Vec<SseEvent>, SseError> {
    SseDecoder::new(DEFAULT_MAX_EVENT_BYTES).feed(bytes)
}

fn decode_split(bytes: &[u8], at: &[usize]) -> Result<Vec<SseEvent>, SseError> {
    let mut decoder = SseDecoder::default();
    let mut events = Vec::new();
    let mut start = 0;
    for &end in at.iter().chain(std::iter::once(&bytes.len())) {
        events.extend(decoder.feed(&bytes[start..end])?);
        start = end;
    }
    Ok(events)
}

const STREAM: &[u8] = b"\xEF\xBB\xBF: hello\r\n\
id: 1\r\n\
event: message\r\n\
data: {\"a\":1}\r\n\
\r\n\
id: 2\n\
data:\n\
\n\
data: line one\r\
data:line two\r\
data\r\
\r\
event: custom\n\
data: caf\xC3\xA9 \xE2\x9C\x93\n\
retry: 1500\n\
\n\
: trailing comment\n\
\n";

fn stream_events() -> Vec<SseEvent> {
    vec![
        ev(Some("1"), Some("message"), "{\"a\":1}"),
        ev(Some("2"), None, ""),
        ev(None, None, "line one\nline two\n"),
        SseEvent {
            retry: Some(1500),
            ..ev(None, Some("custom"), "café ✓")
        },
    ]
}

#[test]
fn decodes_whole_stream() {
    assert_eq!(decode_all(STREAM), Ok(stream_events()));
}

#[test]
fn same_events_at_every_chunk_boundary() {
    for split in 0..=STREAM.len() {
        assert_eq!(
            decode_split(STREAM, &[split]),
            Ok(stream_events()),
            "split at {split}"
        );
    }
    for first in 0..=STREAM.len() {
        for second in first..=STREAM.len() {
            assert_eq!(
                decode_split(STREAM, &[first, second]),
                Ok(stream_events()),
                "split at {first} and {second}"
            );
        }
    }
}

#[test]
fn same_events_one_byte_at_a_time() {
    let mut decoder = SseDecoder::default();
    let mut events = Vec::new();
    for byte in STREAM {
        assert_eq!(decoder.feed(&[]), Ok(vec![]));
        events.extend(
            decoder
                .feed(std::slice::from_ref(byte))
                .expect("valid stream"),
        );
    }
    assert_eq!(events, stream_events());
    assert_eq!(decoder.last_event_id(), Some("2"));
}

#[test]
fn crlf_split_across_chunks_counts_once() {
    let mut decoder = SseDecoder::default();
    assert_eq!(decoder.feed(b"data: a\r"), Ok(vec![]));
    // The LF completes the CRLF; it must not be read as a blank line.
    assert_eq!(decoder.feed(b"\n"), Ok(vec![]));
    assert_eq!(decoder.feed(b"data: b\r"), Ok(vec![]));
    assert_eq!(decoder.feed(b""), Ok(vec![]));
    assert_eq!(decoder.feed(b"\n\r"), Ok(vec![ev(None, None, "a\nb")]));
    // A CR followed by CR is two line ends.
    assert_eq!(decoder.feed(b"data: c\r"), Ok(vec![]));
    assert_eq!(decoder.feed(b"\r"), Ok(vec![ev(None, None, "c")]));
}

#[test]
fn multi_line_data_and_field_parsing() {
    let events = decode_all(b"data:  two spaces\ndata:no space\ndata\ndata: \nfoo: bar\nid\n\n");
    assert_eq!(
        events,
        Ok(vec![ev(Some(""), None, " two spaces\nno space\n\n")])
    );
}

#[test]
fn comments_and_unknown_fields_alone_do_not_dispatch() {
    assert_eq!(
        decode_all(b": keep-alive\n\n:\n\nfoo: bar\n\n\n\n"),
        Ok(vec![])
    );
    assert_eq!(
        decode_all(b"data: x\n: mid-event comment\n\n"),
        Ok(vec![ev(None, None, "x")])
    );
}

#[test]
fn priming_event_is_dispatched() {
    let mut decoder = SseDecoder::default();
    assert_eq!(
        decoder.feed(b"id: prime-1\ndata:\n\n"),
        Ok(vec![ev(Some("prime-1"), None, "")])
    );
    assert_eq!(decoder.last_event_id(), Some("prime-1"));
    assert_eq!(
        decoder.feed(b"id: prime-2\n\n"),
        Ok(vec![ev(Some("prime-2"), None, "")])
    );
}

#[test]
fn last_event_id_persists_and_resets() {
    let mut decoder = SseDecoder::default();
    assert_eq!(decoder.last_event_id(), None);
    decoder
        .feed(b"id: 7\ndata: a\n\ndata: b\n\n")
        .expect("valid");
    assert_eq!(decoder.last_event_id(), Some("7"));
    // An id containing NUL is ignored entirely.
    assert_eq!(
        decoder.feed(b"id: x\0y\ndata: c\n\n"),
        Ok(vec![ev(None, None, "c")])
    );
    assert_eq!(decoder.last_event_id(), Some("7"));
    assert_eq!(
        decoder.feed(b"id:\ndata: d\n\n"),
        Ok(vec![ev(Some(""), None, "d")])
    );
    assert_eq!(decoder.last_event_id(), None);
}

#[test]
fn retry_parsing() {
    let retry = |s: &[u8]| -> Vec<Option<u64>> {
        decode_all(s)
            .expect("valid")
            .into_iter()
            .map(|e| e.retry)
            .collect()
    };
    assert_eq!(retry(b"retry: 3000\n\n"), vec![Some(3000)]);
    assert_eq!(retry(b"retry:0\ndata: x\n\n"), vec![Some(0)]);
    // Invalid values are ignored (and alone do not dispatch).
    assert_eq!(
        retry(b"retry: 3s\n\nretry: -1\n\nretry:\n\nretry:  5\n\n"),
        vec![]
    );
    assert_eq!(retry(b"retry: 1.5\ndata: x\n\n"), vec![None]);
    assert_eq!(
        retry(b"retry: 99999999999999999999999\ndata: x\n\n"),
        vec![None]
    );
}

#[test]
fn bom_only_skipped_at_stream_start() {
    assert_eq!(
        decode_all(b"\xEF\xBB\xBFdata: a\n\n"),
        Ok(vec![ev(None, None, "a")])
    );
    assert_eq!(
        decode_split(b"\xEF\xBB\xBFdata: a\n\n", &[1, 2]),
        Ok(vec![ev(None, None, "a")])
    );
    // A second BOM (or one later in the stream) is part of the field name.
    assert_eq!(
        decode_all(b"\xEF\xBB\xBF\xEF\xBB\xBFdata: a\n\n"),
        Ok(vec![])
    );
    assert_eq!(
        decode_all(b"data: a\n\n\xEF\xBB\xBFdata: b\n\n"),
        Ok(vec![ev(None, None, "a")])
    );
}

#[test]
fn event_type_empty_means_default() {
    assert_eq!(
        decode_all(b"event:\ndata: x\n\n"),
        Ok(vec![ev(None, None, "x")])
    );
    assert_eq!(
        decode_all(b"event: a\nevent: b\ndata: x\n\n"),
        Ok(vec![ev(None, Some("b"), "x")])
    );
}

#[test]
fn unterminated_event_is_not_dispatched() {
    let mut decoder = SseDecoder::default();
    assert_eq!(decoder.feed(b"data: partial\n"), Ok(vec![]));
    assert_eq!(decoder.feed(b"data: more"), Ok(vec![]));
}

#[test]
fn limit_exceeded_is_an_error_and_poisons() {
    let limit = SseError::EventTooLarge { limit: 16 };
    // One long line, fed in pieces.
    let mut decoder = SseDecoder::new(16);
    assert_eq!(decoder.feed(b"data: 0123456"), Ok(vec![]));
    assert_eq!(decoder.feed(b"789abcdef"), Err(limit.clone()));
    assert_eq!(decoder.feed(b"\n\n"), Err(limit.clone()));
    // Many short data lines.
    let mut decoder = SseDecoder::new(16);
    assert_eq!(
        decoder.feed(b"data: 0123\ndata: 4567\ndata: 89ab\n"),
        Err(limit.clone())
    );
    // A long comment line counts too.
    assert_eq!(SseDecoder::new(16).feed(&[b':'; 17]), Err(limit.clone()));
    // The budget is per event: many events of the limit's size are fine.
    let mut decoder = SseDecoder::new(16);
    for _ in 0..100 {
        assert_eq!(
            decoder.feed(b"data: 0123456789\n\n"),
            Ok(vec![ev(None, None, "0123456789")])
        );
    }
    assert_eq!(
        SseDecoder::new(0).feed(b"x"),
        Err(SseError::EventTooLarge { limit: 0 })
    );
}

#[test]
fn invalid_utf8_is_an_error() {
    let mut decoder = SseDecoder::default();
    assert_eq!(decoder.feed(b"data: \xC3\n\n"), Err(SseError::InvalidUtf8));
    assert_eq!(decoder.feed(b"data: ok\n\n"), Err(SseError::InvalidUtf8));
    // A multi-byte char split across chunks is fine.
    assert_eq!(
        decode_split("data: é\n\n".as_bytes(), &[7]),
        Ok(vec![ev(None, None, "é")])
    );
}

#[test]
fn encode_event_format() {
    assert_eq!(
        encode_event(Some("42"), Some("message"), "{\"x\":1}"),
        Bytes::from_static(b"id: 42\nevent: message\ndata: {\"x\":1}\n\n")
    );
    assert_eq!(
        encode_event(None, None, "a\nb"),
        Bytes::from_static(b"data: a\ndata: b\n\n")
    );
    assert_eq!(
        encode_event(Some("p"), None, ""),
        Bytes::from_static(b"id: p\ndata:\n\n")
    );
    assert_eq!(
        encode_event(Some("a\nb\0"), Some("x\ry"), "z"),
        Bytes::from_static(b"id: ab\nevent: xy\ndata: z\n\n")
    );
}

#[test]
fn encode_comment_format() {
    assert_eq!(encode_comment("ping"), Bytes::from_static(b": ping\n\n"));
    assert_eq!(encode_comment("a\nb"), Bytes::from_static(b": a\n: b\n\n"));
    assert_eq!(decode_all(&encode_comment("a\r\nb")), Ok(vec![]));
}

#[test]
fn encode_decode_round_trip() {
    let cases: &[(Option<&str>, Option<&str>, &str)] = &[
        (Some("1"), Some("message"), "single"),
        (None, None, "multi\nline\n\ndata\n"),
        (Some("evt-2"), Some("custom"), " leading space"),
        (Some("3"), None, ""),
        (None, Some("e"), "\n"),
        (None, None, "data: looks like a field\n: and a comment"),
        (None, None, "unicode ✓ 世界"),
    ];
    let mut wire = Vec::new();
    for (id, event, data) in cases {
        wire.extend_from_slice(&encode_event(*id, *event, data));
        wire.extend_from_slice(&encode_comment("keep-alive"));
    }
    let expected: Vec<SseEvent> = cases
        .iter()
        .map(|(id, event, data)| ev(*id, *event, data))
        .collect();
    assert_eq!(decode_all(&wire), Ok(expected.clone()));
    for split in 0..=wire.len() {
        assert_eq!(decode_split(&wire, &[split]), Ok(expected.clone()));
    }
    // CR and CRLF in data come back as LF.
    assert_eq!(
        decode_all(&encode_event(None, None, "a\r\nb\rc")),
        Ok(vec![ev(None, None, "a\nb\nc")])
    );
}
