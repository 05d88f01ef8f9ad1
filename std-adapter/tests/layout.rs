//! The size of a compartment with the std lock, and of its acquire future,
//! pinned for the target the benchmarks run on (the budget: 64
//! bytes each; examples/BENCHMARKS.md, "Size", has the way there).
//!
//! Core's own layout test (`core/src/tests/layout.rs`) counts fields; it
//! runs in a test build of core, where the list carries test-only
//! counters. This one measures the build users get.

use std::mem::{size_of, size_of_val};

use bulkhead_std::{Bulkhead, StdLock};

#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
#[test]
fn a_compartment_with_the_std_lock_is_96_bytes() {
    // Four atomic words (32: the seat word, owed wake-ups, two counters),
    // four 32-bit fields (16: the two limits, the waiter count, the name's
    // length), the name's start (8), the circular waiter list (its tail
    // and its first waiting node, 16),
    // the lock: the mutex (8), the rejection time (8), admissions (8).
    assert_eq!(size_of::<StdLock>(), 24);
    assert_eq!(size_of::<Bulkhead>(), 96);
}

#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
#[test]
fn the_acquire_future_is_56_bytes() {
    let b = Bulkhead::new("layout", 1).unwrap();
    assert_eq!(size_of_val(&b.acquire()), 56);
}
