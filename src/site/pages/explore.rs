//! The explorer page: a short Markdown page, and in its HTML the container, the page's
//! words and the two scripts (the data file [`crate::site::explore`] and the explorer
//! itself, `assets/explore.js`, plain JavaScript written for this site).

use serde::Serialize;

use super::PageSpec;
use crate::site::i18n::Catalog;
use crate::site::markup::Markup;

/// The explorer's page: its title and the sentence above the controls (the data is in data/explore.js).
#[derive(Serialize)]
pub struct ExplorePage {
    pub title: Markup,
    pub intro: Markup,
}

/// The catalog subtrees the explorer words its controls and verdicts with.
const TEXT_TREES: [&str; 7] = [
    "explore", "decision", "protocol", "backend", "topology", "clients", "lang",
];

/// The explorer page of `cat`'s language.
pub fn page(cat: &Catalog) -> PageSpec {
    let title = cat.text("explore.title");
    let model = ExplorePage {
        title: title.clone(),
        intro: cat.text("explore.intro"),
    };
    let mut spec = PageSpec::new(
        format!("{}/explore", cat.code),
        "explore.md",
        title,
        &model,
        Vec::new(),
    );
    let text: serde_json::Map<String, serde_json::Value> = TEXT_TREES
        .iter()
        .filter_map(|k| Some((k.to_string(), cat.tree_value(k)?.clone())))
        .collect();
    let json = serde_json::to_string(&text).expect("the catalog serialises");
    let needs = crate::site::markdown::escape_html(cat.raw("explore.needs_script"));
    spec.app = Some(format!(
        "<noscript><p>{needs} <a href=\"index.html\">{}</a></p></noscript>\n<div id=\"explorer\" data-lang=\"{}\" hidden></div>\n<script type=\"application/json\" id=\"explore-text\">{}</script>\n<script src=\"../data/explore.js\"></script>\n<script src=\"../assets/explore.js\"></script>\n",
        crate::site::markdown::escape_html(cat.raw("nav.index")),
        cat.code,
        crate::site::explore::script_safe(&json)
    ));
    spec
}
