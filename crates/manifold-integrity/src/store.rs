//! The store as a value: per upstream, the approved pins and the pending
//! items by kind and name, plus a bounded journal of approvals and
//! revocations; its JSON form; and [`Update`]s that a gateway's decisions
//! apply to it.
//!
//! The file (`[integrity] store`), pretty-printed JSON:
//!
//! ```json
//! {
//!   "format": "manifold-pins-v1",
//!   "revision": 12,
//!   "next_seq": 3,
//!   "upstreams": {
//!     "github": {
//!       "pinned_since": "2026-11-26T09:05:03Z",
//!       "approved": {
//!         "tool": {
//!           "create_issue": {
//!             "fingerprint": "sha256:…", "first_seen": "2026-11-26T09:05:03Z",
//!             "approved_by": "trust-on-first-use", "approved_at": "2026-11-26T09:05:03Z",
//!             "definition": {"name": "create_issue", "description": "…", "inputSchema": {…}}
//!           }
//!         }
//!       },
//!       "pending": {
//!         "tool": {
//!           "search": {"fingerprint": "sha256:…", "reason": "changed",
//!                      "first_seen": "2026-11-27T10:00:00Z", "definition": {…}}
//!         }
//!       }
//!     }
//!   },
//!   "journal": [
//!     {"seq": 2, "at": "…", "action": "approve", "upstream": "github", "kind": "tool",
//!      "name": "search", "fingerprint": "sha256:…", "previous": "sha256:…", "by": "local:alice"}
//!   ]
//! }
//! ```
//!
//! - `revision` goes up by one with every write (change detection; a
//!   compare-and-swap for a shared copy); `next_seq` numbers journal entries.
//! - `approved.<kind>.<name>`: kinds `tool`, `prompt`, `resource_template`,
//!   `resource` (by URI), `instructions` (the one item `instructions`);
//!   names as the upstream names the item (`uriTemplate` for templates).
//!   `definition` is the item as the upstream sent it, `_meta` included (not
//!   part of the fingerprint). `approved_by`: a principal (`local:alice`,
//!   `jwt:corp:bob`, `admin:ops`) or `trust-on-first-use`.
//! - `pending`: what the upstream published last for an item that is held
//!   (`reason`: `changed` — differs from its pin — or `new` — never
//!   approved), so that a diff can be shown and approved without a running
//!   gateway. Replaced when the upstream publishes yet another definition,
//!   removed when it goes back to its pin or stops publishing the item.
//! - `pinned_since`: when the upstream got its first pin; from then on it
//!   "has pins" (new items follow `new_tools`, not `trust_on_first_use`),
//!   even after every pin is revoked.
//! - `judged`: the kinds judged per kind (`resource`, `instructions`) whose
//!   first sight has passed, empty list or not: their new items follow
//!   `new_tools` from then on (a store written before they were judged
//!   trusts their first sight once).
//! - `journal`: the last [`MAX_JOURNAL`] approvals and revocations, oldest
//!   first, for the gateway to audit once it reads them.
//!
//! Invariants: a loaded store has the expected `format`, every fingerprint is
//! the fingerprint of the definition next to it and every definition names
//! its own key (a hand-edited or damaged file is refused, never half-used);
//! its JSON is at most [`MAX_STORE_BYTES`]; applying an [`Update`] never
//! overwrites an approval (pins made at first sight are made only where no
//! pin exists, and a pending item equal to its pin is not recorded).
//!
//! Not here: deciding (`decide`), approving (`approve`), the file (`file`).

use manifold_catalog::fingerprint::{diff, DefinitionDiff, Fingerprint};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};

use crate::{item::ItemKind, item::ItemRef, item::TRUST_ON_FIRST_USE};

/// The value of `format`.
pub const FORMAT: &str = "manifold-pins-v1";
/// The largest store read or written (its JSON text): 10,000 items per list
/// of 2–5 KiB each, approved and pending, for a handful of upstreams.
pub const MAX_STORE_BYTES: usize = 64 * 1024 * 1024;
/// Journal entries kept (the oldest are dropped first).
pub const MAX_JOURNAL: usize = 1000;

/// The whole store.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PinStore {
    pub format: String,
    pub revision: u64,
    pub next_seq: u64,
    #[serde(default)]
    pub upstreams: BTreeMap<String, UpstreamPins>,
    #[serde(default)]
    pub journal: Vec<JournalEntry>,
}

/// One upstream's pins and pending items.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UpstreamPins {
    /// When it got its first pin (`None`: never had one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pinned_since: Option<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub approved: BTreeMap<ItemKind, BTreeMap<String, Pin>>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub pending: BTreeMap<ItemKind, BTreeMap<String, Pending>>,
    /// Kinds judged per kind ([`ItemKind::judged_per_kind`]) whose first
    /// sight has passed: from then on their new items follow `new_tools`,
    /// even when the upstream published none of them then, and after every
    /// pin of the kind is revoked.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub judged: BTreeSet<ItemKind>,
}

/// An approved definition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pin {
    pub fingerprint: Fingerprint,
    /// When this definition was first seen.
    pub first_seen: String,
    /// A principal, or [`TRUST_ON_FIRST_USE`].
    pub approved_by: String,
    pub approved_at: String,
    pub definition: Map<String, Value>,
}

/// Why an item is held.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PendingReason {
    /// It differs from its pin.
    Changed,
    /// It was never approved.
    New,
}

impl PendingReason {
    pub fn as_str(self) -> &'static str {
        match self {
            PendingReason::Changed => "changed",
            PendingReason::New => "new",
        }
    }
}

/// What an upstream publishes for a held item.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pending {
    pub fingerprint: Fingerprint,
    pub reason: PendingReason,
    /// When this definition was first seen.
    pub first_seen: String,
    pub definition: Map<String, Value>,
}

/// An approval or a revocation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JournalEntry {
    pub seq: u64,
    pub at: String,
    /// `approve` or `revoke`.
    pub action: String,
    pub upstream: String,
    pub kind: ItemKind,
    pub name: String,
    /// Approve: the fingerprint approved; revoke: the one revoked.
    pub fingerprint: Fingerprint,
    /// Approve: the pin it replaced, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous: Option<Fingerprint>,
    pub by: String,
}

/// A store that cannot be used as it is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct InvalidStore(pub String);

impl Default for PinStore {
    fn default() -> Self {
        PinStore::new()
    }
}

impl PinStore {
    /// An empty store.
    pub fn new() -> PinStore {
        PinStore {
            format: FORMAT.to_string(),
            revision: 0,
            next_seq: 1,
            upstreams: BTreeMap::new(),
            journal: Vec::new(),
        }
    }

    /// Reads and checks a store's JSON.
    pub fn from_slice(bytes: &[u8]) -> Result<PinStore, InvalidStore> {
        if bytes.len() > MAX_STORE_BYTES {
            return Err(InvalidStore(format!(
                "{} bytes, over the limit of {MAX_STORE_BYTES}",
                bytes.len()
            )));
        }
        let store: PinStore = serde_json::from_slice(bytes)
            .map_err(|e| InvalidStore(format!("not a pin store: {e}")))?;
        store.check()?;
        Ok(store)
    }

    /// The store's JSON (pretty, one member per line), refused past
    /// [`MAX_STORE_BYTES`].
    pub fn to_vec(&self) -> Result<Vec<u8>, InvalidStore> {
        let mut bytes = serde_json::to_vec_pretty(self)
            .map_err(|e| InvalidStore(format!("cannot serialize: {e}")))?;
        bytes.push(b'\n');
        if bytes.len() > MAX_STORE_BYTES {
            return Err(InvalidStore(format!(
                "{} bytes, over the limit of {MAX_STORE_BYTES}: too many items pinned or pending",
                bytes.len()
            )));
        }
        Ok(bytes)
    }

    fn check(&self) -> Result<(), InvalidStore> {
        if self.format != FORMAT {
            return Err(InvalidStore(format!(
                "`format` is {:?}, expected {FORMAT:?}",
                self.format
            )));
        }
        for (upstream, u) in &self.upstreams {
            if upstream.is_empty() {
                return Err(InvalidStore("an upstream with an empty name".into()));
            }
            let items = u
                .approved
                .iter()
                .flat_map(|(k, m)| {
                    m.iter()
                        .map(move |(n, p)| (*k, n, &p.fingerprint, &p.definition, "approved"))
                })
                .chain(u.pending.iter().flat_map(|(k, m)| {
                    m.iter()
                        .map(move |(n, p)| (*k, n, &p.fingerprint, &p.definition, "pending"))
                }));
            for (kind, name, fp, def, section) in items {
                let at = || format!("{section} {}", ItemRef::new(upstream, kind, name));
                if kind.name_of(def) != Some(name.as_str()) {
                    return Err(InvalidStore(format!(
                        "{}: the definition's `{}` is not {name:?}",
                        at(),
                        kind.key_member()
                    )));
                }
                if Fingerprint::of(def) != *fp {
                    return Err(InvalidStore(format!(
                        "{}: the fingerprint is not that of the definition (edited by hand, or damaged)",
                        at()
                    )));
                }
            }
        }
        Ok(())
    }

    /// The pin of an item.
    pub fn pin(&self, item: &ItemRef) -> Option<&Pin> {
        self.upstreams
            .get(&item.upstream)?
            .approved
            .get(&item.kind)?
            .get(&item.name)
    }

    /// The pending definition of an item.
    pub fn pending(&self, item: &ItemRef) -> Option<&Pending> {
        self.upstreams
            .get(&item.upstream)?
            .pending
            .get(&item.kind)?
            .get(&item.name)
    }

    /// Whether an upstream has had a pin (new items then follow
    /// `new_tools`).
    pub fn has_pins(&self, upstream: &str) -> bool {
        self.upstreams
            .get(upstream)
            .is_some_and(|u| u.pinned_since.is_some())
    }

    /// Whether the first sight of `kind` (judged per kind) has passed for
    /// `upstream`.
    pub fn judged(&self, upstream: &str, kind: ItemKind) -> bool {
        self.upstreams
            .get(upstream)
            .is_some_and(|u| u.judged.contains(&kind))
    }

    /// Every pin, by upstream, kind and name.
    pub fn pins(&self) -> impl Iterator<Item = (ItemRef, &Pin)> {
        self.upstreams.iter().flat_map(|(u, pins)| {
            pins.approved
                .iter()
                .flat_map(move |(k, m)| m.iter().map(move |(n, p)| (ItemRef::new(u, *k, n), p)))
        })
    }

    /// Every pending item with its pin (if any), by upstream, kind and name.
    pub fn pending_items(&self) -> impl Iterator<Item = (ItemRef, &Pending, Option<&Pin>)> {
        self.upstreams.iter().flat_map(move |(u, pins)| {
            pins.pending.iter().flat_map(move |(k, m)| {
                m.iter().map(move |(n, p)| {
                    let item = ItemRef::new(u, *k, n);
                    let pin = pins.approved.get(k).and_then(|a| a.get(n));
                    (item, p, pin)
                })
            })
        })
    }

    /// Pins and pending items of one upstream, by kind.
    pub fn counts(&self, upstream: &str) -> BTreeMap<ItemKind, (usize, usize)> {
        let mut out = BTreeMap::new();
        if let Some(u) = self.upstreams.get(upstream) {
            for (k, m) in &u.approved {
                out.entry(*k).or_insert((0, 0)).0 += m.len();
            }
            for (k, m) in &u.pending {
                out.entry(*k).or_insert((0, 0)).1 += m.len();
            }
        }
        out
    }

    /// Journal entries after `seq` (all with `0`), oldest first.
    pub fn journal_after(&self, seq: u64) -> &[JournalEntry] {
        let start = self.journal.partition_point(|e| e.seq <= seq);
        &self.journal[start..]
    }

    /// The last journal entry's `seq` (`0` when none was ever written).
    pub fn last_seq(&self) -> u64 {
        self.next_seq.saturating_sub(1)
    }

    pub(crate) fn journal(&mut self, mut entry: JournalEntry) {
        entry.seq = self.next_seq;
        self.next_seq += 1;
        self.journal.push(entry);
        if self.journal.len() > MAX_JOURNAL {
            let excess = self.journal.len() - MAX_JOURNAL;
            self.journal.drain(..excess);
        }
    }

    pub(crate) fn upstream_mut(&mut self, upstream: &str) -> &mut UpstreamPins {
        self.upstreams.entry(upstream.to_string()).or_default()
    }

    /// Sets a pin (and `pinned_since`, the first time); removes the item's
    /// pending entry. Returns the pin it replaced.
    pub(crate) fn set_pin(&mut self, item: &ItemRef, pin: Pin) -> Option<Pin> {
        let u = self.upstream_mut(&item.upstream);
        if u.pinned_since.is_none() {
            u.pinned_since = Some(pin.approved_at.clone());
        }
        remove_from(&mut u.pending, item.kind, &item.name);
        u.approved
            .entry(item.kind)
            .or_default()
            .insert(item.name.clone(), pin)
    }

    /// Applies a gateway's [`Update`]; returns whether anything changed.
    pub fn apply(&mut self, update: &Update) -> bool {
        let mut changed = false;
        for op in &update.ops {
            changed |= self.apply_op(&update.upstream, op);
        }
        if let Some(u) = self.upstreams.get(&update.upstream) {
            if u.pinned_since.is_none()
                && u.approved.is_empty()
                && u.pending.is_empty()
                && u.judged.is_empty()
            {
                self.upstreams.remove(&update.upstream);
            }
        }
        changed
    }

    fn apply_op(&mut self, upstream: &str, op: &Op) -> bool {
        match op {
            Op::Pin {
                kind,
                name,
                fingerprint,
                definition,
                at,
            } => {
                let item = ItemRef::new(upstream, *kind, name);
                if self.pin(&item).is_some() {
                    return false;
                }
                self.set_pin(
                    &item,
                    Pin {
                        fingerprint: *fingerprint,
                        first_seen: at.clone(),
                        approved_by: TRUST_ON_FIRST_USE.to_string(),
                        approved_at: at.clone(),
                        definition: definition.clone(),
                    },
                );
                true
            }
            Op::Pend {
                kind,
                name,
                fingerprint,
                reason,
                definition,
                at,
            } => {
                let item = ItemRef::new(upstream, *kind, name);
                if self
                    .pin(&item)
                    .is_some_and(|p| p.fingerprint == *fingerprint)
                {
                    return false;
                }
                let reason = if self.pin(&item).is_some() {
                    PendingReason::Changed
                } else {
                    *reason
                };
                if let Some(p) = self.pending(&item) {
                    if p.fingerprint == *fingerprint && p.reason == reason {
                        return false;
                    }
                }
                let first_seen = match self.pending(&item) {
                    Some(p) if p.fingerprint == *fingerprint => p.first_seen.clone(),
                    _ => at.clone(),
                };
                self.upstream_mut(upstream)
                    .pending
                    .entry(*kind)
                    .or_default()
                    .insert(
                        name.clone(),
                        Pending {
                            fingerprint: *fingerprint,
                            reason,
                            first_seen,
                            definition: definition.clone(),
                        },
                    );
                true
            }
            Op::Unpend { kind, name } => match self.upstreams.get_mut(upstream) {
                Some(u) => remove_from(&mut u.pending, *kind, name),
                None => false,
            },
            Op::Judged { kind } => self.upstream_mut(upstream).judged.insert(*kind),
        }
    }
}

/// Removes `name` of `kind` from a by-kind map, dropping an emptied kind.
pub(crate) fn remove_from<T>(
    map: &mut BTreeMap<ItemKind, BTreeMap<String, T>>,
    kind: ItemKind,
    name: &str,
) -> bool {
    let Some(m) = map.get_mut(&kind) else {
        return false;
    };
    let removed = m.remove(name).is_some();
    if m.is_empty() {
        map.remove(&kind);
    }
    removed
}

impl Pending {
    /// How this definition differs from the pin (`None` for a new item).
    pub fn diff(&self, pin: Option<&Pin>) -> Option<DefinitionDiff> {
        pin.map(|p| diff(&p.definition, &self.definition))
    }
}

/// What one decision asks of the store, for one upstream (serializable, so
/// a replica can send it to the others).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Update {
    pub upstream: String,
    pub ops: Vec<Op>,
}

impl Update {
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }
}

/// One change to the store.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case", deny_unknown_fields)]
pub enum Op {
    /// Pin at first sight ([`TRUST_ON_FIRST_USE`]), unless the item has a
    /// pin by now.
    Pin {
        kind: ItemKind,
        name: String,
        fingerprint: Fingerprint,
        definition: Map<String, Value>,
        at: String,
    },
    /// Record what the upstream publishes for a held item (kept as it is
    /// when already recorded; skipped when it equals the pin by now).
    Pend {
        kind: ItemKind,
        name: String,
        fingerprint: Fingerprint,
        reason: PendingReason,
        definition: Map<String, Value>,
        at: String,
    },
    /// Forget a pending item (back to its pin, or no longer published).
    Unpend { kind: ItemKind, name: String },
    /// The first sight of a kind judged per kind has passed.
    Judged { kind: ItemKind },
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    pub(crate) fn def(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => unreachable!("an object"),
        }
    }

    fn pin_op(name: &str, description: &str) -> Op {
        let d = def(json!({"name": name, "description": description}));
        Op::Pin {
            kind: ItemKind::Tool,
            name: name.into(),
            fingerprint: Fingerprint::of(&d),
            definition: d,
            at: "t0".into(),
        }
    }

    fn pend_op(name: &str, description: &str, at: &str) -> Op {
        let d = def(json!({"name": name, "description": description}));
        Op::Pend {
            kind: ItemKind::Tool,
            name: name.into(),
            fingerprint: Fingerprint::of(&d),
            reason: PendingReason::New,
            definition: d,
            at: at.into(),
        }
    }

    fn update(ops: Vec<Op>) -> Update {
        Update {
            upstream: "gh".into(),
            ops,
        }
    }

    #[test]
    fn updates_pin_once_never_over_an_approval_and_keep_first_seen() {
        let mut s = PinStore::new();
        assert!(s.apply(&update(vec![pin_op("a", "A")])));
        let a = ItemRef::new("gh", ItemKind::Tool, "a");
        assert_eq!(s.pin(&a).expect("pinned").approved_by, TRUST_ON_FIRST_USE);
        assert!(s.has_pins("gh"));
        // A second first-sight pin (another replica's, say) changes nothing.
        assert!(!s.apply(&update(vec![pin_op("a", "other")])));
        assert_eq!(s.pin(&a).expect("pinned").definition["description"], "A");
        // Pending: held against the pin as `changed` whatever was asked;
        // recorded once; first_seen kept while the definition stays.
        assert!(s.apply(&update(vec![pend_op("a", "B", "t1")])));
        assert_eq!(
            s.pending(&a).expect("pending").reason,
            PendingReason::Changed
        );
        assert!(!s.apply(&update(vec![pend_op("a", "B", "t2")])));
        assert_eq!(s.pending(&a).expect("pending").first_seen, "t1");
        assert!(s.apply(&update(vec![pend_op("a", "C", "t3")])));
        assert_eq!(s.pending(&a).expect("pending").first_seen, "t3");
        // A new item is recorded as new; one equal to its pin is not recorded.
        let x = ItemRef::new("gh", ItemKind::Tool, "x");
        assert!(s.apply(&update(vec![pend_op("x", "X", "t")])));
        assert_eq!(s.pending(&x).expect("pending").reason, PendingReason::New);
        assert!(!s.apply(&update(vec![pend_op("a", "A", "t4")])));
        for name in ["a", "x"] {
            assert!(s.apply(&update(vec![Op::Unpend {
                kind: ItemKind::Tool,
                name: name.into()
            }])));
        }
        assert!(s.pending(&a).is_none());
        assert!(
            s.upstreams["gh"].pending.is_empty(),
            "emptied kinds are dropped"
        );
    }

    #[test]
    fn the_json_round_trips_and_a_damaged_store_is_refused_with_the_reason() {
        let mut s = PinStore::new();
        let u = update(vec![pin_op("a", "A"), pend_op("b", "B", "t")]);
        let sent: Update = serde_json::from_slice(&serde_json::to_vec(&u).expect("json"))
            .expect("an update reads back");
        assert_eq!(sent, u);
        s.apply(&u);
        let bytes = s.to_vec().expect("json");
        let text = String::from_utf8(bytes.clone()).expect("utf-8");
        assert!(text.contains("\"format\": \"manifold-pins-v1\""), "{text}");
        assert_eq!(PinStore::from_slice(&bytes).expect("loads"), s);

        let edited = text.replacen("\"description\": \"A\"", "\"description\": \"evil\"", 1);
        let e = PinStore::from_slice(edited.as_bytes()).expect_err("refused");
        assert!(
            e.0.contains("approved gh/a (tool)") && e.0.contains("edited by hand"),
            "{e}"
        );
        let renamed = text.replacen("\"name\": \"b\"", "\"name\": \"c\"", 1);
        let e = PinStore::from_slice(renamed.as_bytes()).expect_err("refused");
        assert!(
            e.0.contains("pending gh/b (tool)") && e.0.contains("`name`"),
            "{e}"
        );
        for (bad, want) in [
            (
                text.replace("manifold-pins-v1", "manifold-pins-v9"),
                "expected \"manifold-pins-v1\"",
            ),
            (
                text.replace("\"revision\"", "\"revisions\""),
                "unknown field `revisions`",
            ),
            ("{".to_string(), "not a pin store"),
            (text.replacen("\"sha256:", "\"md5:", 1), "not a fingerprint"),
        ] {
            let e = PinStore::from_slice(bad.as_bytes()).expect_err(want);
            assert!(e.0.contains(want), "{want}: {e}");
        }
        let big = vec![b' '; MAX_STORE_BYTES + 1];
        assert!(PinStore::from_slice(&big)
            .expect_err("too big")
            .0
            .contains("over the limit"));
    }

    #[test]
    fn the_journal_is_bounded_and_read_after_a_sequence_number() {
        let mut s = PinStore::new();
        let d = def(json!({"name": "a"}));
        for _ in 0..MAX_JOURNAL + 10 {
            s.journal(JournalEntry {
                seq: 0,
                at: "t".into(),
                action: "approve".into(),
                upstream: "gh".into(),
                kind: ItemKind::Tool,
                name: "a".into(),
                fingerprint: Fingerprint::of(&d),
                previous: None,
                by: "local:me".into(),
            });
        }
        assert_eq!(s.journal.len(), MAX_JOURNAL);
        assert_eq!(s.last_seq(), (MAX_JOURNAL + 10) as u64);
        assert_eq!(s.journal[0].seq, 11);
        assert_eq!(s.journal_after(0).len(), MAX_JOURNAL);
        assert_eq!(s.journal_after(s.last_seq() - 3).len(), 3);
        assert!(s.journal_after(s.last_seq()).is_empty());
    }
}
