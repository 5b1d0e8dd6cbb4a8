//! `echomark compare`: two datasets set against each other with the decision rules, the
//! report written where asked (never over an input), and the gate's outcome.

use std::path::{Path, PathBuf};

use super::CommandError;
use crate::analysis::compare::{self, side, Comparison};
use crate::analysis::decision::Rules;
use crate::cli::CompareArgs;
use crate::error::printable;
use crate::exit_codes;
use crate::model::Dataset;
use crate::output;

/// Why `compare` could not carry out the request.
#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    #[error("{flag} must be a percentage above 0 and below 100, not {value}")]
    Margin { flag: &'static str, value: f64 },
    #[error("reading {path}: {source}")]
    Read {
        path: String,
        #[source]
        source: crate::Error,
    },
    #[error("reading the histograms of {dataset}: {source}")]
    Histograms {
        dataset: String,
        #[source]
        source: crate::Error,
    },
    #[error(
        "--noise {a} {b}: the two datasets share no configuration, so they show no noise band"
    )]
    NoNoiseBand { a: String, b: String },
    #[error("refusing to write {path}: it would overwrite the input {input}")]
    OverwritesInput { path: String, input: String },
    #[error("refusing to write {path}: it exists and is not a plain file")]
    NotAFile { path: String },
    #[error("cannot write {path}: no folder {folder}")]
    NoFolder { path: String, folder: String },
}

fn shown(path: &Path) -> String {
    printable(&path.display().to_string())
}

/// Compares NEW with BASE as `args` asks, writes the Markdown report when asked, and
/// returns the comparison with its text (or JSON) for standard output.
pub fn run(args: &CompareArgs) -> Result<(Comparison, String), CommandError> {
    for (flag, value) in [
        ("--margin", args.margin),
        ("--latency-margin", args.latency_margin),
    ] {
        if !(value.is_finite() && value > 0.0 && value < 100.0) {
            return Err(CompareError::Margin { flag, value }.into());
        }
    }
    let inputs = inputs(args);
    if let Some(path) = &args.markdown {
        // Before anything is read: a report must never replace what it reports on.
        check_report_target(path, &inputs)?;
    }
    let load = |path: &PathBuf| -> Result<Dataset, CompareError> {
        side::load_dataset(path).map_err(|source| CompareError::Read {
            path: shown(path),
            source,
        })
    };
    fn sides(d: &Dataset) -> Result<side::Side<'_>, CompareError> {
        side::Side::of(d).map_err(|source| CompareError::Histograms {
            dataset: printable(&d.name),
            source,
        })
    }
    let (base_data, new_data) = (load(&args.base)?, load(&args.new)?);
    let (base, new) = (sides(&base_data)?, sides(&new_data)?);
    let noise = match args.noise.as_slice() {
        [a1, a2] => {
            let (one, two) = (load(a1)?, load(a2)?);
            let band = compare::NoiseBand::of(&sides(&one)?, &sides(&two)?);
            if band.is_empty() {
                return Err(CompareError::NoNoiseBand {
                    a: shown(a1),
                    b: shown(a2),
                }
                .into());
            }
            Some(band)
        }
        _ => None,
    };
    let defaults = Rules::default();
    let options = compare::Options {
        rules: Rules {
            throughput: echomark_decide::Rule {
                margin: args.margin / 100.0,
                ..defaults.throughput
            },
            latency: echomark_decide::Rule {
                margin: args.latency_margin / 100.0,
                ..defaults.latency
            },
        },
        noise,
    };
    let comparison = Comparison::of(&base, &new, &options);
    if let Some(path) = &args.markdown {
        write_report(path, &inputs, &crate::site::comparison::render(&comparison))?;
    }
    let text = if args.json {
        serde_json::to_string_pretty(&comparison)? + "\n"
    } else {
        compare::text::render(&comparison)
    };
    Ok((comparison, text))
}

/// The gate's outcome of a comparison: its exit code, and the warning (or failure) to print
/// when the two sides share no configuration. Sides that share none fail a gate
/// (`--fail-on`) with their own code and are warned of without one.
pub fn outcome(c: &Comparison, gate: bool) -> (u8, Option<String>) {
    if c.configurations.is_empty() {
        let line = format!(
            "echomark compare: {}{} and {} share no configuration: nothing was compared \
             ({} configurations only in base, {} only in new); compare datasets of the \
             same matrix{}",
            if gate { "" } else { "warning: " },
            printable(&c.base.dataset),
            printable(&c.new.dataset),
            c.only_in_base.len(),
            c.only_in_new.len(),
            if gate {
                ", or point the gate at the right folders"
            } else {
                ""
            }
        );
        let code = if gate {
            exit_codes::NOTHING_COMPARED
        } else {
            exit_codes::OK
        };
        return (code, Some(line));
    }
    if gate && c.has_regression() {
        return (exit_codes::REGRESSION, None);
    }
    (exit_codes::OK, None)
}

/// Every path `compare` reads.
fn inputs(args: &CompareArgs) -> Vec<PathBuf> {
    let mut inputs = vec![args.base.clone(), args.new.clone()];
    inputs.extend(args.noise.iter().cloned());
    inputs
}

/// Refuses a report path that is, holds or lies inside an input, that is a symlink or not a
/// file, or whose folder does not exist.
pub fn check_report_target(path: &Path, inputs: &[PathBuf]) -> Result<(), CompareError> {
    if let Some(input) = output::overlapping_input(path, inputs) {
        return Err(CompareError::OverwritesInput {
            path: shown(path),
            input: shown(input),
        });
    }
    if let Ok(meta) = std::fs::symlink_metadata(path) {
        if !meta.is_file() {
            return Err(CompareError::NotAFile { path: shown(path) });
        }
    }
    let folder = path.parent().filter(|p| !p.as_os_str().is_empty());
    if let Some(folder) = folder.filter(|f| !f.is_dir()) {
        return Err(CompareError::NoFolder {
            path: shown(path),
            folder: shown(folder),
        });
    }
    Ok(())
}

/// Writes a report atomically after [`check_report_target`], saying when it replaces a file.
fn write_report(path: &Path, inputs: &[PathBuf], text: &str) -> Result<(), CommandError> {
    check_report_target(path, inputs)?;
    if path.exists() {
        eprintln!("echomark: replacing {}", shown(path));
    }
    output::write_atomically(path, text.as_bytes())
        .map_err(|e| CommandError::io("writing", path, e))
}
