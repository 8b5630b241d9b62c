//! Tool search: a ranked full-text index over tool definitions, built once per
//! catalogue and shared by every caller; a caller searches only the tools its view
//! holds by passing a filter, never by rebuilding.
//!
//! Ranking: BM25F (Robertson & Zaragoza, "The Probabilistic Relevance Framework",
//! 2009). Each tool is five fields: its exposed name without the upstream's prefix
//! (`list_merge_requests` → list, merge, request), its title (or
//! `annotations.title`), its description, its parameters (`inputSchema.properties`
//! names, titles and descriptions) and its upstream's name. Text is analyzed by
//! `text` (splits `snake_case`, `kebab-case`, `camelCase` and digits, lowercases,
//! drops stopwords, Porter-stems). For a query term t and a tool, the field
//! frequencies are length-normalized and weighted into one frequency
//! `tf = Σ_f w_f · tf_f / (1 − b_f + b_f · len_f / avglen_f)`, and t contributes
//! `idf(t) · tf · (k1 + 1) / (k1 + tf)` with `idf(t) = ln(1 + (N − df + 0.5) / (df +
//! 0.5))` over all N tools of the index (not of the caller's view: scores do not
//! depend on who asks). Weights: [`Ranking::default`]. A few idioms are read as
//! what they mean (`who am I` → whoami), query words are expanded with a small
//! synonym and abbreviation table (`text::expansions`) at
//! [`Ranking::synonym_weight`], and a query word that no tool's name or title has
//! counts [`Ranking::unnamed_weight`] (it is mostly an argument of the task — a
//! city, a person — and a rare one would otherwise outweigh the task's words). A
//! tool's score is the sum over query terms, then multiplied by two factors:
//! coverage, the share of the query's words the tool matches (a word or one of its
//! expansions) to the power [`Ranking::coverage`], so a tool that answers the whole
//! task beats one that matches a single rare word; and, when the query names a
//! product (a term of an upstream's name that at least 3 in 4 of the tools having
//! it have in their upstream's name: `github`, `redis`, not `time`), a tool of
//! another upstream gets [`Ranking::other_product`]. Ties are broken by exposed
//! name, so results are deterministic.
//!
//! The first defaults were tuned on part of a query set and checked on queries
//! written afterwards (fresh): recall@5 0.72 and recall@10 0.91, against 0.56 and
//! 0.75 for plain BM25 over descriptions. A second set written later (fresh2),
//! whose words stay further from the tools' names, gave 0.40 and 0.53. The two
//! factors were then tuned on the dev split only; run once afterwards: fresh 0.81 /
//! 0.91, fresh2 0.43 / 0.60 (docs/benchmarks.md, "Tool search").
//!
//! Each (term, tool) posting stores its final contribution, so a query is a sum
//! over the postings of its few terms, then one pass over the tools it touched for
//! the two factors (a popcount, a table look-up and a scan of the tool's one or
//! two product terms); see docs/benchmarks.md ("Tool search") for
//! build time, bytes per tool and query latency at 10,000 tools, and for recall on
//! the 742-tool real catalogue.
//!
//! Limits: lexical only — a query must share a word (after stemming and the
//! tables) with what a tool's definition says: "picture of the page" finds
//! `screenshot` only through the table, and "show me chargebacks" does not find
//! `list_disputes`. Scores compare within one index only.
//! Queries are bounded ([`MAX_QUERY_CHARS`], [`MAX_QUERY_TERMS`]) and so is what
//! one tool can add to the index ([`MAX_FIELD_TERMS`], `text::MAX_TERM_BYTES`).
//!
//! Not here: the `search_tools`/`call_tool` meta-tools, views, endpoints and when
//! to rebuild (the server).

mod porter;
#[cfg(test)]
mod tests;
mod text;

use serde_json::{Map, Value};
use std::collections::HashMap;

use crate::list::NamedList;

/// Results when `limit` is not given.
pub const DEFAULT_LIMIT: usize = 8;
/// The largest `limit` accepted.
pub const MAX_LIMIT: usize = 50;
/// The longest query accepted, in characters.
pub const MAX_QUERY_CHARS: usize = 1_000;
/// The most terms (words left after dropping stopwords) a query may have.
pub const MAX_QUERY_TERMS: usize = 64;
/// Terms indexed per field of one tool; the rest of an over-long description is
/// not indexed, which bounds what one upstream can make the index hold.
pub const MAX_FIELD_TERMS: usize = 2_048;

/// A tool's position in the list the index was built from.
pub type ToolId = u32;

const FIELDS: usize = 5;
const NAME: usize = 0;
const TITLE: usize = 1;
const DESCRIPTION: usize = 2;
const PARAMETERS: usize = 3;
const UPSTREAM: usize = 4;

/// How much one field counts and how much its length normalizes (`b`, 0–1).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FieldWeight {
    pub weight: f32,
    pub b: f32,
}

/// The ranking's parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct Ranking {
    pub name: FieldWeight,
    pub title: FieldWeight,
    pub description: FieldWeight,
    pub parameters: FieldWeight,
    pub upstream: FieldWeight,
    /// Term-frequency saturation.
    pub k1: f32,
    /// What a synonym or expanded abbreviation counts, relative to a word of the
    /// query; 0 turns expansion off.
    pub synonym_weight: f32,
    /// What a query word counts when no tool's name or title has it: such words
    /// are mostly the task's arguments (a city, a person, a channel), not what
    /// the tool does, and a rare one would otherwise outweigh the task's words.
    pub unnamed_weight: f32,
    /// How much a tool's score follows the share of the query's words it matches
    /// (through the word itself or an expansion): the score is multiplied by
    /// `share ^ coverage`; 0 turns this off.
    pub coverage: f32,
    /// What a tool's score is multiplied by when the query names a product (an
    /// upstream's name, see [`SearchIndex`]) and the tool is not of it; 1 turns
    /// this off.
    pub other_product: f32,
}

impl Default for Ranking {
    /// Names count most: a tool's name is a curated summary of what it does. Its
    /// parameters count least: they name inputs, not the task.
    fn default() -> Self {
        Ranking {
            name: FieldWeight {
                weight: 5.0,
                b: 0.5,
            },
            title: FieldWeight {
                weight: 2.0,
                b: 0.5,
            },
            description: FieldWeight {
                weight: 1.0,
                b: 0.75,
            },
            parameters: FieldWeight {
                weight: 0.3,
                b: 0.75,
            },
            upstream: FieldWeight {
                weight: 1.5,
                b: 0.0,
            },
            k1: 2.0,
            synonym_weight: 0.4,
            unnamed_weight: 0.5,
            coverage: 0.5,
            other_product: 0.7,
        }
    }
}

impl Ranking {
    fn fields(&self) -> [FieldWeight; FIELDS] {
        [
            self.name,
            self.title,
            self.description,
            self.parameters,
            self.upstream,
        ]
    }
}

/// One tool to index.
#[derive(Debug, Clone, Copy)]
pub struct ToolDoc<'a> {
    /// The exposed name (what `tools/call` takes).
    pub name: &'a str,
    /// The upstream's name.
    pub upstream: &'a str,
    /// The definition as listed.
    pub tool: &'a Map<String, Value>,
}

/// Why a search request was refused. The messages are written for a model to act on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QueryError {
    #[error("`query` must be a string: describe the task in a few words, e.g. \"create a pull request\"")]
    NotAString,
    #[error("`query` is empty: describe the task in a few words, e.g. \"create a pull request\"")]
    Empty,
    #[error("`query` has {chars} characters; the limit is {max}: keep the words that say what the tool should do")]
    TooLong { chars: usize, max: usize },
    #[error("`query` has {terms} search terms; the limit is {max}: keep the words that say what the tool should do")]
    TooManyTerms { terms: usize, max: usize },
    #[error("`query` has no words to search for (only punctuation or words like \"the\"): describe the task, e.g. \"list open issues\"")]
    NoTerms,
    #[error("`limit` must be an integer from 1 to {max} (default {default}); got {given}")]
    BadLimit {
        given: String,
        max: usize,
        default: usize,
    },
}

/// A validated query: its terms and how many results it wants.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchRequest {
    terms: Vec<String>,
    limit: usize,
    /// The query as given (for a ranking that reads it whole: semantic search).
    text: Box<str>,
}

impl SearchRequest {
    /// `limit` `None` means [`DEFAULT_LIMIT`].
    pub fn new(query: &str, limit: Option<usize>) -> Result<SearchRequest, QueryError> {
        let limit = match limit {
            None => DEFAULT_LIMIT,
            Some(n @ 1..=MAX_LIMIT) => n,
            Some(n) => return Err(bad_limit(n.to_string())),
        };
        if query.trim().is_empty() {
            return Err(QueryError::Empty);
        }
        let chars = query.chars().count();
        if chars > MAX_QUERY_CHARS {
            return Err(QueryError::TooLong {
                chars,
                max: MAX_QUERY_CHARS,
            });
        }
        let terms = text::query_terms(query);
        if terms.is_empty() {
            return Err(QueryError::NoTerms);
        }
        if terms.len() > MAX_QUERY_TERMS {
            return Err(QueryError::TooManyTerms {
                terms: terms.len(),
                max: MAX_QUERY_TERMS,
            });
        }
        Ok(SearchRequest {
            terms,
            limit,
            text: query.into(),
        })
    }

    /// From `search_tools` arguments, `{"query": "…", "limit": 8}` (`limit`
    /// optional; other members are ignored).
    pub fn from_arguments(args: &Map<String, Value>) -> Result<SearchRequest, QueryError> {
        let limit = match args.get("limit") {
            None | Some(Value::Null) => None,
            Some(v) => Some(
                v.as_u64()
                    .and_then(|n| usize::try_from(n).ok())
                    .ok_or_else(|| bad_limit(v.to_string()))?,
            ),
        };
        match args.get("query") {
            Some(Value::String(q)) => SearchRequest::new(q, limit),
            _ => Err(QueryError::NotAString),
        }
    }

    pub fn limit(&self) -> usize {
        self.limit
    }

    /// The same query asking for `limit` results, past [`MAX_LIMIT`] too: for
    /// a ranking fused with another, read deeper than it answers.
    pub fn with_limit(&self, limit: usize) -> SearchRequest {
        SearchRequest {
            terms: self.terms.clone(),
            limit,
            text: self.text.clone(),
        }
    }

    /// The query as given.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The analyzed terms (stemmed, stopwords dropped).
    pub fn terms(&self) -> &[String] {
        &self.terms
    }
}

fn bad_limit(given: String) -> QueryError {
    QueryError::BadLimit {
        given,
        max: MAX_LIMIT,
        default: DEFAULT_LIMIT,
    }
}

/// One result.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hit<'a> {
    pub id: ToolId,
    pub name: &'a str,
    pub score: f32,
}

/// A set of tool ids (a caller's view), as a bitset sized by the largest id (ids
/// are dense: below the index's `len`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolSet {
    bits: Vec<u64>,
}

impl ToolSet {
    pub fn new() -> ToolSet {
        ToolSet::default()
    }
    pub fn insert(&mut self, id: ToolId) {
        let (word, bit) = (id as usize / 64, id % 64);
        if self.bits.len() <= word {
            self.bits.resize(word + 1, 0);
        }
        self.bits[word] |= 1 << bit;
    }
    pub fn contains(&self, id: ToolId) -> bool {
        self.bits
            .get(id as usize / 64)
            .is_some_and(|w| w & (1 << (id % 64)) != 0)
    }
    pub fn len(&self) -> usize {
        self.bits.iter().map(|w| w.count_ones() as usize).sum()
    }
    pub fn is_empty(&self) -> bool {
        self.bits.iter().all(|w| *w == 0)
    }
}

impl FromIterator<ToolId> for ToolSet {
    fn from_iter<I: IntoIterator<Item = ToolId>>(iter: I) -> ToolSet {
        let mut set = ToolSet::new();
        for id in iter {
            set.insert(id);
        }
        set
    }
}

/// One tool while building: (term, its frequency in each field), and each field's
/// length in terms.
type Counted = (Vec<(u32, [u16; FIELDS])>, [u32; FIELDS]);

#[derive(Debug, Clone, Copy)]
struct Posting {
    tool: ToolId,
    /// The term's whole contribution to this tool's score.
    weight: f32,
}

/// The index. Immutable once built; share it (`Arc`) between views.
#[derive(Debug)]
pub struct SearchIndex {
    names: Vec<Box<str>>,
    /// Tool ids ordered by name, for [`SearchIndex::id`].
    by_name: Vec<ToolId>,
    /// Each tool's place in name order: ties are broken by comparing these, not
    /// the names.
    rank: Vec<u32>,
    /// The vocabulary, sorted; term i's postings are
    /// `postings[offsets[i]..offsets[i + 1]]`, in tool order.
    terms: Vec<Box<str>>,
    /// Bit i: term i is in some tool's name or title.
    named: ToolSet,
    offsets: Vec<usize>,
    postings: Vec<Posting>,
    /// Bit i: term i names a product: it is in some tool's upstream name, and at
    /// least 3 in 4 of the tools that have it anywhere have it there (`github`,
    /// `redis`; not `time` or `memory`, which other tools' descriptions say too).
    products: ToolSet,
    /// Tool i's upstream's product terms are
    /// `product_terms[product_offsets[i]..product_offsets[i + 1]]`.
    product_offsets: Vec<u32>,
    product_terms: Vec<u32>,
    ranking: Ranking,
}

impl SearchIndex {
    /// Indexes `docs` with the default ranking; the i-th doc gets id i.
    pub fn build<'a>(docs: impl IntoIterator<Item = ToolDoc<'a>>) -> SearchIndex {
        SearchIndex::build_with(docs, Ranking::default())
    }

    /// Indexes the tools of a merged list (ids are positions in
    /// [`NamedList::entries`]), as exposed: names, overrides and all.
    pub fn from_list(list: &NamedList) -> SearchIndex {
        // What a model is shown: an app-only tool is not searchable.
        let parsed: Vec<Map<String, Value>> = list
            .listed()
            .iter()
            .map(|e| match serde_json::from_slice(e.json()) {
                Ok(Value::Object(map)) => map,
                _ => Map::new(),
            })
            .collect();
        SearchIndex::build(list.listed().iter().zip(&parsed).map(|(e, tool)| ToolDoc {
            name: &e.exposed,
            upstream: &e.upstream,
            tool,
        }))
    }

    pub fn build_with<'a>(
        docs: impl IntoIterator<Item = ToolDoc<'a>>,
        ranking: Ranking,
    ) -> SearchIndex {
        let mut interner = Interner::default();
        let mut names = Vec::new();
        let mut tools: Vec<Counted> = Vec::new();
        let mut pairs: Vec<(u32, usize)> = Vec::new();
        let mut named_old = ToolSet::new();
        for doc in docs.into_iter().take(ToolId::MAX as usize) {
            pairs.clear();
            let mut lengths = [0u32; FIELDS];
            interner.fields(&doc, &mut pairs);
            for &(id, field) in &pairs {
                lengths[field] += 1;
                if field == NAME || field == TITLE {
                    named_old.insert(id);
                }
            }
            pairs.sort_unstable();
            let mut counts: Vec<(u32, [u16; FIELDS])> = Vec::new();
            for &(term, field) in &pairs {
                match counts.last_mut() {
                    Some((t, tf)) if *t == term => tf[field] = tf[field].saturating_add(1),
                    _ => {
                        let mut tf = [0u16; FIELDS];
                        tf[field] = 1;
                        counts.push((term, tf));
                    }
                }
            }
            names.push(Box::<str>::from(doc.name));
            tools.push((counts, lengths));
        }
        let n = tools.len() as f32;
        let mut average = [0f32; FIELDS];
        for (_, lengths) in &tools {
            for f in 0..FIELDS {
                average[f] += lengths[f] as f32;
            }
        }
        for avg in &mut average {
            *avg = if n > 0.0 && *avg > 0.0 { *avg / n } else { 1.0 };
        }
        // The vocabulary in sorted order: old id → new id.
        let mut sorted: Vec<(String, u32)> = interner.terms.into_iter().collect();
        sorted.sort_unstable();
        let mut remap = vec![0u32; sorted.len()];
        for (new, (_, old)) in sorted.iter().enumerate() {
            remap[*old as usize] = new as u32;
        }
        let named: ToolSet = (0..remap.len() as u32)
            .filter(|old| named_old.contains(*old))
            .map(|old| remap[old as usize])
            .collect();
        let mut df = vec![0usize; sorted.len()];
        for (counts, _) in &tools {
            for (term, _) in counts {
                df[remap[*term as usize] as usize] += 1;
            }
        }
        let mut offsets = Vec::with_capacity(sorted.len() + 1);
        offsets.push(0);
        for d in &df {
            offsets.push(offsets.last().copied().unwrap_or(0) + d);
        }
        let mut cursor = offsets.clone();
        let total = offsets.last().copied().unwrap_or(0);
        let mut postings = vec![
            Posting {
                tool: 0,
                weight: 0.0
            };
            total
        ];
        let fields = ranking.fields();
        for (tool, (counts, lengths)) in tools.iter().enumerate() {
            for (term, tf) in counts {
                let term = remap[*term as usize] as usize;
                let mut pseudo = 0f32;
                for f in 0..FIELDS {
                    if tf[f] > 0 {
                        let FieldWeight { weight, b } = fields[f];
                        let norm = 1.0 - b + b * lengths[f] as f32 / average[f];
                        pseudo += weight * tf[f] as f32 / norm;
                    }
                }
                let d = df[term] as f32;
                let idf = (1.0 + (n - d + 0.5) / (d + 0.5)).ln();
                let weight = idf * pseudo * (ranking.k1 + 1.0) / (ranking.k1 + pseudo);
                postings[cursor[term]] = Posting {
                    tool: tool as ToolId,
                    weight,
                };
                cursor[term] += 1;
            }
        }
        let mut upstream_df = vec![0usize; sorted.len()];
        for (counts, _) in &tools {
            for (term, tf) in counts {
                if tf[UPSTREAM] > 0 {
                    upstream_df[remap[*term as usize] as usize] += 1;
                }
            }
        }
        let products: ToolSet = (0..df.len())
            .filter(|&t| upstream_df[t] > 0 && upstream_df[t] * 4 >= df[t] * 3)
            .map(|t| t as u32)
            .collect();
        let mut product_offsets = Vec::with_capacity(tools.len() + 1);
        let mut product_terms = Vec::new();
        product_offsets.push(0);
        for (counts, _) in &tools {
            product_terms.extend(
                counts
                    .iter()
                    .filter(|(_, tf)| tf[UPSTREAM] > 0)
                    .map(|(term, _)| remap[*term as usize])
                    .filter(|t| products.contains(*t)),
            );
            product_offsets.push(u32::try_from(product_terms.len()).unwrap_or(u32::MAX));
        }
        let mut by_name: Vec<ToolId> = (0..names.len() as ToolId).collect();
        by_name.sort_by(|a, b| names[*a as usize].cmp(&names[*b as usize]).then(a.cmp(b)));
        let mut rank = vec![0u32; names.len()];
        for (place, id) in by_name.iter().enumerate() {
            rank[*id as usize] = place as u32;
        }
        SearchIndex {
            names,
            by_name,
            rank,
            terms: sorted
                .into_iter()
                .map(|(t, _)| t.into_boxed_str())
                .collect(),
            named,
            offsets,
            postings,
            products,
            product_offsets,
            product_terms,
            ranking,
        }
    }

    /// The best matches among the tools `keep` lets through, best first, at most
    /// `request.limit()`; ties go to the smaller name.
    pub fn search(&self, request: &SearchRequest, keep: &dyn Fn(ToolId) -> bool) -> Vec<Hit<'_>> {
        // (term, how much it counts, the query words it stands for as bits).
        let mut weighted: Vec<(&str, f32, u64)> = Vec::new();
        let mut words: Vec<&str> = Vec::new();
        for term in &request.terms {
            let bit = match words.iter().position(|w| *w == term.as_str()) {
                Some(i) => i,
                None => {
                    words.push(term);
                    words.len() - 1
                }
            };
            // At most MAX_QUERY_TERMS (64) words: each has a bit.
            let bit = 1u64 << (bit % 64);
            // A repeated word counts again, as BM25's query frequency does.
            match weighted.iter_mut().find(|(t, _, _)| *t == term.as_str()) {
                Some((_, w, _)) => *w += 1.0,
                None => weighted.push((term, 1.0, bit)),
            }
        }
        if self.ranking.synonym_weight > 0.0 {
            for (i, word) in words.iter().enumerate() {
                for extra in text::expansions(word) {
                    match weighted.iter_mut().find(|(t, _, _)| *t == extra.as_str()) {
                        Some((_, _, bits)) => *bits |= 1 << (i % 64),
                        None => weighted.push((extra, self.ranking.synonym_weight, 1 << (i % 64))),
                    }
                }
            }
        }
        let mut scores = vec![0f32; self.names.len()];
        let mut matched = vec![0u64; self.names.len()];
        let mut touched: Vec<ToolId> = Vec::new();
        let mut found: Vec<u32> = Vec::new();
        for (term, factor, bits) in weighted {
            let Ok(t) = self.terms.binary_search_by(|x| (**x).cmp(term)) else {
                continue;
            };
            found.push(t as u32);
            let factor = if self.named.contains(t as u32) {
                factor
            } else {
                factor * self.ranking.unnamed_weight
            };
            for p in &self.postings[self.offsets[t]..self.offsets[t + 1]] {
                let score = &mut scores[p.tool as usize];
                if *score == 0.0 {
                    touched.push(p.tool);
                }
                *score += factor * p.weight;
                matched[p.tool as usize] |= bits;
            }
        }
        touched.retain(|id| keep(*id));
        // Coverage and product: one factor per tool, from a table by the number of
        // query words matched and a scan of the tool's (one or two) product terms.
        found.retain(|t| self.products.contains(*t));
        let coverage = self.ranking.coverage;
        let other = match found.is_empty() {
            true => 1.0,
            false => self.ranking.other_product,
        };
        if coverage > 0.0 || other != 1.0 {
            let all = words.len().max(1) as f32;
            let share: Vec<f32> = (0..=words.len().min(64))
                .map(|m| (m as f32 / all).powf(coverage))
                .collect();
            for &id in &touched {
                let id = id as usize;
                let m = matched[id].count_ones() as usize;
                let mut factor = share.get(m).copied().unwrap_or(1.0);
                if other != 1.0 && !self.of_products(id, &found) {
                    factor *= other;
                }
                scores[id] *= factor;
            }
        }
        let order = |a: &ToolId, b: &ToolId| {
            let (x, y) = (scores[*a as usize], scores[*b as usize]);
            y.total_cmp(&x)
                .then(self.rank[*a as usize].cmp(&self.rank[*b as usize]))
        };
        let limit = request.limit.max(1);
        if touched.len() > limit {
            touched.select_nth_unstable_by(limit - 1, order);
            touched.truncate(limit);
        }
        touched.sort_unstable_by(order);
        touched
            .into_iter()
            .map(|id| Hit {
                id,
                name: &self.names[id as usize],
                score: scores[id as usize],
            })
            .collect()
    }

    /// Whether tool `id`'s upstream is one of the `products` named.
    fn of_products(&self, id: usize, products: &[u32]) -> bool {
        let (Some(&start), Some(&end)) = (
            self.product_offsets.get(id),
            self.product_offsets.get(id + 1),
        ) else {
            return false;
        };
        let own = self
            .product_terms
            .get(start as usize..end as usize)
            .unwrap_or(&[]);
        own.iter().any(|t| products.contains(t))
    }

    /// Tool `id`'s place in name order (how ties are broken), `u32::MAX` for
    /// an unknown id.
    pub fn name_rank(&self, id: ToolId) -> u32 {
        self.rank.get(id as usize).copied().unwrap_or(u32::MAX)
    }

    /// The ids of `names` in this index (a caller's view); unknown names are skipped.
    pub fn set_of<'n>(&self, names: impl IntoIterator<Item = &'n str>) -> ToolSet {
        names.into_iter().filter_map(|n| self.id(n)).collect()
    }

    pub fn id(&self, name: &str) -> Option<ToolId> {
        self.by_name
            .binary_search_by(|id| (*self.names[*id as usize]).cmp(name))
            .ok()
            .map(|i| self.by_name[i])
    }

    pub fn name(&self, id: ToolId) -> Option<&str> {
        self.names.get(id as usize).map(|n| &**n)
    }

    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// Distinct terms indexed.
    pub fn vocabulary_len(&self) -> usize {
        self.terms.len()
    }

    /// (term, tool) pairs indexed.
    pub fn postings_len(&self) -> usize {
        self.postings.len()
    }

    /// The heap the index holds, in bytes: every allocation's capacity (the
    /// allocator's own overhead aside).
    pub fn heap_bytes(&self) -> usize {
        use std::mem::size_of;
        let strings = |v: &Vec<Box<str>>| {
            v.capacity() * size_of::<Box<str>>() + v.iter().map(|s| s.len()).sum::<usize>()
        };
        strings(&self.names)
            + strings(&self.terms)
            + self.by_name.capacity() * size_of::<ToolId>()
            + self.rank.capacity() * size_of::<u32>()
            + self.named.bits.capacity() * size_of::<u64>()
            + self.offsets.capacity() * size_of::<usize>()
            + self.postings.capacity() * size_of::<Posting>()
            + self.products.bits.capacity() * size_of::<u64>()
            + (self.product_offsets.capacity() + self.product_terms.capacity()) * size_of::<u32>()
    }

    /// [`SearchIndex::heap_bytes`] per tool indexed.
    pub fn bytes_per_tool(&self) -> usize {
        self.heap_bytes() / self.len().max(1)
    }
}

fn str_of(v: Option<&Value>) -> Option<&str> {
    v.and_then(Value::as_str)
}

/// Term ids while building: each term once, and each word's term (stemming a
/// word once, however often it occurs).
#[derive(Default)]
struct Interner {
    terms: HashMap<String, u32>,
    words: HashMap<String, u32>,
}

impl Interner {
    fn term(&mut self, term: &str) -> u32 {
        if let Some(&id) = self.terms.get(term) {
            return id;
        }
        let id = self.terms.len() as u32;
        self.terms.insert(term.to_string(), id);
        id
    }

    fn word(&mut self, word: &str) -> u32 {
        if let Some(&id) = self.words.get(word) {
            return id;
        }
        let id = self.term(&text::stem(word));
        self.words.insert(word.to_string(), id);
        id
    }

    /// Pushes (term, field) for every term of `doc`, at most [`MAX_FIELD_TERMS`]
    /// per field.
    fn fields(&mut self, doc: &ToolDoc<'_>, out: &mut Vec<(u32, usize)>) {
        // The name without the upstream's prefix: that is the upstream field's.
        let name = text::term_list(doc.name, text::Mode::Index);
        let prefix = text::term_list(doc.upstream, text::Mode::Index);
        let own = if name.len() > prefix.len() && name.starts_with(&prefix) {
            &name[prefix.len()..]
        } else {
            &name[..]
        };
        for term in own.iter().take(MAX_FIELD_TERMS) {
            out.push((self.term(term), NAME));
        }
        let mut counts = [0usize; FIELDS];
        let mut add = |field: usize, text: &str| {
            text::words(text, text::Mode::Index, &mut |w| {
                if counts[field] < MAX_FIELD_TERMS {
                    counts[field] += 1;
                    out.push((self.word(w), field));
                }
            });
        };
        let title = str_of(doc.tool.get("title"));
        let annotated = str_of(doc.tool.get("annotations").and_then(|a| a.get("title")));
        for t in [title, annotated.filter(|a| Some(*a) != title)]
            .into_iter()
            .flatten()
        {
            add(TITLE, t);
        }
        if let Some(d) = str_of(doc.tool.get("description")) {
            add(DESCRIPTION, d);
        }
        let properties = doc
            .tool
            .get("inputSchema")
            .and_then(|s| s.get("properties"))
            .and_then(Value::as_object);
        for (key, schema) in properties.into_iter().flatten() {
            add(PARAMETERS, key);
            for member in ["title", "description"] {
                if let Some(t) = str_of(schema.get(member)) {
                    add(PARAMETERS, t);
                }
            }
        }
        add(UPSTREAM, doc.upstream);
    }
}
