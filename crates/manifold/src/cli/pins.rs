//! `manifold pins list|approve|revoke`: the approved tool definitions in
//! `[integrity] store`, and the held ones waiting for approval, worked on
//! without a running gateway (see manifold-integrity).
//!
//! - `list [--json]`: each pin (upstream, kind, name, fingerprint, who
//!   approved it and when), then each pending item with its diff against the
//!   pin.
//! - `approve NAME... | --upstream U | --all`: the pending definitions
//!   become the pins, approved by `local:<user>`.
//! - `revoke NAME...`: the pins are removed; the items are new again
//!   (`new_tools` decides what happens to them).
//!
//! A NAME is `UPSTREAM/NAME`, the upstream's own name, or the exposed name
//! (`PREFIX<separator>NAME`); `--kind` narrows it when several items match.
//!
//! Invariants: every change happens under the store's lock on the store as
//! it is then (never on what was listed earlier), all or nothing; the
//! approver is recorded in the store's journal, which a running gateway
//! audits when it reads the store (this process cannot write the gateway's
//! audit log). Upstream text is printed with control and bidirectional
//! characters escaped. Exit codes: 0 done (also: nothing pending), 1 the
//! store could not be written (its lock held too long), 2 a bad
//! configuration (no `store`), an unreadable or damaged store, or a NAME
//! that names nothing, or several things.

use clap::{Subcommand, ValueEnum};
use manifold_catalog::fingerprint::printable;
use manifold_integrity::{
    ApproveError, ItemKind, ItemRef, Names, PinStore, Selection, StoreError, StoreFile, Wanted,
};
use serde_json::{json, Value};
use std::path::Path;
use std::process::ExitCode;
use std::time::SystemTime;

use super::table::Table;
use super::{ConfigArg, FAILED, USAGE};

#[derive(Subcommand)]
pub enum PinsCommand {
    /// Print every pin (upstream, kind, name, fingerprint, approved by,
    /// when), then every held item waiting for approval with its diff.
    ///
    /// Exit codes: 0 printed, 2 configuration error or an unreadable store.
    List {
        #[command(flatten)]
        config: ConfigArg,
        /// Print the same as one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Approve held items: what the upstream publishes now becomes the pin.
    ///
    /// Exit codes: 0 approved (or nothing pending), 1 the store could not be
    /// written, 2 configuration error, an unreadable store, or a NAME that
    /// is not pending.
    #[command(group(clap::ArgGroup::new("what").required(true).args(["names", "upstream", "all"])))]
    Approve {
        #[command(flatten)]
        config: ConfigArg,
        /// Items: `UPSTREAM/NAME`, the upstream's own name, or the exposed
        /// name.
        #[arg(value_name = "NAME")]
        names: Vec<String>,
        /// Every held item of this upstream.
        #[arg(long, value_name = "U")]
        upstream: Option<String>,
        /// Every held item.
        #[arg(long)]
        all: bool,
        /// Only items of this kind (when a NAME matches several).
        #[arg(long, value_enum)]
        kind: Option<KindArg>,
    },
    /// Remove pins: the items are new again (held or pinned at their next
    /// sight, as `[integrity] new_tools` says).
    ///
    /// Exit codes: 0 revoked, 1 the store could not be written, 2
    /// configuration error, an unreadable store, or a NAME that is not
    /// pinned.
    Revoke {
        #[command(flatten)]
        config: ConfigArg,
        #[arg(required = true, value_name = "NAME")]
        names: Vec<String>,
        /// Only items of this kind (when a NAME matches several).
        #[arg(long, value_enum)]
        kind: Option<KindArg>,
    },
}

#[derive(Clone, Copy, ValueEnum)]
pub enum KindArg {
    Tool,
    Prompt,
    #[value(name = "resource_template")]
    ResourceTemplate,
    /// A static resource's name, title and description.
    Resource,
    /// The server's instructions.
    Instructions,
    /// A skill (SEP-2640): its frontmatter and its files' digests.
    Skill,
}

impl From<KindArg> for ItemKind {
    fn from(k: KindArg) -> ItemKind {
        match k {
            KindArg::Tool => ItemKind::Tool,
            KindArg::Prompt => ItemKind::Prompt,
            KindArg::ResourceTemplate => ItemKind::ResourceTemplate,
            KindArg::Resource => ItemKind::Resource,
            KindArg::Instructions => ItemKind::Instructions,
            KindArg::Skill => ItemKind::Skill,
        }
    }
}

pub fn run(command: PinsCommand) -> ExitCode {
    let config = match &command {
        PinsCommand::List { config, .. }
        | PinsCommand::Approve { config, .. }
        | PinsCommand::Revoke { config, .. } => &config.config,
    };
    let (file, names, upstreams) = match open(config) {
        Ok(x) => x,
        Err(code) => return code,
    };
    let result = match command {
        PinsCommand::List { json, .. } => list(&file, json),
        PinsCommand::Approve {
            names: wanted,
            upstream,
            all,
            kind,
            ..
        } => {
            let what = match (all, upstream) {
                (true, _) => What::All,
                (false, Some(u)) => What::Upstream(u),
                (false, None) => What::Names(wanted),
            };
            approve(&file, &names, &upstreams, what, kind.map(Into::into))
        }
        PinsCommand::Revoke {
            names: wanted,
            kind,
            ..
        } => revoke(&file, &names, &wanted, kind.map(Into::into)),
    };
    match result {
        Ok(out) => {
            print!("{out}");
            ExitCode::SUCCESS
        }
        Err(Problem::Usage(e)) => {
            eprintln!("manifold pins: {e}");
            ExitCode::from(USAGE)
        }
        Err(Problem::Store(e)) => {
            eprintln!("manifold pins: {e}");
            ExitCode::from(if e.is_bad_file() { USAGE } else { FAILED })
        }
    }
}

enum Problem {
    Usage(String),
    Store(StoreError),
}

impl From<StoreError> for Problem {
    fn from(e: StoreError) -> Problem {
        Problem::Store(e)
    }
}

enum What {
    Names(Vec<String>),
    Upstream(String),
    All,
}

/// The store file, how exposed names are formed, and the configured
/// upstreams.
fn open(config: &Path) -> Result<(StoreFile, Names, Vec<String>), ExitCode> {
    let cfg = super::load_config(config)?;
    let Some(store) = &cfg.integrity.store else {
        eprintln!(
            "manifold pins: {} has no `[integrity] store`: without one, pins live only in the \
             gateway's memory; set `store = \"/var/lib/manifold/pins.json\"` (see \
             docs/configuration.md)",
            config.display()
        );
        return Err(ExitCode::from(USAGE));
    };
    let names = Names::from(&cfg);
    let upstreams = cfg.upstreams.iter().map(|u| u.name.clone()).collect();
    Ok((StoreFile::new(store), names, upstreams))
}

/// Who approves from this command line.
fn principal() -> String {
    let user = ["USER", "LOGNAME"]
        .into_iter()
        .find_map(|v| std::env::var(v).ok().filter(|u| !u.trim().is_empty()))
        .unwrap_or_else(|| "local".into());
    format!("local:{user}")
}

fn list(file: &StoreFile, json: bool) -> Result<String, Problem> {
    let store = file.load()?;
    if json {
        return Ok(format!("{:#}\n", list_json(file, &store)));
    }
    let mut out = format!(
        "Store: {} (revision {})\n",
        file.path().display(),
        store.revision
    );
    let mut pinned = Table::new(&[
        "UPSTREAM",
        "KIND",
        "NAME",
        "FINGERPRINT",
        "APPROVED BY",
        "APPROVED AT",
    ]);
    for (item, pin) in store.pins() {
        pinned.row(vec![
            item.upstream.clone(),
            item.kind.to_string(),
            printable(&item.name),
            pin.fingerprint.short(12),
            printable(&pin.approved_by),
            pin.approved_at.clone(),
        ]);
    }
    if pinned.is_empty() {
        out.push_str("\nNo pins yet.\n");
    } else {
        out.push_str("\nPinned:\n");
        pinned.render(&mut out);
    }
    let mut pending = Table::new(&[
        "UPSTREAM",
        "KIND",
        "NAME",
        "REASON",
        "FINGERPRINT",
        "APPROVED",
        "FIRST SEEN",
    ]);
    let mut diffs = String::new();
    for (item, p, pin) in store.pending_items() {
        pending.row(vec![
            item.upstream.clone(),
            item.kind.to_string(),
            printable(&item.name),
            p.reason.as_str().to_string(),
            p.fingerprint.short(12),
            pin.map(|x| x.fingerprint.short(12)).unwrap_or_default(),
            p.first_seen.clone(),
        ]);
        diffs.push_str(&format!("\n{item}: {}\n", p.reason.as_str()));
        match p.diff(pin) {
            Some(d) => push_indented(&mut diffs, &d.to_string()),
            None => {
                diffs.push_str("  description:\n");
                match p.definition.get("description").and_then(Value::as_str) {
                    Some(d) => d
                        .split('\n')
                        .for_each(|line| diffs.push_str(&format!("    + {}\n", printable(line)))),
                    None => diffs.push_str("    + (none)\n"),
                }
            }
        }
    }
    if pending.is_empty() {
        out.push_str("\nNothing pending.\n");
    } else {
        out.push_str("\nPending (held until approved: `manifold pins approve NAME`):\n");
        pending.render(&mut out);
        out.push_str(&diffs);
    }
    Ok(out)
}

fn push_indented(out: &mut String, text: &str) {
    for line in text.lines() {
        out.push_str("  ");
        out.push_str(line);
        out.push('\n');
    }
}

fn list_json(file: &StoreFile, store: &PinStore) -> Value {
    let pinned: Vec<Value> = store
        .pins()
        .map(|(item, pin)| {
            json!({
                "upstream": item.upstream, "kind": item.kind, "name": item.name,
                "fingerprint": pin.fingerprint, "first_seen": pin.first_seen,
                "approved_by": pin.approved_by, "approved_at": pin.approved_at,
            })
        })
        .collect();
    let pending: Vec<Value> = store
        .pending_items()
        .map(|(item, p, pin)| {
            json!({
                "upstream": item.upstream, "kind": item.kind, "name": item.name,
                "reason": p.reason, "fingerprint": p.fingerprint,
                "approved_fingerprint": pin.map(|x| x.fingerprint),
                "first_seen": p.first_seen, "definition": p.definition,
                "diff": p.diff(pin),
            })
        })
        .collect();
    json!({
        "store": file.path(),
        "revision": store.revision,
        "pinned": pinned,
        "pending": pending,
    })
}

/// The one item `name` means in `store`, among those `keep` accepts.
fn resolve(
    store: &PinStore,
    name: &str,
    kind: Option<ItemKind>,
    names: &Names,
    keep: impl Fn(&ItemRef) -> bool,
    what: &str,
) -> Result<ItemRef, String> {
    let found: Vec<ItemRef> = store
        .lookup(name, kind, names)
        .into_iter()
        .filter(|i| keep(i))
        .collect();
    match found.as_slice() {
        [one] => Ok(one.clone()),
        [] => Err(format!(
            "`{}` names no {what} item (see `manifold pins list`)",
            printable(name)
        )),
        many => Err(format!(
            "`{}` names {} items: {}; write UPSTREAM/NAME, or add --kind",
            printable(name),
            many.len(),
            many.iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

fn approve(
    file: &StoreFile,
    names: &Names,
    upstreams: &[String],
    what: What,
    kind: Option<ItemKind>,
) -> Result<String, Problem> {
    let by = principal();
    let now = SystemTime::now();
    let (_, outcome) = file.modify(|store| -> Result<String, String> {
        let mut out = String::new();
        let selection = match &what {
            What::All => Selection::All,
            What::Upstream(u) => {
                if !upstreams.contains(u) && !store.upstreams.contains_key(u) {
                    return Err(format!(
                        "no upstream `{}` in the configuration or the store",
                        printable(u)
                    ));
                }
                Selection::Upstream(u.clone())
            }
            What::Names(list) => {
                let mut wanted = Vec::new();
                for name in list {
                    let item = resolve(store, name, kind, names, |_| true, "pinned or pending")?;
                    if store.pending(&item).is_some() {
                        wanted.push(Wanted {
                            item,
                            fingerprint: None,
                        });
                    } else {
                        out.push_str(&format!("{item}: already approved, nothing pending\n"));
                    }
                }
                Selection::Items(wanted)
            }
        };
        let done = store
            .approve(&selection, &by, now)
            .map_err(|e: ApproveError| e.to_string())?;
        if done.is_empty() && out.is_empty() {
            out.push_str("Nothing pending.\n");
        }
        for a in &done {
            let was = a
                .previous
                .map(|p| format!(", replacing {p}"))
                .unwrap_or_default();
            out.push_str(&format!(
                "approved {} at {}{was}, as {}\n",
                a.item,
                a.fingerprint,
                printable(&by)
            ));
        }
        Ok(out)
    })?;
    outcome.map_err(Problem::Usage)
}

fn revoke(
    file: &StoreFile,
    names: &Names,
    wanted: &[String],
    kind: Option<ItemKind>,
) -> Result<String, Problem> {
    let by = principal();
    let now = SystemTime::now();
    let (_, outcome) = file.modify(|store| -> Result<String, String> {
        let mut items = Vec::new();
        for name in wanted {
            let pinned = |i: &ItemRef| store.pin(i).is_some();
            items.push(resolve(store, name, kind, names, pinned, "pinned")?);
        }
        let done = store.revoke(&items, &by, now).map_err(|e| e.to_string())?;
        Ok(done
            .iter()
            .map(|r| {
                format!(
                    "revoked {} (was {}), as {}\n",
                    r.item,
                    r.fingerprint,
                    printable(&by)
                )
            })
            .collect())
    })?;
    outcome.map_err(Problem::Usage)
}
