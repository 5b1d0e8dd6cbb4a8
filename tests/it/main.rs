//! echomark's integration tests in one binary: the real `echomark` binary, real archives,
//! the real site (in headless Chromium where it runs), one module per subject. One binary
//! instead of one per file: each linked polars again, which made most of the tests' build
//! time.
#![recursion_limit = "256"]

mod arknet;
mod browser_layout;
mod common;
mod compare;
mod explorer;
mod import;
mod layers;
mod manifests;
mod readers_never_panic;
mod readme;
mod safety;
mod scale;
mod site;
mod site_answers;
mod site_browser;
mod site_decisions;
mod site_fleet;
mod site_kinds;
mod site_quic;
mod site_sentences;
mod site_udp;
mod validate;
