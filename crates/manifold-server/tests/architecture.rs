//! The server crate's structure, checked from its sources
//! (manifold-architecture):
//! - imports point one way, down the layers of the crate's `//!` table: front
//!   door → pipeline → handlers → call chain → the request context → shared
//!   state → values; a handler never reaches back into the front door for a
//!   response builder, shared state never imports a handler;
//! - no file imports a file that imports it back, directly or through others;
//! - the call chain (`src/call/`) is one file per step, and every function of
//!   it calls its steps in the order of [`CALL_STEPS`], which the docs show;
//! - an observation is finished in two places only: the pipeline (answers made
//!   on the request's own task) and the chain's `finish` (answers that arrive
//!   later);
//! - no JSON-RPC error number is written outside the refusal table.
//!
//! A failure names the file and the import (or call) to move.

use manifold_server::CALL_STEPS;
use std::path::{Path, PathBuf};

const LAYERS: manifold_architecture::Layers = &[
    &["runtime"],
    &["front", "admin", "card", "connect"],
    &["pipeline"],
    &["handlers"],
    &["call"],
    &["replicas"],
    &["request"],
    &["observe"],
    &["tracectx"],
    &["state"],
    &["reply", "refusal", "era"],
];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

#[test]
fn imports_point_down_the_layers_and_no_file_imports_one_that_imports_it() {
    let problems = manifold_architecture::check(&src(), LAYERS);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_call_chain_runs_its_steps_in_the_documented_order() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let architecture = root.join("docs/architecture.md");
    let pipeline = src().join("pipeline/README.md");
    let chain = src().join("call/mod.rs");
    let docs = [
        (architecture.as_path(), "docs/architecture.md"),
        (pipeline.as_path(), "src/pipeline/README.md"),
        (chain.as_path(), "src/call/mod.rs"),
    ];
    let problems = manifold_architecture::chain(&src(), "call", &CALL_STEPS, &["context"], &docs);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn observations_are_finished_in_two_places() {
    let sites = manifold_architecture::calls(&src(), ".finish(");
    let files: Vec<&str> = sites
        .iter()
        .map(|s| s.split(':').next().unwrap_or(""))
        .collect();
    assert_eq!(
        files,
        ["call/finish.rs", "observe.rs"],
        "an observation is finished by the call chain's finish or by observe::answered (the pipeline's phase finish, a script's inner call), once each: {sites:?}"
    );
}

#[test]
fn the_call_chains_decisions_reach_the_audit_record_at_its_hand_over_points_only() {
    // Steps record what they decide in the `Call` (`facts`); the record gets
    // them where the call ends: step finish, a refusal before dispatch
    // (`Call::refused`) and an answer dropped unfinished (both in context).
    // The route notes only what the request itself names; code mode notes
    // the script on its own record and on each call it makes (whose request
    // it builds).
    let sites = manifold_architecture::calls(&src(), ".note(");
    let mut files: Vec<&str> = sites
        .iter()
        .map(|s| s.split(':').next().unwrap_or(""))
        .collect();
    files.dedup();
    assert_eq!(
        files,
        [
            "call/context.rs",
            "call/finish.rs",
            "handlers/code/inner.rs",
            "handlers/code/mod.rs",
            "pipeline/route.rs"
        ],
        "a step writes its decision into the Call's facts, never into the observation: {sites:?}"
    );
}

#[test]
fn no_json_rpc_error_number_outside_the_refusal_table() {
    let found = manifold_architecture::numbers(&src(), &[]);
    assert!(
        found.is_empty(),
        "use manifold_protocol::ErrorCode or a refusal:\n{}",
        found.join("\n")
    );
}
