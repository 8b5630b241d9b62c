use super::*;
use proptest::prelude::*;

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
fn malformed_and_oversized_templates_are_errors() {
    for bad in ["x://{", "x://{}", "x://}"] {
        assert!(UriTemplate::parse(bad).is_err(), "{bad}");
    }
    let many: String = (0..=MAX_TEMPLATE_EXPRESSIONS)
        .map(|i| format!("{{v{i}}}"))
        .collect();
    let e = UriTemplate::parse(&format!("x://{many}")).unwrap_err();
    assert!(e.to_string().contains("expressions"), "{e}");
    let long = format!("x://{}", "a".repeat(MAX_TEMPLATE_LEN));
    let e = UriTemplate::parse(&long).unwrap_err();
    assert!(e.to_string().contains("bytes"), "{e}");
}

#[test]
fn specificity_counts_literal_text() {
    let a = UriTemplate::parse("file:///{path}").unwrap();
    let b = UriTemplate::parse("file:///docs/{path}").unwrap();
    assert!(b.literal_len() > a.literal_len());
}

/// The templates a hostile upstream would publish to pin a CPU with a
/// backtracking matcher, against the longest URIs matched: each answers after one
/// pass per part (a backtracking matcher would take C(m+k, k) steps here, about
/// 10^40 for the first).
#[test]
fn hostile_templates_match_in_one_pass_per_part() {
    let k = MAX_TEMPLATE_EXPRESSIONS;
    let dashed: String = (0..k).map(|i| format!("{{v{i}}}-")).collect();
    let reserved: String = (0..k).map(|i| format!("{{+v{i}}}")).collect();
    let uri = format!("x://{}", "a-".repeat(MAX_MATCH_URI_LEN / 2 - 4));
    for (t, tail) in [
        (format!("x://{dashed}/z"), "/z"),
        (format!("x://{reserved}Z"), "Z"),
    ] {
        let t = UriTemplate::parse(&t).unwrap();
        assert!(!t.matches(&uri), "no expansion ends without {tail}");
        assert!(t.matches(&format!("{uri}{tail}")), "{tail}");
    }
    let too_long = format!("x://{}", "a".repeat(MAX_MATCH_URI_LEN));
    assert!(!UriTemplate::parse("x://{+a}").unwrap().matches(&too_long));
}

/// The previous matcher (exponential in the worst case, correct): the reference
/// the linear one must agree with on small inputs.
fn reference(parts: &[Part], uri: &[char]) -> bool {
    let Some((first, rest)) = parts.split_first() else {
        return uri.is_empty();
    };
    match first {
        Part::Literal(l) => uri.starts_with(l) && reference(rest, &uri[l.len()..]),
        Part::Expr(op) => {
            if reference(rest, uri) {
                return true;
            }
            let body = match leader(*op) {
                Some(c) if uri.first() == Some(&c) => &uri[1..],
                Some(_) => return false,
                None => uri,
            };
            let skipped = uri.len() - body.len();
            let run = body
                .iter()
                .position(|&c| !allowed(*op, c))
                .unwrap_or(body.len());
            (0..=run)
                .rev()
                .any(|end| (end > 0 || skipped > 0) && reference(rest, &body[end..]))
        }
    }
}

fn part() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a/.#?&=-]{1,3}",
        prop::sample::select(vec![
            "{a}", "{+a}", "{#a}", "{.a}", "{/a}", "{;a}", "{?a}", "{&a}"
        ])
        .prop_map(str::to_string),
    ]
}

proptest! {
    #[test]
    fn the_linear_matcher_agrees_with_the_reference(
        parts in prop::collection::vec(part(), 0..6),
        uri in "[a/.#?&=-]{0,12}",
    ) {
        let template = format!("x:{}", parts.concat());
        let t = UriTemplate::parse(&template).unwrap();
        let uri = format!("x:{uri}");
        let chars: Vec<char> = uri.chars().collect();
        prop_assert_eq!(t.matches(&uri), reference(&t.parts, &chars), "{} vs {}", template, uri);
    }

    #[test]
    fn every_expansion_matches(values in prop::collection::vec("[a-z0-9]{0,5}", 3)) {
        // Simple, reserved and path expansions of the generated values.
        let t = UriTemplate::parse("x://{a}/{+b}{/c}/end").unwrap();
        let path = if values[2].is_empty() { String::new() } else { format!("/{}", values[2]) };
        let uri = format!("x://{}/{}{path}/end", values[0], values[1]);
        prop_assert!(t.matches(&uri), "{}", uri);
    }

    #[test]
    fn arbitrary_templates_and_uris_never_panic(template in ".{0,64}", uri in ".{0,64}") {
        if let Ok(t) = UriTemplate::parse(&template) {
            let _ = t.matches(&uri);
        }
    }
}
