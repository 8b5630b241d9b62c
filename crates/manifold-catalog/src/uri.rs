//! Canonical resource URIs: the one spelling of a URI that resource rules
//! (`[[policy]]` `resources`) match and that the upstream then receives.
//!
//! A rule that matches the text a client sent is easy to get around:
//! `file:///srv/docs/../secret` passes an allow of `file:///srv/docs/*`, and
//! `./private`, `%70rivate` or `//private` slip past a deny of
//! `file:///srv/docs/private/*`, while the upstream reads what they mean. So
//! [`canonical`] rewrites a URI into its normal form and refuses what stays
//! ambiguous, and the gateway matches and forwards that form only.
//!
//! Normal form (RFC 3986 §6.2.2, in its order, then §6.2.3 for a few schemes):
//! - scheme and host in lower case;
//! - percent-encoding: an escaped unreserved character (`ALPHA DIGIT - . _ ~`)
//!   is decoded (`%41` → `A`, `%2e` → `.`), every other escape is written with
//!   upper-case hex (`%3a` → `%3A`); a raw non-ASCII character is written as
//!   the escapes of its UTF-8 bytes (RFC 3987 §3.1), so `é` and `%C3%A9` are
//!   one URI; in the query and fragment an escaped `/` or `?` is written
//!   plain (servers decode values before use, so `file=a%2Fb` is `file=a/b`);
//! - dot segments removed from the path (RFC 3986 §5.2.4);
//! - a port read as a number (`0443` → `443`), an empty port's `:` dropped;
//!   `http`/`https`/`ws`/`wss`: the default port dropped and an empty path
//!   written `/`; `file`: `file://localhost/p` and
//!   `file:/p` written `file:///p` (RFC 8089 §2).
//!
//! Refused ([`UriError`]), because parsers disagree on what they mean: no
//! scheme; a space, control character or backslash; a `%` not followed by two
//! hex digits; in the path an encoded `/` (`%2F`), `\` (`%5C`) or NUL (`%00`),
//! or an empty segment (`//`); in the query or fragment an encoded `\` or
//! NUL, or a `.`/`..` segment of a value (split on `/`, `&`, `=`, `;`: a
//! server that joins a value onto a file path would climb out); userinfo in an
//! `http`-family URI (RFC 9110 §4.2.4); a host ending with `.`, or with a
//! bracket outside one IP literal; a port that is not a number.
//!
//! Invariants: pure and total — any input gives a value or an error, never a
//! panic; linear in the input; idempotent (`canonical(canonical(x)) ==
//! canonical(x)`, a property test and the `uri` fuzz target check it); the
//! path's letters keep their case (RFC 3986 paths are case-sensitive).
//!
//! Not here: deciding when to apply it (the server does, whenever a resource
//! rule can apply to the caller), matching globs (`filter`), IP address
//! spellings (`http://2130706433/`) and IDNA (hosts are not converted to
//! punycode).

use std::fmt::Write as _;

/// Why a URI has no canonical form.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum UriError {
    #[error("it is not an absolute URI (RFC 3986 §4.3: `scheme:…`)")]
    NoScheme,
    #[error("it holds a space or a control character; percent-encode it")]
    Unencoded,
    #[error(
        "it holds a backslash, which parsers read differently; write `/`, or %5C outside the path"
    )]
    Backslash,
    #[error("a `%` is not followed by two hex digits")]
    BadEscape,
    #[error("its path holds an encoded `/` (%2F) or `\\` (%5C), which servers decode differently")]
    EncodedSeparator,
    #[error("its path holds an encoded NUL (%00)")]
    EncodedNul,
    #[error("its path has an empty segment (`//`)")]
    EmptySegment,
    #[error("its query or fragment holds a `.` or `..` segment")]
    DotSegmentOutsidePath,
    #[error(
        "its query or fragment holds an encoded `\\` (%5C) or NUL (%00), which servers decode differently"
    )]
    EncodedInQuery,
    #[error("an http(s) or ws(s) URI may not carry userinfo (RFC 9110 §4.2.4)")]
    Userinfo,
    #[error("its host ends with `.`")]
    TrailingDotHost,
    #[error("its host has a `[` or `]` outside one bracketed IP literal")]
    BadHost,
    #[error("its port is not a number")]
    BadPort,
}

/// The canonical form of `uri`, or why it has none (see the module docs).
pub fn canonical(uri: &str) -> Result<String, UriError> {
    canonical_as(uri, false)
}

/// [`canonical`]; a `pattern` keeps an empty path empty (`https://*` is a
/// prefix, not `https://*/`).
fn canonical_as(uri: &str, pattern: bool) -> Result<String, UriError> {
    if uri.bytes().any(|b| b <= b' ' || b == 0x7f) {
        return Err(UriError::Unencoded);
    }
    if uri.contains('\\') {
        return Err(UriError::Backslash);
    }
    let (scheme, rest) = split_scheme(uri).ok_or(UriError::NoScheme)?;
    let scheme = scheme.to_ascii_lowercase();
    let (before_fragment, fragment) = match rest.split_once('#') {
        Some((b, f)) => (b, Some(f)),
        None => (rest, None),
    };
    let (hier, query) = match before_fragment.split_once('?') {
        Some((h, q)) => (h, Some(q)),
        None => (before_fragment, None),
    };
    let (authority, raw_path) = match hier.strip_prefix("//") {
        Some(a) => {
            let end = a.find('/').unwrap_or(a.len());
            (Some(&a[..end]), &a[end..])
        }
        None => (None, hier),
    };

    let mut authority = match authority {
        Some(a) => Some(canonical_authority(&scheme, a)?),
        None => None,
    };
    let mut path = normalize_escapes(raw_path, false)?;
    check_path(&path)?;
    path = remove_dot_segments(&path);
    check_path(&path)?;
    let query = query.map(canonical_query).transpose()?;
    let fragment = fragment.map(canonical_query).transpose()?;

    match scheme.as_str() {
        "http" | "https" | "ws" | "wss" if authority.is_some() && path.is_empty() && !pattern => {
            path.push('/');
        }
        "file" => {
            // RFC 8089 §2: `file:/p`, `file:///p` and `file://localhost/p`
            // name one file.
            match authority.as_deref() {
                None if path.starts_with('/') => authority = Some(String::new()),
                Some("localhost") => authority = Some(String::new()),
                _ => {}
            }
        }
        _ => {}
    }

    let mut out = String::with_capacity(uri.len() + 8);
    out.push_str(&scheme);
    out.push(':');
    if let Some(a) = &authority {
        out.push_str("//");
        out.push_str(a);
    }
    out.push_str(&path);
    if let Some(q) = &query {
        out.push('?');
        out.push_str(q);
    }
    if let Some(f) = &fragment {
        out.push('#');
        out.push_str(f);
    }
    Ok(out)
}

/// A query or fragment in normal form. Servers decode a query's values
/// before they use them (an RFC 6570 `{?file}` template reads `private%2Fx`
/// as `private/x`), so a rule must see what they see: an escaped `/` or `?`
/// is written plain (both mean the same as data in a query, RFC 3986 §3.4),
/// an escaped `\` or NUL is refused, and a `.` or `..` segment of any value
/// (between `/`, `&`, `=` and `;`) is refused — a server that joins a value
/// onto a file path would climb out with it.
fn canonical_query(part: &str) -> Result<String, UriError> {
    let mut part = normalize_escapes(part, false)?;
    if part.contains("%5C") || part.contains("%00") {
        return Err(UriError::EncodedInQuery);
    }
    if part.contains("%2F") || part.contains("%3F") {
        part = part.replace("%2F", "/").replace("%3F", "?");
    }
    if part
        .split(['/', '&', '=', ';'])
        .any(|s| s == "." || s == "..")
    {
        return Err(UriError::DotSegmentOutsidePath);
    }
    Ok(part)
}

/// A `[[policy]]` `resources` glob (or a template string) in the canonical
/// form of the URIs it is matched against, so `FILE:///x/*` and
/// `file:///x/%7Euser` mean what they say; a pattern with no canonical form
/// (no scheme, such as `*`, or one that would be refused as a URI) is kept as
/// written. Glob characters survive: `*` is a sub-delimiter and is never
/// decoded, and `?` starts the query, which keeps its characters.
pub fn canonical_pattern(pattern: &str) -> String {
    canonical_as(pattern, true).unwrap_or_else(|_| pattern.to_string())
}

/// `scheme` and what follows its `:`, when `uri` starts with a scheme
/// (`ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) ":"`).
fn split_scheme(uri: &str) -> Option<(&str, &str)> {
    let colon = uri.find(':')?;
    let scheme = &uri[..colon];
    let mut chars = scheme.chars();
    let first = chars.next()?;
    let valid = first.is_ascii_alphabetic()
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    valid.then(|| (scheme, &uri[colon + 1..]))
}

/// `[userinfo@]host[:port]` in canonical form for `scheme`.
fn canonical_authority(scheme: &str, authority: &str) -> Result<String, UriError> {
    let (userinfo, host_port) = match authority.rfind('@') {
        Some(at) => (Some(&authority[..at]), &authority[at + 1..]),
        None => (None, authority),
    };
    let http_family = matches!(scheme, "http" | "https" | "ws" | "wss");
    if userinfo.is_some() && http_family {
        return Err(UriError::Userinfo);
    }
    // An IP literal is bracketed; any other host ends at the first `:`. A
    // port is digits (RFC 3986 §3.2.3), read as a number (`0443` is 443).
    let (host, port) = if host_port.starts_with('[') {
        let close = host_port.find(']').ok_or(UriError::BadHost)?;
        let (literal, after) = host_port.split_at(close + 1);
        if literal[1..].contains('[') {
            return Err(UriError::BadHost);
        }
        match after {
            "" => (literal, None),
            _ => (
                literal,
                Some(after.strip_prefix(':').ok_or(UriError::BadHost)?),
            ),
        }
    } else {
        match host_port.split_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (host_port, None),
        }
    };
    if !host.starts_with('[') && host.contains(['[', ']']) {
        return Err(UriError::BadHost);
    }
    let host = normalize_escapes(host, true)?;
    if host.ends_with('.') {
        return Err(UriError::TrailingDotHost);
    }
    let port = match port.filter(|p| !p.is_empty()) {
        Some(p) if !p.bytes().all(|b| b.is_ascii_digit()) => return Err(UriError::BadPort),
        Some(p) => Some(match p.trim_start_matches('0') {
            "" => "0",
            digits => digits,
        }),
        None => None,
    };
    let default = match scheme {
        "http" | "ws" => Some("80"),
        "https" | "wss" => Some("443"),
        _ => None,
    };
    let port = port.filter(|p| Some(*p) != default);
    let mut out = String::with_capacity(authority.len());
    if let Some(u) = userinfo {
        out.push_str(&normalize_escapes(u, false)?);
        out.push('@');
    }
    out.push_str(&host);
    if let Some(p) = port {
        out.push(':');
        out.push_str(p);
    }
    Ok(out)
}

/// Decodes escaped unreserved characters, upper-cases the hex of the other
/// escapes, escapes raw non-ASCII characters; `lower` also lower-cases the
/// letters (a host).
fn normalize_escapes(s: &str, lower: bool) -> Result<String, UriError> {
    let bytes = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b == b'%' {
            let hex = |j: usize| bytes.get(j).and_then(|c| (*c as char).to_digit(16));
            let (Some(hi), Some(lo)) = (hex(i + 1), hex(i + 2)) else {
                return Err(UriError::BadEscape);
            };
            let decoded = (hi * 16 + lo) as u8;
            if is_unreserved(decoded) {
                out.push(if lower {
                    decoded.to_ascii_lowercase()
                } else {
                    decoded
                } as char);
            } else {
                let _ = write!(out, "%{decoded:02X}");
            }
            i += 3;
        } else if b.is_ascii() {
            out.push(if lower { b.to_ascii_lowercase() } else { b } as char);
            i += 1;
        } else {
            // A raw non-ASCII character: `s` is UTF-8, so its bytes up to the
            // next ASCII byte are whole characters.
            let end = bytes[i..]
                .iter()
                .position(u8::is_ascii)
                .map_or(bytes.len(), |n| i + n);
            for byte in &bytes[i..end] {
                let _ = write!(out, "%{byte:02X}");
            }
            i = end;
        }
    }
    Ok(out)
}

fn is_unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~')
}

/// What a normalized path may not hold.
fn check_path(path: &str) -> Result<(), UriError> {
    if path.contains("%2F") || path.contains("%5C") {
        return Err(UriError::EncodedSeparator);
    }
    if path.contains("%00") {
        return Err(UriError::EncodedNul);
    }
    if path.contains("//") {
        return Err(UriError::EmptySegment);
    }
    Ok(())
}

/// RFC 3986 §5.2.4, step by step: each step consumes input, so it ends; the
/// output only ever loses its last segment, so it stays linear.
fn remove_dot_segments(path: &str) -> String {
    let mut input = path;
    let mut out = String::with_capacity(path.len());
    let pop = |out: &mut String| match out.rfind('/') {
        Some(i) => out.truncate(i),
        None => out.clear(),
    };
    while !input.is_empty() {
        if let Some(r) = input.strip_prefix("../") {
            input = r;
        } else if let Some(r) = input.strip_prefix("./") {
            input = r;
        } else if input.starts_with("/./") {
            input = &input[2..];
        } else if input == "/." {
            input = "/";
        } else if input.starts_with("/../") {
            input = &input[3..];
            pop(&mut out);
        } else if input == "/.." {
            input = "/";
            pop(&mut out);
        } else if input == "." || input == ".." {
            input = "";
        } else {
            let start = usize::from(input.starts_with('/'));
            let end = input[start..].find('/').map_or(input.len(), |n| start + n);
            out.push_str(&input[..end]);
            input = &input[end..];
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// URI-like text built from the pieces that matter: schemes in any case,
    /// hosts, ports, dot segments plain and escaped, escapes of every kind,
    /// non-ASCII, separators, queries and fragments.
    fn uri_like() -> impl Strategy<Value = String> {
        let scheme = prop::sample::select(vec![
            "file:", "FILE:", "https:", "HTTP:", "ws:", "demo:", "urn:", "x-y.z+1:", "", "1x:",
        ]);
        let piece = prop::sample::select(vec![
            "//",
            "/",
            "/",
            "/",
            "a",
            "B",
            ".",
            "..",
            "%2e",
            "%2E%2e",
            "%2f",
            "%5C",
            "%41",
            "%7e",
            "%c3%a9",
            "é",
            "日",
            "localhost",
            "Host.Example",
            ":",
            ":443",
            ":80",
            "@",
            "?",
            "#",
            "%",
            "%0",
            "%00",
            "*",
            "{id}",
            "~",
            "-",
            "_",
            "[::1]",
            "%zz",
        ]);
        (scheme, prop::collection::vec(piece, 0..16))
            .prop_map(|(s, pieces)| format!("{s}{}", pieces.concat()))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4096))]

        #[test]
        fn canonical_is_idempotent_on_uri_like_text(uri in uri_like()) {
            if let Ok(once) = canonical(&uri) {
                prop_assert_eq!(canonical(&once), Ok(once.clone()), "{} -> {}", uri, once);
                prop_assert_eq!(canonical_pattern(&once), once);
            }
        }

        #[test]
        fn canonical_never_panics_and_is_idempotent_on_anything(uri in any::<String>()) {
            if let Ok(once) = canonical(&uri) {
                prop_assert_eq!(canonical(&once), Ok(once.clone()));
            }
        }

        #[test]
        fn canonical_paths_hold_no_dot_segments_nor_lower_case_escapes(uri in uri_like()) {
            if let Ok(c) = canonical(&uri) {
                let path_end = c.find(['?', '#']).unwrap_or(c.len());
                let path = &c[..path_end];
                prop_assert!(!path.split('/').skip(1).any(|s| s == "." || s == ".."), "{}", c);
                let bytes = c.as_bytes();
                for (i, b) in bytes.iter().enumerate() {
                    if *b == b'%' {
                        let hex = &c[i + 1..i + 3];
                        prop_assert!(hex.chars().all(|h| h.is_ascii_digit() || h.is_ascii_uppercase()), "{}", c);
                        let v = u8::from_str_radix(hex, 16).expect("hex");
                        prop_assert!(!is_unreserved(v), "{}", c);
                    }
                }
                prop_assert!(c.is_ascii(), "{}", c);
            }
        }
    }

    #[test]
    fn normal_forms() {
        let cases: &[(&str, &str)] = &[
            // Already canonical: unchanged.
            ("file:///srv/docs/a.txt", "file:///srv/docs/a.txt"),
            ("demo://readme", "demo://readme"),
            ("urn:isbn:0451450523", "urn:isbn:0451450523"),
            ("db://Prod/Table", "db://prod/Table"),
            // Case: scheme and host only.
            ("FILE:///srv/Docs/A.txt", "file:///srv/Docs/A.txt"),
            (
                "HTTPS://Docs.Example.COM/Private/X",
                "https://docs.example.com/Private/X",
            ),
            // Percent-encoding: unreserved decoded, the rest upper-case hex.
            ("file:///srv/docs/%70rivate/x", "file:///srv/docs/private/x"),
            ("file:///srv/%7euser/%41", "file:///srv/~user/A"),
            (
                "file:///a%3ab?x=%2f%3d#%c3%a9",
                "file:///a%3Ab?x=/%3D#%C3%A9",
            ),
            // A query's escaped `/` and `?` are the same data written plain.
            (
                "docs://read?file=private%2Fsecret",
                "docs://read?file=private/secret",
            ),
            ("docs://read?q=a%3Fb%26c", "docs://read?q=a?b%26c"),
            ("https://%49ntranet.example/", "https://intranet.example/"),
            ("file:///docs/é.txt", "file:///docs/%C3%A9.txt"),
            ("file:///docs/%c3%a9.txt", "file:///docs/%C3%A9.txt"),
            ("file:///日本/x", "file:///%E6%97%A5%E6%9C%AC/x"),
            // Dot segments, plain and encoded.
            (
                "file:///srv/docs/../secret/payroll.txt",
                "file:///srv/secret/payroll.txt",
            ),
            (
                "file:///srv/docs/%2e%2e/secret/payroll.txt",
                "file:///srv/secret/payroll.txt",
            ),
            ("file:///srv/docs/%2E%2E/secret", "file:///srv/secret"),
            ("file:///srv/docs/.%2e/secret", "file:///srv/secret"),
            ("file:///srv/docs/./private/x", "file:///srv/docs/private/x"),
            (
                "file:///srv/docs/a/./b/../c.txt",
                "file:///srv/docs/a/c.txt",
            ),
            ("file:///../../etc/passwd", "file:///etc/passwd"),
            ("file:///srv/docs/.", "file:///srv/docs/"),
            ("file:///srv/docs/..", "file:///srv/"),
            ("file:///srv/docs/", "file:///srv/docs/"),
            ("x:a/../b", "x:/b"),
            ("demo://item/..", "demo://item/"),
            // Dots in the query are not path segments.
            ("file:///a?v=1..2", "file:///a?v=1..2"),
            // Scheme-based: ports, empty paths, file hosts.
            ("https://h.example:443/x", "https://h.example/x"),
            ("http://h.example:80", "http://h.example/"),
            ("http://h.example:8080/x", "http://h.example:8080/x"),
            ("https://h.example:0443/x", "https://h.example/x"),
            ("db://h:007/x", "db://h:7/x"),
            ("db://h:000/x", "db://h:0/x"),
            ("https://h.example:/x", "https://h.example/x"),
            ("db://h:/x", "db://h/x"),
            ("db://u%41@H:5432/x", "db://uA@h:5432/x"),
            ("https://[::1]:443/x", "https://[::1]/x"),
            ("https://[FE80::1]:8443/x", "https://[fe80::1]:8443/x"),
            ("file://localhost/srv/x", "file:///srv/x"),
            ("file:/srv/x", "file:///srv/x"),
            ("file://server/share/x", "file://server/share/x"),
            // Glob characters survive (patterns go through the same function).
            ("file:///srv/docs/*", "file:///srv/docs/*"),
            ("demo://item/{id}", "demo://item/{id}"),
        ];
        for (input, want) in cases {
            assert_eq!(canonical(input).as_deref(), Ok(*want), "{input}");
            assert_eq!(canonical(want).as_deref(), Ok(*want), "{want} is canonical");
        }
    }

    #[test]
    fn ambiguous_uris_are_refused() {
        use UriError as E;
        let cases: &[(&str, UriError)] = &[
            ("", E::NoScheme),
            ("/srv/docs/x", E::NoScheme),
            ("srv/docs", E::NoScheme),
            ("1abc:x", E::NoScheme),
            ("file:///srv/docs//private/x", E::EmptySegment),
            ("file:////srv/x", E::EmptySegment),
            ("file:///srv/docs/a/..//x", E::EmptySegment),
            ("file:///srv/docs%2fprivate/x", E::EncodedSeparator),
            ("file:///srv/docs%2Fprivate/x", E::EncodedSeparator),
            ("file:///srv/docs%5cprivate", E::EncodedSeparator),
            ("file:///srv/docs/x.txt%00.pdf", E::EncodedNul),
            ("file:///srv\\docs", E::Backslash),
            ("file:///srv/docs/a b", E::Unencoded),
            ("file:///srv/docs/x\t", E::Unencoded),
            (" file:///srv", E::Unencoded),
            ("file:///srv/\u{7f}", E::Unencoded),
            ("file:///srv/%zz", E::BadEscape),
            ("file:///srv/%4", E::BadEscape),
            (
                "file:///srv/docs/x?a=/../../secret",
                E::DotSegmentOutsidePath,
            ),
            ("file:///srv/docs/x#/..", E::DotSegmentOutsidePath),
            ("file:///srv/docs/x?..", E::DotSegmentOutsidePath),
            (
                "file:///srv/docs/x?a=%2F%2e%2e%2Fsecret",
                E::DotSegmentOutsidePath,
            ),
            // A query value that starts at `.` or `..` (a `{?file}` template).
            (
                "docs://read?file=./private/secret",
                E::DotSegmentOutsidePath,
            ),
            (
                "docs://read?file=%2E/private/secret",
                E::DotSegmentOutsidePath,
            ),
            ("docs://read?file=..%2Fsecret", E::DotSegmentOutsidePath),
            ("docs://read?a=1&file=..", E::DotSegmentOutsidePath),
            ("docs://read?file=.", E::DotSegmentOutsidePath),
            ("docs://read?file=a%5Cb", E::EncodedInQuery),
            ("docs://read?file=x%00.pdf", E::EncodedInQuery),
            ("docs://read#x%5cy", E::EncodedInQuery),
            ("https://user@intranet.example/private", E::Userinfo),
            ("https://intranet.example./private", E::TrailingDotHost),
            ("ffile://PW::/r", E::BadPort),
            ("https://h:44x/", E::BadPort),
            ("https://[::1/x", E::BadHost),
            ("https://[::1]x/", E::BadHost),
            ("https://a]b/", E::BadHost),
            ("https://[[::1]/", E::BadHost),
        ];
        for (input, want) in cases {
            assert_eq!(canonical(input), Err(*want), "{input:?}");
        }
    }

    #[test]
    fn patterns_without_a_canonical_form_are_kept() {
        assert_eq!(canonical_pattern("*"), "*");
        assert_eq!(canonical_pattern("*secret*"), "*secret*");
        assert_eq!(canonical_pattern("FILE:///Srv/*"), "file:///Srv/*");
        assert_eq!(
            canonical_pattern("file:///srv/%7Euser/*"),
            "file:///srv/~user/*"
        );
        assert_eq!(canonical_pattern("file:///a//b/*"), "file:///a//b/*");
        assert_eq!(canonical_pattern("HTTPS://*"), "https://*");
        assert_eq!(
            canonical_pattern("https://Intranet.Example.com:443/*"),
            "https://intranet.example.com/*"
        );
    }

    #[test]
    fn dot_segment_removal_follows_rfc_3986_section_5_2_4() {
        // The RFC's own walk-throughs (§5.2.4) and the abnormal examples of §5.4.2.
        for (input, want) in [
            ("/a/b/c/./../../g", "/a/g"),
            ("mid/content=5/../6", "mid/6"),
            ("/../g", "/g"),
            ("/../../g", "/g"),
            ("/./g", "/g"),
            ("/g.", "/g."),
            ("/.g", "/.g"),
            ("/g..", "/g.."),
            ("/..g", "/..g"),
            ("/b/c/./../g", "/b/g"),
            ("/b/c/./g/.", "/b/c/g/"),
            ("/b/c/g/./h", "/b/c/g/h"),
            ("/b/c/g/../h", "/b/c/h"),
            ("", ""),
            ("..", ""),
        ] {
            assert_eq!(remove_dot_segments(input), want, "{input}");
        }
    }
}
