//! A minimal single-threaded executor for the host tests: polls futures on
//! the current thread and parks it between wake-ups. embassy-time's std
//! driver wakes timers from its own thread.

#![allow(dead_code)]

use std::future::Future;
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::thread::{self, Thread};
use std::time::Duration;

struct Unpark(Thread);

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
}

fn waker() -> Waker {
    Waker::from(Arc::new(Unpark(thread::current())))
}

/// Runs `future` to completion on this thread.
pub fn block_on<F: Future>(future: F) -> F::Output {
    let waker = waker();
    let mut cx = Context::from_waker(&waker);
    let mut future = pin!(future);
    loop {
        if let Poll::Ready(out) = future.as_mut().poll(&mut cx) {
            return out;
        }
        thread::park_timeout(Duration::from_millis(50));
    }
}

/// Polls every unfinished future each time any of them is woken, until all
/// have finished.
pub fn run_all(futures: &mut [Pin<Box<dyn Future<Output = ()> + '_>>]) {
    let waker = waker();
    let mut cx = Context::from_waker(&waker);
    let mut done = vec![false; futures.len()];
    while done.contains(&false) {
        for (future, done) in futures.iter_mut().zip(done.iter_mut()) {
            if !*done {
                *done = future.as_mut().poll(&mut cx).is_ready();
            }
        }
        if done.contains(&false) {
            thread::park_timeout(Duration::from_millis(50));
        }
    }
}

/// Polls `future` once with a waker that does nothing.
pub fn poll_once<F: Future + ?Sized>(future: Pin<&mut F>) -> Poll<F::Output> {
    future.poll(&mut Context::from_waker(Waker::noop()))
}
