//! The latency histogram's wire form in `metrics.rtt_histogram`: an HdrHistogram (values in
//! nanoseconds) serialised as V2 + DEFLATE and base64-encoded. The runner encodes with
//! [`encode`]; readers decode with [`decode`], so the two ends share one definition.
//!
//! Decoding trusts nothing: the text, the inflated bytes and the histogram the header
//! declares are bounded before anything is allocated for them, and [`check_against`] ties a
//! histogram to the run that claims it (its count and its p99).

use base64::Engine as _;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;

/// Why a `rtt_histogram` string could not be decoded.
#[derive(Debug, thiserror::Error)]
pub enum HistogramError {
    /// The text is not base64.
    #[error("not base64: {0}")]
    Base64(#[from] base64::DecodeError),
    /// The bytes are not an HdrHistogram V2 (DEFLATE) serialisation.
    #[error("not an HdrHistogram V2 + DEFLATE serialisation: {0}")]
    Format(String),
    /// Larger than any histogram the runner writes.
    #[error("{0}")]
    TooLarge(String),
    /// The histogram counts a different number of round trips than its run.
    #[error("holds {holds} values but the run counted {counted} round trips")]
    CountDiffers { holds: u64, counted: u64 },
    /// The histogram's p99 is not the run's: it belongs to another run.
    #[error("has a p99 of {held} µs but the run reports {reported} µs: another run's histogram?")]
    P99Differs { held: f64, reported: f64 },
}

/// The longest `rtt_histogram` text accepted (the runner's are a few KiB).
pub const MAX_TEXT: usize = 1 << 20;
/// The most bytes a histogram may inflate to.
pub const MAX_INFLATED: usize = 4 << 20;
/// The largest value a histogram may be able to hold: about 73 minutes in nanoseconds.
pub const MAX_HIGHEST: i64 = 1 << 42;
/// The most significant digits a histogram may keep (the runner keeps 3).
pub const MAX_DIGITS: u32 = 4;

// The cookies with the word-size bits hdrhistogram sets (`| 0x10`).
const V2_COOKIE: u32 = 0x1c84_9303 | 0x10;
const V2_DEFLATE_COOKIE: u32 = 0x1c84_9304 | 0x10;
/// cookie, payload length, normalising offset, digits, lowest, highest, conversion ratio.
const V2_HEADER: usize = 40;

fn be_u32(bytes: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(bytes.get(at..at + 4)?.try_into().ok()?))
}

fn be_i64(bytes: &[u8], at: usize) -> Option<i64> {
    Some(i64::from_be_bytes(bytes.get(at..at + 8)?.try_into().ok()?))
}

/// The V2 serialisation inside `bytes` (V2, or V2 + DEFLATE inflated here with a bound),
/// with its header checked against the bounds above.
fn bounded_v2(bytes: &[u8]) -> Result<Vec<u8>, HistogramError> {
    use std::io::Read as _;
    let format = |m: &str| HistogramError::Format(m.to_string());
    let inner = match be_u32(bytes, 0) {
        Some(V2_DEFLATE_COOKIE) => {
            let length = be_u32(bytes, 4).ok_or_else(|| format("truncated header"))? as usize;
            let compressed = bytes
                .get(8..8usize.saturating_add(length))
                .ok_or_else(|| format("the compressed length runs past the data"))?;
            let mut inflated = Vec::new();
            flate2::read::ZlibDecoder::new(compressed)
                .take(MAX_INFLATED as u64 + 1)
                .read_to_end(&mut inflated)
                .map_err(|e| HistogramError::Format(format!("cannot inflate: {e}")))?;
            if inflated.len() > MAX_INFLATED {
                return Err(HistogramError::TooLarge(format!(
                    "inflates past {MAX_INFLATED} bytes"
                )));
            }
            inflated
        }
        Some(V2_COOKIE) => bytes.to_vec(),
        _ => return Err(format("no V2 cookie")),
    };
    let payload = be_u32(&inner, 4).ok_or_else(|| format("truncated header"))? as usize;
    let digits = be_u32(&inner, 12).ok_or_else(|| format("truncated header"))?;
    let lowest = be_i64(&inner, 16).ok_or_else(|| format("truncated header"))?;
    let highest = be_i64(&inner, 24).ok_or_else(|| format("truncated header"))?;
    if payload > inner.len().saturating_sub(V2_HEADER) {
        return Err(format("the payload length runs past the data"));
    }
    if digits > MAX_DIGITS
        || !(1..=MAX_HIGHEST).contains(&highest)
        || lowest < 1
        || lowest > highest
    {
        return Err(HistogramError::TooLarge(format!(
            "declares {digits} significant digits over {lowest}..{highest}; at most {MAX_DIGITS} digits up to {MAX_HIGHEST} are accepted"
        )));
    }
    Ok(inner)
}

/// `hist` as the archive stores it; `None` only if the serialiser fails (it does not for a
/// histogram with valid bounds).
pub fn encode(hist: &Histogram<u64>) -> Option<String> {
    let mut bytes = Vec::new();
    V2DeflateSerializer::new()
        .serialize(hist, &mut bytes)
        .ok()?;
    Some(base64::engine::general_purpose::STANDARD.encode(bytes))
}

/// The histogram an archive's `rtt_histogram` string holds.
pub fn decode(text: &str) -> Result<Histogram<u64>, HistogramError> {
    if text.len() > MAX_TEXT {
        return Err(HistogramError::TooLarge(format!(
            "{} bytes of text, more than {MAX_TEXT}",
            text.len()
        )));
    }
    let bytes = base64::engine::general_purpose::STANDARD.decode(text.trim())?;
    let v2 = bounded_v2(&bytes)?;
    Deserializer::new()
        .deserialize(&mut v2.as_slice())
        .map_err(|e| HistogramError::Format(format!("{e:?}")))
}

/// Whether `hist` (nanoseconds) is the histogram of a run that counted `observations`
/// round trips with a p99 of `p99_us`: the same count, and the same p99 within the
/// histogram's own precision.
pub fn check_against(
    hist: &Histogram<u64>,
    observations: u64,
    p99_us: f64,
) -> Result<(), HistogramError> {
    if hist.len() != observations {
        return Err(HistogramError::CountDiffers {
            holds: hist.len(),
            counted: observations,
        });
    }
    if observations == 0 {
        return Ok(());
    }
    let p99 = hist.value_at_quantile(0.99) as f64 / 1000.0;
    // Three significant digits: 0.1% of the value, plus a nanosecond of rounding.
    let tolerance = p99.abs().max(p99_us.abs()) * 0.002 + 0.002;
    if (p99 - p99_us).abs() > tolerance {
        return Err(HistogramError::P99Differs {
            held: p99,
            reported: p99_us,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decoding_an_encoded_histogram_gives_the_same_counts() {
        let mut h = Histogram::<u64>::new_with_bounds(1, 60_000_000_000, 3).unwrap();
        for i in 0..100 {
            h.record(10_000 + i * 37).unwrap();
        }
        let back = decode(&encode(&h).unwrap()).unwrap();
        assert_eq!(back, h);
    }

    #[test]
    fn a_histogram_declaring_more_than_any_run_needs_is_refused_before_allocating() {
        // Highest trackable value 2^62 with 5 digits: gigabytes of counts if believed.
        let mut header = Vec::new();
        header.extend_from_slice(&V2_COOKIE.to_be_bytes());
        header.extend_from_slice(&0u32.to_be_bytes());
        header.extend_from_slice(&0u32.to_be_bytes());
        header.extend_from_slice(&5u32.to_be_bytes());
        header.extend_from_slice(&1i64.to_be_bytes());
        header.extend_from_slice(&(1i64 << 62).to_be_bytes());
        header.extend_from_slice(&1f64.to_bits().to_be_bytes());
        let text = base64::engine::general_purpose::STANDARD.encode(&header);
        assert!(matches!(decode(&text), Err(HistogramError::TooLarge(_))));
        // A deflate bomb: 64 MiB of zeros in a few KiB.
        let mut bomb = Vec::new();
        {
            use std::io::Write as _;
            let mut z = flate2::write::ZlibEncoder::new(&mut bomb, flate2::Compression::best());
            z.write_all(&vec![0u8; 64 << 20]).unwrap();
            z.finish().unwrap();
        }
        let mut wire = V2_DEFLATE_COOKIE.to_be_bytes().to_vec();
        wire.extend_from_slice(&(bomb.len() as u32).to_be_bytes());
        wire.extend_from_slice(&bomb);
        let text = base64::engine::general_purpose::STANDARD.encode(&wire);
        assert!(matches!(decode(&text), Err(HistogramError::TooLarge(_))));
        assert!(matches!(
            decode(&"A".repeat(MAX_TEXT + 4)),
            Err(HistogramError::TooLarge(_))
        ));
    }

    #[test]
    fn a_histogram_must_agree_with_its_runs_count_and_p99() {
        let mut h = Histogram::<u64>::new_with_bounds(1, 60_000_000_000, 3).unwrap();
        for i in 0..1000 {
            h.record(10_000 + i * 37).unwrap();
        }
        let p99 = h.value_at_quantile(0.99) as f64 / 1000.0;
        assert!(check_against(&h, 1000, p99).is_ok());
        assert!(check_against(&h, 999, p99)
            .unwrap_err()
            .to_string()
            .contains("999"));
        assert!(check_against(&h, 1000, p99 * 2.0)
            .unwrap_err()
            .to_string()
            .contains("another run"));
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        assert!(matches!(
            decode("not base64!"),
            Err(HistogramError::Base64(_))
        ));
        assert!(matches!(decode("AAAA"), Err(HistogramError::Format(_))));
    }
}
