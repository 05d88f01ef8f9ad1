//! Resource-scoped compartments on tokio: bulkhead-std's
//! [`scoped`](bulkhead_std::scoped) module, re-exported whole
//! ([`Scoped`], [`Opener`], [`resolve`], …), [`ScopedExt`] to enter and
//! shut a [`Scoped`] down with tokio's clock, and a spawn that carries the
//! ambient scope.
//!
//! The compartment, its resource slot and the ambient scope live in
//! bulkhead-std (see [`bulkhead_std::scoped`]); this module only adds
//! tokio's timer. The ambient scope is task-local: it is set during each
//! poll of the entered future, so it survives `.await` points and
//! moves between worker threads with its task, and a task that the work
//! spawns does not inherit it unless spawned with [`spawn_in_scope`].

use std::future::Future;
use std::time::Duration;

// Everything of bulkhead-std's scoped module, so that
// `bulkhead_tokio::scoped` is the one path a tokio user needs (a private
// import of one of these names would hide its public re-export).
pub use bulkhead_std::scoped::*;
use tokio::task::JoinHandle;

/// tokio-clock entries and shutdown for a [`Scoped`] compartment.
///
/// The compartment, its resource slot and the ambient scope live in
/// bulkhead-std (see [`bulkhead_std::scoped`]); this trait only adds
/// tokio's timer. The ambient scope is task-local: it is set during each
/// poll of the entered future, so it survives `.await` points and moves
/// between worker threads with its task, and a task that the work spawns
/// does not inherit it unless spawned with [`spawn_in_scope`].
///
/// Every wait here is measured by [`tokio::time`], so tests can pause and
/// advance the clock. Import it with `use bulkhead_tokio::prelude::*;`.
pub trait ScopedExt<R: Send + Sync + 'static>: sealed::Sealed {
    /// Enters the compartment: takes a seat within its wait budget, opens
    /// the resource if nobody has yet (an async initialiser is awaited;
    /// waiting, within the same budget, for an entry that is opening it),
    /// and returns the guard. As
    /// [`Scoped::enter_timeout`] with `tokio::time::sleep`.
    ///
    /// # Cancel safety
    /// Dropping the future at any point loses nothing: a caller waiting
    /// for a seat leaves the line, one waiting for the opening leaves the
    /// slot, and one running the initialiser drops it unfinished, after
    /// which another entry opens instead. Any seat taken is given back.
    ///
    /// # Errors
    /// [`ScopeError::Rejected`] (no seat), [`ScopeError::Open`] (the
    /// initialiser failed), [`ScopeError::OpenTimeout`].
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// use bulkhead_tokio::prelude::*;
    /// use bulkhead_tokio::Config;
    /// use bulkhead_tokio::scoped::{Opener, Scoped};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let api = Scoped::new(Config::new("api", 2), "api-client", Opener::future(|_| async {
    ///     Ok::<_, std::io::Error>(String::from("connected"))
    /// }))?
    /// .max_wait(Duration::from_millis(100));
    /// let inside = api.enter_within().await?;
    /// assert_eq!(*inside, "connected");
    /// # Ok(())
    /// # }
    /// ```
    fn enter_within(&self) -> impl Future<Output = Result<Entered<'_, R>, ScopeError>>;

    /// Runs `work` inside the compartment, the ambient scope set for each
    /// of its polls (task-local; see [`ScopedExt`]). As
    /// [`Scoped::run_timeout`] with `tokio::time::sleep`.
    ///
    /// # Cancel safety
    /// Dropping the future loses nothing: before admission as
    /// [`enter_within`](Self::enter_within); after it, `work` is dropped unfinished and
    /// the seat given back.
    ///
    /// # Errors
    /// As [`enter_within`](Self::enter_within); `work` has then not been polled.
    ///
    /// # Examples
    /// ```
    /// use bulkhead_tokio::prelude::*;
    /// use bulkhead_tokio::Config;
    /// use bulkhead_tokio::scoped::{self, Opener, Scoped};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// struct Pool(&'static str);
    /// let app_pool = Pool("app");
    /// let checkout = Scoped::new(Config::new("checkout", 4), "checkout-pool",
    ///     Opener::blocking(|_| Ok::<_, std::io::Error>(Pool("checkout"))))?;
    /// let used = checkout.run_within(async {
    ///     tokio::task::yield_now().await;
    ///     scoped::resolve(None, &app_pool).0 // the default, replaced by the scope
    /// }).await?;
    /// assert_eq!(used, "checkout");
    /// # Ok(())
    /// # }
    /// ```
    fn run_within<F: Future>(&self, work: F)
    -> impl Future<Output = Result<F::Output, ScopeError>>;

    /// Shuts the compartment down: closes it, waits at most `bound` (on
    /// tokio's clock) for its holders, then closes the resource, awaiting
    /// an async close hook. As [`Scoped::shutdown_timeout`].
    ///
    /// # Cancel safety
    /// Dropping the future after the compartment was closed leaves it
    /// closed with its resource open; call it again to finish.
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// use bulkhead_tokio::prelude::*;
    /// use bulkhead_tokio::Config;
    /// use bulkhead_tokio::scoped::{CloseOutcome, Opener, Scoped};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let db = Scoped::new(Config::new("db", 1), "db", Opener::blocking(|_| Ok::<_, std::io::Error>(())))?
    ///     .on_close_async(|()| async { tokio::task::yield_now().await });
    /// db.run_within(async {}).await?;
    /// assert_eq!(db.shutdown_within(Duration::from_secs(1)).await.outcome, CloseOutcome::Closed);
    /// # Ok(())
    /// # }
    /// ```
    fn shutdown_within(&self, bound: Duration) -> impl Future<Output = ShutdownReport>;
}

mod sealed {
    /// Only bulkhead-std's scoped compartment gets these methods.
    pub trait Sealed {}
    impl<R> Sealed for bulkhead_std::scoped::Scoped<R> {}
}

impl<R: Send + Sync + 'static> ScopedExt<R> for Scoped<R> {
    fn enter_within(&self) -> impl Future<Output = Result<Entered<'_, R>, ScopeError>> {
        self.enter_timeout(tokio::time::sleep)
    }

    fn run_within<F: Future>(
        &self,
        work: F,
    ) -> impl Future<Output = Result<F::Output, ScopeError>> {
        self.run_timeout(work, tokio::time::sleep)
    }

    fn shutdown_within(&self, bound: Duration) -> impl Future<Output = ShutdownReport> {
        self.shutdown_timeout(bound, tokio::time::sleep)
    }
}

/// `tokio::spawn`, carrying the current ambient scope into the new task,
/// so that it sees the same scoped resources as the code spawning it.
///
/// The task borrows the resources, not a seat: the compartment does not
/// count it, and it keeps the resources alive past the spawner's seat (a
/// shutdown then defers closing them to it). To count the task, enter the
/// compartment inside it instead.
///
/// # Panics
/// Outside a tokio runtime, as `tokio::spawn`.
///
/// # Examples
/// ```
/// use bulkhead_tokio::prelude::*;
/// use bulkhead_tokio::{Config, spawn_in_scope};
/// use bulkhead_tokio::scoped::{self, Opener, Scoped};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let reports = Scoped::new(Config::new("reports", 1), "reports-pool",
///     Opener::blocking(|_| Ok::<_, std::io::Error>(9_u16)))?;
/// let (plain, carried) = reports.run_within(async {
///     let plain = tokio::spawn(async { scoped::current::<u16>().is_some() });
///     let carried = spawn_in_scope(async { scoped::current::<u16>().map(|r| *r) });
///     (plain.await.unwrap(), carried.await.unwrap())
/// }).await?;
/// assert_eq!((plain, carried), (false, Some(9)));
/// # Ok(())
/// # }
/// ```
pub fn spawn_in_scope<F>(future: F) -> JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    tokio::spawn(in_current_scope(future))
}
