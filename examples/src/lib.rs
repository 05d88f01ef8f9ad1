//! Runnable programs for bulkhead. Each binary in `src/bin/` is one example;
//! the README runs `demo` first.
//!
//! [`peers`] holds the benchmark scaffolding shared by `benches/peers.rs`
//! and the `bench-compare` binary (see `BENCHMARKS.md`).

pub mod peers;
