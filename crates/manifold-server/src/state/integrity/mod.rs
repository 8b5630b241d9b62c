//! Tool integrity in the gateway (`[integrity]`): at each catalogue build,
//! every ready upstream's fresh lists are judged against the pins
//! ([`manifold_integrity::decide_published`]); under `mode = "quarantine"` the held items
//! (changed, or new and not pinned by the rules) are taken out of the lists the
//! catalogue is built from, so they are absent from every list, endpoint and
//! view, and a call naming one answers exactly as an unknown item
//! ([`Refusal::Quarantined`], audited `quarantined`). Under `"warn"` the same
//! decisions are logged and counted and nothing is withheld; under `"off"`
//! nothing is fingerprinted. Held instructions are left out of the merged
//! text (`Integrity::instructions_to_serve`: only text judged at the last
//! build is served).
//!
//! Invariants:
//! - decisions run per catalogue change, never per request: an upstream's
//!   judgement is kept until its lists, its allow/deny filter, the rules or the
//!   store (other than by this gateway's own first-sight updates) change;
//! - lists go through the operator's allow/deny filter before they are judged
//!   (a hidden tool is neither pinned nor held), and the fingerprint is of
//!   what the upstream sent (overrides apply later, in the catalogue);
//! - only the lists of a successful fetch of all of an upstream's lists are
//!   judged (a down upstream has none: its pending entries stay);
//! - no lock is held across `.await`; the store file is touched only in the
//!   keeper task (`keeper`), on a blocking thread.
//!
//! Not here: the store's format and the decision rules (manifold-integrity),
//! the keeper task that writes and watches the store and audits approvals
//! (`keeper`), `POST /pins/approve` (`admin/mod.rs`).

mod build;
pub(crate) mod keeper;
pub(crate) mod metrics;
mod shared;

use arc_swap::ArcSwap;
use manifold_catalog::{Catalog, ItemFilter, Kind, NamingPolicy, UpstreamInput, UpstreamLists};
use manifold_config::integrity::{IntegrityMode, IntegritySettings};
use manifold_integrity::{
    decide_published, DefinitionDiff, ItemKind, PinStore, Rules, Update, Verdict,
};
use parking_lot::Mutex;
use serde_json::{Map, Value};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use tokio::sync::mpsc;

/// Store changes waiting for the keeper task to write them; past it a
/// judgement's update is dropped from the file (it is still applied in
/// memory, and the next judgement of that upstream sends it again).
pub(crate) const STORE_WRITE_QUEUE: usize = 256;

/// One held item of an upstream.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct HeldItem {
    pub kind: ItemKind,
    /// The upstream's own name (`uriTemplate` for a template).
    pub name: String,
    /// `changed`, `new` or `duplicate` (the name is published more than
    /// once: every copy is held).
    pub reason: &'static str,
    /// Against the approved definition, for a changed item.
    pub diff: Option<DefinitionDiff>,
    /// What the upstream publishes now.
    pub definition: Map<String, Value>,
}

/// One item `[integrity]` holds now (`manifold check`).
#[derive(Debug, Clone, serde::Serialize)]
pub struct Quarantined {
    pub upstream: String,
    /// `tool`, `prompt`, `resource_template`, `resource` or `instructions`.
    pub kind: &'static str,
    /// The upstream's own name (`uriTemplate` for a template).
    pub name: String,
    /// `changed` (differs from its pin), `new` (never approved) or
    /// `duplicate` (published more than once by the upstream: every copy is
    /// held, whatever its pin says, until the upstream publishes one).
    pub reason: &'static str,
    /// Withheld from lists and calls (`mode = "quarantine"`), or only
    /// reported (`"warn"`).
    pub withheld: bool,
    /// What changed against the approved definition (a changed item): the
    /// fields, and the old and new description text.
    pub diff: Option<manifold_integrity::DefinitionDiff>,
    /// The description the upstream publishes now (a new item).
    pub description: Option<String>,
}

/// What is held of one upstream, as last judged.
#[derive(Debug, Default)]
pub(crate) struct UpstreamHeld {
    pub items: Vec<HeldItem>,
    /// Whether the items are withheld (`mode = "quarantine"`) or only
    /// reported (`"warn"`).
    pub withheld: bool,
    /// The instructions as judged (what the merged text may serve of this
    /// upstream: never text that was not judged).
    pub instructions: Option<String>,
}

impl UpstreamHeld {
    /// The names kept out of the lists, by kind: every held item under
    /// `mode = "quarantine"`, only the duplicates under `"warn"` (the
    /// catalogue serves no copy of a repeated name in either mode).
    pub(super) fn names(&self) -> BTreeMap<ItemKind, HashSet<&str>> {
        let mut out: BTreeMap<ItemKind, HashSet<&str>> = BTreeMap::new();
        for i in self
            .items
            .iter()
            .filter(|i| self.withheld || i.reason == "duplicate")
        {
            out.entry(i.kind).or_default().insert(i.name.as_str());
        }
        out
    }

    /// Held items by kind.
    pub(crate) fn counts(&self) -> BTreeMap<ItemKind, usize> {
        let mut out = BTreeMap::new();
        for i in &self.items {
            *out.entry(i.kind).or_insert(0) += 1;
        }
        out
    }
}

/// What is held now, for every upstream, and the withheld items' own
/// catalogue (so a call naming one can be told apart from a call naming
/// nothing, for the audit; the answer is the same).
#[derive(Default)]
pub(crate) struct Held {
    pub by_upstream: BTreeMap<Arc<str>, Arc<UpstreamHeld>>,
    /// Only the withheld items, named as the catalogue would name them.
    withheld: Option<Catalog>,
}

/// One upstream's last judgement and what it was made from.
struct Memo {
    lists: Arc<UpstreamLists>,
    filter: Arc<ItemFilter>,
    rules: Rules,
    mode: IntegrityMode,
    generation: u64,
    /// The upstream's instructions as judged.
    instructions: Option<String>,
    judged: Arc<UpstreamLists>,
    held: Arc<UpstreamHeld>,
}

/// The gateway's integrity state.
pub(crate) struct Integrity {
    /// The pins in force (the store file's, when there is one).
    pub(crate) store: Mutex<PinStore>,
    /// Bumped when the store changes other than by this gateway's own
    /// first-sight updates (an approval, a revocation, another process):
    /// every upstream is judged again then.
    generation: AtomicU64,
    memo: Mutex<HashMap<Arc<str>, Memo>>,
    held: ArcSwap<Held>,
    /// The journal entries already audited (the store's `seq`).
    pub(crate) audited: AtomicU64,
    /// The highest authentic entry of the replicas' shared log read (`shared`).
    pub(crate) shared_seen: AtomicU64,
    /// The shared log's counter at the last look (`None`: no look yet).
    pub(crate) shared_counter: Mutex<Option<u64>>,
    /// Updates for the keeper task to write, when it runs.
    writes: Mutex<Option<mpsc::Sender<Update>>>,
    /// The store file, when the keeper runs (`keeper`).
    pub(crate) file: OnceLock<Arc<Mutex<manifold_integrity::Watch>>>,
    /// Asks the keeper to look at the file now (a reload).
    pub(crate) nudge: tokio::sync::Notify,
    pub(crate) metrics: metrics::IntegrityMetrics,
}

impl Integrity {
    pub(crate) fn new(store: PinStore, metrics: metrics::IntegrityMetrics) -> Integrity {
        Integrity {
            audited: AtomicU64::new(store.last_seq()),
            shared_seen: AtomicU64::new(0),
            shared_counter: Mutex::new(None),
            store: Mutex::new(store),
            generation: AtomicU64::new(0),
            memo: Mutex::new(HashMap::new()),
            held: ArcSwap::from_pointee(Held::default()),
            writes: Mutex::new(None),
            file: OnceLock::new(),
            nudge: tokio::sync::Notify::new(),
            metrics,
        }
    }

    /// What is held now.
    pub(crate) fn held(&self) -> Arc<Held> {
        self.held.load_full()
    }

    /// Replaces the store in memory with `store` (an approval, a revocation,
    /// another process's write); true when its pins or pending items
    /// differ, and the upstreams must be judged again.
    pub(crate) fn adopt(&self, store: PinStore) -> bool {
        let mut mine = self.store.lock();
        let changed = mine.upstreams != store.upstreams;
        *mine = store;
        if changed {
            self.generation.fetch_add(1, Ordering::Relaxed);
        }
        changed
    }

    /// Where updates go to be written (set by the keeper task).
    pub(crate) fn set_writer(&self, tx: mpsc::Sender<Update>) {
        *self.writes.lock() = Some(tx);
    }

    /// Whether `name` of `kind` (a tool or prompt, exposed name) is withheld.
    pub(crate) fn withholds(&self, kind: Kind, name: &str) -> bool {
        let held = self.held.load();
        held.withheld
            .as_ref()
            .is_some_and(|c| c.list(kind).get(name).is_some())
    }

    /// The instructions of `upstream` the merged text may serve: the text
    /// judged at the last catalogue build, unless it is withheld. An upstream
    /// not judged then (down, or connected since) has none to serve, so a
    /// held text never comes back by its upstream going away, nor is new
    /// text served before it is judged.
    pub(crate) fn instructions_to_serve(&self, upstream: &str) -> Option<String> {
        let held = self.held.load();
        let h = held.by_upstream.get(upstream)?;
        let withheld = h.withheld && h.items.iter().any(|i| i.kind == ItemKind::Instructions);
        (!withheld).then(|| h.instructions.clone()).flatten()
    }

    /// Whether `uri` reads through a withheld resource template (or is a
    /// withheld static resource).
    pub(crate) fn withholds_uri(&self, uri: &str) -> bool {
        let held = self.held.load();
        held.withheld.as_ref().is_some_and(|c| {
            c.resources.template_owner(uri).is_some() || c.resources.owner(uri).is_some()
        })
    }

    /// Whether `uri` (exposed) is a withheld skill's `SKILL.md`, a file it
    /// announced, or a path in its directory.
    pub(crate) fn withholds_skill_path(&self, uri: &str) -> bool {
        let held = self.held.load();
        held.withheld
            .as_ref()
            .is_some_and(|c| c.skills.holding(uri).is_some())
    }

    /// What `/upstreams` shows of `upstream`: its pins and held items by
    /// kind, whether the held ones are withheld, and each held item's name
    /// and reason (`manifold check` shows the diffs).
    pub(crate) fn report(&self, upstream: &str) -> Value {
        let held = self.held.load();
        let mine = held.by_upstream.get(upstream);
        let pinned = self.store.lock().counts(upstream);
        let by_kind: Map<String, Value> = ItemKind::ALL
            .iter()
            .map(|k| {
                let n = mine.map_or(0, |h| h.items.iter().filter(|i| i.kind == *k).count());
                let p = pinned.get(k).map_or(0, |c| c.0);
                (
                    k.as_str().to_string(),
                    serde_json::json!({"pinned": p, "held": n}),
                )
            })
            .collect();
        let items: Vec<Value> = mine
            .map(|h| {
                h.items
                    .iter()
                    .map(
                        |i| serde_json::json!({"kind": i.kind, "name": i.name, "reason": i.reason}),
                    )
                    .collect()
            })
            .unwrap_or_default();
        serde_json::json!({
            "withheld": mine.is_some_and(|h| h.withheld && !h.items.is_empty()),
            "counts": by_kind,
            "held": items,
        })
    }

    /// Judges one upstream's lists (memoized); returns the lists the
    /// catalogue is built from and what is held.
    pub(super) fn judge(
        &self,
        upstream: &Arc<str>,
        lists: &Arc<UpstreamLists>,
        instructions: Option<&str>,
        filter: &Arc<ItemFilter>,
        settings: &IntegritySettings,
    ) -> (Arc<UpstreamLists>, Arc<UpstreamHeld>) {
        let rules = Rules::from(settings);
        let generation = self.generation.load(Ordering::Relaxed);
        if let Some(m) = self.memo.lock().get(upstream) {
            if Arc::ptr_eq(&m.lists, lists)
                && Arc::ptr_eq(&m.filter, filter)
                && m.rules == rules
                && m.mode == settings.mode
                && m.generation == generation
                && m.instructions.as_deref() == instructions
            {
                return (m.judged.clone(), m.held.clone());
            }
        }
        let shown = shown(lists, filter);
        let decisions = {
            let mut store = self.store.lock();
            let d = decide_published(
                &store,
                upstream,
                shown.as_ref().unwrap_or(lists),
                instructions,
                &rules,
                std::time::SystemTime::now(),
            );
            if !d.update.is_empty() {
                store.apply(&d.update);
            }
            d
        };
        if !decisions.update.is_empty() {
            self.write_later(decisions.update.clone());
        }
        let source = shown.as_ref().unwrap_or(lists);
        let items: Vec<HeldItem> = decisions
            .held()
            .filter_map(|d| {
                let definition = manifold_integrity::published(source, instructions, d.kind)
                    .iter()
                    .find(|i| d.kind.name_of(i) == Some(d.name.as_str()))?
                    .clone();
                Some(HeldItem {
                    kind: d.kind,
                    name: d.name.clone(),
                    reason: d.verdict.as_str(),
                    diff: match &d.verdict {
                        Verdict::Changed { diff, .. } => Some(diff.clone()),
                        _ => None,
                    },
                    definition,
                })
            })
            .collect();
        let held = Arc::new(UpstreamHeld {
            items,
            withheld: settings.withholds(),
            instructions: instructions.map(str::to_string),
        });
        let judged = if held.withheld && !held.items.is_empty() {
            Arc::new(without(lists, &held.names()))
        } else {
            lists.clone()
        };
        self.memo.lock().insert(
            upstream.clone(),
            Memo {
                lists: lists.clone(),
                filter: filter.clone(),
                rules,
                mode: settings.mode,
                generation,
                instructions: instructions.map(str::to_string),
                judged: judged.clone(),
                held: held.clone(),
            },
        );
        (judged, held)
    }

    fn write_later(&self, update: Update) {
        let writes = self.writes.lock();
        let Some(tx) = writes.as_ref() else {
            return;
        };
        if tx.try_send(update).is_err() {
            tracing::warn!(
                queue = STORE_WRITE_QUEUE,
                "the pin store's write queue is full; this change is kept in memory and written at the next judgement"
            );
            // Judged again next time, so the update is sent again.
            self.generation.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Records what is held now: logs and counts what became held or was
    /// released since the last judgement, sets the gauges, and keeps the
    /// withheld items' own catalogue.
    pub(super) fn settle(
        &self,
        now: BTreeMap<Arc<str>, Arc<UpstreamHeld>>,
        withheld_inputs: Vec<UpstreamInput>,
        naming: &NamingPolicy,
        page_size: usize,
    ) {
        let before = self.held.load_full();
        for (upstream, held) in &now {
            let was = before.by_upstream.get(upstream);
            for item in &held.items {
                let seen = was.is_some_and(|w| {
                    w.items.iter().any(|i| {
                        i.kind == item.kind
                            && i.name == item.name
                            && i.definition == item.definition
                    })
                });
                if seen {
                    continue;
                }
                self.metrics.event(upstream, item.kind, item.reason);
                let fields = item.diff.as_ref().map(|d| d.fields.join(", "));
                if item.reason == "duplicate" {
                    // A repeated name is a protocol error whatever the mode:
                    // the catalogue serves no copy, so no approval helps.
                    tracing::warn!(upstream = %upstream, kind = %item.kind, name = %manifold_foundation::text::printable(&item.name),
                        reason = item.reason,
                        "quarantined: the upstream publishes this name more than once; every copy is withheld until it publishes one");
                } else if held.withheld {
                    tracing::warn!(upstream = %upstream, kind = %item.kind, name = %manifold_foundation::text::printable(&item.name),
                        reason = item.reason, changed = fields.as_deref().unwrap_or("-"),
                        "quarantined: withheld from every list and call until approved (manifold check; manifold pins approve)");
                } else {
                    tracing::warn!(upstream = %upstream, kind = %item.kind, name = %manifold_foundation::text::printable(&item.name),
                        reason = item.reason, changed = fields.as_deref().unwrap_or("-"),
                        "integrity (warn): this item differs from what was approved; served as it is (mode = \"quarantine\" would withhold it)");
                }
            }
            if let Some(was) = was {
                for item in &was.items {
                    if !held
                        .items
                        .iter()
                        .any(|i| i.kind == item.kind && i.name == item.name)
                    {
                        tracing::info!(upstream = %upstream, kind = %item.kind, name = %manifold_foundation::text::printable(&item.name),
                            "released: the item matches its pin again, was approved, or is gone");
                    }
                }
            }
        }
        let counts: Vec<(&str, BTreeMap<ItemKind, usize>)> = before
            .by_upstream
            .keys()
            .chain(now.keys())
            .map(|u| (&**u, now.get(u).map(|h| h.counts()).unwrap_or_default()))
            .collect();
        self.metrics.set_counts(&counts);
        let withheld = (!withheld_inputs.is_empty())
            .then(|| Catalog::build(&withheld_inputs, naming, page_size));
        self.held.store(Arc::new(Held {
            by_upstream: now,
            withheld,
        }));
    }
}

/// The lists with what the filter hides taken out (`None`: it hides
/// nothing).
fn shown(lists: &UpstreamLists, filter: &ItemFilter) -> Option<UpstreamLists> {
    if *filter == ItemFilter::default() {
        return None;
    }
    let keep = |kind: Kind, items: &[Map<String, Value>]| -> Vec<Map<String, Value>> {
        items
            .iter()
            .filter(|i| {
                i.get("name")
                    .and_then(Value::as_str)
                    .is_none_or(|n| filter.shows(kind, n))
            })
            .cloned()
            .collect()
    };
    Some(UpstreamLists {
        tools: keep(Kind::Tools, &lists.tools),
        prompts: keep(Kind::Prompts, &lists.prompts),
        resources: lists.resources.clone(),
        resource_templates: lists.resource_templates.clone(),
        skills: lists.skills.clone(),
    })
}

/// `lists` without the items named in `held` (every item of a held name).
fn without(lists: &UpstreamLists, held: &BTreeMap<ItemKind, HashSet<&str>>) -> UpstreamLists {
    let keep = |kind: ItemKind, items: &[Map<String, Value>]| -> Vec<Map<String, Value>> {
        let Some(names) = held.get(&kind) else {
            return items.to_vec();
        };
        items
            .iter()
            .filter(|i| kind.name_of(i).is_none_or(|n| !names.contains(n)))
            .cloned()
            .collect()
    };
    UpstreamLists {
        tools: keep(ItemKind::Tool, &lists.tools),
        prompts: keep(ItemKind::Prompt, &lists.prompts),
        resources: keep(ItemKind::Resource, &lists.resources),
        resource_templates: keep(ItemKind::ResourceTemplate, &lists.resource_templates),
        skills: keep(ItemKind::Skill, &lists.skills),
    }
}

/// Only the items named in `held`, each name once (a duplicate's first
/// copy stands for all, so a call by its name is known as held).
pub(super) fn only(
    lists: &UpstreamLists,
    held: &BTreeMap<ItemKind, HashSet<&str>>,
) -> UpstreamLists {
    let pick = |kind: ItemKind, items: &[Map<String, Value>]| -> Vec<Map<String, Value>> {
        let Some(names) = held.get(&kind) else {
            return Vec::new();
        };
        let mut seen = HashSet::new();
        items
            .iter()
            .filter(|i| {
                kind.name_of(i)
                    .is_some_and(|n| names.contains(n) && seen.insert(n))
            })
            .cloned()
            .collect()
    };
    UpstreamLists {
        tools: pick(ItemKind::Tool, &lists.tools),
        prompts: pick(ItemKind::Prompt, &lists.prompts),
        resources: pick(ItemKind::Resource, &lists.resources),
        resource_templates: pick(ItemKind::ResourceTemplate, &lists.resource_templates),
        skills: pick(ItemKind::Skill, &lists.skills),
    }
}

#[cfg(test)]
mod tests;
