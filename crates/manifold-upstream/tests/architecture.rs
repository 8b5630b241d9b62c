//! The upstream crate's modules import one way, down these layers (the same
//! order as the crate's `//!`): a connection does not know about the actor that
//! restarts it, a transport does not know about the handshake, and so on; no
//! file imports a file that imports it back; no JSON-RPC error number is
//! written outside manifold-protocol's `ErrorCode` and the refusals' table
//! (`message::NotRelayed`). A failure names the import to move
//! (manifold-architecture).

use std::path::Path;

const LAYERS: manifold_architecture::Layers = &[
    &["upstream"],
    &["handshake", "listen"],
    &["call"],
    &["pool"],
    &["retry", "breaker"],
    &["input_bridge"],
    &["attempt"],
    &["connection"],
    &["transport"],
    &["probe"],
    &["wire"],
    &["router"],
    &["message"],
    &["status"],
    &["error"],
    &["facts"],
    &["limits"],
];

#[test]
fn imports_point_down_the_layers_and_no_file_imports_one_that_imports_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let problems = manifold_architecture::check(&src, LAYERS);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn no_json_rpc_error_number_outside_the_tables() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let found = manifold_architecture::numbers(&src, &[]);
    assert!(found.is_empty(), "{}", found.join("\n"));
}
