//! Property tests for `${VAR}` expansion: it never panics, leaves text without
//! `$` as it is, and substitutes what the lookup knows.

use manifold_config::expand;
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn expansion_never_panics(s in any::<String>()) {
        let _ = expand(&s, &|_| Some("v".into()));
        let _ = expand(&s, &|_| None);
    }

    #[test]
    fn text_without_dollar_is_left_as_is(s in "[^$]*") {
        prop_assert_eq!(expand(&s, &|_| None), Ok(s));
    }

    #[test]
    fn known_variables_are_substituted(
        before in "[^$]{0,10}",
        name in "[A-Z_][A-Z0-9_]{0,10}",
        value in "[^$]{0,10}",
        after in "[^$]{0,10}",
    ) {
        let text = format!("{before}${{{name}}}{after}");
        let (n, v) = (name.clone(), value.clone());
        let got = expand(&text, &move |k| (k == n).then(|| v.clone()));
        prop_assert_eq!(got, Ok(format!("{before}{value}{after}")));
    }

    /// `$$` is a literal `$`, so any text survives being escaped and expanded.
    #[test]
    fn escaped_text_round_trips(s in any::<String>()) {
        prop_assert_eq!(expand(&s.replace('$', "$$"), &|_| None), Ok(s));
    }
}
