//! The ambient scope: which compartment's resources the code running now
//! sees when it asks for the default resource of a kind.
//!
//! One thread-local holds the current scope, a chain of frames (innermost
//! first), each lending one compartment's resource of one type. Entering
//! a compartment through [`Scoped::execute`](super::Scoped::execute) sets
//! it for the closure; the async entries ([`Scoped::run_timeout`](super::Scoped::run_timeout),
//! bulkhead-tokio's `ScopedExt::run_within`) set it during every poll of the
//! entered future, and restore the previous one when the poll returns,
//! exactly as tokio's `task_local!` does. So the scope is task-local for
//! async code on any runtime, and thread-local for threads, with one
//! lookup ([`current`], [`resolve`]) for both.

use std::any::{Any, TypeId};
use std::cell::RefCell;
use std::fmt;
use std::ops::Deref;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use super::slot::Shared;
use bulkhead_core::Name;

/// One compartment's resource, lent to the code inside its scope.
struct Frame {
    kind: TypeId,
    compartment: Name,
    resource: Arc<dyn Any + Send + Sync>,
    outer: Option<Arc<Frame>>,
}

thread_local! {
    static CURRENT: RefCell<Option<Arc<Frame>>> = const { RefCell::new(None) };
}

/// Puts the previous scope back, also while a panic unwinds.
struct Restore(Option<Arc<Frame>>);

impl Drop for Restore {
    fn drop(&mut self) {
        let previous = self.0.take();
        // `try_with`: during thread teardown the slot may be gone already.
        let _ = CURRENT.try_with(|c| *c.borrow_mut() = previous);
    }
}

fn install<T>(frame: Option<Arc<Frame>>, f: impl FnOnce() -> T) -> T {
    let previous = CURRENT.with(|c| c.replace(frame));
    let _restore = Restore(previous);
    f()
}

fn captured() -> Option<Arc<Frame>> {
    CURRENT.try_with(|c| c.borrow().clone()).ok().flatten()
}

/// The current scope with `resource` lent on top of it.
pub(crate) fn with_resource<R: Send + Sync + 'static>(
    compartment: Name,
    resource: &Shared<R>,
) -> Scope {
    Scope {
        innermost: Some(Arc::new(Frame {
            kind: TypeId::of::<R>(),
            compartment,
            resource: resource.as_any(),
            outer: captured(),
        })),
    }
}

/// The innermost scoped resource of type `R` that the running code sees,
/// if it runs inside a compartment that lends one.
///
/// Inside [`Scoped::execute`](super::Scoped::execute) (threads) or a future
/// entered with [`Scoped::run_timeout`](super::Scoped::run_timeout)
/// or bulkhead-tokio's `ScopedExt::run_within` (tasks), this is that
/// compartment's resource; nested compartments lending the same type
/// shadow outer ones. Outside any scope it is `None`. Code that has an
/// application default should call [`resolve`] instead.
///
/// The handle keeps the resource alive, not the seat: keep it no longer
/// than the work it is for.
///
/// ```
/// use bulkhead_std::Config;
/// use bulkhead_std::scoped::{self, Opener, Scoped};
///
/// struct Db(&'static str);
/// let checkout = Scoped::new(Config::new("checkout", 2), "checkout-db", Opener::blocking(|_| Ok::<_, std::io::Error>(Db("checkout"))))?;
///
/// assert!(scoped::current::<Db>().is_none());
/// checkout.execute(|_| {
///     assert_eq!(scoped::current::<Db>().unwrap().0, "checkout");
/// })?;
/// assert!(scoped::current::<Db>().is_none());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn current<R: Send + Sync + 'static>() -> Option<Shared<R>> {
    let mut frame = captured();
    while let Some(f) = frame {
        if f.kind == TypeId::of::<R>() {
            return Shared::from_any(Arc::clone(&f.resource));
        }
        frame = f.outer.clone();
    }
    None
}

/// The resource of type `R` to use: `explicit` if the caller chose one,
/// else the scoped one ([`current`]), else the application's `default`.
///
/// An explicit choice always wins: a scope only replaces the *default*.
/// The answer says where it came from.
///
/// ```
/// use bulkhead_std::Config;
/// use bulkhead_std::scoped::{self, Opener, Resolved, Scoped};
///
/// #[derive(Debug, PartialEq)]
/// struct Pool(&'static str);
/// let app_default = Pool("app");
/// let chosen = Pool("chosen");
/// let reports = Scoped::new(Config::new("reports", 1), "reports-pool", Opener::blocking(|_| Ok::<_, std::io::Error>(Pool("reports"))))?;
///
/// fn pool_name(explicit: Option<&Pool>, default: &Pool) -> &'static str {
///     scoped::resolve(explicit, default).0
/// }
/// assert_eq!(pool_name(None, &app_default), "app");
/// reports.execute(|_| {
///     assert_eq!(pool_name(None, &app_default), "reports");
///     assert_eq!(pool_name(Some(&chosen), &app_default), "chosen"); // explicit wins
///     assert!(matches!(scoped::resolve(None, &app_default), Resolved::Scoped(_)));
/// })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn resolve<'a, R: Send + Sync + 'static>(
    explicit: Option<&'a R>,
    default: &'a R,
) -> Resolved<'a, R> {
    match explicit {
        Some(r) => Resolved::Explicit(r),
        None => match current::<R>() {
            Some(shared) => Resolved::Scoped(shared),
            None => Resolved::Default(default),
        },
    }
}

/// The answer of [`resolve`]: the resource, and where it came from.
/// Dereferences to the resource (examples at [`resolve`]).
pub enum Resolved<'a, R> {
    /// The caller passed it explicitly.
    Explicit(&'a R),
    /// The innermost compartment whose scope the code runs in lends it.
    Scoped(Shared<R>),
    /// No explicit choice and no scope: the application's default.
    Default(&'a R),
}

impl<R> Deref for Resolved<'_, R> {
    type Target = R;

    fn deref(&self) -> &R {
        match self {
            Resolved::Explicit(r) | Resolved::Default(r) => r,
            Resolved::Scoped(shared) => shared,
        }
    }
}

impl<R> fmt::Debug for Resolved<'_, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Resolved::Explicit(_) => "Resolved::Explicit",
            Resolved::Scoped(_) => "Resolved::Scoped",
            Resolved::Default(_) => "Resolved::Default",
        })
    }
}

/// A captured ambient scope, to carry into work that would not inherit it.
///
/// The scope does **not** follow into spawned threads or tasks: a spawned
/// task is polled on its own, outside the future that entered the
/// compartment, so it sees the application's defaults. To hand the scope
/// on, capture it and wrap the new work: [`Scope::wrap`] for a future
/// (or [`in_current_scope`]), [`Scope::with`] for a closure on another
/// thread.
///
/// A propagated scope lends the resource, not a seat: the spawned work is
/// not counted by the compartment, and it keeps the resource alive (a
/// shutdown then defers closing it to the last holder). To count the
/// spawned work, enter the compartment inside it instead.
///
/// ```
/// use bulkhead_std::Config;
/// use bulkhead_std::scoped::{self, Opener, Scope, Scoped};
///
/// let reports = Scoped::new(Config::new("reports", 1), "reports-pool", Opener::blocking(|_| Ok::<_, std::io::Error>(42_u32)))?;
/// reports.execute(|_| {
///     // Not inherited by a new thread...
///     std::thread::spawn(|| assert!(scoped::current::<u32>().is_none())).join().unwrap();
///     // ...unless asked for.
///     let scope = Scope::capture();
///     std::thread::spawn(move || scope.with(|| assert_eq!(*scoped::current::<u32>().unwrap(), 42)))
///         .join()
///         .unwrap();
/// })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Default)]
pub struct Scope {
    innermost: Option<Arc<Frame>>,
}

impl Scope {
    /// The scope the running code is in (empty outside any compartment;
    /// example at [`Scope`]).
    pub fn capture() -> Self {
        Self {
            innermost: captured(),
        }
    }

    /// The empty scope: inside it, code sees the application defaults,
    /// even within a compartment.
    ///
    /// ```
    /// use bulkhead_std::Config;
    /// use bulkhead_std::scoped::{self, Opener, Scope, Scoped};
    ///
    /// let db = Scoped::new(Config::new("db", 1), "db", Opener::blocking(|_| Ok::<_, std::io::Error>(3_u8)))?;
    /// db.execute(|_| {
    ///     assert!(scoped::current::<u8>().is_some());
    ///     assert!(Scope::empty().with(|| scoped::current::<u8>().is_none()));
    ///     assert!(Scope::empty().is_empty() && !Scope::capture().is_empty());
    /// })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub const fn empty() -> Self {
        Self { innermost: None }
    }

    /// Whether no compartment lends anything in this scope (example at
    /// [`empty`](Self::empty)).
    pub fn is_empty(&self) -> bool {
        self.innermost.is_none()
    }

    /// The compartments lending resources in this scope, innermost first.
    ///
    /// ```
    /// # use bulkhead_std::scoped::Scope;
    /// assert!(Scope::capture().compartments().is_empty());
    /// ```
    pub fn compartments(&self) -> Vec<Name> {
        let mut names = Vec::new();
        let mut frame = self.innermost.as_deref();
        while let Some(f) = frame {
            names.push(f.compartment.clone());
            frame = f.outer.as_deref();
        }
        names
    }

    /// Calls `f` with this scope set on the current thread, then restores
    /// the previous scope (also if `f` panics; examples at [`Scope`] and
    /// [`empty`](Self::empty)). It takes no seat: a scope only sets which
    /// compartment's resource is the default ([`wrap`](Self::wrap) is the
    /// same for a future).
    pub fn with<T>(&self, f: impl FnOnce() -> T) -> T {
        install(self.innermost.clone(), f)
    }

    /// `future`, polled inside this scope: the scope is set for each poll
    /// and the previous one restored after it, like a task-local.
    ///
    /// ```
    /// use bulkhead_std::Config;
    /// use bulkhead_std::scoped::{self, Opener, Scope, Scoped};
    ///
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let db = Scoped::new(Config::new("db", 1), "db", Opener::blocking(|_| Ok::<_, std::io::Error>(3_u8)))?;
    /// let scope = db.execute(|_| Scope::capture())?; // kept past the entry
    /// let seen = scope.wrap(async { scoped::current::<u8>().map(|r| *r) }).await;
    /// assert_eq!(seen, Some(3));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    pub fn wrap<F: Future>(self, future: F) -> InScope<F> {
        InScope {
            scope: self,
            future,
        }
    }
}

impl fmt::Debug for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Scope")
            .field("compartments", &self.compartments())
            .finish()
    }
}

/// `future`, carrying the current ambient scope with it: for
/// `tokio::spawn(in_current_scope(work))` and other spawns that should
/// see the same scoped resources. See [`Scope`] for what is lent.
///
/// ```
/// use bulkhead_std::Config;
/// use bulkhead_std::scoped::{self, Opener, Scoped};
///
/// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
/// let reports = Scoped::new(Config::new("reports", 1), "reports-pool", Opener::blocking(|_| Ok::<_, std::io::Error>(7_u8)))?;
/// let seen = reports
///     .run_timeout(
///         async {
///             let plain = tokio::spawn(async { scoped::current::<u8>().is_some() });
///             let carried = tokio::spawn(scoped::in_current_scope(async {
///                 scoped::current::<u8>().map(|r| *r)
///             }));
///             (plain.await.unwrap(), carried.await.unwrap())
///         },
///         tokio::time::sleep,
///     )
///     .await?;
/// assert_eq!(seen, (false, Some(7)));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
pub fn in_current_scope<F: Future>(future: F) -> InScope<F> {
    Scope::capture().wrap(future)
}

pin_project_lite::pin_project! {
    /// A future polled inside an ambient [`Scope`]; made by
    /// [`Scope::wrap`] and [`in_current_scope`] (examples there).
    ///
    /// # Cancel safety
    /// As the wrapped future's: dropping it drops that future; the scope
    /// is only set while a poll runs, so nothing is left behind.
    #[must_use = "futures do nothing unless polled"]
    pub struct InScope<F> {
        scope: Scope,
        #[pin]
        future: F,
    }
}

impl<F: Future> Future for InScope<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.project();
        let future = this.future;
        this.scope.with(|| future.poll(cx))
    }
}

impl<F> fmt::Debug for InScope<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InScope")
            .field("scope", &self.scope)
            .finish_non_exhaustive()
    }
}
