//! One catalogue generation: the merged catalogue, its per-caller views and
//! the validators of its tools, built together by `Gateway::rebuild_catalog`
//! and swapped in as one value (`Gateway::generation`), so a request that
//! loads it once sees one consistent generation: the view that resolved a tool
//! and the schema its arguments and result are checked against come from the
//! same build.
//!
//! Invariants: immutable once built; the views hold items of this catalogue
//! only; the validators are of this catalogue's tools.
//!
//! Not here: building the views (`views`), compiling the validators
//! (manifold-policy).

use std::sync::Arc;

use manifold_catalog::Catalog;
use manifold_policy::ArgumentValidators;

use super::endpoints::Endpoints;
use super::views::Views;

/// The merged catalogue, its views and its validators, of one build.
pub(crate) struct Generation {
    pub catalog: Arc<Catalog>,
    pub views: Arc<Views>,
    pub validators: Arc<ArgumentValidators>,
}

impl Generation {
    /// The generation before the first build: an empty catalogue, views of
    /// it, and no validators.
    pub(crate) fn empty(
        page_size: usize,
        policy: Arc<manifold_policy::Policy>,
        endpoints: Arc<Endpoints>,
    ) -> Generation {
        let catalog = Arc::new(Catalog::empty(page_size));
        Generation {
            views: Arc::new(Views::new(catalog.clone(), policy, endpoints)),
            catalog,
            validators: Arc::default(),
        }
    }
}
