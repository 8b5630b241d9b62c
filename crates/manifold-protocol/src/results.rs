//! What a 2026-07-28 result carries besides its content: `resultType` on every
//! result, and the cache hints (`ttlMs`, `cacheScope`) of lists and reads — added
//! to a result's JSON text without re-serializing it.
//!
//! Invariants: every member already in the result stays, in order, byte for byte;
//! a result that already has `resultType` (e.g. `input_required`) is left as it is;
//! text that is not a JSON object is returned unchanged.
//!
//! Not here: deciding which results are cacheable (the server).

use serde_json::{Map, Value};
use std::borrow::Cow;

/// `raw` (a result object) with `"resultType":"complete"` first, unless it has one.
pub fn with_result_type(raw: &str) -> Cow<'_, str> {
    let trimmed = raw.trim_start();
    let Some(rest) = trimmed.strip_prefix('{') else {
        return Cow::Borrowed(raw);
    };
    if raw.contains("\"resultType\"")
        && serde_json::from_str::<Map<String, Value>>(raw)
            .map(|m| m.contains_key("resultType"))
            .unwrap_or(false)
    {
        return Cow::Borrowed(raw);
    }
    Cow::Owned(format!("{{\"resultType\":\"complete\"{}{rest}", sep(rest)))
}

/// A `resources/read` result: `resultType` plus cache hints. A read may differ by
/// caller and a gateway cannot know how long it stays valid: not cached, private
/// (unless the upstream gave its own `ttlMs`).
pub fn with_read_hints(raw: &str) -> String {
    let typed = with_result_type(raw);
    let Some(rest) = typed.strip_prefix("{\"resultType\":\"complete\"") else {
        return typed.into_owned();
    };
    if raw.contains("\"ttlMs\"") {
        return typed.into_owned();
    }
    format!("{{\"resultType\":\"complete\",\"ttlMs\":0,\"cacheScope\":\"private\"{rest}")
}

/// A pre-serialized result object (a list page) with `resultType` and the cache
/// hints `ttlMs` and `cacheScope` (`public` or `private`) first.
pub fn with_cache_hints(page: &[u8], ttl_ms: u64, scope: &str) -> Vec<u8> {
    let text = String::from_utf8_lossy(page);
    let rest = text.trim_start().strip_prefix('{').unwrap_or("}");
    format!(
        "{{\"resultType\":\"complete\",\"ttlMs\":{ttl_ms},\"cacheScope\":\"{scope}\"{}{rest}",
        sep(rest)
    )
    .into_bytes()
}

/// `,` before the remaining members of an object, none before its end.
fn sep(rest: &str) -> &'static str {
    if rest.trim_start().starts_with('}') {
        ""
    } else {
        ","
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn result_type_is_added_once_and_keeps_every_byte() {
        let cases = [
            ("{}", r#"{"resultType":"complete"}"#),
            (r#"{"a":1}"#, r#"{"resultType":"complete","a":1}"#),
            (
                r#"{"x-unknown":{"z":1,"a":2},"content":[]}"#,
                r#"{"resultType":"complete","x-unknown":{"z":1,"a":2},"content":[]}"#,
            ),
            (
                r#"{"resultType":"input_required","a":1}"#,
                r#"{"resultType":"input_required","a":1}"#,
            ),
            (
                r#"{"text":"has \"resultType\" inside"}"#,
                r#"{"resultType":"complete","text":"has \"resultType\" inside"}"#,
            ),
            ("[1]", "[1]"),
        ];
        for (raw, want) in cases {
            assert_eq!(with_result_type(raw), want, "{raw}");
        }
    }

    #[test]
    fn reads_get_private_uncached_hints() {
        let out = with_read_hints(r#"{"contents":[]}"#);
        assert_eq!(
            out,
            r#"{"resultType":"complete","ttlMs":0,"cacheScope":"private","contents":[]}"#
        );
        assert_eq!(
            with_read_hints("{}"),
            r#"{"resultType":"complete","ttlMs":0,"cacheScope":"private"}"#
        );
        let own = r#"{"ttlMs":5,"contents":[]}"#;
        assert_eq!(
            with_read_hints(own),
            r#"{"resultType":"complete","ttlMs":5,"contents":[]}"#
        );
    }

    #[test]
    fn lists_get_cache_hints() {
        let out = with_cache_hints(br#"{"tools":[]}"#, 60_000, "public");
        let v: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["resultType"], "complete");
        assert_eq!(v["ttlMs"], 60_000);
        assert_eq!(v["cacheScope"], "public");
        assert_eq!(v["tools"], json!([]));
        assert_eq!(
            with_cache_hints(b"{}", 1, "private"),
            br#"{"resultType":"complete","ttlMs":1,"cacheScope":"private"}"#
        );
    }
}
