//! A registry keyed by something unbounded (a tenant, a host) goes
//! through any number of distinct names: each name lives as long as the
//! compartments and values that use it, and is freed with them, so the
//! memory a long-running service holds stays flat.
//!
//! This test binary runs alone so that a counting global allocator sees
//! only this test's allocations: the live bytes after a warm-up and after
//! 100,000 more distinct names created and evicted must be equal, within
//! a small constant (the registry's map keeps its capacity).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};

use bulkhead_std::registry::{DomainConfig, Registry};

/// The system allocator, counting the bytes currently allocated.
struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

// SAFETY: every call forwards to `System` with the same arguments; the
// counter only observes sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract, passed on.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract, passed on.
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller's contract, passed on.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            LIVE.fetch_add(
                new_size as isize - layout.size() as isize,
                Ordering::Relaxed,
            );
        }
        p
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn live() -> isize {
    LIVE.load(Ordering::Relaxed)
}

/// Creates the compartments `tenant-{from}` .. `tenant-{to}` one after
/// another in a registry that keeps at most 8, so each creation past the
/// eighth evicts the least recently used idle one (the public eviction
/// path), and takes a rejection from each so that an error names it too.
fn churn(registry: &Registry, from: usize, to: usize) {
    for i in from..to {
        let name = format!("tenant-{i}");
        let b = registry
            .get_or_create(&name, DomainConfig::new(1))
            .unwrap_or_else(|e| panic!("creating compartment {i}: {e}"));
        let err = {
            let _seat = b.try_acquire().unwrap();
            b.try_acquire().unwrap_err()
        };
        drop(b);
        assert_eq!(err.name(), name.as_str());
    }
}

#[test]
fn creating_and_evicting_100_000_distinct_names_keeps_memory_flat() {
    const MAX_ENTRIES: usize = 8;
    const ROUNDS: usize = 100_000;
    let registry = Registry::builder()
        .without_env()
        .max_entries(MAX_ENTRIES)
        .build()
        .unwrap();
    // Warm-up: fill the registry and let its map reach its size.
    churn(&registry, 0, 1_000);
    let before = live();
    churn(&registry, 1_000, 1_000 + ROUNDS);
    let after = live();
    let grown = after - before;
    eprintln!("live heap: {before} bytes after the warm-up, {after} after {ROUNDS} more names");
    // The same number of live entries (8), with names of at most 6 more
    // bytes each ("tenant-999" vs "tenant-100999"), and nothing else.
    let slack = (MAX_ENTRIES * 16) as isize;
    assert!(
        grown.abs() <= slack,
        "live heap moved by {grown} bytes over {ROUNDS} distinct names created and evicted \
         (before {before}, after {after}); a leaked name per compartment would be about \
         {} bytes",
        ROUNDS * "tenant-100000".len()
    );
    assert_eq!(
        registry
            .list_names()
            .iter()
            .filter(|n| n.starts_with("tenant-"))
            .count(),
        MAX_ENTRIES
    );
}
