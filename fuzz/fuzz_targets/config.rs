//! `gateway.toml` from anywhere: loading arbitrary text (and expanding
//! `${VAR}` in it) gives a configuration or an error, never a panic.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = manifold_config::expand(text, &|k| (k.len() < 8).then(|| k.to_lowercase()));
    let _ = manifold_config::load_str(
        std::path::Path::new("fuzz.toml"),
        text,
        |_| Some("value".into()),
        figment::providers::Env::prefixed("MANIFOLD_FUZZ_NOTHING_"),
    );
});
