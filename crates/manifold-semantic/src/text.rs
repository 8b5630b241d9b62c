//! What a tool becomes before it is embedded: its upstream, its name as words,
//! its title and description, in one line of at most
//! [`MAX_TEXT_CHARS`] characters (the model reads only its first 128 tokens
//! anyway). Deterministic: the same definition gives the same text, and the
//! text's digest is the key of its vector. Parameters are left out: with
//! them, dense recall@5 on the tuning splits was lower (dev 0.90, para_dev
//! 0.33, against 0.93 and 0.42 without; `tool_text_variants` in the quality
//! test).

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

/// The longest text embedded for one tool, in characters.
pub const MAX_TEXT_CHARS: usize = 2_000;

/// The text of tool `exposed` (`<upstream>__<name>`) of `upstream`.
pub fn tool_text(exposed: &str, upstream: &str, tool: &Map<String, Value>) -> String {
    let bare = exposed
        .strip_prefix(upstream)
        .and_then(|s| s.strip_prefix("__"))
        .unwrap_or(exposed);
    let mut out = String::new();
    out.push_str(&words(upstream));
    out.push_str(": ");
    out.push_str(&words(bare));
    let title = tool
        .get("title")
        .or_else(|| tool.get("annotations").and_then(|a| a.get("title")));
    if let Some(Value::String(t)) = title {
        out.push_str(". ");
        out.push_str(t.trim());
    }
    if let Some(Value::String(d)) = tool.get("description") {
        out.push_str(". ");
        out.push_str(&d.split_whitespace().collect::<Vec<_>>().join(" "));
    }
    match out.char_indices().nth(MAX_TEXT_CHARS) {
        Some((cut, _)) => out[..cut].to_string(),
        None => out,
    }
}

/// `list_mergeRequests-v2` → `list merge requests v2`.
pub fn words(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 4);
    let mut prev: Option<char> = None;
    for c in name.chars() {
        let boundary = match prev {
            Some(p) => c.is_uppercase() && p.is_lowercase(),
            None => false,
        };
        if c == '_' || c == '-' || c == '.' || c == '/' {
            if !out.ends_with(' ') && !out.is_empty() {
                out.push(' ');
            }
        } else {
            if boundary && !out.ends_with(' ') {
                out.push(' ');
            }
            out.extend(c.to_lowercase());
        }
        prev = Some(c);
    }
    out.trim_end().to_string()
}

/// The key of a text's vector: its SHA-256.
pub fn key(text: &str) -> [u8; 32] {
    Sha256::digest(text.as_bytes()).into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_tool_becomes_one_line_of_words() {
        let tool = json!({"name": "list_disputes", "title": "Disputes",
            "description": "List  all\n disputes.",
            "inputSchema": {"type": "object", "properties": {"chargeId": {}, "limit": {}}}});
        let Value::Object(map) = tool else {
            unreachable!()
        };
        assert_eq!(
            tool_text("stripe__list_disputes", "stripe", &map),
            "stripe: list disputes. Disputes. List all disputes."
        );
        assert_eq!(words("list_mergeRequests-v2"), "list merge requests v2");
    }

    #[test]
    fn a_long_description_is_cut_on_a_character_boundary() {
        let map = match json!({"description": "é".repeat(5_000)}) {
            Value::Object(m) => m,
            _ => unreachable!(),
        };
        let t = tool_text("a__b", "a", &map);
        assert_eq!(t.chars().count(), MAX_TEXT_CHARS);
    }
}
