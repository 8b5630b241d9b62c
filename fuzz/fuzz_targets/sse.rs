//! The SSE decoder on arbitrary bytes split at an arbitrary point: never a
//! panic, never an event over the limit, and the same events (or the same
//! failure) as when fed whole.
#![no_main]
use libfuzzer_sys::fuzz_target;
use manifold_protocol::sse::SseDecoder;

fuzz_target!(|data: &[u8]| {
    if data.is_empty() {
        return;
    }
    let split = usize::from(data[0]) % data.len();
    let body = &data[1..];
    let split = split.min(body.len());
    let whole = SseDecoder::new(256).feed(body);
    let mut d = SseDecoder::new(256);
    let parts = d.feed(&body[..split]).and_then(|mut a| {
        a.extend(d.feed(&body[split..])?);
        Ok(a)
    });
    match (whole, parts) {
        (Ok(a), Ok(b)) => {
            assert_eq!(a, b);
            assert!(a.iter().all(|e| e.data.len() <= 256));
        }
        (Err(_), Err(_)) => {}
        (a, b) => panic!("whole {a:?} vs split {b:?}"),
    }
});
