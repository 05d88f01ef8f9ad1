//! Metrics for registered compartments, through the [`metrics`] facade
//! (feature `metrics`): any exporter (Prometheus, StatsD, …) works.
//!
//! Every series carries the label `name` (the compartment's name).
//!
//! | series | kind | from |
//! |---|---|---|
//! | `bulkhead_active` | gauge | seats held |
//! | `bulkhead_waiting` | gauge | callers waiting (thread pool: queued tasks) |
//! | `bulkhead_max_concurrent` | gauge | the current limit |
//! | `bulkhead_admitted_total` | counter | admissions through the registry helpers ([`Registry::acquire`], [`Registry::execute`]) |
//! | `bulkhead_rejected_total` | counter | the compartment's rejection count, through any API |
//! | `bulkhead_timed_out_total` | counter | the compartment's expired wait budgets, through any API |
//! | `bulkhead_wait_seconds` | histogram | the wait of callers admitted through the registry helpers |
//! | `bulkhead_resource_open` | gauge | scoped compartments: 1 while the resource is open, else 0 |
//! | `bulkhead_resource_opens_total` | counter | scoped compartments: successful openings |
//! | `bulkhead_resource_open_failures_total` | counter | scoped compartments: failed openings |
//!
//! Gauges and the rejected/timed-out counters are published from state
//! snapshots: by [`publish_registry`], by a [`MetricsUpdater`] thread every
//! period, and by the helpers after a rejection.
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

use bulkhead_core::State;

use crate::registry::Registry;

/// Gauge: seats held.
pub const ACTIVE: &str = "bulkhead_active";
/// Gauge: callers waiting.
pub const WAITING: &str = "bulkhead_waiting";
/// Gauge: the current limit.
pub const MAX_CONCURRENT: &str = "bulkhead_max_concurrent";
/// Counter: admissions through the registry helpers.
pub const ADMITTED: &str = "bulkhead_admitted_total";
/// Counter: rejections (absolute, from the compartment's state).
pub const REJECTED: &str = "bulkhead_rejected_total";
/// Counter: expired wait budgets (absolute, from the compartment's state).
pub const TIMED_OUT: &str = "bulkhead_timed_out_total";
/// Histogram: the wait of admitted callers, in seconds.
pub const WAIT_SECONDS: &str = "bulkhead_wait_seconds";
/// Gauge: 1 while a scoped compartment's resource is open, else 0.
pub const RESOURCE_OPEN: &str = "bulkhead_resource_open";
/// Counter: a scoped compartment's successful openings (absolute).
pub const RESOURCE_OPENS: &str = "bulkhead_resource_opens_total";
/// Counter: a scoped compartment's failed openings (absolute).
pub const RESOURCE_OPEN_FAILURES: &str = "bulkhead_resource_open_failures_total";

pub(crate) fn admitted(name: &'static str, waited: Duration) {
    metrics::counter!(ADMITTED, "name" => name).increment(1);
    metrics::histogram!(WAIT_SECONDS, "name" => name).record(waited.as_secs_f64());
}

/// Publishes one compartment's gauges and rejected/timed-out counters.
pub(crate) fn publish(state: &State) {
    publish_counts(
        state.name,
        state.max_concurrent,
        state.active,
        state.waiting,
        state.rejected,
        state.timed_out,
    );
}

fn publish_counts(
    name: &'static str,
    max: usize,
    active: usize,
    waiting: usize,
    rejected: usize,
    timed_out: usize,
) {
    metrics::gauge!(ACTIVE, "name" => name).set(active as f64);
    metrics::gauge!(WAITING, "name" => name).set(waiting as f64);
    metrics::gauge!(MAX_CONCURRENT, "name" => name).set(max as f64);
    metrics::counter!(REJECTED, "name" => name).absolute(rejected as u64);
    metrics::counter!(TIMED_OUT, "name" => name).absolute(timed_out as u64);
}

/// Publishes the gauges and counters of every compartment of `registry`
/// once, to the current recorder, with the resource series of its scoped
/// compartments.
pub fn publish_registry(registry: &Registry) {
    for s in registry.all_states().values() {
        publish_counts(
            s.name,
            s.max_concurrent,
            s.active,
            s.waiting,
            s.rejected,
            s.timed_out,
        );
    }
    for (name, r) in registry.resource_states() {
        metrics::gauge!(RESOURCE_OPEN, "name" => name).set(if r.open { 1.0 } else { 0.0 });
        metrics::counter!(RESOURCE_OPENS, "name" => name).absolute(r.opens);
        metrics::counter!(RESOURCE_OPEN_FAILURES, "name" => name).absolute(r.open_failures);
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
