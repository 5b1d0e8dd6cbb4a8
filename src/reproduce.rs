//! The shell commands that reproduce a dataset, derived from what its archives record.
//!
//! Archives whose matrix settings agree (but for their backend or external server) and
//! whose runs overlap in time were written by one `matrix` invocation, which interleaved
//! them: they get one command (`--backends a,b`, or one `--server-cmd` per server). Every
//! matrix-defining value the archive records is written out as a flag, so the command does
//! not depend on what a preset meant when the archive was made; a test in the runner parses
//! every published command with the runner's own parser and checks that the archives it
//! would write have the recorded settings.

use echomark_archive::decided::UntilDecided;
use echomark_archive::{
    AddressFamily, Arrival, OpenLoopPlan, Settings, StreamFraming, TlsVerification, TrafficProfile,
    CASE_TIMEOUT_MARGIN_SECONDS, DEFAULT_UDP_TIMEOUT_MS,
};

use echomark_archive::shell::quote as quoted;

use crate::model::{ArchiveFile, Dataset};

/// Where the README says how to build and install `echomark-runner`.
pub const INSTALL_URL: &str = concat!(env!("CARGO_PKG_REPOSITORY"), "/blob/main/README.md#install");

/// The commands that reproduce `d` (its archives under `raw-results/`, in the folder it
/// is named after), in order, and then the site; empty when no archive of it records its matrix (arknet's).
pub fn commands(d: &Dataset) -> Vec<String> {
    let slug = d.name.as_str();
    let groups = invocations(&d.files);
    let mut lines = Vec::new();
    let needs_servers = groups.iter().flatten().any(|f| {
        f.external_server
            .as_ref()
            .is_some_and(|s| s.address.is_none() && !s.command.contains("echomark-runner"))
    });
    if needs_servers {
        lines.push("scripts/install-external-servers".to_string());
    }
    for (index, group) in groups.iter().enumerate() {
        lines.extend(invocation(group, slug, index + 1));
    }
    if !lines.is_empty() {
        lines.push("echomark build".to_string());
    }
    lines
}

/// Whether two files' runs overlap in time (each span is first and last start, RFC 3339).
fn overlap(a: &ArchiveFile, b: &ArchiveFile) -> bool {
    match (&a.run_span, &b.run_span) {
        (Some((a0, a1)), Some((b0, b1))) => crate::model::spans_overlap((a0, a1), (b0, b1)),
        _ => false,
    }
}

/// The files grouped by the `matrix` invocation that wrote them, in file order.
fn invocations(files: &[ArchiveFile]) -> Vec<Vec<&ArchiveFile>> {
    let mut groups: Vec<Vec<&ArchiveFile>> = Vec::new();
    for file in files {
        let Some(settings) = &file.matrix else {
            continue;
        };
        let together = |g: &Vec<&ArchiveFile>| {
            g.iter().all(|other| {
                other.matrix.as_deref().map(Settings::shared_matrix)
                    == Some(settings.shared_matrix())
                    && other.external_server.is_some() == file.external_server.is_some()
                    && other.backend != file.backend
            }) && g.iter().any(|other| overlap(other, file))
        };
        match groups.iter_mut().find(|g| together(g)) {
            Some(group) => group.push(file),
            None => groups.push(vec![file]),
        }
    }
    groups
}

/// A number as the command line takes it (`1`, `0.25`).
fn number(value: f64) -> String {
    format!("{value}")
}

/// Comma-separated values.
fn list<T: ToString>(values: impl IntoIterator<Item = T>) -> String {
    values
        .into_iter()
        .map(|v| v.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

/// `items` without repeats, in first-seen order.
fn distinct<T: PartialEq + Copy>(items: impl IntoIterator<Item = T>) -> Vec<T> {
    let mut out = Vec::new();
    for item in items {
        if !out.contains(&item) {
            out.push(item);
        }
    }
    out
}

/// The clients and windows whose product the profiles are, when they are one (what
/// `--clients` and `--windows` can ask for).
fn as_product(profiles: &[TrafficProfile]) -> Option<(Vec<u64>, Vec<u64>)> {
    let clients = distinct(profiles.iter().map(|p| p.clients));
    let windows = distinct(profiles.iter().map(|p| p.window));
    let product: Vec<TrafficProfile> = clients
        .iter()
        .flat_map(|&c| {
            windows.iter().map(move |&w| TrafficProfile {
                clients: c,
                window: w,
            })
        })
        .collect();
    (product == profiles).then_some((clients, windows))
}

/// The flags that make a matrix of `s` (without its output and servers).
fn matrix_flags(s: &Settings) -> Vec<String> {
    let mut flags = Flags::default();
    flags.axes(s);
    flags.runs(s);
    if let Some(open) = &s.open_loop {
        flags.open_loop(open);
    }
    flags.order_and_timeouts(s);
    flags.sockets_and_quic(s);
    if let Some(u) = &s.until_decided {
        flags.until_decided(u);
    }
    flags.placement(s);
    flags.switches(s);
    if let Some(fleet) = &s.fleet {
        flags.fleet(fleet);
    }
    flags.0
}

/// A matrix command's flags, written one group of settings at a time.
#[derive(Default)]
struct Flags(Vec<String>);

impl Flags {
    /// `--NAME VALUE`.
    fn flag(&mut self, name: &str, value: String) {
        self.0.push(format!("--{name}"));
        self.0.push(value);
    }

    /// What the matrix measures: the preset, the protocols and (without an explicit case
    /// list) the payloads, profiles and IO profiles.
    fn axes(&mut self, s: &Settings) {
        if let Some(preset) = s.preset {
            self.flag("preset", preset.as_str().to_string());
        }
        self.flag("protocols", list(s.protocols.iter().map(|p| p.as_str())));
        if s.cases.is_some() {
            return;
        }
        self.flag("payloads", list(&s.payloads));
        // A preset's profiles need not be a product (1 × 1 and 16 × 16); the preset keeps
        // them when they are not.
        if let Some((clients, windows)) = as_product(&s.profiles) {
            self.flag("clients", list(clients));
            self.flag("windows", list(windows));
            if let Some(window) = s.udp_throughput_window {
                self.flag("udp-window", window.to_string());
            }
        }
        let models = distinct(s.io_profiles.iter().map(|p| p.io_model));
        self.flag("io-models", list(models.iter().map(|m| m.as_str())));
        self.flag(
            "io-threads",
            list(distinct(s.io_profiles.iter().map(|p| p.io_threads))),
        );
        self.flag(
            "work",
            list(distinct(s.io_profiles.iter().map(|p| p.handler_work))),
        );
    }

    /// How each case runs: its repetitions, seconds, warm-up and address family.
    fn runs(&mut self, s: &Settings) {
        self.flag("repetitions", s.repetitions.to_string());
        self.flag("seconds", number(s.seconds));
        self.flag("warmup", number(s.warmup));
        if s.address_family == AddressFamily::Ipv6 {
            self.flag("address-family", s.address_family.as_str().to_string());
        }
    }

    /// An open-loop matrix's rates (or sweep) and its arrivals where not the defaults.
    fn open_loop(&mut self, open: &OpenLoopPlan) {
        if open.rates.is_empty() {
            self.flag("rate-sweep", list(&open.sweep_percent));
        } else {
            self.flag("rates", list(&open.rates));
        }
        if open.arrival != Arrival::Uniform {
            self.flag("arrival", open.arrival.as_str().to_string());
        }
        if open.seed != 1 {
            self.flag("arrival-seed", open.seed.to_string());
        }
    }

    /// The case order (shuffle, shard) and the timeouts where not the defaults.
    fn order_and_timeouts(&mut self, s: &Settings) {
        if let Some(seed) = s.shuffle_seed {
            self.flag("shuffle", seed.to_string());
        }
        if let Some(shard) = s.shard {
            self.flag("shard", shard.to_string());
        }
        let default_timeout = s.seconds + s.warmup + CASE_TIMEOUT_MARGIN_SECONDS;
        if (s.case_timeout_seconds - default_timeout).abs() > 1e-9 {
            self.flag("case-timeout", number(s.case_timeout_seconds));
        }
        if s.udp_timeout_ms != DEFAULT_UDP_TIMEOUT_MS {
            self.flag("udp-timeout-ms", s.udp_timeout_ms.to_string());
        }
    }

    /// The UDP sockets' buffers and batches, the QUIC transport's axes and the soak.
    fn sockets_and_quic(&mut self, s: &Settings) {
        for (name, value) in [
            ("udp-send-buffer", s.udp_send_buffer),
            ("udp-recv-buffer", s.udp_recv_buffer),
            ("udp-server-recv-buffer", s.udp_server_recv_buffer),
            ("udp-batch", s.udp_batch),
        ] {
            if let Some(bytes) = value {
                self.flag(name, bytes.to_string());
            }
        }
        let q = &s.quic_axes;
        for (name, values) in [
            ("quic-congestion", list(&q.congestion)),
            (
                "quic-gso",
                list(q.gso.iter().map(|&on| echomark_archive::quic::on_off(on))),
            ),
            ("quic-initial-mtu", list(&q.initial_mtu)),
            ("quic-stream-window", list(&q.stream_window)),
            ("quic-connection-window", list(&q.connection_window)),
        ] {
            if !values.is_empty() {
                self.flag(name, values);
            }
        }
        if let Some(seconds) = s.soak_seconds {
            self.flag("soak", number(seconds));
        }
    }

    /// Measured until decided: the same rule, the same bounds.
    fn until_decided(&mut self, u: &UntilDecided) {
        self.flag("max-repetitions", u.max_repetitions().to_string());
        // Percentages as given (a share × 100 rounded past binary noise: 0.95 → 95).
        let percent = |share: f64| number((share * 100.0 * 1e6).round() / 1e6);
        self.flag("level", percent(u.level));
        self.flag("margin", percent(u.margin));
        if let Some(budget) = u.budget_seconds {
            self.flag("budget", format!("{}s", number(budget)));
        }
    }

    /// Where the client and the server ran: their CPU lists, or `--together`.
    fn placement(&mut self, s: &Settings) {
        for (name, list) in [
            ("client-cpus", &s.client_cpus),
            ("server-cpus", &s.server_cpus),
        ] {
            if let Some(list) = list {
                self.flag(name, list.clone());
            }
        }
        // The baseline places an in-process server apart unless told otherwise; a baseline
        // archive that records neither list was measured together.
        let together = s.preset == Some(echomark_archive::Preset::Baseline)
            && s.external_server.is_none()
            && s.client_cpus.is_none()
            && s.server_cpus.is_none();
        if together {
            self.0.push("--together".to_string());
        }
    }

    /// The switches that are on.
    fn switches(&mut self, s: &Settings) {
        for (switch, on) in [
            ("--udp-gso", s.udp_gso),
            ("--count-syscalls", s.count_syscalls),
            ("--keep-going", s.keep_going),
            ("--until-decided", s.until_decided.is_some()),
        ] {
            if on {
                self.0.push(switch.to_string());
            }
        }
    }
}

impl Flags {
    /// A fleet's: where its coordinator listened, its size and its generator counts.
    fn fleet(&mut self, f: &echomark_archive::FleetPlan) {
        self.0.extend([
            "--fleet-listen".to_string(),
            f.listen.clone(),
            "--fleet-size".to_string(),
            f.size.to_string(),
            "--fleet-generators".to_string(),
            list(&f.generators),
        ]);
    }
}

/// The flags naming the external servers of one invocation, and what they share.
fn server_flags(group: &[&ArchiveFile]) -> Vec<String> {
    let servers: Vec<_> = group
        .iter()
        .filter_map(|f| f.external_server.as_ref())
        .collect();
    let Some(first) = servers.first() else {
        return Vec::new();
    };
    let mut flags = Vec::new();
    // `--server-version-cmd` pairs with the servers by position: all of them or none.
    let versions = servers.iter().all(|s| s.version_command.is_some());
    for server in &servers {
        let (how, what) = match &server.address {
            Some(address) => ("--server-address", address.clone()),
            None => ("--server-cmd", server.command.clone()),
        };
        flags.extend([
            "--server-name".to_string(),
            server.name.clone(),
            how.to_string(),
            what,
        ]);
        if let (true, Some(version)) = (versions, &server.version_command) {
            flags.extend(["--server-version-cmd".to_string(), version.clone()]);
        }
    }
    let family = group[0].address_family;
    let loopback = match family {
        AddressFamily::Ipv4 => "127.0.0.1",
        AddressFamily::Ipv6 => "::1",
    };
    if first.host != loopback && first.address.is_none() {
        flags.extend(["--server-host".to_string(), first.host.clone()]);
    }
    if first.framing != StreamFraming::Prefix {
        flags.extend(["--framing".to_string(), first.framing.as_str().to_string()]);
    }
    for (flag, ms) in [
        ("--server-ready-timeout", first.ready_timeout_ms),
        ("--verify-idle", first.verify_idle_ms),
    ] {
        if let Some(ms) = ms {
            flags.extend([flag.to_string(), number(ms as f64 / 1000.0)]);
        }
    }
    match (first.tls_verification, &first.tls_ca) {
        (Some(TlsVerification::Insecure), _) => flags.push("--tls-insecure".to_string()),
        (Some(TlsVerification::Ca), Some(ca)) => {
            flags.extend(["--tls-ca".to_string(), ca.clone()]);
        }
        _ => {}
    }
    flags
}

/// The lines of one invocation: the matrix (inside a pair of network namespaces when its
/// server ran in another one), then any renaming the dataset's file names need.
fn invocation(group: &[&ArchiveFile], slug: &str, index: usize) -> Vec<String> {
    let Some(settings) = group[0].matrix.as_deref() else {
        return Vec::new();
    };
    let mut words: Vec<String> = Vec::new();
    let across = group
        .iter()
        .any(|f| f.reach.as_ref().and_then(|r| r.separate_namespace) == Some(true));
    if across {
        words.push("scripts/across-namespaces".to_string());
    }
    match settings.fleet.as_ref().and_then(|f| f.launcher.as_deref()) {
        // The pods' command: echomark-runner's arguments after the launcher's `--`.
        Some(launcher) if launcher.starts_with("scripts/fleet-in-namespaces ") => {
            words.extend(launcher.split_whitespace().map(str::to_string));
            words.extend(["--".to_string(), "matrix".to_string()]);
        }
        _ => words.extend(["echomark-runner".to_string(), "matrix".to_string()]),
    }
    let external = group.iter().any(|f| f.external_server.is_some());
    let backends: Vec<&str> = group.iter().filter_map(|f| f.backend.as_deref()).collect();
    if !external && backends != ["tokio"] {
        let mut sorted = backends.clone();
        sorted.sort_unstable();
        words.extend(["--backends".to_string(), sorted.join(",")]);
    }
    words.extend(matrix_flags(settings));
    words.extend(server_flags(group));
    let folder = format!("raw-results/{slug}");
    let mut renames = Vec::new();
    let out = match group {
        [one] => format!("{folder}/{}", one.name),
        several => {
            // Several archives go into one folder as BACKEND.json each.
            let written = |f: &ArchiveFile| format!("{}.json", f.backend.as_deref().unwrap_or(""));
            if several.iter().all(|f| f.name == written(f)) {
                folder
            } else {
                let scratch = format!("/tmp/echomark-{slug}-{index}");
                for f in several {
                    renames.push(format!(
                        "mv {} {}",
                        quoted(&format!("{scratch}/{}", written(f))),
                        quoted(&format!("{folder}/{}", f.name))
                    ));
                }
                scratch
            }
        }
    };
    words.extend(["--out".to_string(), out]);
    let line = words
        .iter()
        .map(|w| quoted(w))
        .collect::<Vec<_>>()
        .join(" ");
    [vec![line], renames].concat()
}

#[cfg(test)]
mod tests {
    use super::*;
    use echomark_archive::TrafficProfile as P;

    #[test]
    fn profiles_that_are_a_product_become_clients_and_windows() {
        let product = [
            P {
                clients: 1,
                window: 1,
            },
            P {
                clients: 1,
                window: 16,
            },
            P {
                clients: 16,
                window: 1,
            },
            P {
                clients: 16,
                window: 16,
            },
        ];
        assert_eq!(as_product(&product), Some((vec![1, 16], vec![1, 16])));
        let diagonal = [product[0], product[3]];
        assert_eq!(as_product(&diagonal), None);
    }

    #[test]
    fn words_a_shell_would_split_are_quoted() {
        assert_eq!(quoted("--out"), "--out");
        assert_eq!(quoted("tcp,udp"), "tcp,udp");
        assert_eq!(
            quoted("socat TCP-LISTEN:{port} PIPE"),
            "'socat TCP-LISTEN:{port} PIPE'"
        );
        assert_eq!(quoted("it's $HOME"), r"'it'\''s $HOME'");
        assert_eq!(quoted(""), "''");
    }
}
