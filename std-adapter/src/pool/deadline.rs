//! The deadline thread: settles tasks that overrun the execution timeout.
//!
//! One thread per pool with a timeout, sleeping until the earliest
//! deadline. It only settles the task's slot, so that waiters (blocking or
//! async) are released on time; the overrunning work itself keeps running.

use std::cmp::Ordering as CmpOrdering;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError, Weak};
use std::time::{Duration, Instant};

use super::task::Expire;

struct Entry {
    at: Instant,
    seq: u64,
    slot: Weak<dyn Expire>,
}

// Ordered so that `BinaryHeap`, a max-heap, pops the earliest deadline
// first; `seq` breaks ties in submission order.
impl Ord for Entry {
    fn cmp(&self, other: &Self) -> CmpOrdering {
        (other.at, other.seq).cmp(&(self.at, self.seq))
    }
}

impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<CmpOrdering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == CmpOrdering::Equal
    }
}

impl Eq for Entry {}

#[derive(Default)]
struct Queue {
    heap: BinaryHeap<Entry>,
    seq: u64,
    stopped: bool,
}

/// Deadlines of one pool's tasks.
pub(crate) struct Deadlines {
    queue: Mutex<Queue>,
    changed: Condvar,
    timeout: Duration,
    timed_out: AtomicUsize,
}

impl Deadlines {
    pub(crate) fn new(timeout: Duration) -> Self {
        Self {
            queue: Mutex::default(),
            changed: Condvar::new(),
            timeout,
            timed_out: AtomicUsize::new(0),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Tasks settled as timed out so far.
    pub(crate) fn timed_out(&self) -> usize {
        self.timed_out.load(Ordering::Relaxed)
    }

    /// Watches `slot`, submitted now.
    pub(crate) fn watch(&self, slot: Weak<dyn Expire>) {
        let at = Instant::now()
            .checked_add(self.timeout)
            .unwrap_or_else(|| Instant::now() + Duration::from_secs(86_400 * 365));
        let mut queue = self.lock();
        queue.seq += 1;
        let seq = queue.seq;
        let earliest = queue.heap.peek().is_none_or(|e| at < e.at);
        queue.heap.push(Entry { at, seq, slot });
        drop(queue);
        if earliest {
            self.changed.notify_one();
        }
    }

    /// Ends the thread; called when the last worker has exited, so every
    /// remaining slot is settled already.
    pub(crate) fn stop(&self) {
        self.lock().stopped = true;
        self.changed.notify_one();
    }

    /// The thread's body.
    pub(crate) fn run(&self) {
        let mut queue = self.lock();
        loop {
            if queue.stopped {
                return;
            }
            let now = Instant::now();
            match queue.heap.peek() {
                None => {
                    queue = self
                        .changed
                        .wait(queue)
                        .unwrap_or_else(PoisonError::into_inner);
                }
                Some(entry) if entry.at <= now => {
                    let entry = queue.heap.pop().expect("peeked");
                    drop(queue);
                    if let Some(slot) = entry.slot.upgrade() {
                        slot.expire(self.timeout, &self.timed_out);
                    }
                    queue = self.lock();
                }
                Some(entry) => {
                    let wait = entry.at - now;
                    queue = self
                        .changed
                        .wait_timeout(queue, wait)
                        .unwrap_or_else(PoisonError::into_inner)
                        .0;
                }
            }
        }
    }
}

/// Spawns the deadline thread of pool `name`.
pub(crate) fn spawn(
    name: &str,
    deadlines: &Arc<Deadlines>,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    let deadlines = deadlines.clone();
    std::thread::Builder::new()
        .name(format!("{name}-deadline"))
        .spawn(move || deadlines.run())
}
