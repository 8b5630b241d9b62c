//! Which of a list's shared entries a list holds ([`Members`]), and the
//! read-only face of it handlers see ([`Entries`]).
//!
//! A merged list's entries are built once, behind an `Arc`; the endpoint
//! catalogues and per-caller views restricted from it hold the same `Arc`
//! plus the ascending positions of the entries they keep (4 bytes each),
//! and a copy only of an entry they had to change (a tool whose UI
//! reference a viewer may not read). So a view costs its index, not its
//! items: memory grows with views by their indexes only.
//!
//! Invariants: a member list keeps the shared entries' order; `held` is
//! strictly ascending; `changed` is sorted by shared position and names only
//! held positions.
//!
//! Not here: pages (`page`), the name index (`list`).

use std::sync::Arc;

use crate::entry::Entry;

/// The entries one list holds, out of entries it shares with the list it
/// was restricted from.
#[derive(Debug, Clone)]
pub(crate) struct Members {
    all: Arc<[Entry]>,
    /// Positions in `all` held, ascending (`None`: every entry).
    held: Option<Box<[u32]>>,
    /// Entries this list changed, by position in `all`, ascending.
    changed: Box<[(u32, Entry)]>,
}

impl Members {
    /// Every one of `entries`, shared from now on.
    pub(crate) fn all(entries: Vec<Entry>) -> Members {
        Members {
            all: entries.into(),
            held: None,
            changed: Box::new([]),
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.held.as_ref().map_or(self.all.len(), |h| h.len())
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The shared position of the `i`-th member.
    fn shared_at(&self, i: usize) -> Option<u32> {
        match &self.held {
            None => (i < self.all.len()).then_some(i as u32),
            Some(h) => h.get(i).copied(),
        }
    }

    /// The entry at a shared position, as this list holds it.
    fn shared(&self, at: u32) -> &Entry {
        if !self.changed.is_empty() {
            if let Ok(k) = self.changed.binary_search_by_key(&at, |(p, _)| *p) {
                return &self.changed[k].1;
            }
        }
        &self.all[at as usize]
    }

    /// The `i`-th member.
    pub(crate) fn get(&self, i: usize) -> Option<&Entry> {
        self.shared_at(i).map(|at| self.shared(at))
    }

    /// The member at a shared position, if this list holds it.
    pub(crate) fn at_shared(&self, at: u32) -> Option<&Entry> {
        let held = match &self.held {
            None => (at as usize) < self.all.len(),
            Some(h) => h.binary_search(&at).is_ok(),
        };
        held.then(|| self.shared(at))
    }

    /// The number of leading members for which `before` holds (members in
    /// order, `before` true then false).
    pub(crate) fn partition_point(&self, before: impl Fn(&Entry) -> bool) -> usize {
        let (mut lo, mut hi) = (0, self.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match self.get(mid).is_some_and(&before) {
                true => lo = mid + 1,
                false => hi = mid,
            }
        }
        lo
    }

    /// The members `keep` lets through, each as `change` makes it (`None`:
    /// unchanged), sharing this list's entries.
    pub(crate) fn subset(
        &self,
        keep: &dyn Fn(&Entry) -> bool,
        change: &dyn Fn(&Entry) -> Option<Entry>,
    ) -> Members {
        let mut held = Vec::new();
        let mut changed = Vec::new();
        for i in 0..self.len() {
            let Some(at) = self.shared_at(i) else { break };
            let e = self.shared(at);
            if !keep(e) {
                continue;
            }
            held.push(at);
            match change(e) {
                Some(new) => changed.push((at, new)),
                None => {
                    if let Ok(k) = self.changed.binary_search_by_key(&at, |(p, _)| *p) {
                        changed.push(self.changed[k].clone());
                    }
                }
            }
        }
        Members {
            all: self.all.clone(),
            held: Some(held.into_boxed_slice()),
            changed: changed.into_boxed_slice(),
        }
    }

    /// Bytes this list holds of its own (its index and changed entries),
    /// beside the shared entries.
    pub(crate) fn own_bytes(&self) -> usize {
        self.held.as_ref().map_or(0, |h| h.len() * 4)
            + self
                .changed
                .iter()
                .map(|(_, e)| std::mem::size_of::<Entry>() + e.json.len())
                .sum::<usize>()
    }

    pub(crate) fn entries(&self) -> Entries<'_> {
        Entries { of: self }
    }
}

/// A list's entries in order (what [`crate::NamedList::entries`] gives).
#[derive(Debug, Clone, Copy)]
pub struct Entries<'a> {
    of: &'a Members,
}

impl<'a> Entries<'a> {
    pub fn len(&self) -> usize {
        self.of.len()
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The `i`-th entry.
    pub fn get(&self, i: usize) -> Option<&'a Entry> {
        self.of.get(i)
    }
    pub fn iter(&self) -> Iter<'a> {
        Iter {
            of: self.of,
            next: 0,
            end: self.of.len(),
        }
    }
}

impl<'a> IntoIterator for Entries<'a> {
    type Item = &'a Entry;
    type IntoIter = Iter<'a>;
    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

/// The entries of a list, in order.
#[derive(Debug, Clone)]
pub struct Iter<'a> {
    of: &'a Members,
    next: usize,
    end: usize,
}

impl<'a> Iterator for Iter<'a> {
    type Item = &'a Entry;
    fn next(&mut self) -> Option<&'a Entry> {
        if self.next >= self.end {
            return None;
        }
        self.next += 1;
        self.of.get(self.next - 1)
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.end - self.next;
        (n, Some(n))
    }
    /// Without it `skip` (a page at an offset) would walk every member
    /// before the page.
    fn nth(&mut self, n: usize) -> Option<&'a Entry> {
        self.next = self.next.saturating_add(n).min(self.end);
        self.next()
    }
}

impl ExactSizeIterator for Iter<'_> {}

impl<'a> DoubleEndedIterator for Iter<'a> {
    fn next_back(&mut self) -> Option<&'a Entry> {
        if self.next >= self.end {
            return None;
        }
        self.end -= 1;
        self.of.get(self.end)
    }
}
