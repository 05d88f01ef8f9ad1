//! Which async runtime, if any, is driving the current thread.
//!
//! A blocking acquire made on such a thread gives the immediate verdict
//! instead of parking: the seat it would wait for may be held by a task of
//! the very event loop it would block, which then could never release it.

use std::fmt;

/// An async runtime found driving the current thread by [`event_loop`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum EventLoop {
    /// A tokio runtime: a worker thread of a multi-thread runtime, or the
    /// thread that drives a current-thread runtime or a `LocalRuntime`.
    Tokio,
    /// An async-std task: inside `async_std::task::spawn` or
    /// `async_std::task::block_on`.
    AsyncStd,
}

impl fmt::Display for EventLoop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            EventLoop::Tokio => "a tokio runtime",
            EventLoop::AsyncStd => "an async-std task",
        })
    }
}

/// The event loop driving the current thread, if one of the detected kinds
/// is.
///
/// # What is detected
///
/// | runtime | feature | signal | detected | not detected |
/// |---|---|---|---|---|
/// | tokio ≥ 1.54 | `tokio` | `tokio::runtime::worker_index()` is `Some` | worker threads of a multi-thread runtime; the thread driving a current-thread runtime or `LocalRuntime` (inside `block_on`, including its `LocalSet`s) | `spawn_blocking` threads (they may block: that is what they are for); the thread inside a multi-thread runtime's `Runtime::block_on` (it polls only its own future, the workers keep running); threads that merely entered a runtime with `Handle::enter` |
/// | async-std 1.13 | `async-std` | `async_std::task::try_current()` is `Some` | code inside an async-std task (`task::spawn`, `spawn_local`, `block_on`) | `spawn_blocking` closures |
///
/// Limits, by design of the signals:
/// - inside `tokio::task::block_in_place` the thread still counts as a
///   tokio worker, so the verdict stays immediate: wait from
///   `spawn_blocking` instead, or use an async acquire;
/// - smol, `futures::executor`, `pollster` and other executors expose no
///   "am I inside a task" signal and are **not** detected: never make a
///   blocking acquire with a wait budget from their tasks;
/// - without the `tokio` / `async-std` feature, that runtime is not
///   detected at all.
///
/// # Examples
///
/// ```
/// // A plain thread runs no event loop.
/// assert_eq!(bulkhead_std::event_loop(), None);
/// ```
#[must_use]
pub fn event_loop() -> Option<EventLoop> {
    #[cfg(feature = "tokio")]
    if tokio::runtime::worker_index().is_some() {
        return Some(EventLoop::Tokio);
    }
    #[cfg(feature = "async-std")]
    if async_std::task::try_current().is_some() {
        return Some(EventLoop::AsyncStd);
    }
    None
}
