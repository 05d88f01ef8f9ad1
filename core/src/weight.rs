//! [`Weight`]: how many seats a seat holds or a waiter asks for.
//!
//! With the `weights` feature it is a `u32` (every count of seats is kept in
//! 32 bits, and `MAX_CONCURRENT_LIMIT` fits in 31). Without it, it is a
//! zero-size constant 1, so a firmware build that never asks for several
//! seats at once pays for weights with neither flash nor RAM: every
//! `get()` folds to 1, and the code that handles other weights is dead.

/// A count of seats taken, held or given back together; at least 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Weight(#[cfg(feature = "weights")] u32);

impl Weight {
    /// One seat: the only weight without the `weights` feature (with it,
    /// only the tests use the constant).
    #[cfg_attr(all(feature = "weights", not(test)), allow(dead_code))]
    pub(crate) const ONE: Self = Self(
        #[cfg(feature = "weights")]
        1,
    );

    /// `n` seats, as counted: `n >= 1` (the caller checked).
    #[cfg(feature = "weights")]
    #[inline(always)]
    pub(crate) const fn new(n: u32) -> Self {
        Self(n)
    }

    /// The count.
    #[inline(always)]
    pub(crate) const fn get(self) -> u32 {
        #[cfg(feature = "weights")]
        {
            self.0
        }
        #[cfg(not(feature = "weights"))]
        {
            1
        }
    }

    /// The count, as a `usize`.
    #[inline(always)]
    pub(crate) const fn seats(self) -> usize {
        self.get() as usize
    }
}
