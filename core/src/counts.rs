//! [`Counts`], what a compartment has counted, and [`AtomicCounts`], the
//! plain way for a lock to keep them.
//!
//! A compartment counts the callers it turns away and the waits that time
//! out, but the counters are not in the compartment: they are its lock's
//! ([`RawLock::counts`](crate::RawLock::counts)). Where the counts live
//! decides what counting costs. Two threads that turn callers away on one
//! compartment would each write one shared counter with a locked
//! read-modify-write, the one instruction a full compartment's rejection
//! could otherwise do without; a lock that knows its threads
//! (bulkhead-std's) keeps a counter per thread instead and sums them when
//! they are read. A lock on a single-core microcontroller keeps
//! [`AtomicCounts`].

use crate::sync::Counter;

/// What a compartment has counted, as its lock keeps it
/// ([`RawLock::counts`](crate::RawLock::counts)); part of
/// [`State`](crate::State).
///
/// A lock that keeps no counts reports zeros: [`Counts::NONE`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Counts {
    /// Callers turned away because the compartment or its queue was full.
    /// Saturates instead of wrapping.
    pub rejected: usize,
    /// Callers whose wait budget ran out. Saturates instead of wrapping.
    pub timed_out: usize,
}

impl Counts {
    /// Nothing counted: what a lock that keeps no counts reports.
    pub const NONE: Self = Self {
        rejected: 0,
        timed_out: 0,
    };
}

/// A compartment's counts in two atomic counters, for a lock to keep:
/// exact, one relaxed atomic increment per event, and saturating instead
/// of wrapping on targets narrower than 64 bits.
///
/// An increment is a locked read-modify-write on a line that every
/// counting thread writes. That costs nothing extra on a single-core
/// microcontroller, which is what core's `CsLock` keeps its counts
/// in; a lock for many threads can do better (bulkhead-std's
/// `StdLock` counts per thread).
///
/// ```
/// use bulkhead_core::{AtomicCounts, Counts};
///
/// let counts = AtomicCounts::new();
/// counts.record_rejection();
/// counts.record_timeout();
/// counts.record_timeout();
/// assert_eq!(counts.get(), Counts { rejected: 1, timed_out: 2 });
/// ```
#[derive(Debug)]
pub struct AtomicCounts {
    rejected: Counter,
    timed_out: Counter,
}

impl AtomicCounts {
    crate::sync::loom_const_fn! {
        /// Two counters at zero.
        pub fn new() -> Self {
            Self {
                rejected: Counter::new(),
                timed_out: Counter::new(),
            }
        }
    }

    /// Counts a caller turned away.
    #[inline]
    pub fn record_rejection(&self) {
        self.rejected.increment();
    }

    /// Counts a wait whose budget ran out.
    #[inline]
    pub fn record_timeout(&self) {
        self.timed_out.increment();
    }

    /// The counts so far: two relaxed loads.
    #[inline]
    pub fn get(&self) -> Counts {
        Counts {
            rejected: self.rejected.get(),
            timed_out: self.timed_out.get(),
        }
    }
}

impl Default for AtomicCounts {
    fn default() -> Self {
        Self::new()
    }
}
