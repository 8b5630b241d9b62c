//! Resource URIs any client sends, canonicalized before resource rules match
//! them: never a panic, and the canonical form is a fixed point (what the
//! rules matched is what a second pass, and the upstream, would see).
#![no_main]
use libfuzzer_sys::fuzz_target;
use manifold_catalog::uri::{canonical, canonical_pattern};

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(once) = canonical(s) {
        assert_eq!(canonical(&once).as_deref(), Ok(once.as_str()), "{s:?}");
        assert_eq!(canonical_pattern(&once), once, "{s:?}");
    }
    let _ = canonical_pattern(s);
});
