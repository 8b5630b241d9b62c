//! Header values: any string round-trips through the encoding into visible
//! ASCII; decoding anything a client sends never panics.
#![no_main]
use libfuzzer_sys::fuzz_target;
use manifold_protocol::headers::{decode_header_value, encode_header_value};

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    let _ = decode_header_value(s);
    let encoded = encode_header_value(s);
    assert!(encoded
        .bytes()
        .all(|b| b == b' ' || b == b'\t' || (0x21..=0x7e).contains(&b)));
    assert_eq!(decode_header_value(&encoded).expect("decodes"), s);
});
