//! Resource-scoped compartments: a compartment that owns its own
//! dependency (a client, a connection pool, a handle), so that one
//! business context can never exhaust another's connections.
//!
//! A [`Scoped<R>`] is a compartment ([`Bulkhead`]: seats, a wait budget,
//! the same rejections, snapshots and registry entry as any other) plus
//! one resource of type `R` and its initialiser:
//!
//! - **Opened on first entry**, not at construction. Concurrent first
//!   entries run the initialiser exactly once; the others wait for it
//!   within their own wait budget and then borrow it. An entry while it is
//!   open borrows it too; there is never a second copy.
//! - **A failed opening** gives [`ScopeError::Open`] naming the
//!   compartment and the resource, gives the seat back, and is not
//!   cached: the entries that waited on that attempt get its error, and
//!   the next entry tries again.
//! - **Entering** takes a seat and gives `&R` for as long as the seat is
//!   held ([`Entered`]). [`execute`](Scoped::execute) and
//!   [`run_timeout`](Scoped::run_timeout) also set the **ambient
//!   scope**: inside them, [`resolve`] and [`current`] find this
//!   compartment's resource instead of the application's default, while an
//!   explicitly passed resource always wins.
//! - **Shutdown** ([`shutdown_blocking`](Scoped::shutdown_blocking),
//!   [`shutdown_timeout`](Scoped::shutdown_timeout)) closes the
//!   compartment (new entries get [`Error::Closed`](crate::Error::Closed)), waits at most a
//!   bound for the holders to finish, then closes the resource: by `Drop`,
//!   or with a close hook ([`on_close`](Scoped::on_close),
//!   [`on_close_async`](Scoped::on_close_async)). The registry's
//!   [`shutdown`](crate::registry::Registry::shutdown_blocking) closes every scoped
//!   compartment in reverse order of opening.
//!
//! # One resource, sized by the compartment
//!
//! Every entry borrows the same `&R`: the compartment's seats, not the
//! resource, decide how many callers use it at once. A resource with a
//! fixed number of connections (a connection pool) must therefore have at
//! least `max_concurrent` of them, or callers holding a seat queue again
//! inside the resource, out of the compartment's sight. The opener is
//! given the compartment's effective settings ([`Opening`]: its name and
//! `max_concurrent` after every file, environment or live override), so
//! size the resource from [`Opening::max_concurrent`], never from a
//! constant kept equal to the limit by hand.
//!
//! # Nothing is closed while it can be reached
//!
//! Every entry keeps a reference-counted handle ([`Shared`]) to the open
//! resource for as long as its seat is held, so the resource cannot be
//! dropped under a live borrow: that is guaranteed by ownership, not by
//! timing. If the shutdown bound expires while holders remain, the
//! shutdown returns [`CloseOutcome::Deferred`] and the **last holder**
//! closes the resource when it lets go (a sync hook runs then; an async
//! hook cannot run from a `Drop`, so the resource is dropped and a
//! warning logged).
//!
//! # Runs
//!
//! A compartment belongs to one run of the application: after its
//! shutdown it admits nobody, like core's `close`. A later run (a new
//! registry, the next test with its own runtime) builds its compartment
//! again with [`Scoped::renewed`], and that one opens its resource afresh.
//! A resource bound to one async runtime (most async clients are) should
//! not outlive that runtime, so close it with the run. A compartment
//! shared by two overlapping runs (registered in both registries) is one
//! compartment: the later run borrows what the first opened, and the
//! first shutdown closes it for both; give runs whose lifetimes differ
//! their own compartments.
//!
//! # Examples
//!
//! ```
//! use std::sync::atomic::{AtomicUsize, Ordering};
//! use std::sync::Arc;
//! use std::time::Duration;
//! use bulkhead_std::Config;
//! use bulkhead_std::scoped::{self, CloseOutcome, Opener, Scoped};
//!
//! struct Pool { name: &'static str }
//!
//! let opened = Arc::new(AtomicUsize::new(0));
//! let counter = opened.clone();
//! let checkout = Scoped::new(
//!     Config::new("checkout", 4),
//!     "checkout-pool",
//!     Opener::blocking(move |_| {
//!         counter.fetch_add(1, Ordering::Relaxed);
//!         Ok::<_, std::io::Error>(Pool { name: "checkout" })
//!     }),
//! )?
//! .max_wait(Duration::from_millis(50));
//! assert_eq!(opened.load(Ordering::Relaxed), 0); // not opened at construction
//!
//! let app_pool = Pool { name: "app" };
//! let used = checkout.execute(|pool| {
//!     // Code that asks for the default pool gets the compartment's.
//!     assert_eq!(scoped::resolve(None, &app_pool).name, "checkout");
//!     pool.name
//! })?;
//! assert_eq!((used, opened.load(Ordering::Relaxed)), ("checkout", 1));
//!
//! let report = checkout.shutdown_blocking(Duration::from_secs(1));
//! assert_eq!(report.outcome, CloseOutcome::Closed);
//! assert!(checkout.enter_blocking().is_err()); // closed for good
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod ambient;
mod enter;
mod error;
mod opener;
mod shutdown;
mod slot;

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use bulkhead_core::{Config, ConfigError, MaxWait, Name, State};

use crate::{Bulkhead, StdLock};

pub use ambient::{InScope, Resolved, Scope, current, in_current_scope, resolve};
pub use enter::Entered;
pub use error::{BoxError, OpenError, ScopeError};
pub use opener::{Opener, Opening};
pub use shutdown::{CloseOutcome, ShutdownReport};
pub use slot::{ResourceState, Shared};

use slot::{Closer, Slot};

/// A compartment that owns a resource `R`, opened on first entry and
/// closed at shutdown. See the [module docs](self) for the semantics.
///
/// Every seat borrows the one `R`: size a resource with a fixed number of
/// connections from the [`Opening`] its opener is given
/// ([`Opening::max_concurrent`]), so that it always has a connection per
/// seat, whatever overrides the limit.
pub struct Scoped<R> {
    bulkhead: Arc<Bulkhead>,
    /// The compartment's name (`config.name` for [`new`](Self::new), a
    /// shared name for the registry's).
    name: Name,
    config: Config,
    max_wait: MaxWait,
    opener: Opener<R>,
    slot: Slot<R>,
}

impl<R: Send + Sync + 'static> Scoped<R> {
    /// A compartment built from `config` whose resource, called
    /// `resource` in errors, logs and metrics, is opened by `opener` on
    /// first entry. Fails fast until given a [`max_wait`](Self::max_wait).
    ///
    /// # Errors
    /// As [`Config::validate`]: zero or too many seats.
    ///
    /// # Examples
    /// ```
    /// use bulkhead_std::{Config, ConfigError};
    /// use bulkhead_std::scoped::{Opener, Scoped};
    ///
    /// let ok = Scoped::new(Config::new("reports", 2), "reports-db", Opener::blocking(|_| Ok::<_, std::io::Error>(())));
    /// assert!(ok.is_ok());
    /// let zero = Scoped::new(Config::new("reports", 0), "reports-db", Opener::blocking(|_| Ok::<_, std::io::Error>(())));
    /// assert!(matches!(zero, Err(ConfigError::ZeroCapacity { name }) if name == "reports"));
    /// ```
    pub fn new(
        config: Config,
        resource: &'static str,
        opener: Opener<R>,
    ) -> Result<Self, ConfigError> {
        let bulkhead = Arc::new(Bulkhead::from_config(config)?);
        Ok(Self {
            bulkhead,
            name: Name::from_static(config.name),
            config,
            max_wait: MaxWait::FailFast,
            opener,
            slot: Slot::new(Name::from_static(config.name), resource, Closer::Drop),
        })
    }

    /// The entries' wait budget, for a seat and for another entry's
    /// opening together: [`MaxWait::FailFast`] (the default), a
    /// [`Duration`](std::time::Duration) (zero fails fast) or
    /// [`MaxWait::Forever`].
    #[must_use]
    pub fn max_wait(mut self, max_wait: impl Into<MaxWait>) -> Self {
        self.max_wait = max_wait.into();
        self
    }

    /// Closes the resource with `hook` at shutdown instead of dropping it.
    ///
    /// ```
    /// use std::sync::{Arc, atomic::{AtomicBool, Ordering}};
    /// use std::time::Duration;
    /// use bulkhead_std::Config;
    /// use bulkhead_std::scoped::{Opener, Scoped};
    ///
    /// let flushed = Arc::new(AtomicBool::new(false));
    /// let seen = flushed.clone();
    /// let audit = Scoped::new(Config::new("audit", 1), "audit-log", Opener::blocking(|_| Ok::<_, std::io::Error>(vec!["boot"])))?
    ///     .on_close(move |log| seen.store(log == ["boot"], Ordering::Relaxed));
    /// audit.execute(|_| ())?;
    /// audit.shutdown_blocking(Duration::from_secs(1));
    /// assert!(flushed.load(Ordering::Relaxed));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn on_close(mut self, hook: impl Fn(R) + Send + Sync + 'static) -> Self {
        self.slot.closer = Arc::new(Closer::Blocking(Box::new(hook)));
        self
    }

    /// Closes the resource with the async `hook` at shutdown (a pool's
    /// `close().await`). An async shutdown awaits it; a blocking one
    /// drives it on the calling thread (see [`Opener::future`] for what
    /// that needs), except on a thread that drives an event loop, and a
    /// last holder's drop after an expired bound cannot await it: the
    /// resource is then dropped instead, with a `tracing` warning.
    ///
    /// ```
    /// use std::time::Duration;
    /// use bulkhead_std::Config;
    /// use bulkhead_std::scoped::{CloseOutcome, Opener, Scoped};
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// let pool = Scoped::new(Config::new("pool", 1), "pool", Opener::blocking(|_| Ok::<_, std::io::Error>(3_u8)))?
    ///     .on_close_async(|n| async move { tokio::time::sleep(Duration::from_millis(n.into())).await });
    /// pool.enter_timeout(tokio::time::sleep).await?;
    /// let report = pool.shutdown_timeout(Duration::from_secs(1), tokio::time::sleep).await;
    /// assert_eq!(report.outcome, CloseOutcome::Closed);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    #[must_use]
    pub fn on_close_async<F>(mut self, hook: impl Fn(R) -> F + Send + Sync + 'static) -> Self
    where
        F: Future<Output = ()> + Send + 'static,
    {
        self.slot.closer = Arc::new(Closer::Async(Box::new(move |r| Box::pin(hook(r)))));
        self
    }

    /// The same compartment built again for a later run: same settings,
    /// initialiser and close hook, fresh seats, resource not yet opened.
    ///
    /// ```
    /// use std::time::Duration;
    /// use bulkhead_std::Config;
    /// use bulkhead_std::scoped::{Opener, Scoped};
    ///
    /// let first = Scoped::new(Config::new("db", 1), "db", Opener::blocking(|_| Ok::<_, std::io::Error>(())))?;
    /// first.execute(|_| ())?;
    /// first.shutdown_blocking(Duration::from_secs(1));
    /// let next = first.renewed();
    /// assert!(!next.resource_state().open); // opens on its own first entry
    /// assert!(next.execute(|_| ()).is_ok());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn renewed(&self) -> Self {
        match self.rebuilt(self.name.clone()) {
            Ok(renewed) => renewed,
            // The same settings were validated by `new`, for this name.
            Err(e) => unreachable!("a validated config was refused: {e}"),
        }
    }

    /// The same compartment built again, called `name`: fresh seats,
    /// resource not yet opened. The registry names its scoped compartments
    /// this way (their `build` closure sees a `Config`, whose name can only
    /// be a `&'static str`).
    pub(crate) fn rebuilt(&self, name: Name) -> Result<Self, ConfigError> {
        let bulkhead = Arc::new(Bulkhead::with_name(
            name.clone(),
            self.config,
            StdLock::new(),
        )?);
        let mut slot = Slot::new(name.clone(), self.slot.resource, Closer::Drop);
        slot.closer = Arc::clone(&self.slot.closer);
        Ok(Self {
            bulkhead,
            name,
            config: self.config,
            max_wait: self.max_wait,
            opener: self.opener.clone(),
            slot,
        })
    }

    /// The compartment's name.
    ///
    /// ```
    /// use std::time::Duration;
    /// use bulkhead_std::{Config, MaxWait};
    /// use bulkhead_std::scoped::{Opener, Scoped};
    ///
    /// let db = Scoped::new(Config::new("orders", 3), "orders-db", Opener::blocking(|_| Ok::<_, std::io::Error>(())))?
    ///     .max_wait(Duration::from_millis(20));
    /// assert_eq!((db.name().as_str(), db.resource_name()), ("orders", "orders-db"));
    /// assert_eq!(db.wait_budget(), MaxWait::UpTo(Duration::from_millis(20)));
    /// assert_eq!(db.bulkhead().name(), "orders");
    /// assert_eq!(db.state().max_concurrent, 3);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn name(&self) -> &Name {
        &self.name
    }

    /// The settings it was built with.
    #[cfg(feature = "registry")]
    pub(crate) fn core_config(&self) -> Config {
        self.config
    }

    /// The resource's name, as given to [`new`](Self::new) (example at
    /// [`name`](Self::name)).
    pub fn resource_name(&self) -> &'static str {
        self.slot.resource
    }

    /// The entries' wait budget (example at [`name`](Self::name)).
    pub fn wait_budget(&self) -> MaxWait {
        self.max_wait
    }

    /// The compartment itself: its seats, state and settings, as for any
    /// compartment (reconfigure it live with `set_max_concurrent`; example
    /// at [`name`](Self::name)).
    pub fn bulkhead(&self) -> &Arc<Bulkhead> {
        &self.bulkhead
    }

    /// The compartment's seat counters (example at [`name`](Self::name)).
    pub fn state(&self) -> State {
        self.bulkhead.state()
    }

    /// Whether the resource is open, and its counters.
    ///
    /// ```
    /// use bulkhead_std::Config;
    /// use bulkhead_std::scoped::{Opener, Scoped};
    ///
    /// let db = Scoped::new(Config::new("db", 1), "db", Opener::blocking(|_| Ok::<_, std::io::Error>(())))?;
    /// assert!(!db.resource_state().open);
    /// let inside = db.enter_blocking()?;
    /// let s = db.resource_state();
    /// assert!(s.open && s.holders == 1 && s.opens == 1);
    /// # drop(inside);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn resource_state(&self) -> ResourceState {
        self.slot.state()
    }

    /// When the resource was opened, in a process-wide order (larger is
    /// later); `None` while it is not open. The registry closes scoped
    /// compartments from the largest down.
    ///
    /// ```
    /// use bulkhead_std::Config;
    /// use bulkhead_std::scoped::{Opener, Scoped};
    ///
    /// let open = || Opener::blocking(|_| Ok::<_, std::io::Error>(()));
    /// let (a, b) = (Scoped::new(Config::new("a", 1), "a", open())?, Scoped::new(Config::new("b", 1), "b", open())?);
    /// assert_eq!(a.opened_order(), None);
    /// b.execute(|_| ())?;
    /// a.execute(|_| ())?;
    /// assert!(a.opened_order() > b.opened_order());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn opened_order(&self) -> Option<u64> {
        self.slot.opened_order()
    }
}

impl<R> fmt::Debug for Scoped<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Scoped")
            .field("name", &self.config.name)
            .field("resource", &self.slot.resource)
            .field("max_wait", &self.max_wait)
            .field("state", &self.bulkhead.state())
            .field("resource_state", &self.slot.state())
            .finish_non_exhaustive()
    }
}
