//! The compartment's layout: the admission mode kept as a flag bit of the
//! seat word, and the size that buys.

use core::mem::size_of;

use super::{Task, TestBulkhead, TestLock, boxed, with_config};
use crate::{Admission, Config};

fn admission_of(b: &TestBulkhead) -> Admission {
    b.admission()
}

/// Every kind of transition of the word (taking and giving back seats, the
/// WAITERS flag, a debt from shrinking, growing, a hand-off, closing)
/// leaves the admission bit alone, in both modes.
#[cfg(feature = "barging")]
#[test]
fn the_admission_survives_every_transition_of_the_word() {
    for admission in [
        Admission::Fifo,
        Admission::Barging,
        Admission::BoundedBarging,
    ] {
        let b = with_config(Config::new("layout", 1).admission(admission));
        let check = |what: &str| assert_eq!(admission_of(&b), admission, "after {what}");
        check("construction");
        let seat = b.try_acquire().unwrap();
        check("a fast-path take");
        assert!(b.try_acquire().is_err());
        check("a rejection");
        let task = Task::new();
        let mut waiter = boxed(b.acquire());
        assert!(task.poll(waiter.as_mut()).is_pending());
        assert_eq!(b.state().waiting, 1);
        check("queuing (WAITERS set)");
        assert_eq!(b.set_max_concurrent(0), Ok(1));
        check("shrinking below the seats held (a debt)");
        drop(seat);
        check("a release that pays the debt");
        assert_eq!(b.set_max_concurrent(1), Ok(0));
        check("growing");
        let handed = match task.poll(waiter.as_mut()) {
            core::task::Poll::Ready(Ok(seat)) => seat,
            other => panic!(
                "{admission:?}: expected the seat, got {:?}",
                other.is_ready()
            ),
        };
        check("a hand-off (WAITERS cleared)");
        b.close();
        check("closing");
        drop(handed);
        check("a release after closing");
        let s = b.state();
        assert_eq!((s.active, s.waiting, s.closed), (0, 0, true));
    }
}

/// Three words (the seat word, owed wake-ups and the start of the name),
/// four 32-bit fields sharing two words (the two limits, the waiter count
/// and the name's length), the list and the lock. The admission mode takes
/// no field of its own, the list keeps no length of its own (the waiter
/// count is it), and the counts are the lock's (`RawLock::counts`).
#[cfg(target_pointer_width = "64")]
#[test]
fn the_compartment_is_five_words_the_list_and_its_lock() {
    assert_eq!(size_of::<crate::sync::AtomicU32>(), 4);
    // The circular list: its tail and its first waiting node (plus two
    // counters that only test builds have).
    assert_eq!(size_of::<crate::list::List>(), size_of::<[usize; 4]>());
    assert_eq!(
        size_of::<TestBulkhead>(),
        size_of::<[usize; 5]>() + size_of::<crate::list::List>() + size_of::<TestLock>()
    );
}
