//! Architecture tests: a crate declares its top-level modules in layers, top
//! to bottom, and [`check`] reads every source file and reports
//! - each import that points up a layer (`crate::…` into a higher layer);
//! - each cycle between files: no file imports, directly or through others, a
//!   file that imports it (`crate::…`, `super::…`, `self::…` and paths through
//!   a child module all count), so every file has a place in one order.
//!
//! [`chain`] checks a chain of steps kept as one folder: a file (or folder) per
//! step and nothing else beside the chain's own, each function of the chain's
//! `mod.rs` calling the steps it uses in the documented order, every step
//! reached from the chain, and the order written the same in the docs that
//! show it. [`calls`] finds where a call is made (the places an observation is
//! finished), and [`numbers`] the literals that belong in a table (JSON-RPC
//! error codes).
//!
//! What counts as an import: every path in the code — `use` declarations
//! (groups and nested groups included) and inline paths — with comments,
//! string literals, inline `mod … { … }` blocks and test files (`tests.rs`,
//! `proptests.rs`) left out. A path
//! leads to the deepest module file it names. The crate root (`lib.rs`) is
//! the crate's public face: it declares modules and re-exports, and [`check`]
//! reports any item it defines and any module naming an item through it
//! (`crate::Item`), so every import names the module it depends on.
//!
//! Invariants: pure (reads files, no other I/O), no dependencies; every report
//! names the files and the import, so a failure says what to move.
//!
//! Not here: crate-to-crate direction (Cargo already forbids cycles there).

mod chain;
mod find;
mod imports;
mod layers;
mod text;

pub use chain::chain;
pub use find::{calls, numbers};
pub use layers::{check, dependencies, Layers};

#[cfg(test)]
mod tests;
