//! `[naming]`'s settings as the catalogue takes them: manifold-config keeps
//! its own values (it does not depend on the catalogue), converted here, at
//! the edge, as overrides and filters are.
//!
//! Invariants: pure; one arm per value, so a new mode fails to compile here.

/// `[naming] prefix_mode`, as the catalog applies it.
pub(crate) fn prefix_mode(m: manifold_config::PrefixMode) -> manifold_catalog::PrefixMode {
    match m {
        manifold_config::PrefixMode::Always => manifold_catalog::PrefixMode::Always,
        manifold_config::PrefixMode::Multiple => manifold_catalog::PrefixMode::Multiple,
        manifold_config::PrefixMode::Never => manifold_catalog::PrefixMode::Never,
    }
}

/// `[naming] resources`, as the catalog applies it.
pub(crate) fn resource_naming(
    m: manifold_config::ResourceNaming,
) -> manifold_catalog::namespace::ResourceNaming {
    use manifold_catalog::namespace::ResourceNaming as Catalog;
    match m {
        manifold_config::ResourceNaming::HostSchemes => Catalog::HostSchemes,
        manifold_config::ResourceNaming::Always => Catalog::Always,
        manifold_config::ResourceNaming::Never => Catalog::Never,
    }
}
