//! The gateway's side of `[integrity]` at a catalogue build: every ready
//! upstream's input judged, the held items taken out under `mode =
//! "quarantine"`, and the answer to a call naming one.
//!
//! Not here: the judgement and what is held (`integrity`).

use manifold_catalog::{NamingPolicy, UpstreamInput};
use manifold_config::integrity::IntegritySettings;
use std::collections::BTreeMap;
use std::sync::Arc;

use super::{only, Quarantined};
use crate::refusal::Refusal;
use crate::state::Gateway;

impl Gateway {
    /// The catalogue's inputs with what `[integrity]` withholds taken out,
    /// every upstream judged (see the module's notes); an input per ready
    /// upstream in, one out.
    pub(crate) fn judge_inputs(
        &self,
        inputs: Vec<UpstreamInput>,
        settings: &IntegritySettings,
        naming: &NamingPolicy,
        page_size: usize,
    ) -> Vec<UpstreamInput> {
        if !settings.enabled() {
            if !self.integrity.held().by_upstream.is_empty() {
                self.integrity
                    .settle(BTreeMap::new(), Vec::new(), naming, page_size);
            }
            return inputs;
        }
        let mut now = BTreeMap::new();
        let mut withheld = Vec::new();
        let out = inputs
            .into_iter()
            .map(|mut input| {
                // Judged with the lists: a reconnection that brings new
                // instructions rebuilds the catalogue, so judges them too.
                let instructions = self
                    .upstream(&input.name)
                    .and_then(|u| u.status().facts?.instructions);
                let (judged, held) = self.integrity.judge(
                    &input.name,
                    &input.lists,
                    instructions.as_deref(),
                    &input.filter,
                    settings,
                );
                let kept_out = held.names();
                if !kept_out.is_empty() {
                    withheld.push(UpstreamInput {
                        lists: Arc::new(only(&input.lists, &kept_out)),
                        ..input.clone()
                    });
                }
                now.insert(input.name.clone(), held);
                input.lists = judged;
                input
            })
            .collect();
        self.integrity.settle(now, withheld, naming, page_size);
        out
    }

    /// `refusal` (an unknown-item answer), as a quarantine when `held` says
    /// the item is withheld: the same answer, audited `quarantined`.
    pub(crate) fn unknown_or_quarantined(&self, held: bool, refusal: Refusal) -> Refusal {
        if held {
            Refusal::Quarantined(Box::new(refusal))
        } else {
            refusal
        }
    }
}

impl Gateway {
    /// Every item held now, by upstream, kind and name.
    pub fn quarantined(&self) -> Vec<Quarantined> {
        let held = self.integrity.held();
        let mut out: Vec<Quarantined> = held
            .by_upstream
            .iter()
            .flat_map(|(upstream, h)| {
                h.items.iter().map(move |i| Quarantined {
                    upstream: upstream.to_string(),
                    kind: i.kind.as_str(),
                    name: i.name.clone(),
                    reason: i.reason,
                    withheld: h.withheld,
                    diff: i.diff.clone(),
                    description: i
                        .definition
                        .get("description")
                        .and_then(serde_json::Value::as_str)
                        .map(str::to_string),
                })
            })
            .collect();
        out.sort_by(|a, b| (&a.upstream, a.kind, &a.name).cmp(&(&b.upstream, b.kind, &b.name)));
        out
    }
}
