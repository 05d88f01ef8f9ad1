//! Runnable programs for bulkhead. Each binary in `src/bin/` is one example;
//! the README runs `demo` first. The simulation behind the demo lives here
//! so that a test can run it with a shorter duration.
//!
//! [`peers`] (with [`wait_times`]) holds the benchmark scaffolding shared by `benches/peers.rs`
//! and the `bench-compare` binary (see `BENCHMARKS.md`); [`overload`] is
//! the binary's service-under-overload scenario.

pub mod adaptive;
pub mod alloc_count;
pub mod layers;
pub mod overload;
pub mod peers;
pub mod simulation;
pub mod svg;
pub mod wait_times;

/// The workspace README's Rust examples, compiled and run as doctests so
/// that the code a newcomer copies first keeps compiling.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct WorkspaceReadme;
