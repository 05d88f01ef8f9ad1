//! The mutex inside [`StdLock`](crate::StdLock): four bytes, no allocation.
//!
//! std's `Mutex<()>` takes eight bytes (its futex word and a poison flag),
//! and a compartment fits in 64 only with four. parking_lot's one-byte
//! mutex was tried: its parking lot is a global table that grows, on the
//! heap, the first time a new thread parks, so a wait could allocate.
//! This one is the futex mutex std uses on Linux, without the poison flag
//! (core never panics while it holds the lock, so there is nothing to
//! poison): one `AtomicU32` that is 0 (unlocked), 1 (locked) or 2 (locked,
//! and someone may sleep on it), with the kernel's wait-on-address
//! (`atomic-wait`: Linux and Android futex, FreeBSD, macOS and iOS, Windows)
//! to sleep and wake. On other targets it is std's mutex.

pub(crate) use imp::Mutex;

// The targets `atomic-wait` supports, as in Cargo.toml.
#[cfg(any(
    target_os = "linux",
    target_os = "android",
    target_os = "freebsd",
    target_os = "macos",
    target_os = "ios",
    windows
))]
mod imp {
    use std::hint::spin_loop;
    use std::sync::atomic::AtomicU32;
    use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};

    const UNLOCKED: u32 = 0;
    const LOCKED: u32 = 1;
    /// Locked, and a thread may be asleep waiting for it: the unlock must
    /// wake one.
    const CONTENDED: u32 = 2;

    /// A futex mutex guarding nothing but its own critical sections.
    #[derive(Debug, Default)]
    pub(crate) struct Mutex(AtomicU32);

    /// Unlocks on drop, also while a panic unwinds.
    pub(crate) struct Guard<'a>(&'a Mutex);

    impl Mutex {
        pub(crate) const fn new() -> Self {
            Self(AtomicU32::new(UNLOCKED))
        }

        /// Locks, waiting as long as it takes. `Acquire`: the previous
        /// holder's section happens-before this one.
        #[inline]
        pub(crate) fn lock(&self) -> Guard<'_> {
            if self
                .0
                .compare_exchange(UNLOCKED, LOCKED, Acquire, Relaxed)
                .is_err()
            {
                self.lock_contended();
            }
            Guard(self)
        }

        /// Locks if nobody holds it. A strong compare-exchange: it fails
        /// only on a value other than `UNLOCKED`, which only a holder that
        /// has not unlocked leaves (no spurious failure).
        #[inline]
        pub(crate) fn try_lock(&self) -> Option<Guard<'_>> {
            self.0
                .compare_exchange(UNLOCKED, LOCKED, Acquire, Relaxed)
                .ok()
                .map(|_| Guard(self))
        }

        #[cold]
        fn lock_contended(&self) {
            let mut state = self.spin();
            if state == UNLOCKED {
                match self.0.compare_exchange(UNLOCKED, LOCKED, Acquire, Relaxed) {
                    Ok(_) => return,
                    Err(s) => state = s,
                }
            }
            loop {
                // Mark it contended before sleeping, so that the holder's
                // unlock wakes a sleeper. Taking it this way leaves it
                // `CONTENDED` even if nobody else waits: at worst one
                // needless wake.
                if state != CONTENDED && self.0.swap(CONTENDED, Acquire) == UNLOCKED {
                    return;
                }
                // Sleeps only while the value is still `CONTENDED`; wakes
                // may be spurious, so the loop re-checks.
                atomic_wait::wait(&self.0, CONTENDED);
                state = self.spin();
            }
        }

        /// Spins a little while the lock is held without sleepers: lock
        /// sections are short (core bounds them), so the holder is likely
        /// to be done before a sleep would pay off.
        fn spin(&self) -> u32 {
            let mut spins = 100;
            loop {
                let state = self.0.load(Relaxed);
                if state != LOCKED || spins == 0 {
                    return state;
                }
                spin_loop();
                spins -= 1;
            }
        }
    }

    impl Drop for Guard<'_> {
        /// `Release`: this section happens-before the next holder's.
        #[inline]
        fn drop(&mut self) {
            if self.0.0.swap(UNLOCKED, Release) == CONTENDED {
                atomic_wait::wake_one(&self.0.0);
            }
        }
    }
}

#[cfg(not(any(
    target_os = "linux",
    target_os = "android",
    target_os = "freebsd",
    target_os = "macos",
    target_os = "ios",
    windows
)))]
mod imp {
    use std::sync::{MutexGuard, TryLockError};

    /// std's mutex, poisoning ignored (core never panics while it holds
    /// the lock).
    #[derive(Debug, Default)]
    pub(crate) struct Mutex(std::sync::Mutex<()>);

    impl Mutex {
        pub(crate) const fn new() -> Self {
            Self(std::sync::Mutex::new(()))
        }

        pub(crate) fn lock(&self) -> MutexGuard<'_, ()> {
            self.0.lock().unwrap_or_else(|e| e.into_inner())
        }

        pub(crate) fn try_lock(&self) -> Option<MutexGuard<'_, ()>> {
            match self.0.try_lock() {
                Ok(guard) => Some(guard),
                Err(TryLockError::Poisoned(e)) => Some(e.into_inner()),
                Err(TryLockError::WouldBlock) => None,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Mutex;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::thread;

    #[test]
    fn it_excludes_and_try_fails_only_while_held() {
        let m = Mutex::new();
        let guard = m.lock();
        assert!(m.try_lock().is_none());
        drop(guard);
        assert!(m.try_lock().is_some());
        // Unlocks on unwind.
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _guard = m.lock();
            panic!("inside");
        }));
        assert!(caught.is_err());
        assert!(m.try_lock().is_some());
    }

    #[test]
    fn contended_sections_never_overlap_and_none_is_lost() {
        let m = Mutex::new();
        let inside = AtomicUsize::new(0);
        let total = AtomicUsize::new(0);
        thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..20_000 {
                        let _guard = m.lock();
                        assert_eq!(inside.fetch_add(1, Ordering::Relaxed), 0, "two holders");
                        // A plain read-modify-write under the lock: a lost
                        // update would show in the total.
                        let t = total.load(Ordering::Relaxed);
                        total.store(t + 1, Ordering::Relaxed);
                        inside.fetch_sub(1, Ordering::Relaxed);
                    }
                });
            }
        });
        assert_eq!(total.load(Ordering::Relaxed), 80_000);
    }
}
