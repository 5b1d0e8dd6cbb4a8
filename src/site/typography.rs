//! Chinese typography of the rendered pages: catalog sentences put a space on each side of
//! a placeholder, which is right beside a number or a Latin word ("每秒 367,535 次", "tokio
//! 更快") and wrong between two Chinese characters ("个线程 最快") or beside full-width
//! punctuation ("第二名 （"). [`tidy_zh`] removes exactly those spaces from a page's Markdown,
//! outside code, so every template and label composes without knowing what ends the text it
//! is given.

/// Whether `c` is a CJK ideograph (the Unified Ideographs and their Extension A).
fn ideograph(c: char) -> bool {
    matches!(c, '\u{4E00}'..='\u{9FFF}' | '\u{3400}'..='\u{4DBF}')
}

/// Whether `c` is full-width punctuation: the CJK Symbols and Punctuation block (、。《》「」…)
/// and the full-width forms (，：；（）！？［］).
fn full_width_punctuation(c: char) -> bool {
    matches!(c, '\u{3000}'..='\u{303F}' | '\u{FF01}'..='\u{FF0F}' | '\u{FF1A}'..='\u{FF20}'
        | '\u{FF3B}'..='\u{FF40}' | '\u{FF5B}'..='\u{FF65}' | '“' | '”' | '‘' | '’')
}

/// Whether spaces between `before` and `after` are wrong in Chinese text (a table's `|` is
/// Markdown, not text: the spaces beside it stay).
fn no_space_between(before: char, after: char) -> bool {
    if before == '|' || after == '|' {
        return false;
    }
    (ideograph(before) && ideograph(after))
        || full_width_punctuation(before)
        || full_width_punctuation(after)
}

/// `line` with the spaces between two ideographs, or beside full-width punctuation,
/// removed; inline code spans (between backticks) are left as they are.
fn tidy_line(line: &str) -> String {
    let chars: Vec<char> = line.chars().collect();
    let mut out = String::with_capacity(line.len());
    let mut in_code = false;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '`' {
            in_code = !in_code;
        }
        if c == ' ' && !in_code && i > 0 {
            let end = (i..chars.len())
                .find(|&j| chars[j] != ' ')
                .unwrap_or(chars.len());
            let before = chars[i - 1];
            if end < chars.len() && before != ' ' && no_space_between(before, chars[end]) {
                i = end;
                continue;
            }
        }
        out.push(c);
        i += 1;
    }
    out
}

/// The units a number is bound to: a line never breaks between the two ("218 µs" stays
/// whole on a phone). Latin units end at a non-letter; Chinese ones are single words.
const UNITS: [&str; 14] = [
    "µs", "ms", "B", "KiB", "MiB", "GiB", "msg/s", "round", "次", "字节", "个", "倍", "消息", "条",
];

/// `line` with the ASCII space between a digit and a unit (`UNITS`) made a no-break space,
/// outside inline code.
pub fn bind_units(line: &str) -> String {
    let chars: Vec<char> = line.chars().collect();
    let mut out = String::with_capacity(line.len());
    let mut in_code = false;
    for (i, &c) in chars.iter().enumerate() {
        if c == '`' {
            in_code = !in_code;
        }
        if c == ' ' && !in_code && i > 0 && chars[i - 1].is_ascii_digit() {
            let rest: String = chars[i + 1..chars.len().min(i + 8)].iter().collect();
            let bound = UNITS.iter().any(|u| {
                rest.starts_with(u)
                    && rest[u.len()..]
                        .chars()
                        .next()
                        .is_none_or(|n| !n.is_ascii_alphanumeric() || !u.is_ascii())
            });
            if bound {
                out.push('\u{00A0}');
                continue;
            }
        }
        out.push(c);
    }
    out
}

/// A page's Markdown with every number bound to its unit ([`bind_units`]), fenced code
/// blocks untouched.
pub fn bind_all_units(markdown: &str) -> String {
    let mut out = String::with_capacity(markdown.len());
    let mut fenced = false;
    for line in markdown.split_inclusive('\n') {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            out.push_str(line);
        } else if fenced {
            out.push_str(line);
        } else {
            out.push_str(&bind_units(line));
        }
    }
    out
}

/// A Chinese page's Markdown with the stray spaces of `tidy_line` removed, fenced code
/// blocks untouched.
pub fn tidy_zh(markdown: &str) -> String {
    let mut out = String::with_capacity(markdown.len());
    let mut fenced = false;
    for line in markdown.split_inclusive('\n') {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            out.push_str(line);
        } else if fenced {
            out.push_str(line);
        } else {
            out.push_str(&tidy_line(line));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_stay_with_their_units() {
        assert_eq!(
            bind_units("p99 218 µs, 1,024 B and 3 KiB; 16 clients; `code 5 ms`"),
            "p99 218\u{a0}µs, 1,024\u{a0}B and 3\u{a0}KiB; 16 clients; `code 5 ms`"
        );
        assert_eq!(
            bind_units("每秒 367,535 次往返，1,024 字节"),
            "每秒 367,535\u{a0}次往返，1,024\u{a0}字节"
        );
        // Not a unit: a word that only starts like one.
        assert_eq!(bind_units("2 Bytes, 4 Bits"), "2 Bytes, 4 Bits");
    }

    #[test]
    fn spaces_between_ideographs_and_beside_full_width_punctuation_go() {
        assert_eq!(
            tidy_zh("4 个 io_context / 各 1 个线程 最快，每秒 367,535 次往返"),
            "4 个 io_context / 各 1 个线程最快，每秒 367,535 次往返"
        );
        assert_eq!(tidy_zh("第二名 （p99 1 ms） 。"), "第二名（p99 1 ms）。");
        assert_eq!(
            tidy_zh("两个命名空间 对比 本机回环"),
            "两个命名空间对比本机回环"
        );
    }

    #[test]
    fn spaces_beside_numbers_latin_words_and_markup_stay() {
        for kept in [
            "tokio 更快的有 3 种",
            "| 协议 | 负载 |",
            "| 相当（±5% 以内） |",
            "## 如何选择 IO 模型",
            "**TCP / Standalone Asio** 最快",
            "  - 缩进的列表",
        ] {
            assert_eq!(tidy_zh(kept), kept);
        }
    }

    #[test]
    fn code_is_left_as_written() {
        let code = "运行 `echo 中 文` 之后\n```\n中 文\n```\n";
        assert_eq!(tidy_zh(code), code);
    }
}
