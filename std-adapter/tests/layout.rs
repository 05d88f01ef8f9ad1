//! The size of a compartment with the std lock, and of its acquire future,
//! pinned for the target the benchmarks run on (the budgets: 64 and 56
//! bytes; examples/BENCHMARKS.md, "Size", has the way there).
//!
//! Core's own layout test (`core/src/tests/layout.rs`) counts fields; it
//! runs in a test build of core, where the list carries test-only
//! counters. This one measures the build users get.

use std::mem::{size_of, size_of_val};

use bulkhead_std::{Bulkhead, StdLock};

#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
#[test]
fn a_compartment_with_the_std_lock_is_64_bytes() {
    // Three words (24: the seat word, owed wake-ups, the name's start),
    // four 32-bit fields (16: the two limits, the waiter count, the
    // name's length), the circular waiter list (its tail and its first
    // waiting node, 16), the lock: a one-byte mutex and the 32-bit word
    // of its per-thread counts (8). The counts themselves live in the
    // counting threads' cells.
    assert_eq!(size_of::<StdLock>(), 8);
    assert_eq!(size_of::<Bulkhead>(), 64);
}

#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
#[test]
fn the_acquire_future_is_56_bytes() {
    let b = Bulkhead::new("layout", 1).unwrap();
    assert_eq!(size_of_val(&b.acquire()), 56);
}
