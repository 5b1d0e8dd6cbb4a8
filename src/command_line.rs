//! The command line that produced an output file, read for what the output leaves out: the
//! connections, the rate, the duration; and an external server's command, for what it asked
//! of echomark's own `serve`. Words are split as a POSIX shell splits them
//! (single and double quotes, backslashes); nothing is expanded or run.

/// Why a command line cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CommandLineError {
    #[error("a single quote is not closed")]
    UnclosedSingleQuote,
    #[error("a double quote is not closed")]
    UnclosedDoubleQuote,
    #[error("the command is empty")]
    Empty,
    /// An option's value is not what the option takes (`what`: a whole number, a rate, a
    /// duration).
    #[error("{option} {value:?} is not {what}")]
    BadValue {
        option: String,
        value: String,
        what: &'static str,
    },
}

impl CommandLineError {
    fn bad(option: &str, value: &str, what: &'static str) -> Self {
        Self::BadValue {
            option: option.to_string(),
            value: value.to_string(),
            what,
        }
    }
}

/// A command line, split into words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Words(Vec<String>);

impl Words {
    /// Splits `line` into words; an unclosed quote is an error.
    pub fn split(line: &str) -> Result<Words, CommandLineError> {
        let mut words = Vec::new();
        let mut word = String::new();
        let mut in_word = false;
        let mut chars = line.chars();
        while let Some(c) = chars.next() {
            match c {
                '\'' => {
                    in_word = true;
                    loop {
                        match chars.next() {
                            Some('\'') => break,
                            Some(c) => word.push(c),
                            None => return Err(CommandLineError::UnclosedSingleQuote),
                        }
                    }
                }
                '"' => {
                    in_word = true;
                    loop {
                        match chars.next() {
                            Some('"') => break,
                            Some('\\') => word.extend(chars.next()),
                            Some(c) => word.push(c),
                            None => return Err(CommandLineError::UnclosedDoubleQuote),
                        }
                    }
                }
                '\\' => {
                    in_word = true;
                    word.extend(chars.next());
                }
                c if c.is_whitespace() => {
                    if in_word {
                        words.push(std::mem::take(&mut word));
                        in_word = false;
                    }
                }
                c => {
                    in_word = true;
                    word.push(c);
                }
            }
        }
        if in_word {
            words.push(word);
        }
        if words.is_empty() {
            return Err(CommandLineError::Empty);
        }
        Ok(Words(words))
    }

    /// The value of the first option named in `names` (`-c 16`, `-c16`, `--connections=16`,
    /// `--connections 16`); the last one given wins, as the tools' parsers do.
    pub fn value(&self, names: &[&str]) -> Option<&str> {
        let mut found = None;
        let mut words = self.0.iter().skip(1);
        while let Some(w) = words.next() {
            for name in names {
                if w == name {
                    found = words.next().map(String::as_str);
                } else if let Some(rest) = w.strip_prefix(name) {
                    let glued = if name.starts_with("--") {
                        rest.strip_prefix('=')
                    } else {
                        Some(rest).filter(|r| !r.is_empty())
                    };
                    if glued.is_some() {
                        found = glued;
                    }
                }
            }
        }
        found
    }

    /// The words that are HTTP URLs, in order.
    pub fn urls(&self) -> Vec<&str> {
        self.0
            .iter()
            .map(String::as_str)
            .filter(|w| w.starts_with("http://") || w.starts_with("https://"))
            .collect()
    }

    /// Whether the line runs `program` (by its file name, wherever it is, after any
    /// wrapper such as `ip netns exec NS` or `taskset -c 1`) with `subcommand` next.
    pub fn runs(&self, program: &str, subcommand: &str) -> bool {
        self.0.windows(2).any(|pair| {
            std::path::Path::new(&pair[0])
                .file_name()
                .is_some_and(|name| name == program)
                && pair[1] == subcommand
        })
    }

    /// Whether the switch `name` is given.
    pub fn has(&self, name: &str) -> bool {
        self.0.iter().skip(1).any(|w| w == name)
    }

    /// The value of `names` as a whole number, `None` when absent.
    pub fn number(&self, names: &[&str]) -> Result<Option<u64>, CommandLineError> {
        self.value(names)
            .map(|v| {
                v.parse()
                    .map_err(|_| CommandLineError::bad(names[0], v, "a whole number"))
            })
            .transpose()
    }

    /// The value of `names` as a decimal number, `None` when absent.
    pub fn decimal(&self, names: &[&str]) -> Result<Option<f64>, CommandLineError> {
        self.value(names)
            .map(|v| match v.parse::<f64>() {
                Ok(x) if x.is_finite() && x >= 0.0 => Ok(x),
                _ => Err(CommandLineError::bad(names[0], v, "a rate")),
            })
            .transpose()
    }

    /// The value of `names` as a duration (`2s`, `500ms`, `1m`, `1h`, or plain seconds).
    pub fn duration(&self, names: &[&str]) -> Result<Option<f64>, CommandLineError> {
        self.value(names)
            .map(|v| seconds(v).ok_or_else(|| CommandLineError::bad(names[0], v, "a duration")))
            .transpose()
    }
}

/// Seconds in a duration as the tools write one: `2s`, `500ms`, `1m`, `1h`, `2` (seconds).
pub fn seconds(text: &str) -> Option<f64> {
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: f64 = number.parse().ok()?;
    let scale = match unit {
        "" | "s" | "sec" => 1.0,
        "ms" => 1e-3,
        "us" => 1e-6,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        _ => return None,
    };
    Some(number * scale).filter(|s| s.is_finite())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_are_read_in_every_spelling_the_tools_accept() {
        let w = Words::split(
            "oha --no-tui -z 2s -c16 -q 5000 -H 'Content-Type: application/octet-stream' --latency-correction http://x/",
        )
        .unwrap();
        assert_eq!(w.number(&["-c"]).unwrap(), Some(16));
        assert_eq!(w.decimal(&["-q"]).unwrap(), Some(5000.0));
        assert_eq!(w.duration(&["-z"]).unwrap(), Some(2.0));
        assert_eq!(
            w.value(&["-H"]),
            Some("Content-Type: application/octet-stream")
        );
        assert!(w.has("--latency-correction"));
        assert!(!w.has("--no-such"));
        let w = Words::split("locust --users=4 -t 1m").unwrap();
        assert_eq!(w.number(&["-u", "--users"]).unwrap(), Some(4));
        assert_eq!(w.duration(&["-t"]).unwrap(), Some(60.0));
        assert_eq!(
            Words::split("oha 'unclosed"),
            Err(CommandLineError::UnclosedSingleQuote)
        );
        assert_eq!(
            w.number(&["-t"]).unwrap_err().to_string(),
            "-t \"1m\" is not a whole number"
        );
        assert!(Words::split("oha -c many")
            .unwrap()
            .number(&["-c"])
            .is_err());
        assert_eq!(seconds("500ms"), Some(0.5));
        let serve = Words::split(
            "ip netns exec srv target/release/echomark-runner serve --backend io-uring",
        )
        .unwrap();
        assert!(serve.runs("echomark-runner", "serve"));
        assert!(!serve.runs("echomark-runner", "once"));
        assert!(!Words::split("nginx -g 'daemon off;'")
            .unwrap()
            .runs("echomark-runner", "serve"));
        assert_eq!(seconds("2x"), None);
    }
}
