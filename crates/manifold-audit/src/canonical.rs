//! Canonical JSON and the SHA-256 digests built on it.
//!
//! The canonical form of a JSON value, used for `arguments_sha256` and for the hash
//! chain, is defined here (not by whatever a library version happens to print):
//!
//! - no whitespace anywhere;
//! - object members sorted by key, comparing the keys' UTF-8 bytes (which is Unicode
//!   code point order), recursively at every depth, arrays included; array elements
//!   keep their order;
//! - strings in double quotes; `"` and `\` are escaped as `\"` and `\\`; the control
//!   characters U+0008, U+0009, U+000A, U+000C and U+000D as `\b`, `\t`, `\n`, `\f`,
//!   `\r`; every other character below U+0020 as `\u00XX` with lowercase hex; every
//!   other character (non-ASCII included, and `/`) is written as its raw UTF-8;
//! - `null`, `true`, `false` as such; integers as plain decimal digits (with a
//!   leading `-` when negative); other numbers in the shortest form that reads back
//!   to the same 64-bit float, as `serde_json` prints them (`1.0`, `0.5`, `1e+300`).
//!
//! Example: `{ "b": [2, {"z": 1, "a": null}], "a": "x" }` becomes
//! `{"a":"x","b":[2,{"a":null,"z":1}]}`.
//!
//! This is close to, but not, RFC 8785 (JCS): JCS sorts keys by UTF-16 code units
//! and prints numbers the ECMAScript way (`1` for `1.0`). Within Manifold the form is
//! stable: parsing a canonical text and writing it again gives the same bytes, which
//! is what `verify` relies on.
//!
//! Invariants: writing never fails and never allocates more than the output; the
//! same value always gives the same bytes. Not here: parsing (serde_json does it),
//! recursion limits (values parsed by serde_json are at most 128 levels deep).

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

/// Appends `value` to `out` in canonical form (keys sorted, no whitespace).
pub fn write_canonical(out: &mut Vec<u8>, value: &Value) {
    write_value(out, value, true);
}

/// `value` in canonical form.
pub fn canonical_json(value: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    write_canonical(&mut out, value);
    out
}

/// Hex SHA-256 of the canonical form of `value`: what `arguments_sha256` holds.
pub fn digest_hex(value: &Value) -> String {
    hex::encode(Sha256::digest(canonical_json(value)))
}

/// Appends `value` compactly, keeping object members in their stored order (the
/// form a record line is written in).
#[cfg(test)]
fn write_compact(out: &mut Vec<u8>, value: &Value) {
    write_value(out, value, false);
}

/// Appends the object made of `members` (plus nothing else) in canonical form; the
/// members need not be sorted or come from one map.
pub fn write_canonical_members<'a>(
    out: &mut Vec<u8>,
    members: impl IntoIterator<Item = (&'a str, &'a Value)>,
) {
    let mut sorted: Vec<(&str, &Value)> = members.into_iter().collect();
    sorted.sort_unstable_by(|a, b| a.0.cmp(b.0));
    write_members(out, sorted, true);
}

/// Appends an object of `members` in the order given; nested objects sorted
/// when `sort`.
fn write_members<'a>(
    out: &mut Vec<u8>,
    members: impl IntoIterator<Item = (&'a str, &'a Value)>,
    sort: bool,
) {
    out.push(b'{');
    for (i, (key, value)) in members.into_iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_str(out, key);
        out.push(b':');
        write_value(out, value, sort);
    }
    out.push(b'}');
}

fn write_value(out: &mut Vec<u8>, value: &Value, sort: bool) {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(n) => out.extend_from_slice(n.to_string().as_bytes()),
        Value::String(s) => write_str(out, s),
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_value(out, item, sort);
            }
            out.push(b']');
        }
        Value::Object(map) if sort => {
            write_canonical_members(out, map.iter().map(|(k, v)| (k.as_str(), v)))
        }
        Value::Object(map) => write_ordered(out, map),
    }
}

/// Appends the object `map` compactly, members in their stored order (the form a
/// record line is written in).
pub(crate) fn write_ordered(out: &mut Vec<u8>, map: &Map<String, Value>) {
    write_members(out, map.iter().map(|(k, v)| (k.as_str(), v)), false);
}

pub(crate) fn write_str(out: &mut Vec<u8>, s: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push(b'"');
    let bytes = s.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let escape: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            0x08 => b"\\b",
            0x09 => b"\\t",
            0x0a => b"\\n",
            0x0c => b"\\f",
            0x0d => b"\\r",
            0x00..=0x1f => &[],
            _ => continue,
        };
        out.extend_from_slice(&bytes[start..i]);
        if escape.is_empty() {
            out.extend_from_slice(b"\\u00");
            out.push(HEX[usize::from(b >> 4)]);
            out.push(HEX[usize::from(b & 0xf)]);
        } else {
            out.extend_from_slice(escape);
        }
        start = i + 1;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn canon(v: &Value) -> String {
        String::from_utf8(canonical_json(v)).expect("canonical JSON is UTF-8")
    }

    #[test]
    fn canonical_form_table() {
        let cases: Vec<(&str, Value, &str)> = vec![
            ("null", json!(null), "null"),
            ("booleans", json!([true, false]), "[true,false]"),
            (
                "integers",
                json!([0, -7, u64::MAX]),
                "[0,-7,18446744073709551615]",
            ),
            (
                "floats",
                json!([1.0, 0.5, -2.25, 1e300, 1e-7]),
                "[1.0,0.5,-2.25,1e+300,1e-7]",
            ),
            (
                "empty containers",
                json!({"a": {}, "b": []}),
                r#"{"a":{},"b":[]}"#,
            ),
            (
                "top-level keys sorted",
                json!({"b": 1, "a": 2}),
                r#"{"a":2,"b":1}"#,
            ),
            (
                "nested objects sorted",
                json!({"z": {"y": 1, "x": {"d": 0, "c": 0}}, "a": 0}),
                r#"{"a":0,"z":{"x":{"c":0,"d":0},"y":1}}"#,
            ),
            (
                "objects inside arrays sorted, array order kept",
                json!([{"b": 1, "a": 2}, 3, [{"d": 4, "c": 5}]]),
                r#"[{"a":2,"b":1},3,[{"c":5,"d":4}]]"#,
            ),
            (
                "keys sorted by bytes: upper case before lower case, shorter first",
                json!({"b": 0, "B": 0, "a": 0, "aa": 0, "A": 0}),
                r#"{"A":0,"B":0,"a":0,"aa":0,"b":0}"#,
            ),
            (
                "non-ASCII keys sorted by code point",
                json!({"é": 1, "z": 2, "日本": 3, "😀": 4}),
                r#"{"z":2,"é":1,"日本":3,"😀":4}"#,
            ),
            (
                "string escapes",
                json!("q\" b\\ n\n t\t r\r b\u{8} f\u{c} nul\u{0} us\u{1f} del\u{7f} /"),
                "\"q\\\" b\\\\ n\\n t\\t r\\r b\\b f\\f nul\\u0000 us\\u001f del\u{7f} /\"",
            ),
            ("non-ASCII raw", json!("héllo 日本 😀"), "\"héllo 日本 😀\""),
        ];
        for (what, value, want) in cases {
            assert_eq!(canon(&value), want, "{what}");
        }
    }

    #[test]
    fn whitespace_and_order_in_the_source_do_not_matter() {
        let a: Value =
            serde_json::from_str("{ \"b\" : [ 1 , 2 ] ,\n \"a\" : { \"y\":1, \"x\":2 } }")
                .expect("valid JSON");
        let b: Value =
            serde_json::from_str(r#"{"a":{"x":2,"y":1},"b":[1,2]}"#).expect("valid JSON");
        assert_eq!(canonical_json(&a), canonical_json(&b));
        assert_eq!(digest_hex(&a), digest_hex(&b));
    }

    #[test]
    fn canonical_text_reads_back_to_the_same_bytes() {
        let v = json!({"s": "a\"\\\n\u{1}é😀", "f": [0.1, 1e-7, 123456789.125, -0.0], "i": [-1, 9007199254740993i64], "o": {"k": null}});
        let first = canonical_json(&v);
        let again: Value = serde_json::from_slice(&first).expect("canonical JSON parses");
        assert_eq!(canonical_json(&again), first);
    }

    #[test]
    fn digest_of_known_values() {
        // `printf '%s' '{"a":1,"b":[true,null]}' | sha256sum`
        assert_eq!(
            digest_hex(&json!({"b": [true, null], "a": 1})),
            "1cc69c7fa23616ca2ec3ee70d24390a6225c8832db8a4c814c7e0e7f942f8668"
        );
        // `printf '%s' '{}' | sha256sum`
        assert_eq!(
            digest_hex(&json!({})),
            "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"
        );
    }

    #[test]
    fn compact_keeps_member_order() {
        let mut out = Vec::new();
        write_compact(&mut out, &json!({"b": {"z": 1, "a": 2}, "a": [1, "x"]}));
        assert_eq!(out, br#"{"b":{"z":1,"a":2},"a":[1,"x"]}"#);
    }
}
