//! The index page of one language: what the datasets answer (one line per question, each
//! from its best witness, with its host and a link to the evidence), then the newest datasets
//! with their protocols, host, pass counts and recording time, and a link to all of them.

use serde::Serialize;

use super::{lists, DatasetView, PageSpec};
use crate::analysis::across::{Answer, Body, Question};
use crate::analysis::ratios::Spread;
use crate::format;
use crate::site::i18n::Catalog;
use crate::site::labels;
use crate::site::markup::Markup;
use crate::site::table::Table;

/// The most datasets the index lists; [`super::lists`] has every one.
pub const INDEX_DATASETS: usize = 20;

/// The site's index: the answers the data gives and the newest datasets.
#[derive(Serialize)]
pub struct IndexPage {
    /// One line per question the data answers.
    pub answers: Vec<Markup>,
    /// The newest datasets.
    pub datasets: Table,
    /// Where every dataset is listed, and how many the table leaves out.
    pub all: Markup,
    pub methodology: Markup,
}

/// The index page of one language.
pub fn page(cat: &Catalog, views: &[DatasetView], answers: &[Answer]) -> PageSpec {
    let shown = lists::newest(views, INDEX_DATASETS);
    let link = Markup::trusted(format!("{}/index.md", lists::FOLDER));
    let all = if shown.len() < views.len() {
        cat.fill(
            "index.more",
            &[
                ("shown", &labels::count(shown.len() as u64)),
                ("n", &labels::count(views.len() as u64)),
                ("link", &link),
            ],
        )
    } else {
        cat.fill("index.all", &[("link", &link)])
    };
    let model = IndexPage {
        answers: answers
            .iter()
            .filter_map(|a| answer_line(cat, views, a, ""))
            .collect(),
        datasets: lists::dataset_table(cat, views, &shown, ""),
        all,
        methodology: cat.fill(
            "index.methodology",
            &[("link", &Markup::trusted("methodology.md"))],
        ),
    };
    PageSpec::new(
        format!("{}/index", cat.code),
        "index.md",
        cat.text("index.title"),
        &model,
        Vec::new(),
    )
}

/// The catalog key of a question's label.
fn question_key(q: Question) -> &'static str {
    match q {
        Question::Runtime => "index.q_runtime",
        Question::IoModel => "index.q_io_model",
        Question::ProtocolOverhead => "index.q_overhead",
        Question::TlsCost => "index.q_tls",
        Question::UdpBuffers => "index.q_buffers",
        Question::ExternalServers => "index.q_servers",
        Question::Path => "index.q_path",
        Question::Knee => "index.q_knee",
    }
}

/// "[dataset](…/overview.md) (AMD EPYC, 2 logical CPUs)": where an answer comes from.
fn witness(cat: &Catalog, v: &DatasetView, up: &str) -> Markup {
    cat.fill(
        "index.witness",
        &[
            (
                "dataset",
                &labels::dataset_link(&v.dataset.name, &v.slug(), up),
            ),
            ("host", &labels::host(cat, v.dataset, &Markup::default())),
        ],
    )
}

/// A versus answer's text: the subject against its base, the tally and ratios, and for the
/// path question its loopback companion.
fn versus_text(cat: &Catalog, views: &[DatasetView], a: &Answer, up: &str) -> Option<Markup> {
    let Body::Versus {
        subject,
        base,
        tally,
        companion,
    } = &a.body
    else {
        return None;
    };
    let view = views.get(a.dataset)?;
    let n = |x: usize| labels::count(x as u64);
    let x = |r: f64| labels::number(format::ratio(r));
    let ratios = tally.ratios?;
    let (s, b) = match companion {
        // The path: the datasets are the sides, named by their path.
        Some(_) => (cat.text("index.veth"), cat.text("index.loopback")),
        None => (labels::backend(cat, subject), labels::backend(cat, base)),
    };
    let mut line = cat.fill(
        "index.versus",
        &[
            ("subject", &s),
            ("base", &b),
            ("pairs", &n(tally.pairs)),
            ("higher", &n(tally.subject_higher)),
            ("lower", &n(tally.subject_lower)),
            ("equivalent", &n(tally.equivalent)),
            ("undecided", &n(tally.undecided)),
            ("margin", &labels::margin(view.rules.throughput)),
            (
                "decided",
                &labels::number(format!(
                    "{}%",
                    format::grouped(tally.decided_share().unwrap_or(0.0) * 100.0, 0)
                )),
            ),
            ("median", &x(ratios.median)),
            ("min", &x(ratios.min)),
            ("max", &x(ratios.max)),
        ],
    );
    if a.question == Question::Runtime && view.dataset.own_servers_apart().is_some() {
        line.push(&cat.text("list.semicolon"));
        line.push(&cat.text("index.own_servers_apart"));
    }
    if let Some((c, overlapping)) = companion.and_then(|(c, o)| Some((views.get(c)?, o))) {
        line.push(&cat.text("list.semicolon"));
        let key = if overlapping {
            "index.companion_interleaved"
        } else {
            "index.companion"
        };
        line.push(&cat.fill(key, &[("companion", &witness(cat, c, up))]));
    }
    Some(line)
}

/// Each protocol's throughput against its base protocol's, in one line.
fn overheads_text(
    cat: &Catalog,
    spreads: &[(
        echomark_archive::Protocol,
        echomark_archive::Protocol,
        Spread,
    )],
) -> Markup {
    let n = |x: usize| labels::count(x as u64);
    let x = |r: f64| labels::number(format::ratio(r));
    let parts: Vec<Markup> = spreads
        .iter()
        .map(|(s, b, spread)| {
            cat.fill(
                "index.overhead",
                &[
                    ("subject", &labels::protocol(cat, *s)),
                    ("base", &labels::protocol(cat, *b)),
                    ("median", &x(spread.median)),
                    ("min", &x(spread.min)),
                    ("max", &x(spread.max)),
                    ("count", &n(spread.count)),
                ],
            )
        })
        .collect();
    Markup::join(&parts, &cat.text("list.semicolon"))
}

/// One answer as a line of the index (and of its witness's overview): the question in bold,
/// what the data says, where.
/// `up` leads from the page to the language's folder (`""` on the index, `"../"` below it).
pub fn answer_line(cat: &Catalog, views: &[DatasetView], a: &Answer, up: &str) -> Option<Markup> {
    let view = views.get(a.dataset)?;
    let n = |x: usize| labels::count(x as u64);
    let text = match &a.body {
        Body::Versus { .. } => versus_text(cat, views, a, up)?,
        Body::IoModels {
            loads,
            winners,
            oversubscribed,
        } => cat.fill(
            "index.io_models",
            &[
                ("loads", &n(*loads)),
                ("winners", &n(*winners)),
                ("ties", &n(loads - winners)),
                ("oversubscribed", &n(*oversubscribed)),
            ],
        ),
        Body::Overheads(spreads) => overheads_text(cat, spreads),
        Body::Buffers {
            loads,
            fixed,
            lossy,
            lossless,
            largest,
        } => cat.fill(
            "index.buffers",
            &[
                ("loads", &n(*loads)),
                ("fixed", &n(*fixed)),
                ("lossy", &n(*lossy)),
                ("lossless", &n(*lossless)),
                ("largest", &Markup::trusted(format::buffer_size(*largest))),
            ],
        ),
        Body::Knees {
            groups,
            distinguishable,
        } => cat.fill(
            "index.knees",
            &[
                ("groups", &n(*groups)),
                ("distinguishable", &n(*distinguishable)),
                ("ties", &n(groups - distinguishable)),
            ],
        ),
    };
    Some(cat.fill(
        "index.answer",
        &[
            ("question", &cat.text(question_key(a.question))),
            ("text", &text),
            ("witness", &witness(cat, view, up)),
        ],
    ))
}
