//! echomark: from raw echo-benchmark archives to validated, ranked tables.
//!
//! The pipeline, one module per stage: [`read`] (find, parse, normalise) → [`validate`]
//! (one strict rule per run, dataset consistency) → [`table`] (one polars row per run) →
//! [`aggregate`] (median, min and max per configuration) → [`rank`] (best IO model per
//! group) → outputs ([`summary`]). [`format`](mod@format) holds the number formatting both languages use.

pub mod aggregate;
pub mod compare;
pub mod error;
pub mod format;
pub mod model;
pub mod output;
pub mod rank;
pub mod read;
pub mod site;
pub mod summary;
pub mod table;
pub mod validate;

pub use error::{Error, Problem};
