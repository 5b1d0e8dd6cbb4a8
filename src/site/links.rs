//! The link check of a rendered site: every relative link and image in the Markdown pages
//! must point at a generated file.

use std::path::Path;

use super::Site;

/// Every relative link and image in the Markdown pages must point at a generated file.
pub fn broken_links(site: &Site) -> Vec<String> {
    let mut broken = Vec::new();
    for (path, bytes) in site.files.iter().filter(|(p, _)| p.ends_with(".md")) {
        let text = String::from_utf8_lossy(bytes);
        let dir = Path::new(path).parent().unwrap_or(Path::new(""));
        for (i, _) in text.match_indices("](") {
            let rest = &text[i + 2..];
            let Some(end) = rest.find(')') else { continue };
            let target = rest[..end].split('#').next().unwrap_or("");
            if target.is_empty() || target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let joined = normalise(&dir.join(target));
            if !site.files.contains_key(&joined) {
                broken.push(format!("{path}: {target}"));
            }
        }
    }
    broken
}

fn normalise(path: &Path) -> String {
    let mut parts: Vec<String> = Vec::new();
    for c in path.components() {
        match c {
            std::path::Component::ParentDir => {
                parts.pop();
            }
            std::path::Component::Normal(p) => parts.push(p.to_string_lossy().into_owned()),
            _ => {}
        }
    }
    parts.join("/")
}
