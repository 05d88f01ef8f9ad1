//! [`Opener`]: how a scoped compartment's resource is opened.

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::task::{Context, Poll};

use super::error::BoxError;
use super::slot::BoxFuture;

/// The initialiser of a scoped compartment's resource: a blocking
/// function or an async one. It runs on first entry, inside that entry's
/// seat, and again after a failure or in a [`renewed`](super::Scoped::renewed)
/// compartment.
///
/// ```
/// use bulkhead_std::scoped::Opener;
///
/// let blocking: Opener<String> = Opener::blocking(|| Ok::<_, std::io::Error>("client".to_owned()));
/// let future: Opener<String> = Opener::future(|| async { Ok::<_, std::io::Error>("client".to_owned()) });
/// # drop((blocking, future));
/// ```
pub struct Opener<R>(Arc<OpenerKind<R>>);

enum OpenerKind<R> {
    Blocking(Box<dyn Fn() -> Result<R, BoxError> + Send + Sync>),
    Async(Box<dyn Fn() -> BoxFuture<Result<R, BoxError>> + Send + Sync>),
}

impl<R> Clone for Opener<R> {
    fn clone(&self) -> Self {
        Self(Arc::clone(&self.0))
    }
}

impl<R: 'static> Opener<R> {
    /// A blocking initialiser. From async code it runs on the entering
    /// task's thread; a slow one belongs in [`future`](Self::future).
    /// Its error may be any `Into<BoxError>`: an error type or a string.
    ///
    /// ```
    /// use bulkhead_std::Config;
    /// use bulkhead_std::scoped::{Opener, Scoped};
    ///
    /// let path = std::env::temp_dir();
    /// let dir = Scoped::new(Config::new("files", 2), "temp-dir", Opener::blocking(move || {
    ///     std::fs::read_dir(&path).map(|entries| entries.count())
    /// }))?;
    /// assert!(dir.execute(|count| *count < usize::MAX).unwrap());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn blocking<E: Into<BoxError>>(
        open: impl Fn() -> Result<R, E> + Send + Sync + 'static,
    ) -> Self {
        Self(Arc::new(OpenerKind::Blocking(Box::new(move || {
            open().map_err(Into::into)
        }))))
    }

    /// An async initialiser. Async entries await it; a blocking entry
    /// ([`enter_blocking`](super::Scoped::enter_blocking)) drives it on its own
    /// thread, so a future that needs a runtime's reactor (a tokio socket)
    /// must then be entered from a thread inside that runtime (a
    /// `spawn_blocking` thread) or from async code. On a thread that
    /// drives an event loop a blocking entry refuses to drive it
    /// ([`ScopeError::NeedsAsyncEntry`](super::ScopeError::NeedsAsyncEntry)) rather than block that loop.
    ///
    /// ```
    /// use bulkhead_std::Config;
    /// use bulkhead_std::scoped::{Opener, Scoped};
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    /// let addr = listener.local_addr()?;
    /// let api = Scoped::new(Config::new("api", 2), "api-connection", Opener::future(move || async move {
    ///     tokio::task::yield_now().await; // an async client would connect here
    ///     std::net::TcpStream::connect(addr)
    /// }))?;
    /// let connected = api.run_timeout(async { true }, tokio::time::sleep).await?;
    /// assert!(connected);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    pub fn future<F, E>(open: impl Fn() -> F + Send + Sync + 'static) -> Self
    where
        F: Future<Output = Result<R, E>> + Send + 'static,
        E: Into<BoxError>,
    {
        Self(Arc::new(OpenerKind::Async(Box::new(move || {
            let opening = open();
            Box::pin(async move { opening.await.map_err(Into::into) })
        }))))
    }

    pub(super) fn is_async(&self) -> bool {
        matches!(&*self.0, OpenerKind::Async(_))
    }

    pub(super) fn open_blocking(&self) -> Result<R, BoxError> {
        match &*self.0 {
            OpenerKind::Blocking(open) => open(),
            OpenerKind::Async(open) => block_on(open()),
        }
    }

    pub(super) async fn open_async(&self) -> Result<R, BoxError> {
        match &*self.0 {
            OpenerKind::Blocking(open) => open(),
            OpenerKind::Async(open) => open().await,
        }
    }
}

impl<R> fmt::Debug for Opener<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match &*self.0 {
            OpenerKind::Blocking(_) => "Opener::blocking",
            OpenerKind::Async(_) => "Opener::future",
        })
    }
}

/// Drives `future` on this thread, parking between polls.
pub(super) fn block_on<T>(future: BoxFuture<T>) -> T {
    let mut future = future;
    let waker = crate::blocking::thread_waker();
    let mut cx = Context::from_waker(&waker);
    loop {
        if let Poll::Ready(value) = future.as_mut().poll(&mut cx) {
            return value;
        }
        std::thread::park();
    }
}
