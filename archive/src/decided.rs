//! What `matrix --until-decided` records in an archive: the rule and its bounds in the
//! settings ([`UntilDecided`]), and how much it measured and why each comparison stopped
//! ([`UntilDecidedRecord`]). Shapes only; the planning is [`crate::until_decided`].

use echomark_decide::Rule;
use serde::{Deserialize, Serialize};

/// `--until-decided`: the rule and the bounds, recorded in the settings. The figure decided
/// is each run's round trips per second.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UntilDecided {
    /// The confidence level over all looks (0.95).
    pub level: f64,
    /// The equivalence margin, as a share (0.05 for ±5 %).
    pub margin: f64,
    /// The repetitions a side has at each look: the planned repetitions first, the
    /// maximum last. Each look's interval is at 1 − (1 − level) / looks.
    pub looks: Vec<u64>,
    /// `--budget`: the most seconds the added repetitions may take; absent for no limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_seconds: Option<f64>,
}

impl UntilDecided {
    /// The rule each look decides with.
    pub fn rule(&self) -> Rule {
        Rule {
            level: self.level,
            margin: self.margin,
            looks: self.looks.len() as u32,
        }
    }

    /// The most repetitions a side can get.
    pub fn max_repetitions(&self) -> u64 {
        self.looks.last().copied().unwrap_or(0)
    }
}

/// The looks from `start` to `max` repetitions a side: `start`, then about half as many
/// again each time (rounded up), ending at `max` (3, 5, 8, 12, 18, 27, 30 for 3 to 30).
/// Few looks keep each look's interval narrow; growing steps keep the added measuring in
/// proportion to what is already known.
pub fn looks(start: u64, max: u64) -> Vec<u64> {
    echomark_decide::calibration::schedule(start, max)
}

/// Why a comparison stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stop {
    /// The rule decided every comparison of it (higher, lower or equivalent).
    Decided,
    /// It reached the maximum repetitions still undecided.
    Maximum,
    /// The budget ran out first.
    Budget,
    /// A run of it failed: a failed configuration is not compared.
    Failed,
}

/// What a matrix measured until decided did, recorded in each of its archives.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UntilDecidedRecord {
    /// Seconds the added repetitions took, over every invocation (a resume adds on).
    pub spent_seconds: f64,
    /// The budget ran out before every comparison stopped; nothing more is planned.
    pub budget_spent: bool,
    /// Every comparison, with the repetitions a side it took and why it stopped (absent
    /// until the matrix is complete).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub comparisons: Vec<Stopped>,
}

/// One comparison's end.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Stopped {
    /// The configuration (a load, for IO models) and its sides, as pages name them.
    pub configuration: String,
    pub sides: Vec<String>,
    pub repetitions: u64,
    pub stop: Stop,
}
