//! Reading an input file whole, but never more than a limit: an archive, a gzip archive's
//! inflated text or a load generator's output. A file that says it is larger is refused
//! before a byte is read; a file that does not say (a pipe, `/dev/zero`, a file still
//! growing) is read through a reader that stops one byte past the limit.

use std::io::Read;
use std::path::Path;

/// The most any input may hold: an archive (inflated, when gzip-compressed) or a tool's
/// output file. About 50 times the largest committed archive (5 MB); the reader keeps the
/// text and its parsed form, so memory stays within a small multiple of this.
pub const MAX_INPUT_BYTES: u64 = 256 << 20;

/// Why an input was not read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("cannot read: {0}")]
    Io(#[from] std::io::Error),
    /// More than the limit, by its own size or by what was read before giving up.
    #[error("{}, more than the {} MiB an input may hold (a file this large is not one run's output or one matrix's archive)", size_text(*.size), .limit >> 20)]
    TooLarge {
        /// The size the file reports, when it reports one.
        size: Option<u64>,
        limit: u64,
    },
}

/// `300.0 MiB` for a known size, else what is known: that it goes on past the limit.
fn size_text(size: Option<u64>) -> String {
    size.map_or_else(
        || "it goes on past the limit".to_string(),
        |s| format!("{:.1} MiB", s as f64 / (1u64 << 20) as f64),
    )
}

/// The bytes of `path`, at most `limit` of them.
pub fn read_at_most(path: &Path, limit: u64) -> Result<Vec<u8>, ReadError> {
    let file = std::fs::File::open(path)?;
    // Only a regular file's length is its content's; a device or pipe reports 0.
    let known = file
        .metadata()
        .ok()
        .filter(|m| m.is_file())
        .map(|m| m.len());
    if let Some(size) = known.filter(|&n| n > limit) {
        return Err(ReadError::TooLarge {
            size: Some(size),
            limit,
        });
    }
    // Sized once from the file's length (plus the byte that tells a grown file), so the
    // text is never copied by a growing buffer.
    let capacity = known.map_or(0, |n| n as usize + 1);
    read_to_end_at_most(file, limit, capacity)
}

/// Everything `reader` yields, at most `limit` bytes; `capacity` is a first guess.
pub fn read_to_end_at_most(
    reader: impl Read,
    limit: u64,
    capacity: usize,
) -> Result<Vec<u8>, ReadError> {
    let mut bytes = Vec::with_capacity(capacity);
    reader.take(limit + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(ReadError::TooLarge { size: None, limit });
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reader_without_a_length_is_cut_one_byte_past_the_limit() {
        let endless = std::io::repeat(b' ');
        let e = read_to_end_at_most(endless, 1 << 20, 0).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("it goes on past the limit, more than the 1 MiB an input may hold"),
            "{e}"
        );
        let exact = read_to_end_at_most(&[7u8; 10][..], 10, 0).unwrap();
        assert_eq!(exact, [7u8; 10]);
    }

    #[test]
    fn a_file_that_says_it_is_too_large_is_refused_unread() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big.json");
        // Sparse: its length is all that is there.
        std::fs::File::create(&path)
            .unwrap()
            .set_len(3 << 20)
            .unwrap();
        let e = read_at_most(&path, 2 << 20).unwrap_err();
        assert_eq!(e.to_string(), "3.0 MiB, more than the 2 MiB an input may hold (a file this large is not one run's output or one matrix's archive)");
        assert_eq!(read_at_most(&path, 3 << 20).unwrap().len(), 3 << 20);
    }
}
