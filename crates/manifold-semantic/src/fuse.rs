//! The hybrid ranking: weighted reciprocal rank fusion (Cormack, Clarke and
//! Büttcher, SIGIR 2009) of the lexical ranking and the dense one. A tool at
//! rank r (from 1) of a list adds `weight / (k + r)`; a tool in neither list
//! does not rank. Rank fusion and not a blend of scores because BM25 scores
//! are unbounded and vary with the query's words, while cosines sit in a narrow
//! band: ranks compare, scores do not. The weights and `k` were chosen on the
//! tuning splits only, `dev` (queries sharing words with their tools) and
//! `para_dev` (the user's own words, on other tools than the held-out `para`
//! split's); docs/benchmarks.md, "Semantic search".

use manifold_catalog::search::{SearchIndex, SearchRequest, ToolId};

use crate::dense::DenseIndex;

/// How deep each list is read before fusing.
pub const FUSE_DEPTH: usize = 50;

/// The fusion's parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fusion {
    /// What a lexical rank counts.
    pub lexical: f32,
    /// What a dense rank counts.
    pub semantic: f32,
    /// The rank offset: larger flattens the head of each list.
    pub k: f32,
}

impl Default for Fusion {
    fn default() -> Fusion {
        // Chosen on the tuning splits only (`tune` in the quality test):
        // recall@5 dev 0.98 and para_dev 0.40, against 0.95 / 0.32 at the
        // textbook k 60 and equal weights.
        Fusion {
            lexical: 1.0,
            semantic: 1.5,
            k: 10.0,
        }
    }
}

/// One fused result, with what each list said of it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fused {
    pub id: ToolId,
    /// The lexical score (0 when the tool was not in the lexical list).
    pub lexical: f32,
    /// The cosine (`None` when the tool was not in the dense list).
    pub semantic: Option<f32>,
    pub score: f32,
}

/// Fuses `lexical` (best first, with scores) and `dense` (best first, with
/// cosines) into the best `limit`; ties go to the smaller `tiebreak`.
pub fn fuse(
    lexical: &[(ToolId, f32)],
    dense: &[(ToolId, f32)],
    fusion: Fusion,
    limit: usize,
    tiebreak: &dyn Fn(ToolId) -> u32,
) -> Vec<Fused> {
    let mut out: Vec<Fused> = Vec::with_capacity(lexical.len() + dense.len());
    for (r, (id, s)) in lexical.iter().take(FUSE_DEPTH).enumerate() {
        out.push(Fused {
            id: *id,
            lexical: *s,
            semantic: None,
            score: fusion.lexical / (fusion.k + r as f32 + 1.0),
        });
    }
    for (r, (id, cos)) in dense.iter().take(FUSE_DEPTH).enumerate() {
        let add = fusion.semantic / (fusion.k + r as f32 + 1.0);
        match out.iter_mut().find(|f| f.id == *id) {
            Some(f) => {
                f.score += add;
                f.semantic = Some(*cos);
            }
            None => out.push(Fused {
                id: *id,
                lexical: 0.0,
                semantic: Some(*cos),
                score: add,
            }),
        }
    }
    out.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then(tiebreak(a.id).cmp(&tiebreak(b.id)))
    });
    out.truncate(limit);
    out
}

/// The hybrid search: the lexical ranking of `index` and, when `query` (the
/// query's vector) is given, the dense one of `dense`, fused; only tools
/// `keep` lets through rank. Without a query vector the lexical ranking is
/// returned as it is (its scores, its order, its limit).
pub fn search(
    index: &SearchIndex,
    dense: &DenseIndex,
    query: Option<&[f32]>,
    request: &SearchRequest,
    keep: &dyn Fn(ToolId) -> bool,
    fusion: Fusion,
) -> Vec<Fused> {
    let limit = request.limit();
    let Some(query) = query.filter(|q| q.len() == dense.dim()) else {
        return index
            .search(request, keep)
            .into_iter()
            .map(|h| Fused {
                id: h.id,
                lexical: h.score,
                semantic: None,
                score: h.score,
            })
            .collect();
    };
    let lexical: Vec<(ToolId, f32)> = index
        .search(&request.with_limit(FUSE_DEPTH), keep)
        .into_iter()
        .map(|h| (h.id, h.score))
        .collect();
    let near = dense.nearest(query, keep, FUSE_DEPTH);
    fuse(&lexical, &near, fusion, limit, &|id| index.name_rank(id))
}

#[cfg(test)]
mod tests {
    use super::*;

    const EVEN: Fusion = Fusion {
        lexical: 1.0,
        semantic: 1.0,
        k: 60.0,
    };

    #[test]
    fn a_tool_both_lists_rank_beats_one_only_one_ranks_first() {
        let lexical = [(1, 9.0), (2, 5.0)];
        let dense = [(3, 0.9), (2, 0.8)];
        let out = fuse(&lexical, &dense, EVEN, 10, &|id| id);
        assert_eq!(out.iter().map(|f| f.id).collect::<Vec<_>>(), [2, 1, 3]);
        assert_eq!(out[0].semantic, Some(0.8));
        assert_eq!(out[2].lexical, 0.0);
        let only_dense = Fusion {
            lexical: 0.0,
            ..EVEN
        };
        let out = fuse(&lexical, &dense, only_dense, 1, &|id| id);
        assert_eq!(out[0].id, 3);
    }

    #[test]
    fn ties_are_broken_by_the_given_order() {
        let out = fuse(&[(5, 1.0)], &[(4, 0.5)], EVEN, 2, &|id| 10 - id);
        assert_eq!(out.iter().map(|f| f.id).collect::<Vec<_>>(), [5, 4]);
    }
}
