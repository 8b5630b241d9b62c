//! Matching a concrete URI against an RFC 6570 URI template, to find which upstream
//! owns a URI that appears in no resource list (`resources/read` of `file:///x.txt`
//! against a template `file:///{path}`).
//!
//! Invariants: matching is a pure function of (template, uri); it never allocates
//! per character and backtracks over at most one choice per expression, so a
//! template of `n` expressions against a URI of length `m` costs O(n·m²) at worst
//! (both are bounded by the list and message limits).
//!
//! Not here: expanding templates, or extracting variable values. Manifold only needs
//! "could this template have produced this URI?".

/// A parsed template: literals and expressions in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UriTemplate {
    parts: Vec<Part>,
    literal_len: usize,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Literal(String),
    /// An expression by its operator (`None` = simple string expansion).
    Expr(Option<char>),
}

/// Why a template could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid URI template: {0}")]
pub struct TemplateError(&'static str);

impl UriTemplate {
    pub fn parse(template: &str) -> Result<UriTemplate, TemplateError> {
        let mut parts = Vec::new();
        let mut literal = String::new();
        let mut rest = template;
        while let Some(open) = rest.find('{') {
            literal.push_str(&rest[..open]);
            let after = &rest[open + 1..];
            let close = after.find('}').ok_or(TemplateError("unclosed `{`"))?;
            let body = &after[..close];
            if body.is_empty() {
                return Err(TemplateError("empty expression `{}`"));
            }
            let op = body
                .chars()
                .next()
                .filter(|c| matches!(c, '+' | '#' | '.' | '/' | ';' | '?' | '&'));
            if !literal.is_empty() {
                parts.push(Part::Literal(std::mem::take(&mut literal)));
            }
            parts.push(Part::Expr(op));
            rest = &after[close + 1..];
        }
        if rest.contains('}') {
            return Err(TemplateError("`}` without `{`"));
        }
        literal.push_str(rest);
        if !literal.is_empty() {
            parts.push(Part::Literal(literal));
        }
        let literal_len = parts
            .iter()
            .map(|p| match p {
                Part::Literal(l) => l.len(),
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
        match_from(&self.parts, uri)
    }
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

fn match_from(parts: &[Part], uri: &str) -> bool {
    let Some((first, rest)) = parts.split_first() else {
        return uri.is_empty();
    };
    match first {
        Part::Literal(l) => uri
            .strip_prefix(l.as_str())
            .is_some_and(|tail| match_from(rest, tail)),
        Part::Expr(op) => {
            // An expression may expand to nothing (undefined variables).
            if match_from(rest, uri) {
                return true;
            }
            let body = match leader(*op) {
                Some(c) => match uri.strip_prefix(c) {
                    Some(b) => b,
                    None => return false,
                },
                None => uri,
            };
            let skipped = uri.len() - body.len();
            // Try every expansion length, longest first (greedy).
            let mut end = body
                .char_indices()
                .find(|&(_, c)| !allowed(*op, c))
                .map(|(i, _)| i)
                .unwrap_or(body.len());
            loop {
                if (end > 0 || skipped > 0) && match_from(rest, &body[end..]) {
                    return true;
                }
                if end == 0 {
                    return false;
                }
                end = body[..end]
                    .char_indices()
                    .next_back()
                    .map(|(i, _)| i)
                    .unwrap_or(0);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_match_what_they_can_expand_to() {
        let cases: &[(&str, &str, bool)] = &[
            ("file:///{path}", "file:///notes.txt", true),
            ("file:///{path}", "file:///dir/notes.txt", false),
            ("file:///{+path}", "file:///dir/notes.txt", true),
            ("test://template/{id}/data", "test://template/42/data", true),
            (
                "test://template/{id}/data",
                "test://template/42/other",
                false,
            ),
            ("test://template/{id}/data", "test://template//data", true),
            ("demo://resource/{id}", "demo://resource/7", true),
            ("demo://resource/{id}", "demo://other/7", false),
            ("github://repos{/owner,repo}", "github://repos/a/b", true),
            ("search://q{?term,page}", "search://q?term=x&page=2", true),
            ("search://q{?term}", "search://q", true),
            ("x://{a}.{b}", "x://left.right", true),
            ("x://{a}{.ext}", "x://file.tar", true),
            ("x://a#frag", "x://a#frag", true),
            ("x://doc{#section}", "x://doc#intro", true),
            ("literal://only", "literal://only", true),
            ("literal://only", "literal://only/more", false),
            ("über://{x}", "über://ä", true),
        ];
        for (template, uri, want) in cases {
            let t = UriTemplate::parse(template).unwrap();
            assert_eq!(t.matches(uri), *want, "{template} vs {uri}");
        }
    }

    #[test]
    fn malformed_templates_are_errors() {
        for bad in ["x://{", "x://{}", "x://}"] {
            assert!(UriTemplate::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn specificity_counts_literal_text() {
        let a = UriTemplate::parse("file:///{path}").unwrap();
        let b = UriTemplate::parse("file:///docs/{path}").unwrap();
        assert!(b.literal_len() > a.literal_len());
    }
}
