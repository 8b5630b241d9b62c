//! A URL as it may appear in an error, a log line or a status page: scheme,
//! host, port and path, never the userinfo or the query.
//!
//! Why: operators write secrets into upstream URLs (`?api_key=${KEY}`,
//! `https://${TOKEN}@host/mcp`), and error texts travel far — to `/readyz`, to
//! `/upstreams`, into a tool error a model reads, into the logs. `/config`
//! shows the configuration as written (`${KEY}`); every other place that
//! names a URL goes through [`url`] and shows where the gateway went, not what
//! it carried.
//!
//! Invariants: works on any string, parsed or not (a URL that failed to parse
//! is the one most likely to be printed); the result never contains a byte of
//! the userinfo, the query or the fragment; a dropped query or userinfo is
//! marked (`?…`, `…@`) so a reader knows something was there.
//!
//! Not here: redacting configuration values (`manifold-config`'s effective
//! view does that with its own rules for args and environment).

use std::borrow::Cow;

/// `s` with its userinfo and everything from the first `?` or `#` replaced by
/// a marker. A string with neither comes back borrowed.
pub fn url(s: &str) -> Cow<'_, str> {
    let (head, tail_marker) = match s.find(['?', '#']) {
        Some(i) => (&s[..i], true),
        None => (s, false),
    };
    // The authority starts after `scheme://` (or at the start when there is
    // no scheme) and ends at the first `/`.
    let auth_start = head.find("://").map(|i| i + 3).unwrap_or(0);
    let auth_end = head[auth_start..]
        .find('/')
        .map(|i| auth_start + i)
        .unwrap_or(head.len());
    let userinfo_end = head[auth_start..auth_end]
        .rfind('@')
        .map(|i| auth_start + i);
    if userinfo_end.is_none() && !tail_marker {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(head.len() + 4);
    match userinfo_end {
        Some(at) => {
            out.push_str(&head[..auth_start]);
            out.push_str("…@");
            out.push_str(&head[at + 1..]);
        }
        None => out.push_str(head),
    }
    if tail_marker {
        out.push_str("?…");
    }
    Cow::Owned(out)
}

/// Every URL-looking run inside a longer text (an error chain may quote one
/// a library built), redacted as [`url`] does. A run starts at `http://` or
/// `https://` and ends at whitespace, a quote or a closing bracket.
pub fn urls_in(text: &str) -> Cow<'_, str> {
    if !text.contains("://") {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = find_scheme(rest) {
        out.push_str(&rest[..i]);
        let run = &rest[i..];
        let end = run
            .find(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '`' | '>' | ')' | ']'))
            .unwrap_or(run.len());
        out.push_str(&url(&run[..end]));
        rest = &run[end..];
    }
    out.push_str(rest);
    if out == text {
        Cow::Borrowed(text)
    } else {
        Cow::Owned(out)
    }
}

fn find_scheme(s: &str) -> Option<usize> {
    match (s.find("http://"), s.find("https://")) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_lose_their_userinfo_and_query() {
        let cases = [
            ("http://127.0.0.1:9/mcp", "http://127.0.0.1:9/mcp"),
            ("http://h/mcp?api_key=SECRET", "http://h/mcp?…"),
            (
                "https://ghp_TOKEN@api.example.com/mcp",
                "https://…@api.example.com/mcp",
            ),
            ("https://u:p@h:8443/x?k=v#f", "https://…@h:8443/x?…"),
            ("https://h/mcp#SECRET", "https://h/mcp?…"),
            ("https://a@b@h/p", "https://…@h/p"),
            // Not parseable, still redacted.
            ("ht!tp://us er:SECRET@h/p?SECRET", "ht!tp://…@h/p?…"),
            ("SECRET@host", "…@host"),
            // An `@` in the path is not userinfo.
            ("https://h/users/@me", "https://h/users/@me"),
        ];
        for (raw, want) in cases {
            assert_eq!(url(raw), want, "{raw}");
            assert!(!url(raw).contains("SECRET"), "{raw}");
        }
    }

    #[test]
    fn urls_inside_a_text_are_redacted_and_the_rest_kept() {
        let t = "HTTP request to http://h:1/mcp?api_key=SECRET failed: client error (Connect)";
        assert_eq!(
            urls_in(t),
            "HTTP request to http://h:1/mcp?… failed: client error (Connect)"
        );
        let t = "`https://tok@h/a` and (http://x/y?z=SECRET) end";
        assert_eq!(urls_in(t), "`https://…@h/a` and (http://x/y?…) end");
        assert!(matches!(urls_in("no url here"), Cow::Borrowed(_)));
        assert!(matches!(urls_in("http://h/plain"), Cow::Borrowed(_)));
    }
}
