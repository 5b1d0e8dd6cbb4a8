//! Strict parsing of one archive file: which format it is, then its typed shape. The fast
//! path parses without tracking paths; only a file that fails is parsed again to name the
//! JSON path of its first problem.

use echomark_archive::{Archive, FORMAT_VERSION};
use serde::de::DeserializeOwned;
use serde::Deserialize;

use super::arknet::ArknetArchive;
use crate::error::Problem;

/// A parsed file of either format.
pub enum Parsed {
    Echomark(Box<Archive>),
    Arknet(Box<ArknetArchive>),
    Imported(Box<echomark_archive::ImportedArchive>),
}

/// Just enough of the top level to pick the reader.
#[derive(Deserialize)]
struct Probe {
    #[serde(default)]
    echomark: Option<EchomarkProbe>,
    #[serde(default)]
    echomark_import: Option<EchomarkProbe>,
    /// arknet's mark: every arknet archive has it.
    #[serde(default)]
    schema_version: Option<serde::de::IgnoredAny>,
}

impl Probe {
    /// Whether the top level names one of the formats: `echomark`, `echomark_import` or
    /// arknet's `schema_version`.
    fn names_a_format(&self) -> bool {
        self.echomark.is_some() || self.echomark_import.is_some() || self.schema_version.is_some()
    }
}

/// Whether `bytes` are JSON that is not an archive at all: an array (Locust's statistics)
/// or an object that names no format (oha's, autocannon's, iperf3's output). A damaged
/// archive, or text that is not JSON, is not this: parsing it as an archive says what is
/// wrong with it.
pub fn is_other_json(bytes: &[u8]) -> bool {
    if bytes.trim_ascii_start().first() == Some(&b'[') {
        return serde_json::from_slice::<serde::de::IgnoredAny>(bytes).is_ok();
    }
    serde_json::from_slice::<Probe>(bytes).is_ok_and(|p| !p.names_a_format())
}

/// What validate says of such a file, and what a user does about it.
const NOT_AN_ARCHIVE: &str = "not an archive: its top level has no `echomark`, \
    `echomark_import` or `schema_version` (a load generator's output? a dataset folder holds \
    archives only: keep outputs in a folder of their own, such as outputs/, and import them \
    with `echomark import`)";

#[derive(Deserialize)]
struct EchomarkProbe {
    #[serde(default)]
    format_version: Option<u32>,
}

/// Parses `bytes` of `file` as an imported archive when it carries an `echomark_import`
/// object, as an echomark archive when it carries an `echomark` object, and as an arknet
/// archive otherwise.
pub fn parse(file: &str, bytes: &[u8]) -> Result<Parsed, Problem> {
    // serde accepts a JSON array in place of a struct (fields in order); an archive is an
    // object, so an array is refused up front (anything else fails to parse as one).
    if bytes.trim_ascii_start().first() == Some(&b'[') {
        return Err(Problem::new(
            file,
            "",
            "not an archive: the file must hold one JSON object",
        ));
    }
    let probe: Option<Probe> = serde_json::from_slice(bytes).ok();
    if probe.as_ref().is_some_and(|p| !p.names_a_format()) {
        return Err(Problem::new(file, "", NOT_AN_ARCHIVE));
    }
    if let Some(import) = probe.as_ref().and_then(|p| p.echomark_import.as_ref()) {
        let version = echomark_archive::IMPORT_FORMAT_VERSION;
        if import.format_version != Some(version) {
            return Err(Problem::new(
                file,
                "echomark_import.format_version",
                format!(
                    "unknown imported-archive version {} (this build reads {version})",
                    import
                        .format_version
                        .map_or("(missing)".to_string(), |v| v.to_string())
                ),
            ));
        }
        return typed(file, bytes).map(|a| Parsed::Imported(Box::new(a)));
    }
    match probe.and_then(|p| p.echomark) {
        Some(e) if e.format_version != Some(FORMAT_VERSION) => Err(Problem::new(
            file,
            "echomark.format_version",
            format!(
                "unknown echomark format version {} (this build reads {FORMAT_VERSION})",
                e.format_version
                    .map_or("(missing)".to_string(), |v| v.to_string())
            ),
        )),
        Some(_) => typed::<Archive>(file, bytes).map(|a| Parsed::Echomark(Box::new(a))),
        None => typed::<ArknetArchive>(file, bytes).map(|a| Parsed::Arknet(Box::new(a))),
    }
}

/// Parses `bytes` into `T` (streaming, no JSON tree); on failure, names the JSON path.
pub fn typed<T: DeserializeOwned>(file: &str, bytes: &[u8]) -> Result<T, Problem> {
    if let Ok(value) = serde_json::from_slice::<T>(bytes) {
        return Ok(value);
    }
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let value: T = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        let message = if inner.is_eof() {
            format!("truncated: {inner}")
        } else {
            inner.to_string()
        };
        Problem::new(
            file,
            if path == "." { String::new() } else { path },
            message,
        )
    })?;
    de.end()
        .map_err(|e| Problem::new(file, "", format!("trailing data after the archive: {e}")))?;
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn other_json_is_json_that_names_no_archive_format() {
        for other in [
            &b"{\"summary\": {}, \"rps\": 1}"[..],
            b" [{\"name\": \"/\"}]",
        ] {
            assert!(is_other_json(other), "{}", String::from_utf8_lossy(other));
        }
        for archive_or_broken in [
            &b"{\"schema_version\": 2}"[..],
            b"{\"echomark\": {\"format_version\": 9}}",
            b"{\"echomark_import\": {}}",
            b"{\"summary\": ",
            b"not json",
        ] {
            assert!(
                !is_other_json(archive_or_broken),
                "{}",
                String::from_utf8_lossy(archive_or_broken)
            );
        }
        let e = parse("run.json", b"{\"summary\": {}}").err().unwrap();
        assert!(e
            .message
            .starts_with("not an archive: its top level has no"));
    }
}
