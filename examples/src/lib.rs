//! Runnable programs for bulkhead. Each binary in `src/bin/` is one example;
//! the README runs `demo` first. The simulation behind the demo lives here
//! so that a test can run it with a shorter duration.

pub mod simulation;
pub mod svg;
