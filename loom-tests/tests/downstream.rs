//! How to model-check *your own* code that uses a compartment.
//!
//! The models in the other files check bulkhead-core itself. This one is
//! written as a user would write it: a small connection cache of "your"
//! crate keeps a `Bulkhead` that bounds how many connections are in use at
//! once, plus shared state of its own (idle connections, a count of
//! connections opened). loom then runs two threads through it in every
//! interleaving (up to the preemption bound) and checks your invariant.
//!
//! Run it (as CI does, bound 2):
//!
//! ```sh
//! LOOM_MAX_PREEMPTIONS=2 RUSTFLAGS="--cfg bulkhead_loom" CARGO_TARGET_DIR=target-loom \
//!     cargo test -p bulkhead-loom-tests --release --test downstream
//! ```
//!
//! To do the same in your crate:
//!
//! 1. Make the type that holds the compartment generic over the lock,
//!    `Bulkhead<L: RawLock>`. Production code names `bulkhead_std::StdLock`
//!    (or uses the `bulkhead_std::Bulkhead` alias); the model names
//!    `bulkhead_core::LoomLock`, which exists under `--cfg bulkhead_loom`.
//! 2. Build your own shared state from loom's types under the same cfg (a
//!    small `sync` module that re-exports `loom::sync::*` or `std::sync::*`),
//!    so loom sees every access, not only the compartment's.
//! 3. Wait for a seat with core's `acquire()` future driven by
//!    `loom::future::block_on` (loom's `futures` feature), or use
//!    `try_acquire`. bulkhead-std's `acquire_blocking` parks with
//!    `std::thread::park`, which loom cannot see: keep it out of models.
//! 4. Add `[target.'cfg(bulkhead_loom)'.dev-dependencies] loom = ...` and
//!    declare the cfg (`unexpected_cfgs = { level = "warn", check-cfg =
//!    ["cfg(bulkhead_loom)"] }`), and use a separate target directory so
//!    the cfg does not invalidate your normal build.
//!
//! Keep each model to two or three threads and a few operations: loom's
//! run time grows very fast with both.
#![cfg(bulkhead_loom)]

use bulkhead_core::{Bulkhead, Config, Error, LoomLock, RawLock};
// Step 2: in your crate, `crate::sync::{Arc, Mutex, AtomicUsize}`.
use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::sync::{Arc, Mutex};
use loom::thread;

// === the user's code ===

/// A connection to some backend; `requests` is how often it was used.
#[derive(Debug)]
struct Connection {
    requests: u32,
}

/// Hands out connections, at most `max` in use at once: the compartment
/// bounds the callers, so the cache never opens more than `max`.
struct ConnectionCache<L: RawLock> {
    seats: Bulkhead<L>,
    idle: Mutex<Vec<Connection>>,
    opened: AtomicUsize,
}

impl<L: RawLock> ConnectionCache<L> {
    fn new(max: usize, lock: L) -> Self {
        Self {
            seats: Bulkhead::with_lock(Config::new("connections", max), lock)
                .expect("valid settings"),
            idle: Mutex::new(Vec::new()),
            opened: AtomicUsize::new(0),
        }
    }

    /// Runs `f` with a connection, waiting for a seat first: reuses an
    /// idle connection, or opens one.
    async fn with_connection<R>(&self, f: impl FnOnce(&mut Connection) -> R) -> Result<R, Error> {
        let _seat = self.seats.acquire().await?;
        let mut conn = self.checkout();
        let result = f(&mut conn);
        self.idle.lock().unwrap().push(conn);
        Ok(result)
        // `_seat` drops here, after the connection is back in `idle`.
    }

    /// A buggy variant: when every seat is taken it "helps out" by opening
    /// an extra connection anyway. The model below shows loom finding the
    /// interleaving where that breaks the limit.
    fn with_connection_or_extra<R>(&self, f: impl FnOnce(&mut Connection) -> R) -> R {
        let seat = self.seats.try_acquire().ok();
        let mut conn = if seat.is_some() {
            self.checkout()
        } else {
            self.open() // BUG: not bounded by the compartment
        };
        let result = f(&mut conn);
        self.idle.lock().unwrap().push(conn);
        result
    }

    fn checkout(&self) -> Connection {
        let idle = self.idle.lock().unwrap().pop();
        idle.unwrap_or_else(|| self.open())
    }

    fn open(&self) -> Connection {
        self.opened.fetch_add(1, Ordering::Relaxed);
        Connection { requests: 0 }
    }

    fn opened(&self) -> usize {
        self.opened.load(Ordering::Relaxed)
    }
}

// === the models ===

/// Two threads share a cache with one seat: in every interleaving both
/// are served, one connection is opened and reused, and no seat is left
/// taken.
#[test]
fn one_seat_opens_one_connection() {
    loom::model(|| {
        let cache = Arc::new(ConnectionCache::new(1, LoomLock::new()));
        let other = {
            let cache = cache.clone();
            thread::spawn(move || {
                loom::future::block_on(cache.with_connection(|c| c.requests += 1)).unwrap();
            })
        };
        loom::future::block_on(cache.with_connection(|c| c.requests += 1)).unwrap();
        other.join().unwrap();

        assert_eq!(cache.opened(), 1, "the compartment bounds the connections");
        let idle = cache.idle.lock().unwrap();
        assert_eq!(idle.len(), 1);
        assert_eq!(idle[0].requests, 2, "the one connection served both");
        assert_eq!(cache.seats.state().active, 0, "no seat left taken");
    });
}

/// The buggy variant: loom finds the interleaving where the second thread
/// arrives while the first holds the seat, and a second connection is
/// opened. (`should_panic` because the bug is the point of this model.)
#[test]
#[should_panic(expected = "more connections than seats")]
fn the_extra_connection_bug_is_found() {
    loom::model(|| {
        let cache = Arc::new(ConnectionCache::new(1, LoomLock::new()));
        let other = {
            let cache = cache.clone();
            thread::spawn(move || cache.with_connection_or_extra(|c| c.requests += 1))
        };
        cache.with_connection_or_extra(|c| c.requests += 1);
        other.join().unwrap();
        assert!(cache.opened() <= 1, "more connections than seats");
    });
}
