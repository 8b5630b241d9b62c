//! Canonical JSON (the input of every audit digest and of the hash chain): for
//! any JSON value, the canonical bytes parse back to a value with the same
//! canonical bytes, so the verifier recomputes exactly what the writer sealed.
#![no_main]
use libfuzzer_sys::fuzz_target;
use manifold_audit::canonical::canonical_json;

fuzz_target!(|data: &[u8]| {
    let Ok(v) = serde_json::from_slice::<serde_json::Value>(data) else {
        return;
    };
    let a = canonical_json(&v);
    let back: serde_json::Value = serde_json::from_slice(&a).expect("canonical JSON parses");
    assert_eq!(canonical_json(&back), a);
});
