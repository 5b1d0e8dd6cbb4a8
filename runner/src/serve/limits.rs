//! The process's open-file limit. Every connection is a descriptor, and Debian's default soft
//! limit (1,024) would cap a server far below what its host can hold, so `serve` raises the
//! soft limit to the hard one when it starts, as servers do; the io_uring backend then sizes
//! its registered file tables from what the limit leaves (the kernel refuses a table larger
//! than the limit).

/// Descriptors kept for what is not a connection: standard streams, listeners, rings, a
/// runtime's epoll and event descriptors, files the instruments read.
pub const RESERVED_DESCRIPTORS: u64 = 64;

/// The soft and hard `RLIMIT_NOFILE`.
fn open_files() -> std::io::Result<libc::rlimit> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes one `rlimit` into the struct it is given, which lives here.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(limit)
}

/// The most descriptors the kernel lets a process have (`fs.nr_open`), when it says.
fn kernel_ceiling() -> Option<u64> {
    std::fs::read_to_string("/proc/sys/fs/nr_open")
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// Raises the soft open-file limit to the hard one (or to the kernel's ceiling, when the
/// hard limit is unlimited) and returns the soft limit in force afterwards. A limit that
/// cannot be raised stays as it was.
pub fn raise_open_files() -> std::io::Result<u64> {
    let limit = open_files()?;
    let ceiling = kernel_ceiling().unwrap_or(limit.rlim_max);
    let wanted = limit.rlim_max.min(ceiling);
    if wanted > limit.rlim_cur {
        let raised = libc::rlimit {
            rlim_cur: wanted,
            rlim_max: limit.rlim_max,
        };
        // SAFETY: setrlimit reads one `rlimit` from the struct it is given; a soft limit up
        // to the hard one needs no privilege.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
            return Ok(wanted);
        }
    }
    Ok(limit.rlim_cur)
}

/// The soft open-file limit in force.
pub fn soft_open_files() -> std::io::Result<u64> {
    open_files().map(|l| l.rlim_cur)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_soft_limit_ends_at_the_hard_one() {
        let raised = raise_open_files().unwrap();
        let limit = open_files().unwrap();
        assert_eq!(raised, limit.rlim_cur);
        let ceiling = kernel_ceiling().unwrap_or(limit.rlim_max);
        assert_eq!(limit.rlim_cur, limit.rlim_max.min(ceiling));
    }
}
