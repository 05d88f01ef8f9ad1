//! Models of the performance work: the admission mode kept as
//! the `BARGING` bit of the seat word.
//!
//! Every transition of the word must leave the bit alone: releases
//! (`fetch_add`), a waiter publishing `WAITERS` (CAS), a hand-off or a
//! barging take clearing it (CAS), the last waiter leaving or being closed
//! out (`fetch_and`), and `close` (`fetch_or`). A transition that clobbered
//! the bit would flip the compartment's admission order in the middle of
//! its life; these models read the mode from a racing thread and after
//! every thread is done, in both modes.
#![cfg(bulkhead_loom)]

use bulkhead_core::Admission;
use bulkhead_loom_tests::{LoomBulkhead, acquire_async, assert_quiescent, barging, fifo};
use loom::sync::Arc;
use loom::thread;

/// A holder releases while a waiter queues (and is handed the seat, or
/// told the compartment closed) and a third thread closes the compartment.
fn the_mode_survives_racing_transitions(b: Arc<LoomBulkhead>, mode: Admission) {
    assert_eq!(b.admission(), mode);
    let seat = b.try_acquire().unwrap();
    let waiter = {
        let b = b.clone();
        thread::spawn(move || drop(acquire_async(&b)))
    };
    let closer = {
        let b = b.clone();
        thread::spawn(move || {
            assert_eq!(b.admission(), mode, "read while the word changes");
            b.close();
            assert_eq!(b.admission(), mode, "after close");
        })
    };
    drop(seat);
    assert_eq!(b.admission(), mode, "after the release");
    waiter.join().unwrap();
    closer.join().unwrap();
    assert_eq!(b.admission(), mode, "at the end");
    assert_quiescent(&b);
}

#[test]
fn fifo_mode_bit_survives_racing_transitions() {
    loom::model(|| the_mode_survives_racing_transitions(fifo(1), Admission::Fifo));
}

#[test]
fn barging_mode_bit_survives_racing_transitions() {
    loom::model(|| the_mode_survives_racing_transitions(barging(1), Admission::Barging));
}
