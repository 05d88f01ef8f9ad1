//! [`WaitTimer`]: how long a caller queued for its seat, for the
//! `bulkhead_wait_seconds` histogram (feature `metrics`).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
#[cfg(feature = "metrics")]
use std::time::Instant;

use bulkhead_core::{Bulkhead, Error, Name, RawLock};

/// Times one wait for a seat, for the registry metrics' wait histogram.
///
/// Every wait in this workspace that can queue uses one: the blocking
/// path, [`Run`](crate::Run)'s timer waits (async-std, smol, any runtime),
/// the registry's async helpers, and bulkhead-tokio's waits and tower
/// layer. An adapter of your own can use it too.
///
/// Every wait that queued and got a seat is recorded, once; a caller
/// admitted without queuing did not wait, and costs no clock read. The
/// clock starts after the first poll that queued, which core's waits tell
/// with `has_queued` ([`Acquire::has_queued`](bulkhead_core::Acquire::has_queued)),
/// and stops when the seat arrives. Call [`queued`](Self::queued) after
/// every poll whose wait `has_queued`, not only after a `Pending` poll: a
/// wait can queue and be handed its seat within that same poll (a seat
/// freed while it was joining the line), and is recorded too, at about
/// 0 s. A wait that ends without a seat (timed out, closed, dropped) is
/// not recorded, because `bulkhead_timed_out_total` counts it.
///
/// Without the `metrics` feature it is an empty type and every method
/// compiles to nothing. With it, once metrics are in use
/// (`metrics::describe` has run, which
/// `publish_registry` and `MetricsUpdater` do), a recorded wait goes to
/// the `metrics` facade's current recorder under
/// `bulkhead_wait_seconds{name=...}` (the label shares the compartment's
/// name; for a `&'static str` name it is made once and allocates nothing
/// after). Before that, it reads no clock.
///
/// ```
/// use bulkhead_std::{Bulkhead, WaitTimer};
///
/// static DATABASE: Bulkhead = Bulkhead::new_static("database", 1);
/// let mut timer = WaitTimer::new();
/// timer.queued(); // after a poll, the wait has queued: the clock starts (once, if metrics are on)
/// timer.queued(); // later polls keep the first start
/// timer.admitted(&DATABASE); // recorded, if the `metrics` feature is on
/// ```
#[derive(Debug, Default, Clone)]
pub struct WaitTimer {
    #[cfg(feature = "metrics")]
    queued_at: Option<Instant>,
}

impl WaitTimer {
    /// A timer that has not started.
    pub const fn new() -> Self {
        Self {
            #[cfg(feature = "metrics")]
            queued_at: None,
        }
    }

    /// The wait has queued (a poll linked it, whether or not that poll
    /// also got the seat): starts the clock, the first time only.
    #[inline]
    pub fn queued(&mut self) {
        #[cfg(feature = "metrics")]
        if self.queued_at.is_none() && crate::series::recording() {
            self.queued_at = Some(Instant::now());
        }
    }

    /// The wait ended with a seat in `bulkhead`: records how long it
    /// queued, if it queued, under the compartment's name, and resets the
    /// timer. It takes the compartment rather than its name so that only
    /// a recorded wait touches the name (a shared name's reference count
    /// included).
    #[inline]
    pub fn admitted<L: RawLock>(&mut self, bulkhead: &Bulkhead<L>) {
        self.admitted_in(bulkhead);
    }

    /// Records the wait if `result` is a seat of `bulkhead` (see
    /// [`admitted`](Self::admitted)), and passes `result` on.
    #[inline]
    pub fn finish<L: RawLock, T, E>(
        &mut self,
        bulkhead: &Bulkhead<L>,
        result: Result<T, E>,
    ) -> Result<T, E> {
        self.finish_in(bulkhead, result)
    }

    /// As [`admitted`](Self::admitted), for a seat of a partitioned
    /// compartment: the wait is recorded in the same series, under the
    /// compartment's name (not the partition's).
    ///
    /// ```
    /// use bulkhead_std::WaitTimer;
    /// use bulkhead_std::partition::{Amount, PartitionConfig, Partitioned};
    ///
    /// let db = Partitioned::new("db", 2, &[PartitionConfig::new("live", Amount::Seats(2))])?;
    /// let mut timer = WaitTimer::new();
    /// timer.queued();
    /// timer.admitted_partitioned(&db); // recorded, if the `metrics` feature is on
    /// # Ok::<(), bulkhead_std::ConfigError>(())
    /// ```
    #[cfg(feature = "partitions")]
    #[inline]
    pub fn admitted_partitioned<L: RawLock>(
        &mut self,
        partitioned: &bulkhead_core::partition::Partitioned<L>,
    ) {
        self.admitted_in(partitioned);
    }

    /// As [`finish`](Self::finish), for a seat of a partitioned
    /// compartment (see [`admitted_partitioned`](Self::admitted_partitioned)).
    #[cfg(feature = "partitions")]
    #[inline]
    pub fn finish_partitioned<L: RawLock, T, E>(
        &mut self,
        partitioned: &bulkhead_core::partition::Partitioned<L>,
        result: Result<T, E>,
    ) -> Result<T, E> {
        self.finish_in(partitioned, result)
    }

    /// [`admitted`](Self::admitted) for any compartment with a name.
    #[inline]
    pub(crate) fn admitted_in(&mut self, compartment: &impl Named) {
        #[cfg(feature = "metrics")]
        if let Some(at) = self.queued_at.take() {
            crate::series::record_wait(&compartment.name_handle(), at.elapsed());
        }
        #[cfg(not(feature = "metrics"))]
        let _ = compartment;
    }

    /// [`finish`](Self::finish) for any compartment with a name.
    #[inline]
    pub(crate) fn finish_in<T, E>(
        &mut self,
        compartment: &impl Named,
        result: Result<T, E>,
    ) -> Result<T, E> {
        if result.is_ok() {
            self.admitted_in(compartment);
        }
        result
    }
}

/// A compartment whose waits are timed: its name labels the series.
pub(crate) trait Named {
    /// The compartment's name, to keep.
    // Unused without the `metrics` feature, where nothing is recorded.
    #[cfg_attr(not(feature = "metrics"), allow(dead_code))]
    fn name_handle(&self) -> Name;
}

impl<L: RawLock> Named for Bulkhead<L> {
    fn name_handle(&self) -> Name {
        Bulkhead::name_handle(self)
    }
}

#[cfg(feature = "partitions")]
impl<L: RawLock> Named for bulkhead_core::partition::Partitioned<L> {
    fn name_handle(&self) -> Name {
        bulkhead_core::partition::Partitioned::name_handle(self)
    }
}

pin_project_lite::pin_project! {
    /// A wait for a seat, timed for the wait histogram (see [`WaitTimer`]).
    pub(crate) struct Timed<'a, L: RawLock, F> {
        #[pin]
        wait: F,
        timer: WaitTimer,
        bulkhead: &'a Bulkhead<L>,
    }
}

impl<'a, L: RawLock, F> Timed<'a, L, F> {
    pub(crate) fn new(wait: F, bulkhead: &'a Bulkhead<L>) -> Self {
        Self {
            wait,
            timer: WaitTimer::new(),
            bulkhead,
        }
    }
}

/// Core's waits, which tell whether they queued.
pub(crate) trait Queues {
    /// As [`Acquire::has_queued`](bulkhead_core::Acquire::has_queued).
    fn has_queued(&self) -> bool;
}

impl<L: RawLock> Queues for bulkhead_core::Acquire<'_, L> {
    fn has_queued(&self) -> bool {
        bulkhead_core::Acquire::has_queued(self)
    }
}

impl<L: RawLock, S> Queues for bulkhead_core::AcquireTimeout<'_, L, S> {
    fn has_queued(&self) -> bool {
        bulkhead_core::AcquireTimeout::has_queued(self)
    }
}

#[cfg(feature = "partitions")]
impl<P: bulkhead_core::partition::PartitionHandle> Queues
    for bulkhead_core::partition::AcquirePartition<P>
{
    fn has_queued(&self) -> bool {
        bulkhead_core::partition::AcquirePartition::has_queued(self)
    }
}

impl<L: RawLock, T, F: Future<Output = Result<T, Error>> + Queues> Future for Timed<'_, L, F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let mut this = self.project();
        let poll = this.wait.as_mut().poll(cx);
        // Not only on `Pending`: a wait can queue and be handed its seat
        // within one poll, and is timed too.
        if this.wait.has_queued() {
            this.timer.queued();
        }
        match poll {
            Poll::Ready(result) => Poll::Ready(this.timer.finish(this.bulkhead, result)),
            Poll::Pending => Poll::Pending,
        }
    }
}
