//! URI templates a hostile upstream publishes: parsing and matching arbitrary
//! input never panics (and, by construction, never backtracks: the matcher is
//! linear). Input: a template, a NUL byte, a URI.
#![no_main]
use libfuzzer_sys::fuzz_target;
use manifold_catalog::template::UriTemplate;

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    let (template, uri) = s.split_once('\0').unwrap_or((s, ""));
    if let Ok(t) = UriTemplate::parse(template) {
        let _ = t.matches(uri);
        let _ = t.matches(template);
    }
});
