//! Reconfiguration, close, configuration errors and snapshots.

use std::string::ToString;
use std::task::Poll;
use std::vec::Vec;

use super::{Task, TestLock, boxed, fifo, ready_err, with_config};
use crate::{Bulkhead, Config, ConfigError, Error, MAX_CONCURRENT_LIMIT, MAX_WAITING_LIMIT};

#[test]
fn zero_and_overflowing_capacities_are_clear_errors() {
    let zero = Bulkhead::with_lock(Config::new("db", 0), TestLock::default()).unwrap_err();
    assert_eq!(zero, ConfigError::ZeroCapacity { name: "db".into() });
    assert!(zero.to_string().contains("at least 1 seat"));
    let big = Bulkhead::with_lock(
        Config::new("db", MAX_CONCURRENT_LIMIT + 1),
        TestLock::default(),
    )
    .unwrap_err();
    assert_eq!(
        big,
        ConfigError::CapacityOverflow {
            name: "db".into(),
            requested: MAX_CONCURRENT_LIMIT + 1,
            limit: MAX_CONCURRENT_LIMIT
        }
    );
    assert!(big.to_string().contains("choose a value of at most"));
    assert!(
        Bulkhead::with_lock(Config::new("db", MAX_CONCURRENT_LIMIT), TestLock::default()).is_ok()
    );
}

#[test]
fn the_largest_compartment_counts_exactly() {
    let b = Bulkhead::with_lock(
        Config::new("big", MAX_CONCURRENT_LIMIT),
        TestLock::default(),
    )
    .unwrap();
    let seat = b.try_acquire().unwrap();
    let s = b.state();
    assert_eq!((s.active, s.available()), (1, MAX_CONCURRENT_LIMIT - 1));
    drop(seat);
    b.set_max_concurrent(0).unwrap();
    assert_eq!(b.state().active, 0);
    b.set_max_concurrent(MAX_CONCURRENT_LIMIT).unwrap();
    assert_eq!(b.state().available(), MAX_CONCURRENT_LIMIT);
}

#[test]
fn set_max_concurrent_beyond_the_limit_is_refused_and_changes_nothing() {
    let b = fifo(3);
    let err = b.set_max_concurrent(MAX_CONCURRENT_LIMIT + 1).unwrap_err();
    assert!(matches!(err, ConfigError::CapacityOverflow { .. }));
    assert_eq!(b.state().max_concurrent, 3);
    assert_eq!(
        b.set_max_concurrent(usize::MAX).unwrap_err(),
        ConfigError::CapacityOverflow {
            name: "test".into(),
            requested: usize::MAX,
            limit: MAX_CONCURRENT_LIMIT
        }
    );
}

/// Both limits are kept in 31 bits (on 64-bit targets the two share one
/// word; the top bit is the queue order). A larger value is refused with the bound named, never truncated:
/// `2^32 + 1` seats must not become one seat, and a queue limit of `2^32`
/// must not become "nobody waits".
#[cfg(feature = "queue-limits")]
#[test]
fn limits_beyond_32_bits_are_refused_with_the_bound_named_never_truncated() {
    assert!(MAX_CONCURRENT_LIMIT <= u32::MAX as usize);
    #[cfg(target_pointer_width = "64")]
    assert_eq!(MAX_CONCURRENT_LIMIT, i32::MAX as usize);
    assert_eq!(MAX_WAITING_LIMIT, i32::MAX as usize - 1);

    let seats = Config::new("db", MAX_CONCURRENT_LIMIT + 1).validate();
    assert_eq!(
        seats,
        Err(ConfigError::CapacityOverflow {
            name: "db".into(),
            requested: MAX_CONCURRENT_LIMIT + 1,
            limit: MAX_CONCURRENT_LIMIT
        })
    );

    for requested in [MAX_WAITING_LIMIT + 1, usize::MAX] {
        let err = Config::new("db", 1)
            .max_waiting(requested)
            .validate()
            .unwrap_err();
        assert_eq!(
            err,
            ConfigError::QueueLimitOverflow {
                name: "db".into(),
                requested,
                limit: MAX_WAITING_LIMIT
            }
        );
        let message = err.to_string();
        assert!(
            message.contains(&std::format!("max_waiting = {requested}"))
                && message.contains("at most 2147483646")
                && message.contains("no queue limit"),
            "{message}"
        );
        assert_eq!(
            Bulkhead::with_lock(
                Config::new("db", 1).max_waiting(requested),
                TestLock::default()
            )
            .unwrap_err(),
            err
        );
    }
    // Values that truncate to 0 and to 1 in 32 bits.
    #[cfg(target_pointer_width = "64")]
    for requested in [1usize << 32, (1 << 32) + 1] {
        assert!(Config::new("db", requested).validate().is_err());
        assert!(
            Config::new("db", 1)
                .max_waiting(requested)
                .validate()
                .is_err()
        );
    }

    // The largest queue limit is a limit, not "none", and queues callers.
    let b = with_config(Config::new("db", 1).max_waiting(MAX_WAITING_LIMIT));
    let held = b.try_acquire().unwrap();
    let t = Task::new();
    let mut w = boxed(b.acquire());
    assert!(t.poll(w.as_mut()).is_pending());
    assert_eq!(b.state().waiting, 1);
    drop((w, held));
}

/// The waiter count is 32 bits, so "no queue limit" stops at
/// `MAX_WAITING_LIMIT` waiters rather than let it wrap. (Four billion
/// futures do not fit in a test; the count is set by hand instead, with
/// no node behind it, and put back.)
#[test]
fn with_no_queue_limit_the_32_bit_count_turns_a_waiter_away_rather_than_wrap() {
    let b = fifo(1);
    let held = b.try_acquire().unwrap();
    b.engine().waiting.store(
        MAX_WAITING_LIMIT as u32,
        core::sync::atomic::Ordering::Relaxed,
    );
    let t = Task::new();
    let mut w = boxed(b.acquire());
    assert_eq!(
        ready_err(t.poll(w.as_mut())),
        Error::QueueFull {
            name: "test".into(),
            max_waiting: MAX_WAITING_LIMIT
        }
    );
    assert_eq!(b.state().waiting, MAX_WAITING_LIMIT);
    b.engine()
        .waiting
        .store(0, core::sync::atomic::Ordering::Relaxed);
    let mut w = boxed(b.acquire());
    assert!(t.poll(w.as_mut()).is_pending());
    assert_eq!(b.state().waiting, 1);
    drop((w, held));
}

/// The name's length is kept in 31 bits (the 32nd marks a shared name). A
/// longer name is refused, never cut. The name is 2 GiB of zeros (valid
/// UTF-8) from `alloc_zeroed`, so no page of it is touched.
#[cfg(all(target_pointer_width = "64", not(miri)))]
#[test]
fn a_name_longer_than_31_bits_can_count_is_refused() {
    let len = crate::MAX_NAME_LEN + 1;
    let bytes = std::vec![0u8; len].into_boxed_slice();
    let name: &'static str = std::boxed::Box::leak(
        // SAFETY: zeros are valid UTF-8 (NUL characters).
        unsafe { std::string::String::from_utf8_unchecked(bytes.into_vec()) }.into_boxed_str(),
    );
    let err = Config::new(name, 1).validate().unwrap_err();
    assert_eq!(
        err,
        ConfigError::NameTooLong {
            length: len,
            limit: crate::MAX_NAME_LEN
        }
    );
    assert_eq!(
        err.to_string(),
        "bulkhead name of 2147483648 bytes is longer than a compartment keeps \
         (at most 2147483647 bytes); choose a shorter name"
    );
    // One byte less is kept, whole.
    let shorter = &name[..len - 1];
    let b = with_config(Config::new(shorter, 1));
    assert_eq!(b.name().len(), len - 1);
    assert_eq!(b.name().as_ptr(), name.as_ptr());
}

#[test]
fn the_name_comes_back_whole() {
    for name in ["", "db", "a name with spaces, ünïcödé and 🦀"] {
        let b = with_config(Config::new(name, 1));
        assert_eq!(b.name(), name);
        assert_eq!(b.state().name, name);
        assert_eq!(b.try_acquire().map(|_| ()), Ok(()));
    }
}

#[cfg(feature = "queue-limits")]
#[test]
fn set_max_waiting_beyond_the_limit_is_refused_and_changes_nothing() {
    let b = fifo(1);
    b.set_max_waiting(Some(1)).unwrap();
    #[cfg(target_pointer_width = "64")]
    let too_many = [MAX_WAITING_LIMIT + 1, 1 << 32, usize::MAX];
    #[cfg(not(target_pointer_width = "64"))]
    let too_many = [MAX_WAITING_LIMIT + 1, usize::MAX];
    for requested in too_many {
        assert_eq!(
            b.set_max_waiting(Some(requested)),
            Err(ConfigError::QueueLimitOverflow {
                name: "test".into(),
                requested,
                limit: MAX_WAITING_LIMIT
            })
        );
    }
    // Still one waiter at most.
    let held = b.try_acquire().unwrap();
    let t = Task::new();
    let mut first = boxed(b.acquire());
    assert!(t.poll(first.as_mut()).is_pending());
    let mut second = boxed(b.acquire());
    assert_eq!(
        ready_err(t.poll(second.as_mut())),
        Error::QueueFull {
            name: "test".into(),
            max_waiting: 1
        }
    );
    // `None` lifts the limit, and the largest limit is accepted.
    b.set_max_waiting(None).unwrap();
    let mut third = boxed(b.acquire());
    assert!(t.poll(third.as_mut()).is_pending());
    b.set_max_waiting(Some(MAX_WAITING_LIMIT)).unwrap();
    let mut fourth = boxed(b.acquire());
    assert!(t.poll(fourth.as_mut()).is_pending());
    assert_eq!(b.state().waiting, 3);
    drop((first, third, fourth, held));
}

#[cfg(feature = "critical-section")]
#[cfg(feature = "queue-limits")]
#[test]
#[should_panic(expected = "max_waiting is above MAX_WAITING_LIMIT")]
fn a_static_with_too_large_a_queue_limit_does_not_build() {
    let _ =
        Bulkhead::<crate::CsLock>::from_config_static(Config::new("db", 1).max_waiting(usize::MAX));
}

#[test]
fn growing_hands_new_seats_to_waiters_at_once() {
    let b = fifo(1);
    let held = b.try_acquire().unwrap();
    let (t1, t2) = (Task::new(), Task::new());
    let mut w1 = boxed(b.acquire());
    let mut w2 = boxed(b.acquire());
    assert!(t1.poll(w1.as_mut()).is_pending());
    assert!(t2.poll(w2.as_mut()).is_pending());
    assert_eq!(b.set_max_concurrent(3), Ok(1));
    assert_eq!((t1.wakes(), t2.wakes()), (1, 1));
    let Poll::Ready(Ok(a)) = t1.poll(w1.as_mut()) else {
        panic!()
    };
    let Poll::Ready(Ok(c)) = t2.poll(w2.as_mut()) else {
        panic!()
    };
    assert_eq!(b.state().active, 3);
    drop((held, a, c));
}

#[test]
fn shrinking_keeps_holders_and_pays_the_debt_before_admitting() {
    let b = fifo(4);
    let mut seats: Vec<_> = (0..4).map(|_| b.try_acquire().unwrap()).collect();
    assert_eq!(b.set_max_concurrent(2), Ok(4)); // never blocks
    let s = b.state();
    assert_eq!((s.max_concurrent, s.active, s.available()), (2, 4, 0));
    assert!(s.utilisation_percent() > 100.0);
    let t = Task::new();
    let mut w = boxed(b.acquire());
    assert!(t.poll(w.as_mut()).is_pending());
    seats.pop();
    seats.pop(); // 2 inside: the debt is paid, nobody admitted yet
    assert_eq!(t.wakes(), 0);
    assert!(t.poll(w.as_mut()).is_pending());
    seats.pop(); // 1 inside: now there is room
    assert_eq!(t.wakes(), 1);
    let Poll::Ready(Ok(seat)) = t.poll(w.as_mut()) else {
        panic!()
    };
    assert_eq!(b.state().active, 2);
    drop(seat);
    drop(seats);
    assert_eq!(b.state().active, 0);
}

#[test]
fn regrowing_after_a_shrink_does_not_over_admit() {
    // bug class 10 in docs/bug-classes.md.
    let b = fifo(4);
    let seats: Vec<_> = (0..4).map(|_| b.try_acquire().unwrap()).collect();
    b.set_max_concurrent(1).unwrap();
    b.set_max_concurrent(5).unwrap();
    let extra = b.try_acquire().unwrap(); // 5 inside, limit 5
    assert!(b.try_acquire().is_err());
    assert_eq!(b.state().active, 5);
    drop(extra);
    drop(seats);
    assert_eq!(b.state().available(), 5);
}

#[test]
fn zero_pauses_admission_until_raised() {
    let b = fifo(2);
    assert_eq!(b.set_max_concurrent(0), Ok(2));
    assert!(matches!(
        b.try_acquire(),
        Err(Error::Full {
            max_concurrent: 0,
            ..
        })
    ));
    let t = Task::new();
    let mut w = boxed(b.acquire());
    assert!(t.poll(w.as_mut()).is_pending());
    assert_eq!(b.state().utilisation_percent(), 100.0);
    b.set_max_concurrent(1).unwrap();
    assert!(matches!(t.poll(w.as_mut()), Poll::Ready(Ok(_))));
}

#[test]
fn close_wakes_every_waiter_with_closed_and_held_seats_release_normally() {
    let b = fifo(1);
    let held = b.try_acquire().unwrap();
    let tasks: Vec<Task> = (0..10).map(|_| Task::new()).collect(); // more than one batch
    let mut futs: Vec<_> = (0..10).map(|_| boxed(b.acquire())).collect();
    for (t, f) in tasks.iter().zip(futs.iter_mut()) {
        assert!(t.poll(f.as_mut()).is_pending());
    }
    b.close();
    assert!(tasks.iter().all(|t| t.wakes() == 1));
    for (t, f) in tasks.iter().zip(futs.iter_mut()) {
        assert_eq!(
            ready_err(t.poll(f.as_mut())),
            Error::Closed {
                name: "test".into()
            }
        );
    }
    assert_eq!(
        b.try_acquire().unwrap_err(),
        Error::Closed {
            name: "test".into()
        }
    );
    let mut late = boxed(b.acquire());
    assert_eq!(
        ready_err(tasks[0].poll(late.as_mut())),
        Error::Closed {
            name: "test".into()
        }
    );
    drop(held);
    let s = b.state();
    assert_eq!((s.active, s.waiting, s.closed), (0, 0, true));
    b.close(); // idempotent
    assert!(b.is_closed());
    assert!(
        Error::Closed { name: "x".into() }
            .to_string()
            .contains("closed")
    );
    assert!(!Error::Closed { name: "x".into() }.is_transient());
}

#[test]
fn a_waiter_dropped_after_close_releases_nothing() {
    let b = fifo(1);
    let held = b.try_acquire().unwrap();
    let t = Task::new();
    let mut w = boxed(b.acquire());
    assert!(t.poll(w.as_mut()).is_pending());
    b.close();
    drop(w); // verdict Closed, unread
    drop(held);
    assert_eq!(b.state().active, 0);
}

#[cfg(feature = "queue-limits")]
#[test]
fn state_reports_every_counter() {
    let b =
        Bulkhead::with_lock(Config::new("snap", 2).max_waiting(1), TestLock::default()).unwrap();
    let s1 = b.try_acquire().unwrap();
    let s2 = b.try_acquire().unwrap();
    let _ = b.try_acquire();
    let t = Task::new();
    let mut w = boxed(b.acquire());
    let mut w2 = boxed(b.acquire());
    assert!(t.poll(w.as_mut()).is_pending());
    let _ = t.poll(w2.as_mut()); // queue full
    let s = b.state();
    assert_eq!(s.name, "snap");
    assert_eq!(
        (
            s.max_concurrent,
            s.active,
            s.waiting,
            s.rejected,
            s.timed_out
        ),
        (2, 2, 1, 2, 0)
    );
    assert_eq!(s.available(), 0);
    assert_eq!(s.utilisation_percent(), 100.0);
    drop((s1, s2));
}

#[test]
fn errors_name_the_problem_and_the_fix() {
    let full = Error::Full {
        name: "db".into(),
        max_concurrent: 4,
        active: 4,
    };
    assert_eq!(
        full.to_string(),
        "bulkhead `db` is full: 4 of 4 seats taken; retry later, give callers a wait budget, or raise max_concurrent"
    );
    assert!(
        Error::QueueFull {
            name: "db".into(),
            max_waiting: 3
        }
        .to_string()
        .contains("raise max_waiting")
    );
    assert_eq!(full.name(), "db");
    assert!(full.is_transient());
    // Seats free but kept for the line (or too few for a weighted caller),
    // and a paused compartment: each says so.
    let kept = Error::Full {
        name: "db".into(),
        max_concurrent: 4,
        active: 3,
    };
    assert!(
        kept.to_string()
            .contains("kept for callers already waiting"),
        "{kept}"
    );
    let paused = Error::Full {
        name: "db".into(),
        max_concurrent: 0,
        active: 0,
    };
    assert!(
        paused
            .to_string()
            .contains("is paused (max_concurrent = 0)"),
        "{paused}"
    );
    let queue = Error::QueueFull {
        name: "db".into(),
        max_waiting: 1,
    };
    assert!(
        queue
            .to_string()
            .contains("its queue is full (max_waiting = 1"),
        "{queue}"
    );
}

#[cfg(feature = "queue-limits")]
#[test]
fn config_validates_const() {
    const OK: Result<Config, ConfigError> = Config::new("c", 3).max_waiting(2).validate();
    assert!(OK.is_ok());
}

/// A lock that keeps its own counts of what core reports to it, with
/// counts far from anything core could make up, so that `state` can only
/// report them by asking the lock.
#[derive(Default)]
struct RecordingLock {
    inner: TestLock,
    rejections: std::sync::atomic::AtomicUsize,
    timeouts: std::sync::atomic::AtomicUsize,
}

const OFFSET: usize = 1000;

// SAFETY: delegates locking to `TestLock`, which upholds the contract.
unsafe impl crate::RawLock for RecordingLock {
    unsafe fn with_lock<R>(&self, f: impl FnOnce() -> R) -> R {
        // SAFETY: forwarded from our own caller, who upholds the contract.
        unsafe { self.inner.with_lock(f) }
    }
    unsafe fn try_with_lock<R>(&self, f: impl FnOnce() -> R) -> Option<R> {
        // SAFETY: as above.
        unsafe { self.inner.try_with_lock(f) }
    }
    fn record_rejection(&self) {
        self.rejections
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
    fn record_timeout(&self) {
        self.timeouts
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
    fn counts(&self) -> crate::Counts {
        let get = |c: &std::sync::atomic::AtomicUsize| {
            OFFSET + c.load(std::sync::atomic::Ordering::SeqCst)
        };
        crate::Counts {
            rejected: get(&self.rejections),
            timed_out: get(&self.timeouts),
        }
    }
}

#[cfg(feature = "queue-limits")]
#[test]
fn every_rejection_and_time_out_reaches_the_lock_and_state_reads_its_counts() {
    use crate::RawLock as _;
    let b = Bulkhead::with_lock(
        Config::new("hook", 1).max_waiting(1),
        RecordingLock::default(),
    )
    .unwrap();
    let count = |b: &Bulkhead<RecordingLock>| {
        let c = b.raw_lock().counts();
        (c.rejected - OFFSET, c.timed_out - OFFSET)
    };
    let held = b.try_acquire().unwrap();
    let _ = b.try_acquire(); // full
    assert_eq!(count(&b), (1, 0));
    let t = Task::new();
    let mut w1 = boxed(b.acquire());
    let mut w2 = boxed(b.acquire());
    assert!(t.poll(w1.as_mut()).is_pending());
    let _ = t.poll(w2.as_mut()); // queue full
    assert_eq!(count(&b), (2, 0));
    let _ = w1.as_mut().time_out(core::time::Duration::ZERO); // timed out
    assert_eq!(count(&b), (2, 1));
    let s = b.state();
    assert_eq!((s.rejected, s.timed_out), (OFFSET + 2, OFFSET + 1));
    drop(held);
    // SAFETY: nothing of core's runs now; this only checks the lock is free.
    assert!(unsafe { b.raw_lock().try_with_lock(|| ()) }.is_some());
}

/// A lock that keeps no counts (on purpose: `counts` has no default)
/// reports zeros, and core counts nothing behind its back.
#[test]
fn a_lock_that_keeps_no_counts_reports_none() {
    struct Silent(TestLock);
    // SAFETY: delegates locking to `TestLock`, which upholds the contract.
    unsafe impl crate::RawLock for Silent {
        unsafe fn with_lock<R>(&self, f: impl FnOnce() -> R) -> R {
            // SAFETY: forwarded from our own caller.
            unsafe { self.0.with_lock(f) }
        }
        unsafe fn try_with_lock<R>(&self, f: impl FnOnce() -> R) -> Option<R> {
            // SAFETY: as above.
            unsafe { self.0.try_with_lock(f) }
        }
        // Keeps none, and says so: the one way to keep none.
        fn counts(&self) -> crate::Counts {
            crate::Counts::NONE
        }
    }
    let b = Bulkhead::with_lock(Config::new("silent", 1), Silent(TestLock::default())).unwrap();
    let _held = b.try_acquire().unwrap();
    assert!(b.try_acquire().is_err());
    assert_eq!((b.state().rejected, b.state().timed_out), (0, 0));
    assert_eq!(crate::Counts::default(), crate::Counts::NONE);
}

/// `with_name` names the compartment `name`, never `config.name`, also in
/// the error of a bad config (a static name here; shared names are in
/// `names.rs`).
#[test]
fn with_name_uses_the_given_name_not_the_configs() {
    use crate::Name;
    let b: Bulkhead<TestLock> = Bulkhead::with_name(
        Name::from_static("db"),
        Config::new("other", 2),
        TestLock::default(),
    )
    .unwrap();
    assert_eq!(b.name(), "db");
    assert_eq!(
        b.try_acquire().map(|s| s.bulkhead().name() == "db").ok(),
        Some(true)
    );
    let refused = Bulkhead::<TestLock>::with_name(
        Name::from_static("db"),
        Config::new("other", 0),
        TestLock::default(),
    );
    match refused {
        Err(e) => assert!(e.to_string().contains("db"), "{e}"),
        Ok(_) => panic!("a zero capacity must be refused"),
    }
}

/// Without the `lifo` feature, a compartment asking for newest-first order
/// is refused with an error that names the feature, never built with the
/// order silently ignored.
#[cfg(not(feature = "lifo"))]
#[test]
fn newest_first_without_its_feature_is_refused_by_name() {
    use std::string::ToString;
    let config = Config::new("db", 1).queue_order(crate::QueueOrder::Lifo);
    let err = config.validate().unwrap_err();
    assert_eq!(err, ConfigError::LifoUnavailable { name: "db".into() });
    assert!(err.to_string().contains("`lifo` feature"), "{err}");
    assert!(Bulkhead::with_lock(config, super::TestLock::default()).is_err());
}

/// Without the `barging` feature, a compartment asking for either barging
/// admission is refused with an error that names the feature and the mode
/// asked for, never built FIFO in silence.
#[cfg(not(feature = "barging"))]
#[test]
fn barging_without_its_feature_is_refused_by_name() {
    use std::string::ToString;
    for (admission, mode) in [
        (crate::Admission::Barging, "admission = barging "),
        (
            crate::Admission::BoundedBarging,
            "admission = bounded_barging ",
        ),
    ] {
        let config = Config::new("db", 1).admission(admission);
        let err = config.validate().unwrap_err();
        assert_eq!(
            err,
            ConfigError::BargingUnavailable {
                name: "db".into(),
                admission
            }
        );
        let text = err.to_string();
        assert!(
            text.contains("`barging` feature") && text.contains(mode),
            "{text}"
        );
        assert!(Bulkhead::with_lock(config, super::TestLock::default()).is_err());
    }
    assert!(Config::new("db", 1).validate().is_ok());
}

/// Without the `queue-limits` feature, a compartment asking for a queue
/// limit is refused with an error that names the feature, never built
/// with the limit silently ignored.
#[cfg(not(feature = "queue-limits"))]
#[test]
fn a_queue_limit_without_its_feature_is_refused_by_name() {
    use std::string::ToString;
    let config = Config::new("db", 1).max_waiting(4);
    let err = config.validate().unwrap_err();
    assert_eq!(
        err,
        ConfigError::QueueLimitUnavailable { name: "db".into() }
    );
    assert!(err.to_string().contains("`queue-limits` feature"), "{err}");
    assert!(Bulkhead::with_lock(config, super::TestLock::default()).is_err());
}
