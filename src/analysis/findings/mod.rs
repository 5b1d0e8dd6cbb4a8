//! Findings: what the data decides, computed once so that pages only arrange them.
//!
//! - [`dimensions`]: per protocol, which topology and window had the highest throughput and
//!   the lowest p99 over a dimensions matrix (arknet-reports.md §4.2);
//! - [`io_model`]: per load, whether one IO model is distinguishably the fastest, and what
//!   its throughput costs against the runner-up, in the seed's manner;
//! - [`knees`]: per protocol of an open-loop dataset, which curve holds its p99 to the
//!   highest offered rate, named only where the knees are distinguishable;
//! - [`udp_buffers`]: datagrams lost against the server's receive buffer, per load.

pub mod dimensions;
pub mod io_model;
pub mod knees;
pub mod udp_buffers;

pub use dimensions::{findings, Finding};
