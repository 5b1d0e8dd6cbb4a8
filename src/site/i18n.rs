//! The English and Chinese string catalogs (`templates/i18n/*.json`), embedded in the binary
//! so a build does not depend on the working directory.

use serde_json::Value;

/// One language's catalog.
#[derive(Debug, Clone)]
pub struct Catalog {
    /// `en` or `zh`: the folder name of this language's pages.
    pub code: &'static str,
    strings: Value,
}

/// The site's languages, English first.
pub fn catalogs() -> Vec<Catalog> {
    [
        ("en", include_str!("../../templates/i18n/en.json")),
        ("zh", include_str!("../../templates/i18n/zh.json")),
    ]
    .into_iter()
    .map(|(code, text)| Catalog {
        code,
        strings: serde_json::from_str(text).expect("the embedded catalogs are valid JSON (tested)"),
    })
    .collect()
}

impl Catalog {
    /// The whole tree, for templates (`t.overview.title`).
    pub fn tree(&self) -> &Value {
        &self.strings
    }

    /// The string at a dotted `key`; a missing key is a bug caught by the catalog tests, so
    /// it shows up loudly rather than as an empty string.
    pub fn text(&self, key: &str) -> &str {
        key.split('.')
            .try_fold(&self.strings, |v, part| v.get(part))
            .and_then(Value::as_str)
            .unwrap_or_else(|| panic!("catalog {} has no key {key}", self.code))
    }

    /// The string at `key` with `{name}` placeholders replaced.
    pub fn fill(&self, key: &str, args: &[(&str, &str)]) -> String {
        fill(self.text(key), args)
    }
}

/// Replaces `{name}` placeholders in `template`.
pub fn fill(template: &str, args: &[(&str, &str)]) -> String {
    let mut out = template.to_string();
    for (name, value) in args {
        out = out.replace(&format!("{{{name}}}"), value);
    }
    out
}

/// Every leaf key of a catalog tree, dotted.
pub fn keys(v: &Value) -> Vec<String> {
    fn walk(v: &Value, prefix: &str, out: &mut Vec<String>) {
        if let Value::Object(map) = v {
            for (k, child) in map {
                let key = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                walk(child, &key, out);
            }
        } else {
            out.push(prefix.to_string());
        }
    }
    let mut out = Vec::new();
    walk(v, "", &mut out);
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_languages_have_exactly_the_same_keys() {
        let c = catalogs();
        let (en, zh) = (keys(c[0].tree()), keys(c[1].tree()));
        let missing_in_zh: Vec<_> = en.iter().filter(|k| !zh.contains(k)).collect();
        let missing_in_en: Vec<_> = zh.iter().filter(|k| !en.contains(k)).collect();
        assert!(
            missing_in_zh.is_empty() && missing_in_en.is_empty(),
            "zh lacks {missing_in_zh:?}; en lacks {missing_in_en:?}"
        );
    }

    #[test]
    fn placeholders_agree_between_languages() {
        let c = catalogs();
        let holes = |s: &str| {
            let mut v: Vec<String> = s
                .split('{')
                .skip(1)
                .filter_map(|p| p.split_once('}').map(|(n, _)| n.to_string()))
                .collect();
            v.sort();
            v
        };
        for key in keys(c[0].tree()) {
            assert_eq!(holes(c[0].text(&key)), holes(c[1].text(&key)), "{key}");
        }
    }

    #[test]
    fn every_key_a_template_or_the_code_uses_exists() {
        let sources = [
            include_str!("../../templates/pages/index.md"),
            include_str!("../../templates/pages/overview.md"),
            include_str!("../../templates/pages/protocol.md"),
            include_str!("../../templates/pages/methodology.md"),
            include_str!("../../templates/pages/dimensions.md"),
            include_str!("../../templates/pages/udp.md"),
            include_str!("../../templates/layout.html"),
            include_str!("pages.rs"),
            include_str!("charts.rs"),
        ];
        let c = catalogs();
        let all = keys(c[0].tree());
        for src in sources {
            for (i, _) in src.match_indices("t.") {
                let rest = &src[i + 2..];
                let key: String = rest
                    .chars()
                    .take_while(|ch| ch.is_ascii_alphanumeric() || *ch == '_' || *ch == '.')
                    .collect();
                let key = key.trim_end_matches('.');
                let preceded = src[..i]
                    .chars()
                    .last()
                    .is_some_and(|ch| ch.is_ascii_alphanumeric() || ch == '_');
                if key.is_empty() || preceded || !key.contains('.') {
                    continue;
                }
                assert!(
                    all.iter()
                        .any(|k| k == key || k.starts_with(&format!("{key}."))),
                    "unknown catalog key t.{key}"
                );
            }
            for (i, _) in src
                .match_indices("text(\"")
                .chain(src.match_indices("fill(\""))
            {
                let rest = &src[i + 6..];
                let key = &rest[..rest.find('"').unwrap_or(0)];
                assert!(all.iter().any(|k| k == key), "unknown catalog key {key}");
            }
        }
    }
}
