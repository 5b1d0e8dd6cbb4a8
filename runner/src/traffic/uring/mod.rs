//! The traffic of one measurement on monoio (io_uring): the IO loops only. Everything else,
//! the client core and its verification, the stream session and framings, the server's
//! answers, work and faults, is the code tokio runs ([`crate::traffic`]).

pub mod buf;
pub mod datagram;
pub mod stream;
