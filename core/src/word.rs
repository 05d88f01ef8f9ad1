//! The seat word: available seats and four flags in one atomic `usize`.
//!
//! ```text
//!  usize::BITS-1 .. 4   3         2         1        0
//! [ available (signed) | BOUNDED | BARGING | CLOSED | WAITERS ]
//! ```
//!
//! The count lives in the high bits so that adding or subtracting whole
//! seats (`seats(1)`) can never carry into a flag (bug class 6 in docs/bug-classes.md).
//! Storing *available* seats rather than active ones turns reconfiguration
//! into arithmetic: growing by `k` is a release of `k` seats, and shrinking
//! below the number held leaves a negative *debt* that later releases pay
//! before anyone is admitted again.

// Without `barging` the `BARGING` and `BOUNDED` flags are 0, so that their
// tests fold to constants; masking with them is then masking with zero on
// purpose.
#![cfg_attr(not(feature = "barging"), allow(clippy::bad_bit_mask))]

use crate::admission::Admission;

/// Set while the waiter list is non-empty. Only changed with the list lock
/// held, so under the lock it is exact.
pub(crate) const WAITERS: usize = 0b01;
/// Set once by `close`; never cleared.
pub(crate) const CLOSED: usize = 0b10;
/// How a free seat is admitted *right now*: set while any caller may take
/// it, clear while newcomers must queue behind waiters (FIFO). Keeping it
/// in the word saves a field, and the fast path tests it in the value it
/// has already loaded.
///
/// Set at construction for [`Admission::Barging`](Admission::Barging)
/// and [`Admission::BoundedBarging`](Admission::BoundedBarging),
/// clear for [`Admission::Fifo`](Admission::Fifo). In a `Barging`
/// or `Fifo` compartment it never changes: every transition of the word is
/// an add of whole seats or an RMW of single flag bits. In a
/// `BoundedBarging` compartment (`BOUNDED` set) it is cleared when a
/// waiter asks for a hand-off and set again once that hand-off is over,
/// both with the lock held, so under the lock it is exact.
///
/// Without the `barging` feature no compartment barges (`Config::validate`
/// refuses both barging modes), and the flag is 0: every test of it is a
/// constant, so that the barging code is left out of the build. The bit
/// stays reserved, so the word's layout is the same in every build.
pub(crate) const BARGING: usize = if cfg!(feature = "barging") { 0b100 } else { 0 };
/// Set at construction for
/// [`Admission::BoundedBarging`](Admission::BoundedBarging), and
/// never changed. 0 without the `barging` feature, as [`BARGING`].
pub(crate) const BOUNDED: usize = if cfg!(feature = "barging") { 0b1000 } else { 0 };
#[cfg(all(test, feature = "barging"))]
pub(crate) const FLAGS: usize = WAITERS | CLOSED | BARGING | BOUNDED;
const SHIFT: u32 = 4;

/// The largest `max_concurrent` a compartment accepts.
///
/// The signed count has `usize::BITS - 4` bits. Available seats range over
/// `[-max, max]` (a full compartment shrunk to zero owes `max`), so a limit
/// of `2^(usize::BITS - 6) - 1` leaves a factor of two of headroom: no
/// sequence of releases and reconfigurations can overflow the field.
/// That is 67,108,863 on 32-bit targets. On 64-bit ones the compartment
/// keeps the limit, and every seat's weight, in 32 bits (with the 32-bit
/// queue limit beside it, the two take one word), and keeps the top bit
/// free so that a weight too large for 32 bits is always above the limit:
/// it is `i32::MAX`, 2,147,483,647.
pub const MAX_CONCURRENT_LIMIT: usize = {
    let word = usize::MAX >> (SHIFT + 2);
    let field = (u32::MAX >> 1) as usize;
    if word < field { word } else { field }
};

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
pub(crate) const fn initial(max: usize, admission: Admission) -> usize {
    seats(max)
        | match admission {
            Admission::Fifo => 0,
            Admission::Barging => BARGING,
            Admission::BoundedBarging => BARGING | BOUNDED,
        }
}

/// Whether `word` admits FIFO-style: a FIFO compartment, or a
/// `BoundedBarging` one during a hand-off.
#[inline(always)]
pub(crate) const fn fifo(word: usize) -> bool {
    word & BARGING == 0
}

/// The admission mode the compartment was built with.
pub(crate) const fn admission(word: usize) -> Admission {
    if word & BOUNDED != 0 {
        Admission::BoundedBarging
    } else if word & BARGING != 0 {
        Admission::Barging
    } else {
        Admission::Fifo
    }
}

#[cfg(all(test, feature = "barging"))]
mod tests {
    use super::*;

    #[test]
    fn count_never_touches_flags() {
        let w = initial(3, Admission::BoundedBarging) | WAITERS;
        let w = w.wrapping_sub(seats(5)); // debt of 2
        assert_eq!(available(w), -2);
        assert_eq!(w & FLAGS, WAITERS | BARGING | BOUNDED);
        let w = w.wrapping_add(seats(2));
        assert_eq!(available(w), 0);
        assert_eq!(w & FLAGS, WAITERS | BARGING | BOUNDED);
        assert!(!fifo(w) && fifo(initial(3, Admission::Fifo)));
        // A hand-off clears `BARGING` and keeps the mode.
        assert!(fifo(w & !BARGING));
        for a in [
            Admission::Fifo,
            Admission::Barging,
            Admission::BoundedBarging,
        ] {
            assert_eq!(admission(initial(3, a)), a);
        }
        assert_eq!(admission(w & !BARGING), Admission::BoundedBarging);
    }

    #[test]
    fn extremes_fit() {
        let top = initial(MAX_CONCURRENT_LIMIT, Admission::BoundedBarging) | CLOSED | WAITERS;
        assert_eq!(available(top), MAX_CONCURRENT_LIMIT as isize);
        let bottom = top.wrapping_sub(seats(MAX_CONCURRENT_LIMIT) * 2);
        assert_eq!(available(bottom), -(MAX_CONCURRENT_LIMIT as isize));
        assert_eq!(bottom & FLAGS, CLOSED | WAITERS | BARGING | BOUNDED);
    }
}
