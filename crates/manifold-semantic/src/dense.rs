//! A catalogue's tool vectors in tool-id order (the ids of the lexical
//! `SearchIndex` built from the same list), and the exact nearest search.
//!
//! Exact on purpose: a query is one dot product per visible tool (384 floats
//! each for all-MiniLM-L6-v2), a few milliseconds at most over 10,000 tools on
//! one core (docs/benchmarks.md, "Semantic search"), less than the query's own
//! embedding. An
//! approximate index (HNSW) would pay off only past ~10^5–10^6 tools, and
//! would make a view's filter (a hidden tool never ranks) harder to keep exact.

use manifold_catalog::search::ToolId;

/// Vectors of tools 0..n, some possibly missing (not embedded yet).
#[derive(Debug, Clone, Default)]
pub struct DenseIndex {
    dim: usize,
    /// `n × dim` floats; a missing tool's row is zeros and `present` says so.
    data: Vec<f32>,
    present: Vec<bool>,
}

impl DenseIndex {
    /// An index of `n` tools of vectors of length `dim`, none present yet.
    pub fn new(n: usize, dim: usize) -> DenseIndex {
        DenseIndex {
            dim,
            data: vec![0.0; n.saturating_mul(dim)],
            present: vec![false; n],
        }
    }

    /// Sets tool `id`'s vector; one of another length is ignored.
    pub fn set(&mut self, id: ToolId, vector: &[f32]) {
        let i = id as usize;
        if vector.len() != self.dim || i >= self.present.len() {
            return;
        }
        self.data[i * self.dim..(i + 1) * self.dim].copy_from_slice(vector);
        self.present[i] = true;
    }

    /// Tools with a vector.
    pub fn present(&self) -> usize {
        self.present.iter().filter(|p| **p).count()
    }

    pub fn len(&self) -> usize {
        self.present.len()
    }

    pub fn is_empty(&self) -> bool {
        self.present.is_empty()
    }

    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.data.capacity() * 4 + self.present.capacity()
    }

    /// The `k` tools nearest `query` among those `keep` lets through, nearest
    /// first, with their cosine; ties go to the smaller id.
    pub fn nearest(
        &self,
        query: &[f32],
        keep: &dyn Fn(ToolId) -> bool,
        k: usize,
    ) -> Vec<(ToolId, f32)> {
        if query.len() != self.dim || k == 0 || self.dim == 0 {
            return Vec::new();
        }
        let mut scored: Vec<(ToolId, f32)> = self
            .data
            .chunks_exact(self.dim)
            .enumerate()
            .filter(|(i, _)| self.present[*i])
            .filter_map(|(i, row)| {
                let id = ToolId::try_from(i).ok()?;
                keep(id).then(|| (id, dot(row, query)))
            })
            .collect();
        let order = |a: &(ToolId, f32), b: &(ToolId, f32)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
        if scored.len() > k {
            scored.select_nth_unstable_by(k - 1, order);
            scored.truncate(k);
        }
        scored.sort_unstable_by(order);
        scored
    }
}

/// The dot product, in eight lanes so the compiler vectorizes it.
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut lanes = [0f32; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f32 = ca
        .remainder()
        .iter()
        .zip(cb.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in ca.zip(cb) {
        for i in 0..8 {
            lanes[i] += x[i] * y[i];
        }
    }
    lanes.iter().sum::<f32>() + tail
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_is_exact_filtered_and_skips_missing_tools() {
        let mut d = DenseIndex::new(4, 2);
        d.set(0, &[1.0, 0.0]);
        d.set(1, &[0.0, 1.0]);
        d.set(3, &[0.6, 0.8]);
        d.set(2, &[1.0]); // wrong length: ignored
        assert_eq!(d.present(), 3);
        let all = d.nearest(&[0.0, 1.0], &|_| true, 10);
        assert_eq!(all.iter().map(|h| h.0).collect::<Vec<_>>(), [1, 3, 0]);
        let hidden = d.nearest(&[0.0, 1.0], &|id| id != 1, 1);
        assert_eq!(hidden.iter().map(|h| h.0).collect::<Vec<_>>(), [3]);
        assert!(d.nearest(&[1.0], &|_| true, 3).is_empty());
    }

    #[test]
    fn dot_matches_the_plain_sum() {
        let a: Vec<f32> = (0..19).map(|i| i as f32 * 0.5).collect();
        let b: Vec<f32> = (0..19).map(|i| 1.0 - i as f32 * 0.1).collect();
        let plain: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
        assert!((dot(&a, &b) - plain).abs() < 1e-4);
    }
}
