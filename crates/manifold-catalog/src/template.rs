//! Matching a concrete URI against an RFC 6570 URI template, to find which upstream
//! owns a URI that appears in no resource list (`resources/read` of `file:///x.txt`
//! against a template `file:///{path}`).
//!
//! Invariants:
//! - matching is a pure function of (template, uri), iterative (no recursion, so no
//!   template can overflow the stack), and linear: one pass over the URI per
//!   template part, O((parts + literal length) · URI length) time and O(URI length)
//!   memory, whatever the input (a hostile upstream publishes the templates, any
//!   client sends the URIs);
//! - templates are bounded at parse time: at most [`MAX_TEMPLATE_EXPRESSIONS`]
//!   expressions and [`MAX_TEMPLATE_LEN`] bytes; a URI longer than
//!   [`MAX_MATCH_URI_LEN`] matches no template.
//!
//! Not here: expanding templates, or extracting variable values. Manifold only needs
//! "could this template have produced this URI?".

/// Expressions one template may have; beyond, it is left out of the merged list.
pub const MAX_TEMPLATE_EXPRESSIONS: usize = 32;
/// Bytes one template may have; beyond, it is left out of the merged list.
pub const MAX_TEMPLATE_LEN: usize = 2048;
/// The longest URI matched against templates; a longer one belongs to no template.
pub const MAX_MATCH_URI_LEN: usize = 8192;

/// A parsed template: literals and expressions in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UriTemplate {
    parts: Vec<Part>,
    literal_len: usize,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Literal(Vec<char>),
    /// An expression by its operator (`None` = simple string expansion).
    Expr(Option<char>),
}

/// Why a template could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid URI template: {0}")]
pub struct TemplateError(String);

impl UriTemplate {
    pub fn parse(template: &str) -> Result<UriTemplate, TemplateError> {
        if template.len() > MAX_TEMPLATE_LEN {
            return Err(TemplateError(format!(
                "{} bytes (at most {MAX_TEMPLATE_LEN})",
                template.len()
            )));
        }
        let mut parts = Vec::new();
        let mut literal = String::new();
        let mut rest = template;
        let mut expressions = 0;
        while let Some(open) = rest.find('{') {
            literal.push_str(&rest[..open]);
            let after = &rest[open + 1..];
            let close = after
                .find('}')
                .ok_or_else(|| TemplateError("unclosed `{`".into()))?;
            let body = &after[..close];
            if body.is_empty() {
                return Err(TemplateError("empty expression `{}`".into()));
            }
            expressions += 1;
            if expressions > MAX_TEMPLATE_EXPRESSIONS {
                return Err(TemplateError(format!(
                    "more than {MAX_TEMPLATE_EXPRESSIONS} expressions"
                )));
            }
            let op = body
                .chars()
                .next()
                .filter(|c| matches!(c, '+' | '#' | '.' | '/' | ';' | '?' | '&'));
            if !literal.is_empty() {
                parts.push(Part::Literal(
                    std::mem::take(&mut literal).chars().collect(),
                ));
            }
            parts.push(Part::Expr(op));
            rest = &after[close + 1..];
        }
        if rest.contains('}') {
            return Err(TemplateError("`}` without `{`".into()));
        }
        literal.push_str(rest);
        if !literal.is_empty() {
            parts.push(Part::Literal(literal.chars().collect()));
        }
        let literal_len = parts
            .iter()
            .map(|p| match p {
                Part::Literal(l) => l.iter().map(|c| c.len_utf8()).sum(),
                Part::Expr(_) => 0,
            })
            .sum();
        Ok(UriTemplate { parts, literal_len })
    }

    /// Characters of literal text: more literal text = a more specific template.
    pub fn literal_len(&self) -> usize {
        self.literal_len
    }

    /// Whether some expansion of the template equals `uri`.
    pub fn matches(&self, uri: &str) -> bool {
        if uri.len() > MAX_MATCH_URI_LEN {
            return false;
        }
        let uri: Vec<char> = uri.chars().collect();
        let m = uri.len();
        // `at[p]`: the parts so far can expand to exactly `uri[..p]`.
        let mut at = vec![false; m + 1];
        at[0] = true;
        let mut next = vec![false; m + 1];
        for part in &self.parts {
            next.iter_mut().for_each(|b| *b = false);
            match part {
                Part::Literal(l) => {
                    for p in (0..=m).filter(|&p| at[p]) {
                        if uri[p..].starts_with(l) {
                            next[p + l.len()] = true;
                        }
                    }
                }
                Part::Expr(op) => expand(*op, &uri, &at, &mut next),
            }
            std::mem::swap(&mut at, &mut next);
            if !at.contains(&true) {
                return false;
            }
        }
        at[m]
    }
}

/// One expression's step: from every reachable start, every end its expansion
/// can reach. An expression may expand to nothing (undefined variables); with a
/// leader (`/`, `.`, `#`, …) a non-empty expansion starts with it; the rest is a
/// run of characters the operator allows. One left-to-right sweep: `open` says
/// some start lies behind the current position with only allowed characters
/// between.
fn expand(op: Option<char>, uri: &[char], at: &[bool], out: &mut [bool]) {
    let m = uri.len();
    // The empty expansion.
    for p in 0..=m {
        out[p] |= at[p];
    }
    // Where the run of allowed characters may start, and whether ending right
    // there already counts as a non-empty expansion (after a leader, it does).
    let mut starts = vec![false; m + 1];
    match leader(op) {
        Some(c) => {
            for p in (0..m).filter(|&p| at[p] && uri[p] == c) {
                starts[p + 1] = true;
                out[p + 1] = true;
            }
        }
        None => starts[..=m].copy_from_slice(&at[..=m]),
    }
    let mut open = false;
    for e in 0..m {
        out[e] |= open;
        if allowed(op, uri[e]) {
            open |= starts[e];
        } else {
            open = false;
        }
    }
    out[m] |= open;
}

/// Whether `c` may appear in the expansion of an expression with operator `op`.
/// Simple and label/path expansions percent-encode reserved characters, so a `/`,
/// `?` or `#` in the URI ends them; `+` and `#` keep reserved characters.
fn allowed(op: Option<char>, c: char) -> bool {
    match op {
        None | Some('.') | Some(';') => !matches!(c, '/' | '?' | '#' | '&'),
        Some('/') => !matches!(c, '?' | '#'),
        Some('?') | Some('&') => c != '#',
        Some('+') | Some('#') => true,
        Some(_) => false,
    }
}

/// The prefix an expansion with this operator starts with, when not empty.
fn leader(op: Option<char>) -> Option<char> {
    match op {
        Some(c @ ('#' | '.' | '/' | ';' | '?' | '&')) => Some(c),
        _ => None,
    }
}

#[cfg(test)]
mod tests;
