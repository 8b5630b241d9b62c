//! The server crate's modules import one way, down these layers (the table in
//! the crate's `//!`): front door → pipeline → handlers → relay → the request
//! context → shared state → values. A handler never reaches back into the front
//! door for a response builder, shared state never imports a handler, and the
//! 2026-07-28 era never calls back into a router. A failure names the import to
//! move.

const LAYERS: manifold_testkit::architecture::Layers = &[
    &["runtime"],
    &["front"],
    &["pipeline"],
    &["handlers"],
    &["relay"],
    &["exchange"],
    &["observe"],
    &["tracectx"],
    &["state"],
    &["reply", "refusal", "era"],
];

#[test]
fn imports_point_down_the_layers() {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let problems = manifold_testkit::architecture::check(&src, LAYERS);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
