//! The latency histogram's wire form in `metrics.rtt_histogram`: an HdrHistogram (values in
//! nanoseconds) serialised as V2 + DEFLATE and base64-encoded. The runner encodes with
//! [`encode`]; readers decode with [`decode`], so the two ends share one definition.

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
    let bytes = base64::engine::general_purpose::STANDARD.decode(text.trim())?;
    Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .map_err(|e| HistogramError::Format(format!("{e:?}")))
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
    fn garbage_is_an_error_not_a_panic() {
        assert!(matches!(
            decode("not base64!"),
            Err(HistogramError::Base64(_))
        ));
        assert!(matches!(decode("AAAA"), Err(HistogramError::Format(_))));
    }
}
