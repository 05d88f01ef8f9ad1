//! The circular waiter list on its own, against a `Vec` of the expected
//! order: every way to link, unlink and requeue, at the head, the tail, in
//! the middle and in a list of one, in random sequences.

use core::pin::Pin;
use core::ptr::NonNull;
use std::boxed::Box;
use std::vec::Vec;

use crate::list::{List, Node};
use crate::status::Status;
use std::task::Waker;

/// Small and deterministic: this runs under miri too.
const STEPS: usize = if cfg!(miri) { 300 } else { 20_000 };
const NODES: usize = 6;

struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        // xorshift64
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

/// The expected list: node indices in FIFO order, and whether each is
/// notified (a prefix).
#[derive(Default)]
struct Expected {
    order: Vec<(usize, bool)>,
}

impl Expected {
    fn first_waiting(&self) -> usize {
        self.order
            .iter()
            .position(|&(_, notified)| !notified)
            .unwrap_or(self.order.len())
    }
}

fn check(list: &List, nodes: &[Pin<Box<Node>>], expected: &Expected, what: &str) {
    assert_eq!(list.assert_valid(), expected.order.len(), "{what}: count");
    let ptr = |i: usize| NonNull::from(&*nodes[i]);
    let want: Vec<_> = expected.order.iter().map(|&(i, _)| ptr(i)).collect();
    assert_eq!(list.order(), want, "{what}: order");
    assert_eq!(list.is_empty(), want.is_empty(), "{what}: is_empty");
    assert_eq!(list.is_single(), want.len() == 1, "{what}: is_single");
    for &(i, notified) in &expected.order {
        let status = if notified {
            Status::Notified
        } else {
            Status::Waiting
        };
        assert_eq!(nodes[i].status.get(), status, "{what}: node {i}");
    }
}

#[test]
fn the_circular_list_keeps_fifo_order_and_its_partition_through_every_operation() {
    let nodes: Vec<Pin<Box<Node>>> = (0..NODES)
        .map(|_| Box::pin(Node::new(crate::weight::Weight::ONE)))
        .collect();
    let ptr = |i: usize| NonNull::from(&*nodes[i]);
    let mut list = List::new();
    let mut expected = Expected::default();
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut seen = [0usize; 4];
    for step in 0..STEPS {
        let linked: Vec<usize> = expected.order.iter().map(|&(i, _)| i).collect();
        let free: Vec<usize> = (0..NODES).filter(|i| !linked.contains(i)).collect();
        let what;
        match rng.below(4) {
            0 if !free.is_empty() => {
                let i = free[rng.below(free.len())];
                // SAFETY: the node is pinned in its box, not linked, and is
                // unlinked before the boxes are dropped.
                unsafe { list.push_back(ptr(i), Waker::noop().clone()) };
                expected.order.push((i, false));
                what = "push_back";
                seen[0] += 1;
            }
            1 if !linked.is_empty() => {
                let at = rng.below(linked.len());
                let i = linked[at];
                // SAFETY: linked in `list`; then moved out of the linked
                // statuses, as the engine does.
                unsafe {
                    // Waiting nodes hold a waker; notified ones gave it up.
                    let waker = list.remove(ptr(i));
                    assert_eq!(waker.is_some(), !expected.order[at].1, "step {step}");
                    nodes[i].status.leave();
                }
                expected.order.remove(at);
                what = "remove";
                seen[1] += 1;
            }
            2 => {
                let notified = list.notify_next();
                let at = expected.first_waiting();
                assert_eq!(notified.is_some(), at < expected.order.len(), "step {step}");
                if let Some(entry) = expected.order.get_mut(at) {
                    entry.1 = true;
                }
                what = "notify_next";
                seen[2] += 1;
            }
            3 if expected.first_waiting() > 0 => {
                let at = rng.below(expected.first_waiting());
                let (i, _) = expected.order.remove(at);
                // SAFETY: linked and notified. A fresh waker first, as the
                // engine's re-poll registers.
                unsafe {
                    assert!(list.refresh_waker(ptr(i), Waker::noop().clone()).is_none());
                    list.requeue(ptr(i));
                }
                let boundary = expected.first_waiting();
                expected.order.insert(boundary, (i, false));
                what = "requeue";
                seen[3] += 1;
            }
            _ => continue,
        }
        check(
            &list,
            &nodes,
            &expected,
            &std::format!("step {step}: {what}"),
        );
    }
    assert!(seen.iter().all(|&n| n > STEPS / 20), "{seen:?}");
    // Unlink everything, so that the nodes drop unlinked and without
    // wakers.
    for (i, _) in core::mem::take(&mut expected.order) {
        // SAFETY: linked in `list`.
        unsafe {
            let _ = list.remove(ptr(i));
            nodes[i].status.leave();
        }
    }
    assert!(list.is_empty());
}
