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
}

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
