//! The one place that names an atomics implementation.
//!
//! Everything else in core imports atomics and cells from here, so that a
//! single cfg switches the whole crate between:
//! - `portable-atomic` (the default): native atomics where the target has
//!   them, and CAS emulated with critical sections on targets without it
//!   (thumbv6m) when the `critical-section` feature is on;
//! - `loom` (under `--cfg bulkhead_loom`): loom's model-checked atomics and
//!   its causality-tracking `UnsafeCell`;
//! - `shuttle` (under `--cfg bulkhead_shuttle`): shuttle's atomics, each
//!   access a point where its randomized scheduler may switch threads
//!   (shuttle-tests/ runs larger schedules than loom can enumerate).
//!
//! The cfg has a crate-specific name so that a global
//! `RUSTFLAGS="--cfg bulkhead_loom"` never flips another crate's `cfg(loom)`
//! code paths (event-listener breaks under a global `--cfg loom`).

#[cfg(all(bulkhead_loom, bulkhead_shuttle))]
compile_error!("`--cfg bulkhead_loom` and `--cfg bulkhead_shuttle` exclude each other");

#[cfg(bulkhead_loom)]
pub(crate) use loom::sync::atomic::{AtomicU8, AtomicU32, AtomicUsize};
#[cfg(not(any(bulkhead_loom, bulkhead_shuttle)))]
pub(crate) use portable_atomic::{AtomicU8, AtomicU32, AtomicUsize};
#[cfg(bulkhead_shuttle)]
pub(crate) use shuttle::sync::atomic::{AtomicU8, AtomicU32, AtomicUsize};

pub(crate) use core::sync::atomic::Ordering;

/// An `UnsafeCell` with loom's closure-scoped access API.
///
/// Loom checks that every `with`/`with_mut` is ordered with respect to the
/// others; outside loom this compiles to a plain `core::cell::UnsafeCell`.
#[cfg(not(bulkhead_loom))]
#[derive(Debug)]
pub(crate) struct UnsafeCell<T>(core::cell::UnsafeCell<T>);

#[cfg(not(bulkhead_loom))]
impl<T> UnsafeCell<T> {
    pub(crate) const fn new(value: T) -> Self {
        Self(core::cell::UnsafeCell::new(value))
    }

    #[inline(always)]
    pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
        f(self.0.get())
    }
}

#[cfg(bulkhead_loom)]
pub(crate) use loom::cell::UnsafeCell;

/// Emits `const fn` normally and a plain `fn` under loom, whose atomics have
/// no `const` constructors. Statics are therefore not available under loom.
macro_rules! loom_const_fn {
    (
        $(#[$meta:meta])*
        $vis:vis fn $name:ident $($rest:tt)*
    ) => {
        $(#[$meta])*
        #[cfg(not(bulkhead_loom))]
        $vis const fn $name $($rest)*

        $(#[$meta])*
        #[cfg(bulkhead_loom)]
        $vis fn $name $($rest)*
    };
}
pub(crate) use loom_const_fn;

/// A monotonic event counter that never wraps silently.
///
/// On 64-bit targets a plain `fetch_add` cannot wrap in practice (2^64 events
/// at one per nanosecond take 584 years). On narrower targets 2^32 events are
/// reachable within hours, so the counter saturates at `usize::MAX` instead.
#[derive(Debug)]
pub(crate) struct Counter(AtomicUsize);

impl Counter {
    loom_const_fn! {
        pub(crate) fn new() -> Self {
            Self(AtomicUsize::new(0))
        }
    }

    #[inline]
    pub(crate) fn increment(&self) {
        #[cfg(target_pointer_width = "64")]
        self.0.fetch_add(1, Ordering::Relaxed);
        #[cfg(not(target_pointer_width = "64"))]
        let _ = self
            .0
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_add(1));
    }

    #[inline]
    pub(crate) fn get(&self) -> usize {
        self.0.load(Ordering::Relaxed)
    }
}
