//! Property tests for what the audit log computes over client-controlled
//! values: canonical JSON (the input of every digest and of the hash chain) and
//! redaction.

use manifold_audit::canonical::{canonical_json, digest_hex};
use manifold_audit::{Redactor, REDACTED};
use proptest::prelude::*;
use serde_json::{Map, Value};

/// Arbitrary JSON values, nested a few levels.
fn json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        any::<String>().prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec(("[a-zA-Z_]{1,8}", inner), 0..6)
                .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// The same members in reverse insertion order, at every depth.
fn reversed(v: &Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut out = Map::new();
            for (k, x) in m.iter().rev() {
                out.insert(k.clone(), reversed(x));
            }
            Value::Object(out)
        }
        Value::Array(a) => Value::Array(a.iter().map(reversed).collect()),
        other => other.clone(),
    }
}

/// Whether any member named (case-insensitively) `key` holds anything but `REDACTED`.
fn leaks(v: &Value, key: &str) -> bool {
    match v {
        Value::Object(m) => m.iter().any(|(k, x)| {
            (k.eq_ignore_ascii_case(key) && x.as_str() != Some(REDACTED)) || leaks(x, key)
        }),
        Value::Array(a) => a.iter().any(|x| leaks(x, key)),
        _ => false,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Equal values give equal bytes, whatever the member order; the bytes are
    /// JSON that parses back to the value.
    #[test]
    fn canonical_json_ignores_member_order(v in json()) {
        let a = canonical_json(&v);
        prop_assert_eq!(&a, &canonical_json(&reversed(&v)));
        prop_assert_eq!(digest_hex(&v), digest_hex(&reversed(&v)));
        let back: Value = serde_json::from_slice(&a).expect("canonical JSON parses");
        prop_assert_eq!(canonical_json(&back), a, "idempotent");
    }

    /// Every value under a redacted key, at any depth and inside arrays, is
    /// replaced; nothing else changes.
    #[test]
    fn redaction_reaches_every_depth_and_touches_nothing_else(v in json(), key in "[a-z]{1,3}") {
        let r = Redactor::new(std::slice::from_ref(&key));
        let mut red = v.clone();
        r.redact(&mut red);
        prop_assert!(!leaks(&red, &key));
        // Redacting with a key nobody uses changes nothing.
        let mut same = v.clone();
        Redactor::new(&["no-such-key-ever"]).redact(&mut same);
        prop_assert_eq!(same, v);
    }
}

/// Regression (found by the property above): without exact float parsing, a
/// record with this number in its arguments re-parsed to a different float,
/// so `manifold audit verify` would have reported an intact log as tampered.
#[test]
fn a_float_survives_the_round_trip_the_verifier_makes() {
    let v: Value =
        serde_json::json!({"x": [1.4186004358391217e39, 0.1, 5e-324, 1.7976931348623157e308]});
    let bytes = canonical_json(&v);
    let back: Value = serde_json::from_slice(&bytes).expect("parses");
    assert_eq!(canonical_json(&back), bytes);
}
