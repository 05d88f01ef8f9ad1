//! Runnable programs for bulkhead. Each binary in `src/bin/` is one example;
//! the README runs `demo` first.
