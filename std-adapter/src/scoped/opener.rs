//! [`Opener`]: how a scoped compartment's resource is opened.

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use bulkhead_core::{MaxWait, Name};

use super::error::BoxError;
use super::slot::BoxFuture;

/// What an [`Opener`] is told about the compartment it opens a resource
/// for: its name and its settings as they stand when the resource is
/// opened, after every override (a registry's file and
/// `BULKHEAD_<NAME>_*` variables, a live `set_max_concurrent` before the
/// opening).
///
/// Every entry borrows the one resource, so a resource with a fixed number
/// of connections must have at least `max_concurrent` of them, or entries
/// that hold a seat wait inside the resource instead of in the
/// compartment's line. Size it from [`max_concurrent`](Self::max_concurrent),
/// never from a constant: then a setting changed in a file or the
/// environment reaches the resource too.
///
/// ```
/// use bulkhead_std::Config;
/// use bulkhead_std::scoped::{Opener, Scoped};
///
/// struct Pool { connections: usize }
///
/// let db = Scoped::new(Config::new("orders", 3), "orders-pool", Opener::blocking(|opening| {
///     assert_eq!((opening.compartment.as_str(), opening.resource), ("orders", "orders-pool"));
///     Ok::<_, std::io::Error>(Pool { connections: opening.max_concurrent })
/// }))?;
/// assert_eq!(db.execute(|pool| pool.connections)?, 3);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Opening {
    /// The compartment's name (for a registry's compartment, the name it
    /// is registered under).
    pub compartment: Name,
    /// The resource's name, as given to [`Scoped::new`](super::Scoped::new).
    pub resource: &'static str,
    /// The compartment's seats when the resource is opened: how many
    /// entries may borrow it at once. A later change of the limit does not
    /// reopen the resource; build the compartment again
    /// ([`renewed`](super::Scoped::renewed)) for that.
    pub max_concurrent: usize,
    /// The entries' wait budget.
    pub max_wait: MaxWait,
}

/// The initialiser of a scoped compartment's resource: a blocking
/// function or an async one. It runs on first entry, inside that entry's
/// seat, and again after a failure or in a [`renewed`](super::Scoped::renewed)
/// compartment. It is given the compartment's [`Opening`]: its name and
/// its effective `max_concurrent`, to size the resource.
///
/// ```
/// use bulkhead_std::scoped::Opener;
///
/// let blocking: Opener<String> = Opener::blocking(|_| Ok::<_, std::io::Error>("client".to_owned()));
/// let future: Opener<String> = Opener::future(|opening| {
///     let name = format!("{}-client", opening.compartment);
///     async move { Ok::<_, std::io::Error>(name) }
/// });
/// # drop((blocking, future));
/// ```
pub struct Opener<R>(Arc<OpenerKind<R>>);

type OpenBlocking<R> = dyn Fn(&Opening) -> Result<R, BoxError> + Send + Sync;
type OpenAsync<R> = dyn Fn(&Opening) -> BoxFuture<Result<R, BoxError>> + Send + Sync;

enum OpenerKind<R> {
    Blocking(Box<OpenBlocking<R>>),
    Async(Box<OpenAsync<R>>),
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
    /// let dir = Scoped::new(Config::new("files", 2), "temp-dir", Opener::blocking(move |_| {
    ///     std::fs::read_dir(&path).map(|entries| entries.count())
    /// }))?;
    /// assert!(dir.execute(|count| *count < usize::MAX).unwrap());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn blocking<E: Into<BoxError>>(
        open: impl Fn(&Opening) -> Result<R, E> + Send + Sync + 'static,
    ) -> Self {
        Self(Arc::new(OpenerKind::Blocking(Box::new(move |opening| {
            open(opening).map_err(Into::into)
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
    /// let api = Scoped::new(Config::new("api", 2), "api-connection", Opener::future(move |_| async move {
    ///     tokio::task::yield_now().await; // an async client would connect here
    ///     std::net::TcpStream::connect(addr)
    /// }))?;
    /// let connected = api.run_timeout(async { true }, tokio::time::sleep).await?;
    /// assert!(connected);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    pub fn future<F, E>(open: impl Fn(&Opening) -> F + Send + Sync + 'static) -> Self
    where
        F: Future<Output = Result<R, E>> + Send + 'static,
        E: Into<BoxError>,
    {
        Self(Arc::new(OpenerKind::Async(Box::new(move |opening| {
            let opened = open(opening);
            Box::pin(async move { opened.await.map_err(Into::into) })
        }))))
    }

    pub(super) fn is_async(&self) -> bool {
        matches!(&*self.0, OpenerKind::Async(_))
    }

    pub(super) fn open_blocking(&self, opening: &Opening) -> Result<R, BoxError> {
        match &*self.0 {
            OpenerKind::Blocking(open) => open(opening),
            OpenerKind::Async(open) => crate::park::block_on(open(opening)),
        }
    }

    pub(super) async fn open_async(&self, opening: &Opening) -> Result<R, BoxError> {
        match &*self.0 {
            OpenerKind::Blocking(open) => open(opening),
            OpenerKind::Async(open) => open(opening).await,
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
