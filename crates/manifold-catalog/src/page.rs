//! Pagination of a merged list: pre-serialized pages at fixed offsets, and cursors
//! that name where the next page starts.
//!
//! A cursor is base64url(`v1:` + the exposed name the next page starts at). Naming a
//! position instead of an offset keeps a client's walk sane when the catalog is
//! rebuilt between pages: it continues at the same place in sorted order. Pages that
//! start where a pre-serialized page starts are served from bytes; others are joined
//! from the pre-serialized items. A per-caller view keeps no pages of its own:
//! each of its pages is joined from the shared items when asked for.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use bytes::{BufMut, Bytes, BytesMut};

use crate::entry::Entry;
use crate::members::Members;

const CURSOR_PREFIX: &str = "v1:";

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("Invalid cursor: {0}")]
pub struct CursorError(String);

#[derive(Debug)]
pub(crate) struct Pages {
    page_size: usize,
    /// Pre-serialized pages at offsets 0, page_size, 2*page_size, … (empty:
    /// every page is joined per request).
    pages: Vec<Bytes>,
}

fn encode_cursor(name: &str) -> String {
    URL_SAFE_NO_PAD.encode(format!("{CURSOR_PREFIX}{name}"))
}

fn decode_cursor(cursor: &str) -> Result<String, CursorError> {
    let bytes = URL_SAFE_NO_PAD
        .decode(cursor)
        .map_err(|_| CursorError("not a cursor this server issued".into()))?;
    let text = String::from_utf8(bytes)
        .map_err(|_| CursorError("not a cursor this server issued".into()))?;
    text.strip_prefix(CURSOR_PREFIX)
        .map(str::to_string)
        .ok_or_else(|| CursorError("not a cursor this server issued".into()))
}

fn serialize<'a>(
    member: &str,
    items: impl Iterator<Item = &'a Entry> + Clone,
    next: Option<&str>,
) -> Bytes {
    let size: usize = items.clone().map(|e| e.json.len() + 1).sum();
    let mut out = BytesMut::with_capacity(size + member.len() + 64);
    out.put_slice(b"{\"");
    out.put_slice(member.as_bytes());
    out.put_slice(b"\":[");
    for (i, e) in items.enumerate() {
        if i > 0 {
            out.put_u8(b',');
        }
        out.put_slice(&e.json);
    }
    out.put_u8(b']');
    if let Some(n) = next {
        out.put_slice(b",\"nextCursor\":");
        out.put_slice(
            serde_json::to_string(&encode_cursor(n))
                .unwrap_or_default()
                .as_bytes(),
        );
    }
    out.put_u8(b'}');
    out.freeze()
}

/// The page of `entries` that starts at `start`.
fn page_at(member: &str, entries: &Members, start: usize, page_size: usize) -> Bytes {
    let end = (start + page_size).min(entries.len());
    let next = entries.get(end).map(|e| e.exposed.as_str());
    let items = entries.entries().iter().skip(start).take(end - start);
    serialize(member, items, next)
}

impl Pages {
    /// Pages of `entries`, pre-serialized (`pre`) or joined per request
    /// from the shared items (a per-caller view: its pages would be a copy
    /// of every item it holds).
    pub(crate) fn build(member: &str, entries: &Members, page_size: usize, pre: bool) -> Pages {
        let page_size = page_size.max(1);
        let mut pages = Vec::new();
        if pre {
            // At least one page, empty for an empty list.
            let mut start = 0;
            loop {
                pages.push(page_at(member, entries, start, page_size));
                start += page_size;
                if start >= entries.len() {
                    break;
                }
            }
        }
        Pages { page_size, pages }
    }

    pub(crate) fn page_size(&self) -> usize {
        self.page_size
    }

    /// Bytes of the pre-serialized pages.
    pub(crate) fn bytes(&self) -> usize {
        self.pages.iter().map(Bytes::len).sum()
    }

    pub(crate) fn page(
        &self,
        member: &str,
        entries: &Members,
        cursor: Option<&str>,
    ) -> Result<Bytes, CursorError> {
        let start = match cursor {
            None => 0,
            Some(cursor) => {
                let name = decode_cursor(cursor)?;
                entries.partition_point(|e| e.exposed.as_str() < name.as_str())
            }
        };
        if start % self.page_size == 0 {
            if let Some(p) = self.pages.get(start / self.page_size) {
                return Ok(p.clone());
            }
        }
        Ok(page_at(member, entries, start, self.page_size))
    }
}
