//! What can go wrong in the semantic layer, and how a caller tells.

/// Why the semantic layer could not do something. A search falls back to the
/// lexical ranking on any of them; a model that cannot load stops the start.
#[derive(Debug, thiserror::Error)]
pub enum SemanticError {
    #[error("the embedding model in {dir} cannot be loaded: {why}")]
    Model { dir: String, why: String },
    #[error("embedding failed: {0}")]
    Inference(String),
    #[error("the vector cache {path}: {why}")]
    Cache { path: String, why: String },
}
