//! Series names and their `name` labels, for the code that records at
//! the event (feature `metrics`): a wait that got its seat
//! ([`WaitTimer`](crate::WaitTimer)), an adaptive limit that moved
//! ([`limit_changed`]).
//!
//! This is the waiting layer's side of metrics: it talks to the `metrics`
//! facade directly, with the key made here, and knows nothing of the
//! registry. Describing and publishing the series is the registry's
//! [`metrics`](crate::metrics) module, which turns recording on
//! ([`start_recording`]) when it describes them.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering as AtomicOrdering};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use bulkhead_core::Name;
use metrics::{Key, Label, Level, Metadata, SharedString};

/// Gauge: the current limit.
pub const MAX_CONCURRENT: &str = "bulkhead_max_concurrent";
/// Histogram: how long admitted callers queued, in seconds.
pub const WAIT_SECONDS: &str = "bulkhead_wait_seconds";
/// Counter: how many times a sample changed an adaptive limit.
pub const LIMIT_CHANGES: &str = "bulkhead_limit_changes_total";

/// Whether waits are timed for the histogram: off until the registry's
/// `metrics::describe` runs (directly, or through `publish_registry` or a
/// `MetricsUpdater`), so
/// a program built with the feature but exporting nothing pays no clock
/// reads on its waits.
static RECORDING: AtomicBool = AtomicBool::new(false);

/// Whether `metrics::describe` has run, i.e. whether waits are timed.
#[inline]
pub(crate) fn recording() -> bool {
    RECORDING.load(AtomicOrdering::Relaxed)
}

/// Turns on the timing of waits; `metrics::describe` calls it.
pub(crate) fn start_recording() {
    RECORDING.store(true, AtomicOrdering::Relaxed);
}

/// The `name` label of each `&'static str` compartment name, made once and
/// kept, so that recording a wait allocates nothing: a label built per call
/// would allocate its list. Only static names are kept here (there are as
/// many as the program has literals); a shared name made at run time gets
/// its key through a small per-thread cache instead ([`with_key`]), so
/// nothing outlives its compartment for long.
static LABELS: RwLock<BTreeMap<&'static str, &'static [Label]>> = RwLock::new(BTreeMap::new());

fn static_labels(name: &'static str) -> &'static [Label] {
    if let Some(labels) = LABELS
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .get(name)
    {
        return labels;
    }
    let mut map = LABELS.write().unwrap_or_else(PoisonError::into_inner);
    map.entry(name)
        .or_insert_with(|| Box::leak(Box::new([Label::from_static_parts("name", name)])))
}

/// Calls `f` with the key of series `metric` for compartment `name`.
///
/// A static name's key borrows its label slice, made once ([`LABELS`]).
/// A shared name's key owns its label list, which allocates, so the keys
/// a thread used last are kept in a small cache of its own
/// ([`RECENT_KEYS`]): a compartment whose waits or limit changes a thread
/// records again and again allocates nothing after the first. The cache
/// holds at most [`RECENT_KEYS_PER_THREAD`] keys per thread, each one more
/// reference to its name, so memory stays bounded however many names come
/// and go; a name it still holds is freed when a newer key replaces it or
/// the thread ends.
fn with_key<R>(metric: &'static str, name: &Name, f: impl FnOnce(&Key) -> R) -> R {
    if let Some(name) = name.as_static() {
        return f(&Key::from_static_labels(metric, static_labels(name)));
    }
    RECENT_KEYS.with(|cell| {
        let mut recent = cell.borrow_mut();
        let found = recent.iter().position(|key| {
            key.name() == metric && key.labels().any(|label| label.value() == name.as_str())
        });
        let at = match found {
            Some(at) => at,
            None => {
                let key = Key::from_parts(metric, vec![Label::new("name", label_value(name))]);
                if recent.len() == RECENT_KEYS_PER_THREAD {
                    recent.remove(0);
                }
                recent.push(key);
                recent.len() - 1
            }
        };
        f(&recent[at])
    })
}

/// How many shared-name keys each thread keeps ([`with_key`]): a few
/// series per compartment (the wait histogram, the limit gauge, the change
/// counter) for a couple of compartments at once.
const RECENT_KEYS_PER_THREAD: usize = 8;

thread_local! {
    /// The shared-name keys this thread used last, oldest first.
    static RECENT_KEYS: std::cell::RefCell<Vec<Key>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// The `name` label's value for `name`: a shared name's own string (one
/// more reference, no copy), which the recorder's series keep only as
/// long as they keep the series.
pub(crate) fn label_value(name: &Name) -> SharedString {
    if let Some(name) = name.as_static() {
        return SharedString::from(name);
    }
    match name.as_shared() {
        Some(shared) => SharedString::from(Arc::clone(shared)),
        None => SharedString::from(name.to_string()),
    }
}

static METADATA: Metadata<'static> =
    Metadata::new(module_path!(), Level::INFO, Some(module_path!()));

/// Records one queued wait that ended with a seat.
pub(crate) fn record_wait(name: &Name, waited: Duration) {
    with_key(WAIT_SECONDS, name, |key| {
        metrics::with_recorder(|recorder| {
            recorder
                .register_histogram(key, &METADATA)
                .record(waited.as_secs_f64());
        });
    });
}

/// An adaptive compartment's limit moved to `limit`, its `changes`-th
/// change: sets the `bulkhead_max_concurrent` gauge and the
/// `bulkhead_limit_changes_total` counter at once, so that the gauge
/// follows the limit without waiting for the next publication. Called by
/// the registry's adaptive seats only when a sample changed the limit;
/// the labels are made once per name ([`with_key`]), so it allocates
/// nothing after the first change.
pub(crate) fn limit_changed(name: &Name, limit: usize, changes: usize) {
    with_key(MAX_CONCURRENT, name, |key| {
        metrics::with_recorder(|recorder| {
            recorder.register_gauge(key, &METADATA).set(limit as f64)
        });
    });
    with_key(LIMIT_CHANGES, name, |key| {
        metrics::with_recorder(|recorder| {
            recorder
                .register_counter(key, &METADATA)
                .absolute(changes as u64);
        });
    });
}
