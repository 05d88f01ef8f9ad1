//! [`TokioClock`]: core's adaptive-limit clock from tokio's clock.

use bulkhead_core::limit::Clock;
use tokio::runtime::Handle;
use tokio::time::Instant;

/// Core's [`Clock`] from one tokio runtime's clock, so that adaptive
/// limits follow tokio's paused test clock too.
///
/// A `TokioClock` belongs to one runtime: the one current where
/// [`new`](Self::new) made it, or the one given to
/// [`from_handle`](Self::from_handle). It reads that runtime's clock
/// wherever it is read, even from a task of another runtime or from a
/// thread outside any, and counts from its reading when it was made. So
/// its readings never decrease, and a duration it measures is one of its
/// runtime's durations. Each runtime has a clock of its own: a paused one
/// stands still until it is advanced (by hand, or by its auto-advance), so
/// it can run hours ahead of a normal runtime's clock in the same process,
/// or behind it. One origin shared by every runtime would make readings
/// go back, or stand still for an hour, as soon as they move from one
/// runtime to the other; one clock per runtime cannot. Give each
/// compartment the clock of the runtime its calls run on.
///
/// Made outside any runtime, it reads std's real clock
/// ([`std::time::Instant`]) everywhere, a paused runtime's tasks
/// included. A clock keeps a handle to its runtime, which keeps that
/// runtime's clock readable after the runtime has shut down (it then no
/// longer moves if it was paused).
///
/// # Panics
/// A clock of a runtime is read by entering that runtime, so reading it
/// from a thread-local's destructor, once tokio's own thread-locals are
/// gone, panics, as entering a runtime there does.
///
/// [`TokioAcquireAdaptive::acquire_within`](crate::TokioAcquireAdaptive::acquire_within)
/// waits on tokio's clock and hands out a seat that times itself; a seat
/// taken by any other wait is timed with
/// [`Adaptive::track`](bulkhead_core::limit::Adaptive::track):
///
/// ```
/// use std::time::Duration;
/// use bulkhead_tokio::{Bulkhead, TokioAcquire, TokioClock};
/// use bulkhead_tokio::bulkhead_core::limit::{Adaptive, Aimd, AimdParams, CallOutcome};
///
/// # tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap().block_on(async {
/// let aimd = Aimd::new(AimdParams { initial: 1, min: 1, ..AimdParams::DEFAULT }).unwrap();
/// // Made inside the runtime: it reads this (paused) runtime's clock.
/// let api = Adaptive::new(Bulkhead::new("api", 1).unwrap(), aimd, TokioClock::new());
/// let seat = api.bulkhead().acquire_within(Duration::from_millis(10)).await.unwrap();
/// let seat = api.track(seat).unwrap();
/// tokio::time::sleep(Duration::from_millis(3)).await; // the call
/// seat.record(CallOutcome::Success);
/// assert_eq!(api.limit(), 2);
/// # });
/// ```
#[derive(Debug, Clone)]
pub struct TokioClock {
    /// The runtime whose clock this reads; `None`: std's real clock.
    runtime: Option<Handle>,
    /// That clock's reading when this one was made: the origin.
    origin: Instant,
}

impl TokioClock {
    /// The clock of the current runtime, or std's real clock outside any
    /// runtime.
    #[must_use]
    pub fn new() -> Self {
        Self::with_runtime(Handle::try_current().ok())
    }

    /// The clock of the runtime `handle` leads to, for a compartment made
    /// outside it (before the runtime runs its first task, say).
    #[must_use]
    pub fn from_handle(handle: Handle) -> Self {
        Self::with_runtime(Some(handle))
    }

    fn with_runtime(runtime: Option<Handle>) -> Self {
        let origin = read(runtime.as_ref());
        Self { runtime, origin }
    }
}

impl Default for TokioClock {
    /// As [`TokioClock::new`].
    fn default() -> Self {
        Self::new()
    }
}

/// Reads `runtime`'s clock, or std's without one. tokio's `Instant::now`
/// reads the clock of the runtime current on this thread, so the runtime
/// is entered for the reading; entering is a thread-local swap, and the
/// guard restores whatever runtime (or none) was current before.
fn read(runtime: Option<&Handle>) -> Instant {
    match runtime {
        Some(handle) => {
            let _entered = handle.enter();
            Instant::now()
        }
        None => Instant::from_std(std::time::Instant::now()),
    }
}

impl Clock for TokioClock {
    fn now_nanos(&self) -> u64 {
        // A runtime's clock never goes back (pausing freezes it, advancing
        // and auto-advancing move it forward), so neither does this.
        let elapsed = read(self.runtime.as_ref()).saturating_duration_since(self.origin);
        u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX)
    }
}
