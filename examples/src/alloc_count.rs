//! A counting global allocator for `bench-compare` (group g's allocations
//! per request). A binary or test installs it with
//! `#[global_allocator] static GLOBAL: CountingAlloc = CountingAlloc;`.
//!
//! It counts every allocation and reallocation twice over: on the current
//! thread, always ([`thread_allocs`]), and process-wide while
//! [`count_process`] is on ([`process_allocs`]), so that a figure can
//! cover a runtime's worker threads too.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// The counting allocator: `System`, plus the counters.
#[derive(Debug, Clone, Copy, Default)]
pub struct CountingAlloc;

static PROCESS_ON: AtomicBool = AtomicBool::new(false);
static PROCESS: AtomicU64 = AtomicU64::new(0);

thread_local! {
    static THREAD: Cell<u64> = const { Cell::new(0) };
}

/// Allocations made by the current thread so far.
pub fn thread_allocs() -> u64 {
    THREAD.with(Cell::get)
}

/// Allocations counted process-wide while [`count_process`] was on.
pub fn process_allocs() -> u64 {
    PROCESS.load(Ordering::SeqCst)
}

/// Switches process-wide counting on or off (off at start: then it costs
/// one relaxed load per allocation).
pub fn count_process(on: bool) {
    PROCESS_ON.store(on, Ordering::SeqCst);
}

fn bump() {
    // `try_with`: a thread being torn down has no counter any more.
    let _ = THREAD.try_with(|n| n.set(n.get() + 1));
    if PROCESS_ON.load(Ordering::Relaxed) {
        PROCESS.fetch_add(1, Ordering::Relaxed);
    }
}

// SAFETY: every method forwards to `System` with the caller's arguments
// unchanged, so `System`'s guarantees pass through; the counters are a
// const-initialised thread-local `Cell` and relaxed atomics, which neither
// allocate nor unwind.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        bump();
        // SAFETY: forwarded as is; the caller upholds `alloc`'s contract.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        bump();
        // SAFETY: as above.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        bump();
        // SAFETY: as above; `ptr` came from this allocator, i.e. `System`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }
}
