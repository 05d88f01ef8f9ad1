//! Parking the calling thread until a future is ready: the one waker per
//! thread that the blocking wait lends to core, and `block_on` for the
//! async hooks that threads run (a scoped compartment's opener and
//! closer). A leaf of the waiting layer: it knows no compartment.

use std::cell::OnceCell;
use std::sync::Arc;
use std::task::{Wake, Waker};
use std::thread::{self, Thread};

/// Unparks the thread it was made on.
struct ThreadWaker(Thread);

impl Wake for ThreadWaker {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.0.unpark();
    }
}

thread_local! {
    /// One waker per thread, made on its first wait, so that a wait
    /// allocates nothing: polls borrow it, and a queued node holds a clone
    /// (a reference-count increment). The waker owns the thread handle and
    /// never points into the waiting stack frame, so a drainer may wake it
    /// after the wait has ended.
    static THREAD_WAKER: OnceCell<Waker> = const { OnceCell::new() };
}

/// This thread's waker, cloned (a reference-count increment).
#[cfg(feature = "scoped")]
fn thread_waker() -> Waker {
    with_thread_waker(Waker::clone)
}

/// Runs `f` with this thread's waker, lent.
pub(crate) fn with_thread_waker<R>(f: impl FnOnce(&Waker) -> R) -> R {
    THREAD_WAKER
        .with(|cell| f(cell.get_or_init(|| Waker::from(Arc::new(ThreadWaker(thread::current()))))))
}

/// Drives `future` on this thread, parking between polls.
#[cfg(feature = "scoped")]
pub(crate) fn block_on<T>(
    mut future: std::pin::Pin<Box<dyn Future<Output = T> + Send + 'static>>,
) -> T {
    use std::task::{Context, Poll};
    let waker = thread_waker();
    let mut cx = Context::from_waker(&waker);
    loop {
        if let Poll::Ready(value) = future.as_mut().poll(&mut cx) {
            return value;
        }
        thread::park();
    }
}
