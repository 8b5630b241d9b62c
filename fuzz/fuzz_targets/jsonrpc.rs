//! Target `jsonrpc`: the checks live in `manifold_protocol::fuzzing::jsonrpc` (see its
//! doc for the invariants), so `tests/fuzz_corpus.rs` replays the seed corpus
//! through exactly what the fuzzer runs.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| manifold_protocol::fuzzing::jsonrpc(data));
