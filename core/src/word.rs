//! The seat word: available seats and two flags in one atomic `usize`.
//!
//! ```text
//!  usize::BITS-1 .. 2   1        0
//! [ available (signed) | CLOSED | WAITERS ]
//! ```
//!
//! The count lives in the high bits so that adding or subtracting whole
//! seats ([`ONE`]) can never carry into a flag (bug class 6 in docs/bug-classes.md).
//! Storing *available* seats rather than active ones turns reconfiguration
//! into arithmetic: growing by `k` is a release of `k` seats, and shrinking
//! below the number held leaves a negative *debt* that later releases pay
//! before anyone is admitted again.

/// Set while the waiter list is non-empty. Only changed with the list lock
/// held, so under the lock it is exact.
pub(crate) const WAITERS: usize = 0b01;
/// Set once by `close`; never cleared.
pub(crate) const CLOSED: usize = 0b10;
#[cfg(test)]
pub(crate) const FLAGS: usize = WAITERS | CLOSED;
const SHIFT: u32 = 2;
/// One seat, in word units.
pub(crate) const ONE: usize = 1 << SHIFT;

/// The largest `max_concurrent` a compartment accepts.
///
/// The signed count has `usize::BITS - 2` bits. Available seats range over
/// `[-max, max]` (a full compartment shrunk to zero owes `max`), so a limit
/// of `2^(usize::BITS - 4) - 1` leaves a factor of two of headroom: no
/// sequence of releases and reconfigurations can overflow the field.
/// That is 268,435,455 on 32-bit targets and about 1.15e18 on 64-bit ones.
pub const MAX_CONCURRENT_LIMIT: usize = usize::MAX >> (SHIFT + 2);

/// The signed number of available seats in `word`.
#[inline(always)]
pub(crate) const fn available(word: usize) -> isize {
    (word as isize) >> SHIFT
}

/// `n` seats in word units. `n <= MAX_CONCURRENT_LIMIT`, so this cannot
/// overflow.
#[inline(always)]
pub(crate) const fn seats(n: usize) -> usize {
    n << SHIFT
}

/// The word of a new compartment with `max` free seats.
pub(crate) const fn initial(max: usize) -> usize {
    seats(max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn count_never_touches_flags() {
        let w = initial(3) | WAITERS;
        let w = w.wrapping_sub(seats(5)); // debt of 2
        assert_eq!(available(w), -2);
        assert_eq!(w & FLAGS, WAITERS);
        let w = w.wrapping_add(seats(2));
        assert_eq!(available(w), 0);
        assert_eq!(w & FLAGS, WAITERS);
    }

    #[test]
    fn extremes_fit() {
        let top = initial(MAX_CONCURRENT_LIMIT) | CLOSED | WAITERS;
        assert_eq!(available(top), MAX_CONCURRENT_LIMIT as isize);
        let bottom = top.wrapping_sub(seats(MAX_CONCURRENT_LIMIT) * 2);
        assert_eq!(available(bottom), -(MAX_CONCURRENT_LIMIT as isize));
        assert_eq!(bottom & FLAGS, CLOSED | WAITERS);
    }
}
