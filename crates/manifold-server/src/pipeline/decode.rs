//! Phase decode: the body is one JSON-RPC message (never a batch), and its
//! envelope says which era it speaks.
//!
//! A request speaks 2026-07-28 when its `params._meta` carries
//! `io.modelcontextprotocol/protocolVersion`, or its `MCP-Protocol-Version` header
//! names a stateless revision (then a missing `_meta` is that era's -32602, not a
//! session-era request). Everything else is the session era.
//!
//! Invariants: the decoded message keeps every member as it arrived (see
//! `manifold_protocol::jsonrpc`); deciding the era reads nothing but the envelope.
//!
//! Not here: checking what the era requires (`admit`).

use manifold_protocol::methods::{self as m, meta};
use manifold_protocol::{jsonrpc, version, Incoming, MessageError};
use serde_json::{Map, Value};

use crate::era::Era;
use crate::refusal::Refusal;
use crate::request::Front;

/// The message (as `Incoming::parse` decoded the body) and its era.
pub(crate) fn decode(
    decoded: Result<Incoming, MessageError>,
    front: &Front,
) -> Result<(Incoming, Era), Refusal> {
    let msg = decoded.map_err(Refusal::BadMessage)?;
    let era = match &msg {
        Incoming::Request { msg, .. } if is_stateless(front, msg) => Era::Stateless,
        _ => Era::Session,
    };
    Ok((msg, era))
}

/// The request's `params._meta`, if it is an object.
pub(crate) fn meta_of(msg: &Map<String, Value>) -> Option<&Map<String, Value>> {
    jsonrpc::params(msg)?.get("_meta")?.as_object()
}

fn is_stateless(front: &Front, msg: &Map<String, Value>) -> bool {
    meta_of(msg).is_some_and(|m| m.contains_key(meta::PROTOCOL_VERSION))
        || front
            .header(m::HEADER_PROTOCOL_VERSION)
            .is_some_and(|v| version::STATELESS_SUPPORTED.contains(&v))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_envelope_decides_the_era() {
        let http = |v: Option<&str>| {
            let mut h = http::HeaderMap::new();
            if let Some(v) = v {
                h.insert(m::HEADER_PROTOCOL_VERSION, v.parse().unwrap());
            }
            Front::Http(h)
        };
        let stateless_meta =
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#;
        let plain = br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
        let note = br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
        let rows: [(&[u8], Front, Era); 5] = [
            (stateless_meta, http(None), Era::Stateless),
            (plain, http(Some("2026-07-28")), Era::Stateless),
            (plain, http(Some("2025-11-25")), Era::Session),
            (plain, Front::Operator(Default::default()), Era::Session),
            (note, http(Some("2026-07-28")), Era::Session),
        ];
        for (body, front, era) in rows {
            let (_, got) = decode(Incoming::parse(body), &front).unwrap();
            assert_eq!(got, era, "{}", String::from_utf8_lossy(body));
        }
        assert!(matches!(
            decode(Incoming::parse(b"[]"), &Front::Operator(Default::default())),
            Err(Refusal::BadMessage(_))
        ));
    }
}
