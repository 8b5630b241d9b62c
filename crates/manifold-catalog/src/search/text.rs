//! Text analysis for tool search: the same for what is indexed and for queries.
//!
//! A text is cut into runs of letters and digits; a run is split further where
//! `camelCase` changes case (`mergeRequestIid` → merge, request, iid; `HTTPServer`
//! → http, server; `APIs` stays one word) and between letters and digits (`m10` →
//! m, 10; the whole run `m10` is kept too, so `k8s` and `oauth2` still match as
//! written, and so is a two-part camel-case run: `MongoDB` → mongo, db, mongodb, as
//! brand names are also written in one word). A URL (`scheme://…`) stands for
//! the word `url`. Parts are lowercased; single letters, the stopwords below and parts
//! over [`MAX_TERM_BYTES`] are dropped; ASCII words are stemmed (`porter`).
//! `snake_case` and `kebab-case` split at their separators like any punctuation.
//!
//! Queries ([`query_terms`]): a few idioms are read as what they mean (`who am I`
//! → whoami, `logged in` → authenticated, `to-do` → todo). Query expansion
//! ([`expansions`]): small hand-written tables of abbreviations (`pr` → pull
//! request, `k8s` → kubernetes, …) and groups of words used for one intent
//! (delete/remove/drop, ticket/issue, …); expanded terms count less than the words
//! the caller wrote (see `Ranking::synonym_weight`).
//!
//! Invariants: pure and deterministic; the tables are sorted (checked by a test).

use std::collections::HashMap;
use std::sync::OnceLock;

use super::porter;

/// Longer parts are dropped: they are ids, hashes or base64, not words.
pub const MAX_TERM_BYTES: usize = 40;

/// Function words that say nothing about what a tool does (sorted). `me` and `my`
/// are kept: tools are named after them (`get_me`, `my_issues`).
const STOPWORDS: &[&str] = &[
    "a", "about", "am", "an", "and", "any", "are", "as", "at", "be", "been", "being", "but", "by",
    "can", "could", "did", "do", "does", "for", "from", "had", "has", "have", "he", "her", "here",
    "his", "how", "if", "in", "into", "is", "it", "its", "of", "on", "onto", "or", "our", "please",
    "shall", "she", "should", "so", "some", "than", "that", "the", "their", "them", "then",
    "there", "these", "they", "this", "those", "to", "us", "was", "we", "were", "what", "when",
    "where", "which", "who", "whom", "whose", "why", "will", "with", "would", "you", "your",
];

/// The longest stopword: longer words skip the table.
const MAX_STOPWORD_BYTES: usize = 6;

fn is_stopword(word: &str) -> bool {
    word.len() <= MAX_STOPWORD_BYTES && STOPWORDS.binary_search(&word).is_ok()
}

/// Words that stand for one intent in tool descriptions; a query word of a group
/// also searches for the others.
const GROUPS: &[&[&str]] = &[
    &["delete", "remove", "drop", "destroy", "erase", "kill"],
    &["set", "store", "save", "put"],
    &["upload", "attach"],
    &["send", "post"],
    &["create", "add", "make"],
    &["search", "find", "query", "lookup"],
    &["get", "fetch", "retrieve", "read", "download"],
    &["update", "edit", "modify", "change"],
    &["run", "execute"],
    &["stop", "cancel", "terminate", "halt"],
    &["start", "begin", "launch"],
    &["folder", "directory"],
    &["ticket", "issue"],
    &["picture", "image", "screenshot"],
    &["comment", "note", "reply"],
    &["error", "exception", "failure"],
    &["invoice", "bill"],
    &["publish", "broadcast"],
    &["current", "now"],
    &["navigate", "visit", "browse"],
    &["subscription", "plan"],
];

/// Idioms that name an intent no single word of theirs does (lowercase, words
/// separated by one space; punctuation in the query counts as a space, so `to-do`
/// is `to do`).
const PHRASES: &[(&str, &str)] = &[
    ("logged in", "authenticated"),
    ("sign off", "approve"),
    ("signed in", "authenticated"),
    ("to do", "todo"),
    ("who am i", "whoami authenticated"),
];

/// Abbreviations and one-way expansions: the word on the left also searches for the
/// words on the right (sorted by the left).
const ABBREVIATIONS: &[(&str, &str)] = &[
    ("auth", "authentication"),
    ("bug", "issue"),
    ("cfg", "configuration"),
    ("config", "configuration"),
    ("creds", "credentials"),
    ("db", "database"),
    ("dir", "directory"),
    ("dm", "direct message"),
    ("doc", "documentation"),
    ("docs", "documentation"),
    ("env", "environment"),
    ("info", "information"),
    ("k8s", "kubernetes"),
    ("kube", "kubernetes"),
    ("mongo", "mongodb"),
    ("mr", "merge request"),
    ("msg", "message"),
    ("pr", "pull request"),
    ("prs", "pull requests"),
    ("remember", "memory"),
    ("repo", "repository"),
    ("repos", "repositories"),
];

/// Whether text is a tool's (indexed) or a caller's query: they differ in one
/// thing, a two-part camel-case word (`MongoDB`, `GitHub`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Its parts and the whole word: descriptions say `MongoDB` where a name
    /// says `mongodb`, and identifiers say `connectionId` for connection, id.
    Index,
    /// The whole word only, as if typed in lower case: a brand in a query counts
    /// once, not three times.
    Query,
}

/// Calls `emit` with each word of `text` that can be a term, lowercased but not
/// yet stemmed ([`stem`] it), in order, repeats included.
pub fn words(text: &str, mode: Mode, emit: &mut dyn FnMut(&str)) {
    let mut buffers = Buffers::default();
    for word in text.split_whitespace() {
        if word.contains("://") {
            emit("url");
            continue;
        }
        for c in word.chars().chain(std::iter::once(' ')) {
            if c.is_alphanumeric() {
                buffers.run.push(c);
            } else if !buffers.run.is_empty() {
                buffers.split_run(mode, emit);
                buffers.run.clear();
            }
        }
    }
}

/// The term a word stands for.
pub fn stem(word: &str) -> String {
    porter::stem(word)
}

/// The terms of `text` (stemmed), collected.
pub fn term_list(text: &str, mode: Mode) -> Vec<String> {
    let mut out = Vec::new();
    words(text, mode, &mut |w| out.push(stem(w)));
    out
}

/// Reused between runs, so splitting allocates only when a buffer grows.
#[derive(Default)]
struct Buffers {
    run: Vec<char>,
    cuts: Vec<usize>,
    word: String,
}

impl Buffers {
    fn split_run(&mut self, mode: Mode, emit: &mut dyn FnMut(&str)) {
        let run = &self.run;
        self.cuts.clear();
        let (mut mixed, mut cases) = (false, 0);
        for i in 1..run.len() {
            let (prev, cur) = (run[i - 1], run[i]);
            let digit_edge = prev.is_ascii_digit() != cur.is_ascii_digit();
            let camel = prev.is_lowercase() && cur.is_uppercase();
            // The last capital of an acronym starts the next word (`HTTPServer`),
            // unless what follows is a plural `s` (`APIs`).
            let acronym_end = prev.is_uppercase()
                && cur.is_uppercase()
                && run.get(i + 1).is_some_and(|n| n.is_lowercase())
                && !(run[i + 1] == 's' && i + 2 == run.len());
            if digit_edge || camel || acronym_end {
                mixed |= digit_edge;
                cases += usize::from(!digit_edge);
                self.cuts.push(i);
            }
        }
        let brand = !mixed && cases == 1;
        if !(brand && mode == Mode::Query) {
            let mut start = 0;
            for k in 0..=self.cuts.len() {
                let end = self.cuts.get(k).copied().unwrap_or(run.len());
                part(&run[start..end], &mut self.word, emit);
                start = end;
            }
        }
        // Whole runs too: `k8s`, `oauth2`, and two-part names written in camel case
        // (`GitHub`, `MongoDB`), which are also written in one word (`github`).
        if mixed || brand {
            part(run, &mut self.word, emit);
        }
    }
}

fn part(chars: &[char], word: &mut String, emit: &mut dyn FnMut(&str)) {
    if chars.len() == 1 && chars[0].is_alphabetic() {
        return;
    }
    word.clear();
    for c in chars {
        if c.is_ascii() {
            word.push(c.to_ascii_lowercase());
        } else {
            word.extend(c.to_lowercase());
        }
    }
    if word.len() > MAX_TERM_BYTES || is_stopword(word) {
        return;
    }
    emit(word);
}

/// The terms a query term also searches for (stemmed), or none.
pub fn expansions(term: &str) -> &'static [String] {
    static TABLE: OnceLock<HashMap<String, Vec<String>>> = OnceLock::new();
    let table = TABLE.get_or_init(|| {
        let mut table: HashMap<String, Vec<String>> = HashMap::new();
        let mut add = |from: String, to: Vec<String>| {
            let list = table.entry(from.clone()).or_default();
            for t in to {
                if t != from && !list.contains(&t) {
                    list.push(t);
                }
            }
        };
        for group in GROUPS {
            let stems: Vec<String> = group.iter().map(|w| porter::stem(w)).collect();
            for s in &stems {
                add(s.clone(), stems.clone());
            }
        }
        for (from, to) in ABBREVIATIONS {
            add(porter::stem(from), term_list(to, Mode::Query));
        }
        table
    });
    table.get(term).map(Vec::as_slice).unwrap_or(&[])
}

/// The terms of a query: its idioms (see `PHRASES`) stand for what they mean, in
/// place of their own words.
pub fn query_terms(query: &str) -> Vec<String> {
    let mut terms = term_list(query, Mode::Query);
    let words: Vec<String> = query
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    let normalized = format!(" {} ", words.join(" "));
    for (phrase, meaning) in PHRASES {
        if normalized.contains(&format!(" {phrase} ")) {
            for word in term_list(phrase, Mode::Query) {
                if let Some(i) = terms.iter().position(|t| *t == word) {
                    terms.remove(i);
                }
            }
            terms.extend(term_list(meaning, Mode::Query));
        }
    }
    terms
}

#[cfg(test)]
mod tests {
    use super::*;

    fn index_terms(text: &str) -> Vec<String> {
        term_list(text, Mode::Index)
    }

    #[test]
    fn tables_are_sorted() {
        assert!(STOPWORDS.windows(2).all(|w| w[0] < w[1]));
        assert!(STOPWORDS.iter().all(|w| w.len() <= MAX_STOPWORD_BYTES));
        assert!(ABBREVIATIONS.windows(2).all(|w| w[0].0 < w[1].0));
        assert!(PHRASES.windows(2).all(|w| w[0].0 < w[1].0));
    }

    #[test]
    fn splits_identifiers_the_way_they_are_written() {
        assert_eq!(
            index_terms("list_merge_requests"),
            ["list", "merg", "request"]
        );
        assert_eq!(
            index_terms("atlas-create-free-cluster"),
            ["atla", "creat", "free", "cluster"]
        );
        assert_eq!(index_terms("mergeRequestIid"), ["merg", "request", "iid"]);
        assert_eq!(index_terms("go to https://example.com/a?b"), ["go", "url"]);
        assert_eq!(index_terms("HTTPServer"), ["http", "server", "httpserver"]);
        assert_eq!(index_terms("MongoDB"), ["mongo", "db", "mongodb"]);
        assert_eq!(term_list("MongoDB", Mode::Query), ["mongodb"]);
        assert_eq!(
            term_list("mergeRequestIid", Mode::Query),
            ["merg", "request", "iid"]
        );
        assert_eq!(index_terms("APIs"), ["api"]);
        assert_eq!(index_terms("API-get-self"), ["api", "get", "self"]);
        assert_eq!(index_terms("k8s"), ["8", "k8s"]);
        assert_eq!(index_terms("M10 cluster"), ["10", "m10", "cluster"]);
    }

    #[test]
    fn drops_stopwords_single_letters_and_junk() {
        assert_eq!(index_terms("What is the status of a PR?"), ["statu", "pr"]);
        assert_eq!(index_terms("x y z"), Vec::<String>::new());
        let long = "a".repeat(MAX_TERM_BYTES + 1);
        assert_eq!(index_terms(&format!("{long} ok")), ["ok"]);
        assert_eq!(index_terms("Ünïcode ÉTÉ"), ["ünïcode", "été"]);
    }

    #[test]
    fn idioms_stand_for_their_meaning() {
        assert_eq!(
            query_terms("What's on my to-do list?"),
            ["my", "list", "todo"]
        );
        assert_eq!(
            query_terms("Who am I logged in as, on GitHub"),
            ["github", "authent", "whoami", "authent"]
        );
        assert_eq!(query_terms("photo dossier"), ["photo", "dossier"]);
    }

    #[test]
    fn expansions_cover_groups_and_abbreviations() {
        assert!(expansions("delet").contains(&"remov".to_string()));
        assert!(expansions("remov").contains(&"delet".to_string()));
        assert_eq!(expansions("pr"), ["pull", "request"]);
        assert_eq!(expansions("zebra"), Vec::<String>::new().as_slice());
        assert!(!expansions("issu").contains(&"issu".to_string()));
    }
}
