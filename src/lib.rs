//! echomark: from raw echo-benchmark archives to validated, ranked, published pages.
//!
//! The pipeline, one module per stage: [`read`] (find, parse, normalise into [`model`] runs
//! with [`measurement`]s) → [`validate`] (one strict rule per run, dataset consistency) →
//! [`table`] (one polars row per run) → [`analysis`] (aggregate, rank, ratios, UDP loss,
//! findings: computed once) → outputs: [`summary`] (JSON and CSV) and [`site`] (typed page
//! models rendered to Markdown, HTML and SVG). [`format`](mod@format) holds the number
//! formatting both languages use; [`output`] writes files safely; [`reproduce`] derives the
//! commands that measure a dataset again from what its archives record.

pub mod analysis;
pub mod cli;
pub mod command_line;
pub mod commands;
pub mod error;
pub mod exit_codes;
pub mod format;
pub mod import;
pub mod measurement;
pub mod model;
pub mod output;
pub mod parallel;
pub mod read;
pub mod reproduce;
pub mod site;
pub mod skip;
pub mod summary;
pub mod table;
pub mod validate;

pub use error::{Error, Problem, Refusal};
