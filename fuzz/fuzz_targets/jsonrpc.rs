//! JSON-RPC classification of arbitrary bodies: never a panic; a request or
//! notification keeps its method, and every message re-serializes to JSON that
//! classifies the same way.
#![no_main]
use libfuzzer_sys::fuzz_target;
use manifold_protocol::Incoming;

fuzz_target!(|data: &[u8]| {
    let Ok(msg) = Incoming::parse(data) else {
        return;
    };
    let (kind, whole) = match &msg {
        Incoming::Request { msg, .. } => (0, msg),
        Incoming::Notification { msg, .. } => (1, msg),
        Incoming::Response { msg, .. } => (2, msg),
    };
    let again = serde_json::to_vec(whole).expect("serializes");
    let same = match Incoming::parse(&again).expect("still a message") {
        Incoming::Request { .. } => 0,
        Incoming::Notification { .. } => 1,
        Incoming::Response { .. } => 2,
    };
    assert_eq!(kind, same);
});
