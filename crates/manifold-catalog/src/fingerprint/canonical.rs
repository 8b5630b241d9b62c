//! Canonical JSON (RFC 8785, the JSON Canonicalization Scheme): one text per
//! JSON value, whatever key order, white space, escapes or number spelling it
//! arrived with, so a digest of it identifies the value.
//!
//! Invariants (RFC 8785 §3.2):
//! - no white space between tokens;
//! - object members sorted by their keys compared as UTF-16 code units (not as
//!   UTF-8 bytes: an emoji sorts before U+FB33, as in JavaScript);
//! - strings escape only `"`, `\` and U+0000–U+001F (`\b \t \n \f \r` by name,
//!   the rest as `\u00xx`, lower case); everything else is written as itself;
//! - numbers are written as ECMAScript's `Number.prototype.toString` writes the
//!   IEEE 754 double they denote (`4.50` → `4.5`, `1E30` → `1e+30`, `-0` →
//!   `0`); an integer beyond 2^53 is rounded to a double first, as the scheme
//!   requires (I-JSON).
//!
//! Not here: which members of a definition are hashed, and the digest
//! (`super`). serde_json never holds NaN or an infinity, so there is no error
//! case.

use serde_json::{Map, Number, Value};
use std::cmp::Ordering;

/// Top-level members of a definition that are not part of its fingerprint.
pub const EXCLUDED_MEMBERS: &[&str] = &["_meta"];

/// The canonical text of `v`.
pub fn canonical_json(v: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, v);
    out
}

/// The canonical text of an object, leaving out the members `skip` names
/// (top level only).
pub(crate) fn canonical_object_without(map: &Map<String, Value>, skip: &[&str]) -> String {
    let mut out = String::new();
    write_object(&mut out, map, skip);
    out
}

fn write_value(out: &mut String, v: &Value) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        Value::Number(n) => write_number(out, n),
        Value::String(s) => write_string(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(out, item);
            }
            out.push(']');
        }
        Value::Object(map) => write_object(out, map, &[]),
    }
}

fn write_object(out: &mut String, map: &Map<String, Value>, skip: &[&str]) {
    let mut members: Vec<(&String, &Value)> = map
        .iter()
        .filter(|(k, _)| !skip.contains(&k.as_str()))
        .collect();
    members.sort_by(|a, b| utf16_cmp(a.0, b.0));
    out.push('{');
    for (i, (k, v)) in members.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        write_string(out, k);
        out.push(':');
        write_value(out, v);
    }
    out.push('}');
}

/// Compares as JavaScript does: by UTF-16 code units.
pub(crate) fn utf16_cmp(a: &str, b: &str) -> Ordering {
    a.encode_utf16().cmp(b.encode_utf16())
}

fn write_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\u{c}' => out.push_str("\\f"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 => {
                out.push_str(&format!("\\u{:04x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

fn write_number(out: &mut String, n: &Number) {
    // Integers a double holds exactly print as themselves (the common case,
    // and the one `{:e}` below would also get right, only slower).
    const EXACT: u64 = 1 << 53;
    if let Some(u) = n.as_u64().filter(|u| *u <= EXACT) {
        out.push_str(&u.to_string());
        return;
    }
    if let Some(i) = n.as_i64().filter(|i| i.unsigned_abs() <= EXACT) {
        out.push_str(&i.to_string());
        return;
    }
    // Every serde_json number converts (u64 and i64 by rounding).
    let f = n.as_f64().unwrap_or(0.0);
    write_double(out, f);
}

/// ECMAScript `Number.prototype.toString(10)` for a finite double
/// (ECMA-262 §6.1.6.1.20): the shortest digits that read back as `f`,
/// placed by the exponent.
fn write_double(out: &mut String, f: f64) {
    if f == 0.0 || !f.is_finite() {
        // -0 prints as 0; NaN and infinities cannot come from serde_json.
        out.push('0');
        return;
    }
    if f < 0.0 {
        out.push('-');
    }
    let sci = shortest(f.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let mut digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    while digits.len() > 1 && digits.ends_with('0') {
        digits.pop();
    }
    let k = digits.len() as i32;
    // The decimal point sits after `n` digits: value = 0.digits × 10^n.
    let n = exp.parse::<i32>().unwrap_or(0) + 1;
    if k <= n && n <= 21 {
        out.push_str(&digits);
        out.extend(std::iter::repeat_n('0', (n - k) as usize));
    } else if 0 < n && n <= 21 {
        out.push_str(&digits[..n as usize]);
        out.push('.');
        out.push_str(&digits[n as usize..]);
    } else if -6 < n && n <= 0 {
        out.push_str("0.");
        out.extend(std::iter::repeat_n('0', (-n) as usize));
        out.push_str(&digits);
    } else {
        out.push_str(&digits[..1]);
        if k > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        out.push('e');
        out.push(if n - 1 < 0 { '-' } else { '+' });
        out.push_str(&(n - 1).abs().to_string());
    }
}

/// The shortest digits that read back as `f` (> 0), as `d[.ddd]e[-]x`; of
/// two such strings of that length, the one closest to `f`, and of two as
/// close, the even one (ECMA-262's rule). Rust's `{:e}` finds the shortest
/// length but may round a tie up (1424953923781206.25 → …06.3, where
/// JavaScript prints …06.2); its fixed-precision form rounds the exact value
/// half to even, so that form at the same length is used when it reads back.
fn shortest(f: f64) -> String {
    let sci = format!("{f:e}");
    let digits = sci
        .split_once('e')
        .map_or(sci.as_str(), |(m, _)| m)
        .chars()
        .filter(char::is_ascii_digit)
        .count();
    let nearest = format!("{f:.*e}", digits.saturating_sub(1));
    if nearest.parse::<f64>() == Ok(f) {
        nearest
    } else {
        sci
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn double(bits: u64) -> String {
        let mut s = String::new();
        write_double(&mut s, f64::from_bits(bits));
        s
    }

    /// RFC 8785 Appendix B.
    #[test]
    fn numbers_print_as_ecmascript_prints_them() {
        for (bits, want) in [
            (0x0000000000000000, "0"),
            (0x8000000000000000, "0"),
            (0x0000000000000001, "5e-324"),
            (0x8000000000000001, "-5e-324"),
            (0x7fefffffffffffff, "1.7976931348623157e+308"),
            (0xffefffffffffffff, "-1.7976931348623157e+308"),
            (0x4340000000000000, "9007199254740992"),
            (0xc340000000000000, "-9007199254740992"),
            (0x4430000000000000, "295147905179352830000"),
            (0x44b52d02c7e14af5, "9.999999999999997e+22"),
            (0x44b52d02c7e14af6, "1e+23"),
            (0x44b52d02c7e14af7, "1.0000000000000001e+23"),
            (0x444b1ae4d6e2ef4e, "999999999999999700000"),
            (0x444b1ae4d6e2ef4f, "999999999999999900000"),
            (0x444b1ae4d6e2ef50, "1e+21"),
            (0x3eb0c6f7a0b5ed8c, "9.999999999999997e-7"),
            (0x3eb0c6f7a0b5ed8d, "0.000001"),
            (0x41b3de4355555553, "333333333.3333332"),
            (0x41b3de4355555554, "333333333.33333325"),
            (0x41b3de4355555555, "333333333.3333333"),
            (0x41b3de4355555556, "333333333.3333334"),
            (0x41b3de4355555557, "333333333.33333343"),
            (0xbecbf647612f3696, "-0.0000033333333333333333"),
            (0x43143ff3c1cb0959, "1424953923781206.2"),
            // Ties between two shortest strings go to the even digit, as in
            // JavaScript (checked against node).
            (0x3fd0000000000000, "0.25"),
        ] {
            assert_eq!(double(bits), want, "{bits:#018x}");
        }
    }

    #[test]
    fn integers_print_exactly_and_large_ones_as_doubles() {
        let v: Value =
            serde_json::from_str("[0, -1, 10, 1.0, -0.0, 9007199254740993, 12345678901234567890]")
                .expect("json");
        // 2^53 + 1 is not a double: it rounds to 2^53, as JavaScript reads it.
        assert_eq!(
            canonical_json(&v),
            "[0,-1,10,1,0,9007199254740992,12345678901234567000]"
        );
    }

    /// RFC 8785 §3.2.2's example.
    #[test]
    fn the_rfc_example_canonicalizes() {
        let input = r#"{
            "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
            "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
            "literals": [null, true, false]
        }"#;
        let v: Value = serde_json::from_str(input).expect("json");
        assert_eq!(
            canonical_json(&v),
            r#"{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}"#
        );
    }

    /// RFC 8785 §3.2.3's sorting example: by UTF-16 code units.
    #[test]
    fn keys_sort_by_utf16_code_units() {
        let input = r#"{
            "\u20ac": "Euro Sign",
            "\r": "Carriage Return",
            "\ufb33": "Hebrew Letter Dalet With Dagesh",
            "1": "One",
            "\ud83d\ude00": "Emoji: Grinning Face",
            "\u0080": "Control",
            "\u00f6": "Latin Small Letter O With Diaeresis"
        }"#;
        let v: Value = serde_json::from_str(input).expect("json");
        let text = canonical_json(&v);
        let back: Map<String, Value> = serde_json::from_str(&text).expect("canonical json");
        let order: Vec<&str> = back.values().filter_map(Value::as_str).collect();
        assert_eq!(
            order,
            [
                "Carriage Return",
                "One",
                "Control",
                "Latin Small Letter O With Diaeresis",
                "Euro Sign",
                "Emoji: Grinning Face",
                "Hebrew Letter Dalet With Dagesh"
            ]
        );
        // UTF-8 byte order would put the emoji last.
        assert_eq!(utf16_cmp("\u{1F600}", "\u{FB33}"), Ordering::Less);
        assert_eq!("\u{1F600}".cmp("\u{FB33}"), Ordering::Greater);
    }

    #[test]
    fn strings_escape_only_what_json_requires() {
        let v = Value::String("\u{0}\u{1f}\u{7f}\u{2028}é\"\\/\u{8}\u{c}".into());
        assert_eq!(
            canonical_json(&v),
            "\"\\u0000\\u001f\u{7f}\u{2028}é\\\"\\\\/\\b\\f\""
        );
    }
}
