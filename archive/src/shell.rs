//! Command lines as archives record them and pages print them: one word quoted for a
//! POSIX shell, shared by the runner (the version command it derives) and the generator
//! (the reproduction commands it publishes).

/// `word` as a POSIX shell reads it back: bare when it holds only characters no shell
/// treats specially, else in single quotes (a quote inside written as `'\''`).
pub fn quote(word: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "_@%+=:,./-".contains(c);
    if !word.is_empty() && word.chars().all(plain) {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}
