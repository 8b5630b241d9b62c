//! Semantic tool search: dense vectors of tool definitions and of queries,
//! searched exactly by cosine similarity and fused with the lexical ranking of
//! `manifold_catalog::search` by weighted reciprocal rank fusion.
//!
//! - `text`: what text a tool becomes before it is embedded;
//! - `local` (feature `local`): the in-process model (candle, tokenizers);
//! - `store`: vectors keyed by the SHA-256 of what was embedded, on disk and in
//!   memory, and the bounded cache of query vectors;
//! - `dense`: a catalogue's vectors in tool-id order, and the exact nearest search;
//! - `fuse`: the hybrid ranking.
//!
//! Invariants: vectors are L2-normalized, so a dot product is the cosine; a
//! vector is only compared with vectors of the same model id; a tool the
//! caller's filter hides never ranks. Not here: when to embed, the network, the
//! server's tasks (manifold-server), the lexical index (manifold-catalog).

pub mod dense;
mod error;
pub mod fuse;
#[cfg(feature = "local")]
pub mod local;
pub mod store;
pub mod text;

pub use error::SemanticError;
