//! Process and kernel readings: CPU time, RSS, UDP counters and buffer sysctls.

use std::fs;

/// Process user + system CPU time in seconds (all threads), from getrusage(RUSAGE_SELF).
pub fn process_cpu_seconds() -> Option<f64> {
    let usage = rusage()?;
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    Some(tv(usage.ru_utime) + tv(usage.ru_stime))
}

/// Lifetime peak RSS in bytes (`ru_maxrss` is KiB on Linux, bytes on macOS).
pub fn peak_rss_bytes() -> Option<u64> {
    let usage = rusage()?;
    let raw = u64::try_from(usage.ru_maxrss).ok()?;
    Some(if cfg!(target_os = "macos") {
        raw
    } else {
        raw * 1024
    })
}

fn rusage() -> Option<libc::rusage> {
    // SAFETY: getrusage only writes into the zero-initialised struct we pass.
    unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        (libc::getrusage(libc::RUSAGE_SELF, &mut usage) == 0).then_some(usage)
    }
}

/// Current RSS in bytes from `/proc/self/statm` (Linux only).
pub fn current_rss_bytes() -> Option<u64> {
    let statm = fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    Some(pages * u64::try_from(page).ok()?)
}

/// A reading of the kernel's UDP counters for one address family.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UdpCounters {
    pub in_datagrams: u64,
    pub in_errors: u64,
    pub rcvbuf_errors: u64,
    pub sndbuf_errors: u64,
    pub mem_errors: u64,
    /// IP fragmentation and reassembly (`Ip:` of `/proc/net/snmp`, `Ip6*` of `snmp6`): a
    /// datagram larger than the MTU leaves as fragments and must be reassembled.
    pub frag_creates: u64,
    pub reasm_reqds: u64,
    pub reasm_oks: u64,
    pub reasm_fails: u64,
}

impl UdpCounters {
    /// Reads `/proc/net/snmp` (IPv4) or `/proc/net/snmp6` (IPv6); `None` off Linux.
    pub fn read(ipv6: bool) -> Option<Self> {
        if ipv6 {
            Self::parse_snmp6(&fs::read_to_string("/proc/net/snmp6").ok()?)
        } else {
            Self::parse_snmp(&fs::read_to_string("/proc/net/snmp").ok()?)
        }
    }

    /// Parses the `Udp:` and `Ip:` line pairs (names, then values) of `/proc/net/snmp`.
    pub fn parse_snmp(text: &str) -> Option<Self> {
        let table = |prefix: &str| -> Option<Vec<(String, u64)>> {
            let mut lines = text.lines().filter(|l| l.starts_with(prefix));
            let names = lines.next()?.split_whitespace().skip(1);
            let values: Vec<u64> = lines
                .next()?
                .split_whitespace()
                .skip(1)
                .map(|v| v.parse().ok())
                .collect::<Option<_>>()?;
            Some(names.map(str::to_string).zip(values).collect())
        };
        let udp = table("Udp:")?;
        let ip = table("Ip:").unwrap_or_default();
        let find =
            |t: &[(String, u64)], name: &str| t.iter().find(|(n, _)| n == name).map(|(_, v)| *v);
        let mut out = Self::from_names("", |name| find(&udp, name))?;
        out.set_fragmentation(|name| find(&ip, name));
        Some(out)
    }

    /// Fills the fragmentation counters by their kernel names; absent ones read as 0.
    fn set_fragmentation(&mut self, get: impl Fn(&str) -> Option<u64>) {
        self.frag_creates = get("FragCreates").unwrap_or(0);
        self.reasm_reqds = get("ReasmReqds").unwrap_or(0);
        self.reasm_oks = get("ReasmOKs").unwrap_or(0);
        self.reasm_fails = get("ReasmFails").unwrap_or(0);
    }

    /// Parses the `Udp6*` lines of `/proc/net/snmp6` (`name value` per line).
    pub fn parse_snmp6(text: &str) -> Option<Self> {
        let find = |name: &str| {
            text.lines().find_map(|l| {
                let mut it = l.split_whitespace();
                (it.next()? == name).then(|| it.next()?.parse().ok())?
            })
        };
        let mut out = Self::from_names("Udp6", find)?;
        out.set_fragmentation(|name| find(&format!("Ip6{name}")));
        Some(out)
    }

    /// The counters by their kernel names (`InErrors`, …) behind `prefix`; `MemErrors` is
    /// missing on older kernels and reads as 0.
    fn from_names(prefix: &str, get: impl Fn(&str) -> Option<u64>) -> Option<Self> {
        let get = |name: &str| get(&format!("{prefix}{name}"));
        Some(Self {
            in_datagrams: get("InDatagrams")?,
            in_errors: get("InErrors")?,
            rcvbuf_errors: get("RcvbufErrors")?,
            sndbuf_errors: get("SndbufErrors")?,
            mem_errors: get("MemErrors").unwrap_or(0),
            ..Self::default()
        })
    }

    /// `after − before` per counter (saturating: a counter reset reads as 0, not a wrap).
    pub fn delta(before: Self, after: Self) -> Self {
        Self {
            in_datagrams: after.in_datagrams.saturating_sub(before.in_datagrams),
            in_errors: after.in_errors.saturating_sub(before.in_errors),
            rcvbuf_errors: after.rcvbuf_errors.saturating_sub(before.rcvbuf_errors),
            sndbuf_errors: after.sndbuf_errors.saturating_sub(before.sndbuf_errors),
            mem_errors: after.mem_errors.saturating_sub(before.mem_errors),
            frag_creates: after.frag_creates.saturating_sub(before.frag_creates),
            reasm_reqds: after.reasm_reqds.saturating_sub(before.reasm_reqds),
            reasm_oks: after.reasm_oks.saturating_sub(before.reasm_oks),
            reasm_fails: after.reasm_fails.saturating_sub(before.reasm_fails),
        }
    }
}

/// Reads a numeric sysctl such as `net/core/rmem_max`; `None` off Linux.
pub fn sysctl_u64(path: &str) -> Option<u64> {
    fs::read_to_string(format!("/proc/sys/{path}"))
        .ok()?
        .trim()
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_proc_net_snmp() {
        let text = "Ip: Forwarding DefaultTTL ReasmReqds ReasmOKs ReasmFails FragCreates\nIp: 1 64 6 3 1 12\n\
            Udp: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors InCsumErrors IgnoredMulti MemErrors\n\
            Udp: 73 0 9 74 8 1 0 0 2\nUdpLite: InDatagrams\nUdpLite: 0\n";
        let c = UdpCounters::parse_snmp(text).unwrap();
        assert_eq!(
            c,
            UdpCounters {
                in_datagrams: 73,
                in_errors: 9,
                rcvbuf_errors: 8,
                sndbuf_errors: 1,
                mem_errors: 2,
                frag_creates: 12,
                reasm_reqds: 6,
                reasm_oks: 3,
                reasm_fails: 1,
            }
        );
    }

    #[test]
    fn parses_proc_net_snmp6() {
        let text = "Udp6InDatagrams                 \t5\nUdp6NoPorts 0\nUdp6InErrors 3\nUdp6OutDatagrams 5\n\
            Udp6RcvbufErrors 2\nUdp6SndbufErrors 0\nUdp6InCsumErrors 0\nIp6ReasmReqds 4\nIp6FragCreates 8\n";
        let c = UdpCounters::parse_snmp6(text).unwrap();
        assert_eq!(
            (c.in_datagrams, c.in_errors, c.rcvbuf_errors, c.mem_errors),
            (5, 3, 2, 0)
        );
        assert_eq!((c.frag_creates, c.reasm_reqds, c.reasm_oks), (8, 4, 0));
    }

    #[test]
    fn delta_never_wraps() {
        let a = UdpCounters {
            rcvbuf_errors: 10,
            ..Default::default()
        };
        let b = UdpCounters {
            rcvbuf_errors: 4,
            in_errors: 3,
            ..Default::default()
        };
        assert_eq!(UdpCounters::delta(a, b).rcvbuf_errors, 0);
        assert_eq!(UdpCounters::delta(a, b).in_errors, 3);
    }

    #[test]
    fn this_kernel_reports_udp_and_fragmentation_counters() {
        let c = UdpCounters::read(false).expect("/proc/net/snmp");
        // Any Linux host has fragmented or reassembled nothing or something; what must hold is
        // that the Ip: line was found, so a reassembly never exceeds its requests forever.
        assert!(c.reasm_oks <= c.reasm_reqds, "{c:?}");
    }

    #[test]
    fn process_readings_are_available_here() {
        assert!(process_cpu_seconds().is_some());
        assert!(peak_rss_bytes().unwrap() > 0);
    }
}
