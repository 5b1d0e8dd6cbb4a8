//! From page models to files: the template environment (with the escaping boundary of
//! [`super::markup`] built into its output formatter), Markdown to HTML, and the layout.

use std::collections::BTreeMap;

use minijinja::{AutoEscape, Environment, UndefinedBehavior};
use serde::Serialize;

use super::i18n::Catalog;
use super::markdown;
use super::markup::escape;
use super::menu::{depth_prefix, relative, SidebarItem};
use super::pages::PageSpec;
use super::{Out, SiteError};

/// The auto-escape mode of Markdown templates.
const MARKDOWN: AutoEscape = AutoEscape::Custom("markdown");

/// The templates, with Markdown escaping for `*.md` and HTML escaping for `*.html`: any
/// plain string a template outputs is escaped for its format; only [`super::markup::Markup`]
/// (a safe string) passes as it is.
pub fn environment() -> Environment<'static> {
    let mut env = Environment::new();
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    env.set_keep_trailing_newline(true);
    env.set_auto_escape_callback(|name| {
        if name.ends_with(".md") {
            MARKDOWN
        } else {
            AutoEscape::Html
        }
    });
    env.set_formatter(|out, state, value| {
        if state.auto_escape() == MARKDOWN && !value.is_safe() && !value.is_undefined() {
            if let Some(text) = value.as_str() {
                out.write_str(&escape(text))?;
                return Ok(());
            }
        }
        minijinja::escape_formatter(out, state, value)
    });
    // The pages' templates, then those no page kind owns: the partials every page imports,
    // the compare command's page, the HTML layout and the language choice.
    let others = [
        (
            "partials.md",
            include_str!("../../templates/pages/partials.md"),
        ),
        (
            "compare.md",
            include_str!("../../templates/pages/compare.md"),
        ),
        ("layout.html", include_str!("../../templates/layout.html")),
        ("landing.html", include_str!("../../templates/landing.html")),
    ];
    for (name, source) in super::pages::registry::templates().chain(others) {
        env.add_template(name, source)
            .expect("the embedded templates parse (tested)");
    }
    env
}

#[derive(Serialize)]
struct Alternate {
    hreflang: String,
    href: String,
}

#[derive(Serialize)]
struct Layout<'a> {
    t: minijinja::Value,
    title: String,
    root: String,
    alternates: Vec<Alternate>,
    other_href: String,
    other_hreflang: &'a str,
    sidebar: Vec<SidebarItem<'a>>,
    body: minijinja::Value,
}

/// Renders `spec` in the language of `cat` with the sidebar `sidebar` into `out`: its
/// Markdown, its HTML in the layout, and its charts.
pub fn page(
    env: &Environment,
    cat: &Catalog,
    catalogs: &[Catalog],
    spec: &PageSpec,
    sidebar: Vec<SidebarItem<'_>>,
    base_url: &str,
    out: &mut Out<'_>,
) -> Result<(), SiteError> {
    let stem = &spec.stem;
    let ctx = minijinja::context! { t => cat.tree(), ..spec.context.clone() };
    let md = env
        .get_template(spec.template)
        .and_then(|t| t.render(ctx))
        .map_err(|e| {
            SiteError::Template(format!("{}/{}", cat.code, spec.template), format!("{e:#}"))
        })?;
    // Chinese pages: no space between two characters or beside full-width punctuation,
    // whatever the pieces a template joined ended with.
    let md = if cat.code == "zh" {
        super::typography::tidy_zh(&md)
    } else {
        md
    };
    let dir = stem.rsplit_once('/').map_or("", |(d, _)| d);
    let mut svgs = BTreeMap::new();
    for chart in &spec.charts {
        out.put(format!("{dir}/{}", chart.rel), chart.svg.as_bytes())?;
        svgs.insert(chart.rel.clone(), (chart.svg.clone(), chart.phone.clone()));
    }
    // In the HTML a number and its unit stay on one line, in every language (a no-break
    // space); the Markdown keeps plain spaces.
    let mut body = markdown::to_html(&super::typography::bind_all_units(&md), &svgs);
    if let Some(app) = &spec.app {
        body.push_str(app);
    }
    out.put(format!("{stem}.md"), md.as_bytes())?;

    // The same page in the other language(s): identical path after the language folder.
    let rest = stem.split_once('/').map_or(stem.as_str(), |(_, r)| r);
    let alternates: Vec<Alternate> = catalogs
        .iter()
        .map(|c| Alternate {
            hreflang: c.raw("lang.html").to_string(),
            href: format!("{base_url}{}/{rest}.html", c.code),
        })
        .chain(std::iter::once(Alternate {
            hreflang: "x-default".to_string(),
            href: format!("{base_url}{}/{rest}.html", catalogs[0].code),
        }))
        .collect();
    let other = catalogs.iter().find(|c| c.code != cat.code).unwrap_or(cat);
    let layout = Layout {
        // Plain strings: the layout's HTML escaping applies to them as to everything else.
        t: minijinja::Value::from_serialize(cat.json()),
        title: spec.title.plain(),
        root: depth_prefix(stem),
        alternates,
        other_href: relative(stem, &format!("{}/{rest}.html", other.code)),
        other_hreflang: other.raw("lang.html"),
        sidebar,
        body: minijinja::Value::from_safe_string(body),
    };
    let html = env
        .get_template("layout.html")
        .and_then(|t| t.render(&layout))
        .map_err(|e| SiteError::Template("layout.html".into(), format!("{e:#}")))?;
    out.put(format!("{stem}.html"), html.as_bytes())
}
