//! Tool integrity (`[integrity]`): what an operator approved of each upstream's
//! tools, prompts, resource templates, static resources and instructions (pins: a fingerprint and the approved
//! definition), what the upstream publishes now that differs (pending items),
//! and the decision for each item of a fresh list — approved, changed, new.
//!
//! Modules:
//! - [`store`]: the store as a value ([`PinStore`]) and its JSON format
//!   (documented there); bounded by [`MAX_STORE_BYTES`].
//! - [`decide`](mod@decide): the pure decision over (store, an upstream's
//!   fresh lists, rules, now) → per-item [`Decision`]s and an [`Update`] to
//!   apply to the store.
//! - [`approve`]: approvals and revocations by a principal (`manifold pins`,
//!   the admin plane), name lookup, and the journal a gateway audits.
//! - [`file`]: the store file — loaded with clear errors, written atomically
//!   under a lock, watched for changes another process made.
//! - [`replica`]: approvals and revocations as replicas share them, and
//!   applying another replica's to this one's store.
//!
//! How a gateway uses it: keep the [`PinStore`] in memory (loaded from the
//! file when `[integrity] store` is set); after each successful list fetch of
//! an upstream, [`decide()`] over its lists, withhold the held items (mode
//! `quarantine`) or log them (`warn`), and apply the [`Update`] (in memory, and
//! through [`file::StoreFile::modify`] when there is a file); when the store
//! changes underneath ([`file::Watch::poll`], a reload, another replica),
//! swap it in, decide again for every upstream, and audit its new
//! [`JournalEntry`]s ([`PinStore::journal_after`]).
//!
//! Invariants: the fingerprint is always of what the upstream sent (never of
//! what an override made of it); a pin is only ever created by first sight
//! under the rules, or by an approval naming a principal; nothing here
//! touches the network.
//!
//! Not here: fingerprints and diffs (manifold-catalog `fingerprint`), the
//! settings (manifold-config `integrity`), hiding items from lists and
//! refusing calls (manifold-server).

pub mod approve;
pub mod decide;
pub mod file;
mod item;
pub mod replica;
pub mod store;

pub use approve::{Approval, ApproveError, Names, Revocation, Selection, Wanted};
pub use decide::{decide, decide_published, Decision, Decisions, PinReason, Rules, Verdict};
pub use file::{StoreError, StoreFile, Watch};
pub use item::{
    published, ItemKind, ItemRef, INSTRUCTIONS, RESOURCE_MEMBERS, SKILL_MEMBERS, TRUST_ON_FIRST_USE,
};
pub use manifold_catalog::fingerprint::{DefinitionDiff, Fingerprint};
pub use replica::Shared;
pub use store::{
    InvalidStore, JournalEntry, Op, Pending, PendingReason, Pin, PinStore, Update, UpstreamPins,
    FORMAT, MAX_JOURNAL, MAX_STORE_BYTES,
};
