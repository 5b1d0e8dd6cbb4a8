//! Number formatting shared by every page, in both languages (the digits never change with
//! the language). Rounding is done once, from the full-precision double, by Rust's exact
//! decimal formatting: exact binary ties round half to even (182.125 → "182.12"), as in
//! arknet's pages. Digit grouping is added to the rounded string.

/// `value` with `decimals` fixed decimals and a comma between each group of three digits.
pub fn grouped(value: f64, decimals: usize) -> String {
    if !value.is_finite() {
        return "N/A".to_string();
    }
    let text = format!("{value:.decimals$}");
    let (sign, digits) = match text.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", text.as_str()),
    };
    let (int, frac) = match digits.split_once('.') {
        Some((i, f)) => (i, Some(f)),
        None => (digits, None),
    };
    let mut out = String::with_capacity(text.len() + int.len() / 3);
    out.push_str(sign);
    for (i, c) in int.chars().enumerate() {
        if i > 0 && (int.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    if let Some(f) = frac {
        out.push('.');
        out.push_str(f);
    }
    out
}

/// Round trips per second: grouped, no decimals (`84,496`).
pub fn throughput(value: f64) -> String {
    grouped(value, 0)
}

/// A median with its range, as in the tables: `84,496 [81,589, 86,343]`.
pub fn with_range(median: f64, min: f64, max: f64, decimals: usize) -> String {
    format!(
        "{} [{}, {}]",
        grouped(median, decimals),
        grouped(min, decimals),
        grouped(max, decimals)
    )
}

/// Latency in microseconds and MiB/s: grouped, 2 decimals (`1,346.00`).
pub fn two_decimals(value: f64) -> String {
    grouped(value, 2)
}

/// A latency in microseconds to 3 significant digits, the precision the HDR histograms keep
/// (`2,130`, `109`, `11.2`, `0.523`): grouped, never more digits than were recorded.
pub fn latency(value: f64) -> String {
    if !value.is_finite() {
        return "N/A".to_string();
    }
    if value == 0.0 {
        return "0".to_string();
    }
    let magnitude = value.abs().log10().floor() as i32;
    if magnitude >= 2 {
        let unit = 10f64.powi(magnitude - 2);
        grouped((value / unit).round() * unit, 0)
    } else {
        grouped(value, (2 - magnitude) as usize)
    }
}

/// A ratio: 2 decimals and the multiplication sign (`1.98×`).
pub fn ratio(value: f64) -> String {
    format!("{}×", grouped(value, 2))
}

/// A count per echo (system calls per message): 3 decimals (`0.037`, `1.000`).
pub fn per_echo(value: f64) -> String {
    grouped(value, 3)
}

/// CPU percent: 1 decimal, no grouping (`157.0`).
pub fn cpu_percent(value: f64) -> String {
    if value.is_finite() {
        format!("{value:.1}")
    } else {
        "N/A".to_string()
    }
}

/// Bytes as MiB with 2 decimals (`9.75`).
pub fn mib(bytes: f64) -> String {
    grouped(bytes / 1_048_576.0, 2)
}

/// The first 12 characters of a hash or commit id, as pages show them.
pub fn short_hash(h: &str) -> &str {
    h.get(..12).unwrap_or(h)
}

/// A payload as a chart's axis names it, short: whole KiB when it is one (`16 KiB`), else
/// bytes (`64 B`, `1,472 B`).
pub fn payload_short(bytes: u64) -> String {
    if bytes >= 1024 && bytes % 1024 == 0 {
        format!("{} KiB", count(bytes / 1024))
    } else {
        format!("{} B", count(bytes))
    }
}

/// A count: grouped integer (`1,620`).
pub fn count(n: u64) -> String {
    grouped(n as f64, 0)
}

/// A buffer size as sockets are spoken of: whole MiB, MiB with 2 decimals above 1 MiB, else
/// whole KiB (`4 MiB`, `1.50 MiB`, `256 KiB`).
pub fn buffer_size(bytes: u64) -> String {
    const MIB: u64 = 1 << 20;
    if bytes >= MIB && bytes % MIB == 0 {
        format!("{} MiB", bytes / MIB)
    } else if bytes >= MIB {
        format!("{} MiB", grouped(bytes as f64 / MIB as f64, 2))
    } else {
        format!("{} KiB", grouped(bytes as f64 / 1024.0, 0))
    }
}

/// A socket-buffer request or read-back: whole MiB when it is one, else whole KiB rounded
/// down (`8 MiB`, `208 KiB`).
pub fn whole_mib_or_kib(bytes: u64) -> String {
    const MIB: u64 = 1 << 20;
    if bytes % MIB == 0 {
        format!("{} MiB", bytes / MIB)
    } else {
        format!("{} KiB", count(bytes / 1024))
    }
}

/// Memory in GiB: whole when within 0.05 of a whole number, else one decimal (`24 GiB`).
pub fn gib(bytes: u64) -> String {
    let g = bytes as f64 / (1u64 << 30) as f64;
    if (g - g.round()).abs() < 0.05 {
        format!("{} GiB", g.round())
    } else {
        format!("{g:.1} GiB")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latencies_keep_the_three_significant_digits_the_histogram_has() {
        assert_eq!(latency(2131.97), "2,130");
        assert_eq!(latency(109.25), "109");
        assert_eq!(latency(99.96), "100.0");
        assert_eq!(latency(11.234), "11.2");
        assert_eq!(latency(0.5234), "0.523");
        assert_eq!(latency(4886.53), "4,890");
        assert_eq!(latency(f64::NAN), "N/A");
    }

    #[test]
    fn exact_binary_ties_round_half_to_even() {
        assert_eq!(two_decimals(182.125), "182.12");
        assert_eq!(two_decimals(197.125), "197.12");
        assert_eq!(two_decimals(228.875), "228.88");
        assert_eq!(two_decimals(313.0), "313.00");
    }

    #[test]
    fn published_figures_format_like_arknet() {
        assert_eq!(
            with_range(84_496.447_855_4, 81_589.158_627_4, 86_342.700_988_4, 0),
            "84,496 [81,589, 86,343]"
        );
        assert_eq!(two_decimals(165.032_124_718), "165.03");
        assert_eq!(two_decimals(1346.0), "1,346.00");
        assert_eq!(two_decimals(1491.791), "1,491.79");
        assert_eq!(ratio(367_535.0 / 185_779.0), "1.98×");
        assert_eq!(mib(10_223_616.0), "9.75");
        assert_eq!(count(1620), "1,620");
        assert_eq!(throughput(999.5), "1,000");
        assert_eq!(grouped(-1234567.891, 1), "-1,234,567.9");
        assert_eq!(grouped(12.0, 0), "12");
    }

    #[test]
    fn cpu_values_round_once_from_the_double() {
        // 157.05% and 171.85% are approximations of the underlying doubles, which lie just
        // below the boundary; rounding the printed 2-decimal value again would say 157.1.
        assert_eq!(cpu_percent(157.049_999_999_99), "157.0");
        assert_eq!(cpu_percent(171.849_999_999_9), "171.8");
        assert_eq!(cpu_percent(98.99), "99.0");
        assert_eq!(cpu_percent(f64::NAN), "N/A");
    }

    #[test]
    fn sizes_read_as_people_say_them() {
        assert_eq!(buffer_size(4 << 20), "4 MiB");
        assert_eq!(buffer_size(3 << 19), "1.50 MiB");
        assert_eq!(buffer_size(256 * 1024), "256 KiB");
        assert_eq!(buffer_size(16 * 64 * 16_384), "16 MiB");
        assert_eq!(whole_mib_or_kib(8 << 20), "8 MiB");
        assert_eq!(whole_mib_or_kib(212_992), "208 KiB");
        assert_eq!(gib(25_276_059_648), "23.5 GiB");
        assert_eq!(gib(24 << 30), "24 GiB");
        assert_eq!(gib(3 << 29), "1.5 GiB");
    }
}
