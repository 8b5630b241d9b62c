//! The upstream crate's modules import one way, down these layers (the same order
//! as the crate's `//!`): a connection does not know about the actor that
//! restarts it, a transport does not know about the handshake, and so on. A
//! failure names the import to move.

const LAYERS: manifold_testkit::architecture::Layers = &[
    &["upstream"],
    &["handshake", "listen"],
    &["call"],
    &["input_bridge"],
    &["attempt"],
    &["connection"],
    &["transport"],
    &["wire"],
    &["router"],
    &["message"],
    &["error"],
];

#[test]
fn imports_point_down_the_layers() {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let problems = manifold_testkit::architecture::check(&src, LAYERS);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
