//! Metrics for registered compartments, through the [`metrics`] facade
//! (feature `metrics`): any exporter (Prometheus, StatsD, …) works.
//!
//! Every series carries the label `name` (the compartment's name), and
//! every series is described ([`describe`]) with its unit.
//!
//! | series | kind | unit | from |
//! |---|---|---|---|
//! | `bulkhead_active` | gauge | count | seats held |
//! | `bulkhead_waiting` | gauge | count | callers waiting (thread pool: queued tasks) |
//! | `bulkhead_max_concurrent` | gauge | count | the current limit (adaptive compartments: also set at each change) |
//! | `bulkhead_limit_changes_total` | counter | count | adaptive compartments: times a sample changed the limit |
//! | `bulkhead_limit_samples_skipped_total` | counter | count | adaptive compartments: samples that arrived while another was processed |
//! | `bulkhead_admitted_total` | counter | count | the compartment's admissions ([`StdLock::admitted`](crate::StdLock::admitted)) |
//! | `bulkhead_rejected_total` | counter | count | the compartment's rejections ([`State::rejected`](bulkhead_core::State::rejected), kept by the lock) |
//! | `bulkhead_timed_out_total` | counter | count | the compartment's expired wait budgets ([`State::timed_out`](bulkhead_core::State::timed_out), kept by the lock; thread pool: execution timeouts) |
//! | `bulkhead_wait_seconds` | histogram | seconds | how long each admitted caller queued, recorded as the seat arrives |
//! | `bulkhead_resource_open` | gauge | count | scoped compartments: 1 while the resource is open, else 0 |
//! | `bulkhead_resource_opens_total` | counter | count | scoped compartments: successful openings |
//! | `bulkhead_resource_open_failures_total` | counter | count | scoped compartments: failed openings |
//! | `bulkhead_partition_active` | gauge | count | partitioned compartments: seats a partition holds |
//! | `bulkhead_partition_borrowed` | gauge | count | partitioned compartments: of those, seats beyond its share |
//! | `bulkhead_partition_lent` | gauge | count | partitioned compartments: seats of its idle share others use |
//! | `bulkhead_partition_waiting` | gauge | count | partitioned compartments: callers in its line |
//! | `bulkhead_partition_share` | gauge | count | partitioned compartments: its share at the current limit |
//! | `bulkhead_partition_rejected_total` | counter | count | partitioned compartments: callers it turned away |
//! | `bulkhead_partition_timed_out_total` | counter | count | partitioned compartments: callers whose budget ran out in its line |
//!
//! The `bulkhead_partition_*` series carry a second label, `partition`
//! (the partition's name), beside `name` (the compartment's); the
//! compartment's own series sum its partitions. They are published by
//! [`publish_registry`] (and so by a [`MetricsUpdater`]).
//!
//! # Every path counts
//!
//! The three counters are the compartment's own counts, kept by core and
//! by [`StdLock`](crate::StdLock) whichever API took the seat: a thread's
//! `acquire_blocking`, a tokio task's `acquire_within`, an async-std or
//! smol task, the tower layer, a thread pool, a bare `try_acquire` on a
//! compartment taken from the registry, or the registry's helpers. They are
//! published as absolute values from snapshots: by [`publish_registry`], by
//! a [`MetricsUpdater`] thread every period, and by the registry helpers
//! after a rejection. A compartment replaced with `register` starts again
//! from 0, which exporters read as a counter reset.
//!
//! The histogram is recorded at the event, by every wait that can queue
//! (see [`WaitTimer`](crate::WaitTimer)): callers admitted without
//! queuing did not wait and are not recorded, so its count is the number
//! of admissions that queued, a caller handed its seat within the poll
//! that queued it included. Core's bare `acquire()` future has no clock and
//! records no wait; its admissions are still counted.
//!
//! ```
//! use std::time::Duration;
//! use bulkhead_std::metrics::MetricsUpdater;
//! use bulkhead_std::registry::Registry;
//!
//! let registry = std::sync::Arc::new(Registry::local());
//! let updater = MetricsUpdater::start(&registry, Duration::from_secs(5))?;
//! registry.execute("database", || ())?;
//! updater.stop(); // returns promptly; dropping it stops it too
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::sync::{Arc, Weak};
use std::thread::{self, JoinHandle};
use std::time::Duration;

use metrics::Unit;

use crate::partition::Partitioned;
use crate::registry::Registry;
use crate::series::{self, label_value};
use crate::snapshot::Snapshot;

/// Gauge: seats held.
pub const ACTIVE: &str = "bulkhead_active";
/// Gauge: callers waiting.
pub const WAITING: &str = "bulkhead_waiting";
pub use crate::series::MAX_CONCURRENT;
/// Counter: admissions (absolute, from the compartment's lock).
pub const ADMITTED: &str = "bulkhead_admitted_total";
/// Counter: rejections (absolute, from the compartment's state).
pub const REJECTED: &str = "bulkhead_rejected_total";
/// Counter: expired wait budgets (absolute, from the compartment's state).
pub const TIMED_OUT: &str = "bulkhead_timed_out_total";
pub use crate::series::WAIT_SECONDS;
/// Gauge: 1 while a scoped compartment's resource is open, else 0.
pub const RESOURCE_OPEN: &str = "bulkhead_resource_open";
/// Counter: a scoped compartment's successful openings (absolute).
pub const RESOURCE_OPENS: &str = "bulkhead_resource_opens_total";
/// Counter: a scoped compartment's failed openings (absolute).
pub const RESOURCE_OPEN_FAILURES: &str = "bulkhead_resource_open_failures_total";

/// Gauge: seats a partition holds.
pub const PARTITION_ACTIVE: &str = "bulkhead_partition_active";
/// Gauge: seats a partition holds beyond its share.
pub const PARTITION_BORROWED: &str = "bulkhead_partition_borrowed";
/// Gauge: seats of a partition's idle share that others use.
pub const PARTITION_LENT: &str = "bulkhead_partition_lent";
/// Gauge: callers waiting in a partition's line.
pub const PARTITION_WAITING: &str = "bulkhead_partition_waiting";
/// Gauge: a partition's share at the compartment's current limit.
pub const PARTITION_SHARE: &str = "bulkhead_partition_share";
/// Counter: callers a partition turned away (absolute).
pub const PARTITION_REJECTED: &str = "bulkhead_partition_rejected_total";
/// Counter: callers whose wait budget ran out in a partition's line
/// (absolute).
pub const PARTITION_TIMED_OUT: &str = "bulkhead_partition_timed_out_total";

/// Describes every series (kind, unit, meaning) to the current recorder,
/// and turns on the timing of waits for `bulkhead_wait_seconds`.
///
/// [`publish_registry`] and [`MetricsUpdater::start`] call it, so a
/// program that uses either needs nothing more; describing again is
/// harmless. Call it yourself after installing the recorder if you only
/// want the wait histogram: until it runs, waits are not timed (which
/// keeps the clock off the wait path of programs that export nothing).
pub fn describe() {
    series::start_recording();
    metrics::describe_gauge!(ACTIVE, Unit::Count, "Seats held in the compartment.");
    metrics::describe_gauge!(
        WAITING,
        Unit::Count,
        "Callers waiting for a seat (thread pool: queued tasks)."
    );
    metrics::describe_gauge!(
        MAX_CONCURRENT,
        Unit::Count,
        "The compartment's current seat limit."
    );
    metrics::describe_counter!(
        ADMITTED,
        Unit::Count,
        "Callers admitted into the compartment, through any API."
    );
    metrics::describe_counter!(
        REJECTED,
        Unit::Count,
        "Callers turned away because the compartment or its queue was full."
    );
    metrics::describe_counter!(
        TIMED_OUT,
        Unit::Count,
        "Callers whose wait budget ran out (thread pool: execution timeouts)."
    );
    metrics::describe_histogram!(
        WAIT_SECONDS,
        Unit::Seconds,
        "How long admitted callers queued for their seat."
    );
    metrics::describe_counter!(
        crate::adaptive_metrics::LIMIT_CHANGES,
        Unit::Count,
        "Times a sample changed the adaptive limit."
    );
    metrics::describe_counter!(
        crate::adaptive_metrics::SAMPLES_SKIPPED,
        Unit::Count,
        "Adaptive-limit samples that arrived while another was being processed."
    );
    metrics::describe_gauge!(
        RESOURCE_OPEN,
        Unit::Count,
        "1 while a scoped compartment's resource is open, else 0."
    );
    metrics::describe_counter!(
        RESOURCE_OPENS,
        Unit::Count,
        "Successful openings of a scoped compartment's resource."
    );
    metrics::describe_counter!(
        RESOURCE_OPEN_FAILURES,
        Unit::Count,
        "Failed openings of a scoped compartment's resource."
    );
    metrics::describe_gauge!(
        PARTITION_ACTIVE,
        Unit::Count,
        "Seats a partition holds, borrowed seats included."
    );
    metrics::describe_gauge!(
        PARTITION_BORROWED,
        Unit::Count,
        "Seats a partition holds beyond its share."
    );
    metrics::describe_gauge!(
        PARTITION_LENT,
        Unit::Count,
        "Seats of a partition's idle share that other partitions use."
    );
    metrics::describe_gauge!(
        PARTITION_WAITING,
        Unit::Count,
        "Callers waiting in a partition's line."
    );
    metrics::describe_gauge!(
        PARTITION_SHARE,
        Unit::Count,
        "A partition's guaranteed share at the compartment's current limit."
    );
    metrics::describe_counter!(
        PARTITION_REJECTED,
        Unit::Count,
        "Callers a partition turned away (full, queue full, too heavy)."
    );
    metrics::describe_counter!(
        PARTITION_TIMED_OUT,
        Unit::Count,
        "Callers whose wait budget ran out in a partition's line."
    );
}

/// Publishes every partition's gauges and counters of one partitioned
/// compartment.
fn publish_partitions(compartment: &Partitioned) {
    let name = label_value(&compartment.name_handle());
    for (id, _) in compartment.partitions() {
        let Ok(s) = compartment.partition_state(id) else {
            continue;
        };
        let labels = [
            metrics::Label::new("name", name.clone()),
            metrics::Label::new("partition", label_value(&s.name)),
        ];
        metrics::gauge!(PARTITION_ACTIVE, labels.iter()).set(s.active as f64);
        metrics::gauge!(PARTITION_BORROWED, labels.iter()).set(s.borrowed as f64);
        metrics::gauge!(PARTITION_LENT, labels.iter()).set(s.lent as f64);
        metrics::gauge!(PARTITION_WAITING, labels.iter()).set(s.waiting as f64);
        metrics::gauge!(PARTITION_SHARE, labels.iter()).set(s.share as f64);
        metrics::counter!(PARTITION_REJECTED, labels.iter()).absolute(s.rejected as u64);
        metrics::counter!(PARTITION_TIMED_OUT, labels.iter()).absolute(s.timed_out as u64);
    }
}

/// Publishes one compartment's gauges and counters.
pub(crate) fn publish(s: &Snapshot) {
    let name = label_value(&s.name);
    metrics::gauge!(ACTIVE, "name" => name.clone()).set(s.active as f64);
    metrics::gauge!(WAITING, "name" => name.clone()).set(s.waiting as f64);
    metrics::gauge!(MAX_CONCURRENT, "name" => name.clone()).set(s.max_concurrent as f64);
    metrics::counter!(ADMITTED, "name" => name.clone()).absolute(s.admitted);
    metrics::counter!(REJECTED, "name" => name.clone()).absolute(s.rejected as u64);
    metrics::counter!(TIMED_OUT, "name" => name).absolute(s.timed_out as u64);
}

/// Describes the series ([`describe`]), then publishes the gauges and
/// counters of every compartment of `registry` once, to the current
/// recorder, with the resource series of its scoped compartments. Call it before each scrape, or let a [`MetricsUpdater`] do it
/// periodically.
pub fn publish_registry(registry: &Registry) {
    describe();
    for s in registry.all_states().values() {
        publish(s);
    }
    for (name, controller) in registry.controllers() {
        use crate::adaptive_metrics::{LIMIT_CHANGES, SAMPLES_SKIPPED};
        let name = label_value(&name);
        metrics::counter!(LIMIT_CHANGES, "name" => name.clone())
            .absolute(controller.changes() as u64);
        metrics::counter!(SAMPLES_SKIPPED, "name" => name).absolute(controller.skipped() as u64);
    }
    for (name, r) in registry.resource_states() {
        let name = label_value(&name);
        metrics::gauge!(RESOURCE_OPEN, "name" => name.clone()).set(if r.open { 1.0 } else { 0.0 });
        metrics::counter!(RESOURCE_OPENS, "name" => name.clone()).absolute(r.opens);
        metrics::counter!(RESOURCE_OPEN_FAILURES, "name" => name).absolute(r.open_failures);
    }
    for compartment in registry.partitioned_compartments() {
        publish_partitions(&compartment);
    }
}

/// A thread that publishes a registry's metrics every period, for
/// exporters that poll.
///
/// It holds only a weak reference to the registry (it exits when the
/// registry is dropped), never keeps the process alive, and
/// [`stop`](Self::stop) (or dropping it) wakes it at once and joins it.
#[derive(Debug)]
pub struct MetricsUpdater {
    stop: Option<Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl MetricsUpdater {
    /// Starts the thread `bulkhead-metrics`, publishing at once and then
    /// every `period`.
    ///
    /// # Errors
    /// The thread could not be spawned.
    pub fn start(registry: &Arc<Registry>, period: Duration) -> std::io::Result<Self> {
        let weak: Weak<Registry> = Arc::downgrade(registry);
        let (stop, stopped) = mpsc::channel::<()>();
        let thread = thread::Builder::new()
            .name("bulkhead-metrics".into())
            .spawn(move || {
                loop {
                    match weak.upgrade() {
                        Some(registry) => publish_registry(&registry),
                        None => return,
                    }
                    match stopped.recv_timeout(period) {
                        Err(RecvTimeoutError::Timeout) => {}
                        Ok(()) | Err(RecvTimeoutError::Disconnected) => return,
                    }
                }
            })?;
        Ok(Self {
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// Stops the thread and waits for it (at most one publication).
    pub fn stop(mut self) {
        self.halt();
    }

    fn halt(&mut self) {
        drop(self.stop.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for MetricsUpdater {
    fn drop(&mut self) {
        self.halt();
    }
}
