//! Where threads run: pinning with `sched_setaffinity`, and reading back what the kernel
//! holds for each thread. The lists themselves are [`CpuList`]s (`--client-cpus 0`,
//! `--server-cpus 1-3,6`).
//!
//! A side given a list first narrows its orchestrating thread to it (threads created later
//! inherit the mask: tokio's blocking pool, the accept thread); then each runtime thread pins
//! itself to one CPU of the list, runtime `i` to the list's `i mod len`-th CPU.

pub use echomark_archive::cpus::{CpuList, CpuListError};

// The archive's bound on CPU numbers is the kernel interface's.
const _: () = assert!(libc::CPU_SETSIZE as usize == echomark_archive::cpus::MAX_CPUS);

/// Why a CPU list cannot be used here.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlacementError {
    #[error(transparent)]
    List(#[from] CpuListError),
    #[error("CPU {cpus} {verb} not available here: this process may run on CPUs {allowed}",
        verb = if .cpus.len() == 1 { "is" } else { "are" })]
    Unavailable { cpus: CpuList, allowed: CpuList },
    /// `sched_getaffinity` failed with `errno`.
    #[error(
        "cannot read the CPUs this process may run on: {}",
        std::io::Error::from_raw_os_error(*.errno)
    )]
    Affinity { errno: i32 },
    /// `sched_getaffinity` named no CPU at all.
    #[error("cannot read the CPUs this process may run on: the kernel named no CPU")]
    NoCpu,
    /// `sched_setaffinity` to `cpus` failed with `errno`.
    #[error(
        "cannot pin a thread to CPUs {cpus}: {}",
        std::io::Error::from_raw_os_error(*.errno)
    )]
    Pin { cpus: CpuList, errno: i32 },
}

/// A CPU list the calling thread may run on: naming a CPU the host (or its container, or
/// `taskset`) leaves out is an error that names it.
pub fn available(text: &str) -> Result<CpuList, PlacementError> {
    let list: CpuList = text.parse()?;
    check_available(&list)?;
    Ok(list)
}

/// Checks that the calling thread may run on every CPU of `list`.
pub fn check_available(list: &CpuList) -> Result<(), PlacementError> {
    let allowed = allowed_for_thread()?;
    match list.outside(&allowed) {
        Some(cpus) => Err(PlacementError::Unavailable { cpus, allowed }),
        None => Ok(()),
    }
}

/// `list` as the kernel's bit set, for `sched_setaffinity` (also between fork and exec,
/// where nothing may allocate).
pub(crate) fn to_set(list: &CpuList) -> libc::cpu_set_t {
    // SAFETY: cpu_set_t is a plain bit array; all zeroes is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &cpu in list.cpus() {
        // SAFETY: `cpu` < CPU_SETSIZE, which every CpuList guarantees.
        unsafe { libc::CPU_SET(cpu, &mut set) };
    }
    set
}

/// The CPUs the calling thread may run on, as the kernel holds them.
pub fn allowed_for_thread() -> Result<CpuList, PlacementError> {
    // SAFETY: cpu_set_t is a plain bit array; all zeroes is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a valid, writable cpu_set_t of the size passed; pid 0 is this thread.
    let rc =
        unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if rc != 0 {
        return Err(PlacementError::Affinity { errno: errno() });
    }
    // SAFETY: reading bits of an initialised set, every index < CPU_SETSIZE.
    let cpus = (0..libc::CPU_SETSIZE as usize)
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .collect();
    CpuList::of(cpus).ok_or(PlacementError::NoCpu)
}

/// The error number the last failed system call of this thread left.
fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// Pins the calling thread to `cpus` (and every thread it creates afterwards).
pub fn pin_current_thread(cpus: &CpuList) -> Result<(), PlacementError> {
    let set = to_set(cpus);
    // SAFETY: `set` is a valid cpu_set_t of the size passed; pid 0 is this thread.
    let rc = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    if rc != 0 {
        return Err(PlacementError::Pin {
            cpus: cpus.clone(),
            errno: errno(),
        });
    }
    Ok(())
}

/// Pins the calling thread, runtime `index` of a side placed on `cpus`, to its one CPU.
/// Nothing happens for a side without a list.
pub fn pin_runtime_thread(cpus: Option<&CpuList>, index: usize) -> Result<(), PlacementError> {
    match cpus.and_then(|c| CpuList::of(vec![c.for_runtime(index)])) {
        Some(one) => pin_current_thread(&one),
        None => Ok(()),
    }
}

/// A CPU list as an archive records it (`settings.client_cpus`, `server_cpus`), parsed;
/// `None` where none is recorded.
pub fn recorded(text: Option<&str>) -> Result<Option<CpuList>, CpuListError> {
    text.map(str::parse).transpose()
}

/// Client and server apart on `allowed`: its first half for the client, the rest for the
/// server (`0` and `1` on two CPUs, `0-1` and `2-3` on four, `0` and `1-2` on three: the
/// server, which every client shares, gets the odd one). `None` on one CPU, where there
/// is no apart.
pub fn halves(allowed: &CpuList) -> Option<(CpuList, CpuList)> {
    let cpus = allowed.cpus();
    let split = cpus.len() / 2;
    Some((
        CpuList::of(cpus[..split].to_vec())?,
        CpuList::of(cpus[split..].to_vec())?,
    ))
}

/// The union of `Cpus_allowed_list` over every thread of process `pid` (`self` for this
/// one), read from `/proc`: where the process's threads may run, as the kernel holds it.
/// `None` when `/proc` cannot tell (the process is gone).
pub fn threads_allowed(pid: &str) -> Option<CpuList> {
    threads_allowed_split(pid, |_| false)?.0
}

/// [`threads_allowed`] in one pass over the threads, in two groups: the threads whose name
/// (`Name:`, the kernel's 15 bytes of it) `apart` accepts are the second, every other
/// thread the first; a group without threads is `None`.
pub fn threads_allowed_split(
    pid: &str,
    apart: impl Fn(&str) -> bool,
) -> Option<(Option<CpuList>, Option<CpuList>)> {
    let mut groups: [Vec<usize>; 2] = Default::default();
    for task in std::fs::read_dir(format!("/proc/{pid}/task"))
        .ok()?
        .flatten()
    {
        let Ok(status) = std::fs::read_to_string(task.path().join("status")) else {
            continue; // the thread ended meanwhile
        };
        let field = |name: &str| status.lines().find_map(|l| l.strip_prefix(name));
        let group = usize::from(apart(field("Name:").unwrap_or_default().trim()));
        let list = field("Cpus_allowed_list:")?;
        groups[group].extend_from_slice(list.trim().parse::<CpuList>().ok()?.cpus());
    }
    let [others, matched] = groups;
    Some((CpuList::of(others), CpuList::of(matched)))
}

/// The machine's logical CPUs that are online, whatever this process may run on (a
/// process pinned with `taskset`, or a pod's cpuset, still describes the whole machine).
pub fn online_cpus() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let online = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    if online > 0 {
        online as u64
    } else {
        std::thread::available_parallelism().map_or(1, |n| n.get() as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A failed affinity call reads as the kernel's error did.
    #[test]
    fn affinity_errors_read_as_the_kernel_said() {
        let eperm = std::io::Error::from_raw_os_error(libc::EPERM);
        assert_eq!(
            PlacementError::Affinity { errno: libc::EPERM }.to_string(),
            format!("cannot read the CPUs this process may run on: {eperm}")
        );
        assert_eq!(
            PlacementError::NoCpu.to_string(),
            "cannot read the CPUs this process may run on: the kernel named no CPU"
        );
        let einval = std::io::Error::from_raw_os_error(libc::EINVAL);
        assert_eq!(
            PlacementError::Pin {
                cpus: "3".parse().unwrap(),
                errno: libc::EINVAL
            }
            .to_string(),
            format!("cannot pin a thread to CPUs 3: {einval}")
        );
    }

    #[test]
    fn a_cpu_the_process_lacks_is_named() {
        let allowed = allowed_for_thread().unwrap();
        let past = allowed.cpus().last().unwrap() + 1;
        let err = available(&format!("0,{past}")).unwrap_err();
        assert!(
            err.to_string()
                .starts_with(&format!("CPU {past} is not available here")),
            "{err}"
        );
        assert!(matches!(
            available("x"),
            Err(PlacementError::List(CpuListError::Syntax { .. }))
        ));
    }

    #[test]
    fn halves_put_client_and_server_apart_wherever_there_are_two_cpus() {
        let split = |text: &str| {
            halves(&text.parse().unwrap()).map(|(c, s)| (c.to_string(), s.to_string()))
        };
        assert_eq!(split("0-1"), Some(("0".into(), "1".into())));
        assert_eq!(split("0-3"), Some(("0-1".into(), "2-3".into())));
        assert_eq!(split("2,5,7"), Some(("2".into(), "5,7".into())));
        assert_eq!(split("3"), None);
    }

    #[test]
    fn a_pinned_thread_reads_back_its_cpu() {
        let allowed = allowed_for_thread().unwrap();
        let last = *allowed.cpus().last().unwrap();
        let seen = std::thread::spawn(move || {
            pin_runtime_thread(Some(&allowed), allowed.len() - 1).unwrap();
            allowed_for_thread().unwrap()
        })
        .join()
        .unwrap();
        assert_eq!(seen.cpus(), &[last]);
        assert!(threads_allowed("self").is_some());
    }
}
