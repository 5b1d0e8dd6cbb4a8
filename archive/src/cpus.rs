//! CPU lists as `taskset -c` and `/proc/*/status` write them (`0`, `0-3`, `0,2-3`): how
//! `--client-cpus` and `--server-cpus` are given, and how archives record where threads ran.

use std::fmt;
use std::str::FromStr;

/// How many CPUs a list may address: the size of glibc's `cpu_set_t`, the most Linux lets a
/// process pin to through it.
pub const MAX_CPUS: usize = 1024;

/// A sorted set of CPU numbers with no duplicates, never empty.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CpuList(Vec<usize>);

/// Why a text is not a CPU list.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CpuListError {
    #[error("{list:?} is not a CPU list (write it as `taskset -c` does: 0, 0-3 or 0,2-3)")]
    Syntax { list: String },
    #[error("CPU {cpu} is past the largest CPU number Linux can pin to ({max})", max = MAX_CPUS - 1)]
    TooLarge { cpu: usize },
}

impl CpuList {
    /// The list of exactly these CPUs; `None` when there are none or one is too large.
    pub fn of(mut cpus: Vec<usize>) -> Option<Self> {
        cpus.sort_unstable();
        cpus.dedup();
        (!cpus.is_empty() && cpus.iter().all(|&c| c < MAX_CPUS)).then_some(Self(cpus))
    }

    /// The CPUs, ascending.
    pub fn cpus(&self) -> &[usize] {
        &self.0
    }

    /// How many CPUs the list names.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Always false: a list names at least one CPU.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The CPU that runtime thread `index` of a side placed on this list pins itself to.
    pub fn for_runtime(&self, index: usize) -> usize {
        self.0[index % self.0.len()]
    }

    /// The CPUs both lists name, if any.
    pub fn common(&self, other: &CpuList) -> Option<CpuList> {
        Self::of(
            self.0
                .iter()
                .copied()
                .filter(|c| other.0.contains(c))
                .collect(),
        )
    }

    /// This list's CPUs that `allowed` lacks, if any.
    pub fn outside(&self, allowed: &CpuList) -> Option<CpuList> {
        Self::of(
            self.0
                .iter()
                .copied()
                .filter(|c| !allowed.0.contains(c))
                .collect(),
        )
    }
}

impl FromStr for CpuList {
    type Err = CpuListError;

    fn from_str(list: &str) -> Result<Self, Self::Err> {
        let syntax = || CpuListError::Syntax {
            list: list.to_string(),
        };
        let number = |s: &str| -> Result<usize, CpuListError> {
            let s = s.trim();
            if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
                return Err(syntax());
            }
            let cpu: usize = s.parse().map_err(|_| syntax())?;
            if cpu >= MAX_CPUS {
                return Err(CpuListError::TooLarge { cpu });
            }
            Ok(cpu)
        };
        let mut cpus = Vec::new();
        for part in list.trim().split(',') {
            match part.split_once('-') {
                Some((first, last)) => {
                    let (first, last) = (number(first)?, number(last)?);
                    if first > last {
                        return Err(syntax());
                    }
                    cpus.extend(first..=last);
                }
                None => cpus.push(number(part)?),
            }
        }
        Self::of(cpus).ok_or_else(syntax)
    }
}

/// Compact, as `taskset -c` writes it: `0-3,6`.
impl fmt::Display for CpuList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut i = 0;
        while i < self.0.len() {
            let start = self.0[i];
            while i + 1 < self.0.len() && self.0[i + 1] == self.0[i] + 1 {
                i += 1;
            }
            if start > self.0[0] {
                f.write_str(",")?;
            }
            match self.0[i] {
                end if end == start => write!(f, "{start}")?,
                end => write!(f, "{start}-{end}")?,
            }
            i += 1;
        }
        Ok(())
    }
}

/// Written as its text, `0-1,3`.
impl serde::Serialize for CpuList {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_parse_as_taskset_writes_them_and_print_compactly() {
        let list: CpuList = "3,0-1,1,6-7".parse().unwrap();
        assert_eq!(list.cpus(), &[0, 1, 3, 6, 7]);
        assert_eq!(list.to_string(), "0-1,3,6-7");
        assert_eq!("5".parse::<CpuList>().unwrap().to_string(), "5");
        assert_eq!(" 2 - 4 ".parse::<CpuList>().unwrap().to_string(), "2-4");
        for bad in ["", "a", "1-", "-1", "3-1", "1,,2", "+1", "1.5", ","] {
            assert!(
                matches!(bad.parse::<CpuList>(), Err(CpuListError::Syntax { .. })),
                "{bad:?}"
            );
        }
        assert_eq!(
            "99999".parse::<CpuList>(),
            Err(CpuListError::TooLarge { cpu: 99999 })
        );
    }

    #[test]
    fn runtimes_take_the_lists_cpus_in_turn() {
        let list: CpuList = "2,4".parse().unwrap();
        assert_eq!(
            (0..3).map(|i| list.for_runtime(i)).collect::<Vec<_>>(),
            [2, 4, 2]
        );
        assert_eq!(
            list.common(&"4-5".parse().unwrap()),
            Some("4".parse().unwrap())
        );
        assert_eq!(list.common(&"0-1".parse().unwrap()), None);
        assert_eq!(
            list.outside(&"0-2".parse().unwrap()),
            Some("4".parse().unwrap())
        );
    }
}
