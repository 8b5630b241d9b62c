//! The in-process model: a sentence-transformers directory of the BERT family
//! (`config.json`, `model.safetensors`, `tokenizer.json`, `1_Pooling/config.json`
//! with mean pooling) run by candle on the CPU. A text becomes the mean of its
//! tokens' last hidden states (padding masked out), L2-normalized — what
//! sentence-transformers computes for all-MiniLM-L6-v2 — so a dot product is
//! the cosine similarity.
//!
//! Invariants: a text is cut at [`MAX_TOKENS`] tokens; a batch is at most
//! [`MAX_BATCH`] texts; nothing here reads the network (the tokenizer and the
//! weights come from the directory only). Loading reads the weights into memory
//! (no mmap, which would need `unsafe`).
//!
//! Not here: what text a tool becomes (`text`), caching (`cache`), ranking.

use std::path::Path;

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config};
use sha2::{Digest, Sha256};
use tokenizers::{PaddingParams, PaddingStrategy, Tokenizer, TruncationParams};

use crate::error::SemanticError;

/// Tokens kept of one text (the rest is cut): a tool's name, title and the
/// start of its description fit; all-MiniLM-L6-v2 was trained at 128.
pub const MAX_TOKENS: usize = 128;
/// Texts embedded in one forward pass.
pub const MAX_BATCH: usize = 32;

/// A loaded model. Immutable; share it (`Arc`) across threads.
pub struct LocalModel {
    model: BertModel,
    tokenizer: Tokenizer,
    dim: usize,
    id: String,
}

impl std::fmt::Debug for LocalModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalModel")
            .field("dim", &self.dim)
            .field("id", &self.id)
            .finish()
    }
}

fn read(dir: &Path, name: &str) -> Result<Vec<u8>, SemanticError> {
    let path = dir.join(name);
    std::fs::read(&path).map_err(|e| SemanticError::Model {
        dir: dir.display().to_string(),
        why: format!("cannot read {}: {e}", path.display()),
    })
}

fn model_error(dir: &Path, why: impl std::fmt::Display) -> SemanticError {
    SemanticError::Model {
        dir: dir.display().to_string(),
        why: why.to_string(),
    }
}

impl LocalModel {
    /// Loads the model in `dir`; every missing or unreadable file, and a
    /// pooling other than mean, is an error that names it.
    pub fn load(dir: &Path) -> Result<LocalModel, SemanticError> {
        let config: Config = serde_json::from_slice(&read(dir, "config.json")?)
            .map_err(|e| model_error(dir, format!("config.json: {e}")))?;
        let pooling: serde_json::Value =
            serde_json::from_slice(&read(dir, "1_Pooling/config.json")?)
                .map_err(|e| model_error(dir, format!("1_Pooling/config.json: {e}")))?;
        if pooling["pooling_mode_mean_tokens"] != true {
            return Err(model_error(
                dir,
                "1_Pooling/config.json: only mean pooling (pooling_mode_mean_tokens) is supported",
            ));
        }
        let dim = pooling["word_embedding_dimension"]
            .as_u64()
            .and_then(|d| usize::try_from(d).ok())
            .filter(|d| (1..=8192).contains(d))
            .ok_or_else(|| {
                model_error(dir, "1_Pooling/config.json: no word_embedding_dimension")
            })?;
        let tokenizer_bytes = read(dir, "tokenizer.json")?;
        let mut tokenizer = Tokenizer::from_bytes(&tokenizer_bytes)
            .map_err(|e| model_error(dir, format!("tokenizer.json: {e}")))?;
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: MAX_TOKENS,
                ..TruncationParams::default()
            }))
            .map_err(|e| model_error(dir, format!("tokenizer.json: {e}")))?;
        tokenizer.with_padding(Some(PaddingParams {
            strategy: PaddingStrategy::BatchLongest,
            ..PaddingParams::default()
        }));
        let weights = read(dir, "model.safetensors")?;
        // The model's identity for the vector cache: what it computes with.
        let mut h = Sha256::new();
        h.update(&weights);
        h.update(&tokenizer_bytes);
        h.update(MAX_TOKENS.to_le_bytes());
        let id = format!("{:x}", h.finalize());
        let vb = VarBuilder::from_buffered_safetensors(weights, DType::F32, &Device::Cpu)
            .map_err(|e| model_error(dir, format!("model.safetensors: {e}")))?;
        let model = BertModel::load(vb, &config)
            .map_err(|e| model_error(dir, format!("model.safetensors: {e}")))?;
        Ok(LocalModel {
            model,
            tokenizer,
            dim,
            id,
        })
    }

    /// The length of a vector.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// A digest of the weights and the tokenizer: vectors of another id are
    /// not comparable.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// One normalized vector per text, in order.
    pub fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, SemanticError> {
        let mut out = Vec::with_capacity(texts.len());
        for chunk in texts.chunks(MAX_BATCH) {
            out.extend(self.batch(chunk).map_err(SemanticError::Inference)?);
        }
        Ok(out)
    }

    fn batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, String> {
        let encodings = self
            .tokenizer
            .encode_batch(texts.to_vec(), true)
            .map_err(|e| e.to_string())?;
        let device = Device::Cpu;
        let rows = |f: &dyn Fn(&tokenizers::Encoding) -> Vec<u32>| -> Result<Tensor, String> {
            let rows: Vec<Tensor> = encodings
                .iter()
                .map(|e| Tensor::new(f(e).as_slice(), &device))
                .collect::<Result<_, _>>()
                .map_err(|e| e.to_string())?;
            Tensor::stack(&rows, 0).map_err(|e| e.to_string())
        };
        let ids = rows(&|e| e.get_ids().to_vec())?;
        let types = rows(&|e| e.get_type_ids().to_vec())?;
        let mask = rows(&|e| e.get_attention_mask().to_vec())?;
        let pooled = (|| -> candle_core::Result<Tensor> {
            let hidden = self.model.forward(&ids, &types, Some(&mask))?;
            // Mean over the real tokens: padding is masked out of the sum and
            // the count.
            let mask = mask.to_dtype(DType::F32)?.unsqueeze(2)?;
            let sum = hidden.broadcast_mul(&mask)?.sum(1)?;
            let count = mask.sum(1)?.clamp(1e-9, f64::MAX)?;
            let mean = sum.broadcast_div(&count)?;
            let norm = mean.sqr()?.sum_keepdim(1)?.sqrt()?.clamp(1e-12, f64::MAX)?;
            mean.broadcast_div(&norm)
        })()
        .map_err(|e| e.to_string())?;
        let vectors: Vec<Vec<f32>> = pooled.to_vec2().map_err(|e| e.to_string())?;
        match vectors.iter().all(|v| v.len() == self.dim) {
            true => Ok(vectors),
            false => Err(format!(
                "the model gives vectors of another length than its pooling config's {}",
                self.dim
            )),
        }
    }
}
