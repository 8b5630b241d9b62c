//! The hash chain that makes the log tamper-evident, and the marker events the
//! writer adds to it.
//!
//! Every line is a JSON object ending in `prev` and `hash`:
//!
//! ```text
//! hash = hex(SHA-256( prev  ||  canonical(line without "hash") ))
//! ```
//!
//! where `prev` is the 64 lowercase hex characters of the previous line's `hash` (as
//! ASCII bytes) and `canonical` is the form defined in [`crate::canonical`] (keys
//! sorted, no whitespace; it includes the `prev` member itself). The first line of a
//! brand-new log has `prev` = [`ZERO_HASH`]. Editing any member of a line changes its
//! hash; deleting or reordering lines breaks the `prev` links that follow.
//!
//! Besides request records (see [`crate::record`]) the chain holds *events*: lines
//! with an `event` member, written by the writer itself, never by a caller:
//! - [`EVENT_TORN_TAIL`] `{time, event, discarded_bytes, prev, hash}`: on start the
//!   file ended in a partial line (a crash mid-write); those bytes were cut off and
//!   the chain continues from the last complete line;
//! - [`EVENT_CHAIN_RESET`] `{time, event, reason, prev, hash}` with `prev` =
//!   [`ZERO_HASH`]: the last complete line could not be read as a record, so the
//!   chain could not be continued and starts again here;
//! - [`EVENT_RECORDS_LOST`] `{time, event, count, prev, hash}`: `count` records never
//!   reached this sink while it was failing.
//!
//! Invariants: sealing and checking use the same canonical bytes; a line is written
//! in member order (`prev`, `hash` last), which the hash does not depend on.
//!
//! Not here: what the members mean, files, verification reports.

use crate::canonical::{write_canonical_members, write_ordered};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use std::time::SystemTime;

/// `prev` of the first line of a brand-new log (and of a chain reset).
pub const ZERO_HASH: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// The file ended in a partial line, which was cut off on start.
pub const EVENT_TORN_TAIL: &str = "torn_tail_truncated";
/// The chain could not be continued and starts again (`prev` = zeros).
pub const EVENT_CHAIN_RESET: &str = "chain_reset";
/// Records that never reached this sink while it was failing.
pub const EVENT_RECORDS_LOST: &str = "records_lost";

/// A line ready to append, newline included, and its hash.
#[derive(Debug, Clone)]
pub(crate) struct Sealed {
    pub line: Vec<u8>,
    pub hash: String,
}

/// Hex SHA-256 of `prev` followed by `canonical`.
fn link_hash(prev: &str, canonical: &[u8]) -> String {
    let mut h = Sha256::new();
    h.update(prev.as_bytes());
    h.update(canonical);
    hex::encode(h.finalize())
}

/// Chains `entry` (which has neither `prev` nor `hash`) after `prev`.
pub(crate) fn seal(entry: &Map<String, Value>, prev: &str) -> Sealed {
    let prev_value = Value::String(prev.to_string());
    let mut canonical = Vec::with_capacity(256);
    write_canonical_members(
        &mut canonical,
        entry
            .iter()
            .map(|(k, v)| (k.as_str(), v))
            .chain(std::iter::once(("prev", &prev_value))),
    );
    let hash = link_hash(prev, &canonical);

    let mut line = Vec::with_capacity(canonical.len() + 160);
    write_ordered(&mut line, entry);
    // Reopen the object to append the chain members last.
    line.pop();
    if !entry.is_empty() {
        line.push(b',');
    }
    line.extend_from_slice(b"\"prev\":\"");
    line.extend_from_slice(prev.as_bytes());
    line.extend_from_slice(b"\",\"hash\":\"");
    line.extend_from_slice(hash.as_bytes());
    line.extend_from_slice(b"\"}\n");
    Sealed { line, hash }
}

/// An event line's members (without `prev` and `hash`), stamped now.
pub(crate) fn event(
    kind: &str,
    details: impl IntoIterator<Item = (&'static str, Value)>,
) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert(
        "time".into(),
        Value::String(manifold_foundation::time::rfc3339_micros(SystemTime::now())),
    );
    m.insert("event".into(), Value::String(kind.into()));
    for (k, v) in details {
        m.insert(k.into(), v);
    }
    m
}

/// One line, parsed and its hash recomputed.
#[derive(Debug, Clone)]
pub(crate) struct Link {
    pub prev: String,
    pub hash: String,
    /// Whether `hash` is what the line's content says it should be.
    pub hash_ok: bool,
    /// The `event` member of an event line; `None` for a request record.
    pub event: Option<String>,
    /// The other members (everything but `prev` and `hash`).
    pub members: Map<String, Value>,
}

fn is_hash(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// Parses one line (without its newline). `Err` says why it is not a chain line.
pub(crate) fn parse_line(bytes: &[u8]) -> Result<Link, String> {
    let value: Value = serde_json::from_slice(bytes).map_err(|e| format!("not JSON: {e}"))?;
    let Value::Object(mut members) = value else {
        return Err("not a JSON object".into());
    };
    let hash = match members.remove("hash") {
        Some(Value::String(s)) if is_hash(&s) => s,
        Some(_) => return Err("`hash` is not 64 lowercase hex digits".into()),
        None => return Err("no `hash` member".into()),
    };
    let prev = match members.get("prev") {
        Some(Value::String(s)) if is_hash(s) => s.clone(),
        Some(_) => return Err("`prev` is not 64 lowercase hex digits".into()),
        None => return Err("no `prev` member".into()),
    };
    let mut canonical = Vec::with_capacity(bytes.len());
    write_canonical_members(&mut canonical, members.iter().map(|(k, v)| (k.as_str(), v)));
    let hash_ok = link_hash(&prev, &canonical) == hash;
    members.remove("prev");
    let event = match members.get("event") {
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return Err("`event` is not a string".into()),
        None => None,
    };
    Ok(Link {
        prev,
        hash,
        hash_ok,
        event,
        members,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::canonical::canonical_json;
    use serde_json::json;

    fn entry(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => unreachable!("test entries are objects"),
        }
    }

    #[test]
    fn seal_follows_the_documented_formula() {
        let e = entry(json!({"time": "t", "method": "tools/call", "b": [1, {"y": 2, "x": 1}]}));
        let s = seal(&e, ZERO_HASH);
        // Independently: canonical of the record with `prev`, prefixed by `prev`.
        let mut with_prev = e.clone();
        with_prev.insert("prev".into(), json!(ZERO_HASH));
        let mut input = ZERO_HASH.as_bytes().to_vec();
        input.extend(canonical_json(&Value::Object(with_prev)));
        assert_eq!(s.hash, hex::encode(Sha256::digest(&input)));
        let text = String::from_utf8(s.line.clone()).expect("UTF-8");
        assert_eq!(
            text,
            format!(
                "{{\"time\":\"t\",\"method\":\"tools/call\",\"b\":[1,{{\"y\":2,\"x\":1}}],\"prev\":\"{ZERO_HASH}\",\"hash\":\"{}\"}}\n",
                s.hash
            )
        );
    }

    #[test]
    fn sealed_lines_parse_and_check() {
        let e = entry(json!({"time": "t", "s": "é\"\n", "f": 0.1}));
        let a = seal(&e, ZERO_HASH);
        let b = seal(&e, &a.hash);
        assert_ne!(a.hash, b.hash, "the same record after another hash differs");
        for (s, prev) in [(&a, ZERO_HASH), (&b, a.hash.as_str())] {
            let link = parse_line(&s.line[..s.line.len() - 1]).expect("parses");
            assert!(link.hash_ok);
            assert_eq!(link.prev, prev);
            assert_eq!(link.hash, s.hash);
            assert_eq!(link.event, None);
            assert_eq!(Value::Object(link.members), Value::Object(e.clone()));
        }
    }

    #[test]
    fn any_edit_breaks_the_hash() {
        let s = seal(
            &entry(json!({"time": "t", "latency_us": 5, "n": "x"})),
            ZERO_HASH,
        );
        let text = String::from_utf8(s.line).expect("UTF-8");
        for (from, to) in [
            ("\"latency_us\":5", "\"latency_us\":6"),
            ("\"n\":\"x\"", "\"n\":\"y\""),
            ("\"time\":\"t\",", ""),
            ("\"n\":\"x\"", "\"n\":\"x\",\"extra\":1"),
        ] {
            let edited = text.trim_end().replacen(from, to, 1);
            assert_ne!(edited, text.trim_end());
            let link = parse_line(edited.as_bytes()).expect("still a chain line");
            assert!(!link.hash_ok, "{from} -> {to}");
        }
        // Reordering members is not an edit: the hash is over the canonical form.
        let link = parse_line(
            text.trim_end()
                .replacen(
                    "\"time\":\"t\",\"latency_us\":5",
                    "\"latency_us\":5,\"time\":\"t\"",
                    1,
                )
                .as_bytes(),
        )
        .expect("parses");
        assert!(link.hash_ok);
    }

    #[test]
    fn malformed_lines() {
        let h = "a".repeat(64);
        let cases = [
            ("not json".to_string(), "not JSON"),
            ("[1,2]".to_string(), "not a JSON object"),
            (format!(r#"{{"prev":"{h}"}}"#), "no `hash`"),
            (format!(r#"{{"hash":"{h}"}}"#), "no `prev`"),
            (format!(r#"{{"prev":"{h}","hash":"ABC"}}"#), "`hash` is not"),
            (format!(r#"{{"prev":1,"hash":"{h}"}}"#), "`prev` is not"),
            (
                format!(r#"{{"event":1,"prev":"{h}","hash":"{h}"}}"#),
                "`event` is not",
            ),
        ];
        for (line, want) in cases {
            let err = parse_line(line.as_bytes()).expect_err(&line);
            assert!(err.contains(want), "{line}: {err}");
        }
    }

    #[test]
    fn events_are_recognised() {
        let e = event(EVENT_RECORDS_LOST, [("count", json!(3))]);
        let s = seal(&e, ZERO_HASH);
        let link = parse_line(s.line.trim_ascii_end()).expect("parses");
        assert!(link.hash_ok);
        assert_eq!(link.event.as_deref(), Some(EVENT_RECORDS_LOST));
        assert_eq!(link.members["count"], json!(3));
        let keys: Vec<&str> = e.keys().map(String::as_str).collect();
        assert_eq!(keys, ["time", "event", "count"]);
    }
}
