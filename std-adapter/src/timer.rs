//! Bounded async waits with the timers of async-std and smol.
//!
//! async-std is discontinued upstream in favour of smol; its support is
//! kept for existing programs. Both use the same `async-io` timer reactor
//! underneath, so neither feature adds code beyond naming the timer.

#[cfg(any(feature = "async-std", feature = "smol"))]
use std::time::Duration;

#[cfg(any(feature = "async-std", feature = "smol"))]
use bulkhead_core::Error;

#[cfg(any(feature = "async-std", feature = "smol"))]
use crate::bulkhead::{Bulkhead, Seat};

#[cfg(feature = "async-std")]
impl Bulkhead {
    /// [`acquire_within`](Self::acquire_within) with async-std's timer
    /// (`async_std::task::sleep`).
    ///
    /// async-std is discontinued upstream in favour of smol; prefer the
    /// `smol` feature and [`acquire_smol`](Self::acquire_smol) in new code.
    ///
    /// # Cancel safety
    /// Dropping the future at any point loses nothing.
    ///
    /// # Errors
    /// As [`acquire_within`](Self::acquire_within).
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// use bulkhead_std::{Bulkhead, Error};
    ///
    /// async_std::task::block_on(async {
    ///     let b = Bulkhead::new("db", 1).unwrap();
    ///     let _seat = b.acquire_async_std(None).await.unwrap();
    ///     let err = b.acquire_async_std(Some(Duration::from_millis(5))).await.unwrap_err();
    ///     assert!(matches!(err, Error::Timeout { .. }));
    /// });
    /// ```
    pub async fn acquire_async_std(&self, max_wait: Option<Duration>) -> Result<Seat<'_>, Error> {
        self.acquire_within(max_wait, async_std::task::sleep).await
    }
}

#[cfg(feature = "smol")]
impl Bulkhead {
    /// [`acquire_within`](Self::acquire_within) with smol's timer
    /// (`async_io::Timer::after`). Works on any executor: the timer is
    /// driven by async-io's own reactor thread when no smol executor is
    /// running.
    ///
    /// # Cancel safety
    /// Dropping the future at any point loses nothing.
    ///
    /// # Errors
    /// As [`acquire_within`](Self::acquire_within).
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// use bulkhead_std::{Bulkhead, Error};
    ///
    /// async_io::block_on(async {
    ///     let b = Bulkhead::new("db", 1).unwrap();
    ///     let _seat = b.acquire_smol(None).await.unwrap();
    ///     let err = b.acquire_smol(Some(Duration::from_millis(5))).await.unwrap_err();
    ///     assert!(matches!(err, Error::Timeout { .. }));
    /// });
    /// ```
    pub async fn acquire_smol(&self, max_wait: Option<Duration>) -> Result<Seat<'_>, Error> {
        self.acquire_within(max_wait, async_io::Timer::after).await
    }
}
