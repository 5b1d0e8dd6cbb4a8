//! The methodology page of one language: all of it is catalog text.

use serde::Serialize;

use super::PageSpec;
use crate::site::i18n::Catalog;

/// The page needs nothing but the catalog.
#[derive(Serialize)]
pub struct MethodologyPage {}

/// The methodology page of one language.
pub fn page(cat: &Catalog) -> PageSpec {
    PageSpec::new(
        format!("{}/methodology", cat.code),
        "methodology.md",
        cat.text("methodology.title"),
        &MethodologyPage {},
        Vec::new(),
    )
}
