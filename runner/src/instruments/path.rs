//! The network path of a run against a target: which interface of this host carries the
//! traffic to the server, its MTU, and what kind of link it is (loopback, a veth pair, or
//! anything else, which may be a real network).
//!
//! The route is the kernel's: a UDP socket connected to the server (no packet is sent) has
//! the source address the kernel would use, and the interface holding that address is the
//! way out. A destination that is one of this namespace's own addresses never leaves it:
//! Linux delivers it over loopback whatever interface the address sits on. The kind of
//! link is the interface's driver, as `ethtool -i` reports it (`veth` for a veth pair).

use std::ffi::CStr;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::path::Path;

use echomark_archive::{NetworkPath, PathKind};

/// The path from this host to `server`, or `None` when the kernel has no route to it.
pub fn describe(server: SocketAddr) -> Option<NetworkPath> {
    // The unspecified address of the server's family: the kernel picks route and source.
    let any = match server {
        SocketAddr::V4(_) => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        SocketAddr::V6(_) => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
    };
    let probe = UdpSocket::bind(SocketAddr::new(any, 0)).ok()?;
    probe.connect(server).ok()?;
    let local = probe.local_addr().ok()?.ip();
    let addresses = interface_addresses();
    let own = server.ip().is_loopback() || addresses.iter().any(|(_, a)| *a == server.ip());
    let interface = if own {
        loopback_interface(&addresses)
    } else {
        addresses
            .iter()
            .find(|(_, a)| *a == local)
            .map(|(name, _)| name.clone())?
    };
    let sys = Path::new("/sys/class/net").join(&interface);
    let kind = if own || read_number(&sys.join("type")) == Some(ARPHRD_LOOPBACK) {
        PathKind::Loopback
    } else if driver(&probe, &interface).as_deref() == Some("veth") {
        PathKind::Veth
    } else {
        PathKind::Network
    };
    Some(NetworkPath {
        kind,
        mtu: read_number(&sys.join("mtu")),
        interface,
        client_address: local.to_string(),
    })
}

/// The driver of `interface` (`veth`, `virtio_net`, `e1000e`), from the SIOCETHTOOL ioctl
/// on `socket`; `None` where the interface has none to report.
fn driver(socket: &UdpSocket, interface: &str) -> Option<String> {
    use std::os::fd::AsRawFd;
    /// `struct ethtool_drvinfo` of `<linux/ethtool.h>`.
    #[repr(C)]
    struct DriverInfo {
        cmd: u32,
        driver: [u8; 32],
        version: [u8; 32],
        fw_version: [u8; 32],
        bus_info: [u8; 32],
        erom_version: [u8; 32],
        reserved2: [u8; 12],
        n_priv_flags: u32,
        n_stats: u32,
        testinfo_len: u32,
        eedump_len: u32,
        regdump_len: u32,
    }
    const SIOCETHTOOL: libc::c_ulong = 0x8946;
    const ETHTOOL_GDRVINFO: u32 = 0x3;
    let name = interface.as_bytes();
    if name.len() >= libc::IFNAMSIZ {
        return None;
    }
    // SAFETY: both structs are plain C data for which all-zero bytes are valid.
    let mut info: DriverInfo = unsafe { std::mem::zeroed() };
    info.cmd = ETHTOOL_GDRVINFO;
    // SAFETY: as above.
    let mut request: libc::ifreq = unsafe { std::mem::zeroed() };
    for (slot, &b) in request.ifr_name.iter_mut().zip(name) {
        *slot = b as libc::c_char;
    }
    request.ifr_ifru.ifru_data = (&mut info as *mut DriverInfo).cast();
    // SAFETY: SIOCETHTOOL reads the NUL-terminated name and writes at most one
    // `ethtool_drvinfo` through the data pointer, which points at `info`, alive here.
    let r = unsafe { libc::ioctl(socket.as_raw_fd(), SIOCETHTOOL as _, &mut request) };
    if r != 0 {
        return None;
    }
    let end = info.driver.iter().position(|&b| b == 0).unwrap_or(32);
    Some(String::from_utf8_lossy(&info.driver[..end]).into_owned())
}

/// `ARPHRD_LOOPBACK`, the hardware type of a loopback interface.
const ARPHRD_LOOPBACK: u64 = 772;

/// The name of this namespace's loopback interface (`lo` on Linux).
fn loopback_interface(addresses: &[(String, IpAddr)]) -> String {
    addresses
        .iter()
        .find(|(_, a)| a.is_loopback())
        .map_or_else(|| "lo".to_string(), |(name, _)| name.clone())
}

fn read_number(path: &Path) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// Every IPv4 and IPv6 address of this network namespace, with its interface's name.
fn interface_addresses() -> Vec<(String, IpAddr)> {
    let mut head: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs stores the head of a list it allocated, freed below.
    if unsafe { libc::getifaddrs(&mut head) } != 0 {
        return Vec::new();
    }
    let mut out = Vec::new();
    let mut node = head;
    while !node.is_null() {
        // SAFETY: `node` is an element of the list getifaddrs returned, alive until
        // freeifaddrs; its name and address pointers are null or valid for as long.
        let ifa = unsafe { &*node };
        if !ifa.ifa_addr.is_null() && !ifa.ifa_name.is_null() {
            // SAFETY: as above; the family says which sockaddr the address is.
            let address = unsafe {
                match i32::from((*ifa.ifa_addr).sa_family) {
                    libc::AF_INET => {
                        let sin = &*(ifa.ifa_addr as *const libc::sockaddr_in);
                        Some(IpAddr::V4(Ipv4Addr::from(u32::from_be(
                            sin.sin_addr.s_addr,
                        ))))
                    }
                    libc::AF_INET6 => {
                        let sin6 = &*(ifa.ifa_addr as *const libc::sockaddr_in6);
                        Some(IpAddr::V6(Ipv6Addr::from(sin6.sin6_addr.s6_addr)))
                    }
                    _ => None,
                }
            };
            if let Some(address) = address {
                // SAFETY: a NUL-terminated name, alive until freeifaddrs.
                let name = unsafe { CStr::from_ptr(ifa.ifa_name) };
                out.push((name.to_string_lossy().into_owned(), address));
            }
        }
        node = ifa.ifa_next;
    }
    // SAFETY: the head getifaddrs returned, freed once; nothing refers to it any more.
    unsafe { libc::freeifaddrs(head) };
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_targets_take_the_loopback_interface() {
        for server in ["127.0.0.1:9", "[::1]:9"] {
            let Some(path) = describe(server.parse().unwrap()) else {
                // No IPv6 on this host: nothing to describe.
                continue;
            };
            assert_eq!(path.kind, PathKind::Loopback, "{server}");
            assert!(path.mtu.is_some_and(|m| m >= 1280), "{path:?}");
            assert!(!path.interface.is_empty());
        }
    }

    #[test]
    fn every_address_has_an_interface_and_loopback_is_among_them() {
        let addresses = interface_addresses();
        assert!(
            addresses
                .iter()
                .any(|(_, a)| *a == IpAddr::V4(Ipv4Addr::LOCALHOST)),
            "{addresses:?}"
        );
        assert!(addresses.iter().all(|(name, _)| !name.is_empty()));
    }

    #[test]
    fn a_non_loopback_own_address_is_still_loopback() {
        // Linux delivers traffic to any of its own addresses over loopback.
        let own = interface_addresses()
            .into_iter()
            .find(|(_, a)| !a.is_loopback() && a.is_ipv4());
        if let Some((_, address)) = own {
            let path = describe(SocketAddr::new(address, 9)).unwrap();
            assert_eq!(path.kind, PathKind::Loopback);
        }
    }

    #[test]
    fn loopback_has_no_driver_to_report_as_veth() {
        let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
        assert_ne!(driver(&socket, "lo").as_deref(), Some("veth"));
        assert_eq!(driver(&socket, "no-such-interface-x"), None);
        assert_eq!(driver(&socket, &"x".repeat(40)), None);
    }
}
