//! Scoped compartments in the registry: registered by name like any
//! other, closed in reverse order of opening by [`Registry::shutdown_blocking`].

use std::any::{Any, type_name};
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, PoisonError};
use std::time::{Duration, Instant};

use bulkhead_core::{Config, ConfigError, Name};

use super::{DomainConfig, Registered, Registry, RegistryError, names};
use crate::Bulkhead;
use crate::scoped::{ResourceState, Scoped, ShutdownReport};

type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;
type Sleep<'a> = &'a (dyn Fn(Duration) -> BoxFuture<'static, ()> + Send + Sync);

/// A scoped compartment of any resource type, as the registry keeps it.
pub(super) trait AnyScoped: Send + Sync {
    fn name(&self) -> &Name;
    fn bulkhead(&self) -> &Arc<Bulkhead>;
    fn opened_order(&self) -> Option<u64>;
    fn resource_state(&self) -> ResourceState;
    fn shutdown_blocking(&self, bound: Duration) -> ShutdownReport;
    fn shutdown_async<'a>(
        &'a self,
        bound: Duration,
        sleep: Sleep<'a>,
    ) -> BoxFuture<'a, ShutdownReport>;
    fn into_any(self: Arc<Self>) -> Arc<dyn Any + Send + Sync>;
}

impl<R: Send + Sync + 'static> AnyScoped for Scoped<R> {
    fn name(&self) -> &Name {
        Scoped::name(self)
    }

    fn bulkhead(&self) -> &Arc<Bulkhead> {
        Scoped::bulkhead(self)
    }

    fn opened_order(&self) -> Option<u64> {
        Scoped::opened_order(self)
    }

    fn resource_state(&self) -> ResourceState {
        Scoped::resource_state(self)
    }

    fn shutdown_blocking(&self, bound: Duration) -> ShutdownReport {
        Scoped::shutdown_blocking(self, bound)
    }

    fn shutdown_async<'a>(
        &'a self,
        bound: Duration,
        sleep: Sleep<'a>,
    ) -> BoxFuture<'a, ShutdownReport> {
        Box::pin(self.shutdown_timeout(bound, sleep))
    }

    fn into_any(self: Arc<Self>) -> Arc<dyn Any + Send + Sync> {
        self
    }
}

impl Registry {
    /// Creates the scoped compartment `name` and registers it, or returns
    /// the one already registered under `name` with the same resource type
    /// (`build` is then not called).
    ///
    /// Its settings are resolved as for
    /// [`get_or_create`](Self::get_or_create): `code`, overlaid with the
    /// file's `[domains.NAME]` and the `BULKHEAD_NAME_*` variables. `build`
    /// receives the resulting core [`Config`] and builds the compartment
    /// (initialiser, close hook); the wait budget is then set from the
    /// settings' `max_wait`. Every seat borrows the one resource, so size
    /// it in the opener from its [`Opening`](crate::scoped::Opening),
    /// which carries the registered name and the `max_concurrent` after
    /// the file's and the environment's overrides, never from a constant:
    /// `BULKHEAD_CHECKOUT_MAX_CONCURRENT=40` then gives the pool 40
    /// connections as well as 40 seats. The registry names the compartment `name`
    /// (a shared name, freed with the compartment): the `Config` that
    /// `build` sees has an empty `name`, since a `Config` can only hold a
    /// `&'static str`. The compartment is an ordinary registered
    /// compartment too: [`get`](Self::get), [`acquire_blocking`](Self::acquire_blocking),
    /// [`reconfigure`](Self::reconfigure), [`all_states`](Self::all_states)
    /// and the metrics see its seats. A bounded registry never evicts it:
    /// the compartment keeps a handle to its seats, so it never counts as
    /// idle.
    ///
    /// ```
    /// use bulkhead_std::MaxWait;
    /// use bulkhead_std::registry::{DomainConfig, Registry};
    /// use bulkhead_std::scoped::{Opener, Scoped};
    ///
    /// let registry = Registry::local();
    /// let checkout = registry.create_scoped("checkout", DomainConfig::new(4).max_wait(MaxWait::from_millis(50)), |config| {
    ///     // One connection per seat, whatever the file or the environment set.
    ///     Scoped::new(config, "checkout-pool", Opener::blocking(|opening| Ok::<_, std::io::Error>(vec!["conn"; opening.max_concurrent])))
    /// })?;
    /// assert_eq!(checkout.wait_budget(), MaxWait::from_millis(50));
    /// assert_eq!(checkout.execute(|pool| pool.len())?, 4);
    /// assert_eq!(registry.get("checkout")?.state().max_concurrent, 4); // like any compartment
    /// let again = registry.get_scoped::<Vec<&str>>("checkout")?;
    /// assert!(std::sync::Arc::ptr_eq(&checkout, &again));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`RegistryError::InvalidName`], [`RegistryError::Settings`],
    /// [`RegistryError::Config`] (also what `build` returns).
    pub fn create_scoped<R: Send + Sync + 'static>(
        &self,
        name: &str,
        code: DomainConfig,
        build: impl FnOnce(Config) -> Result<Scoped<R>, ConfigError>,
    ) -> Result<Arc<Scoped<R>>, RegistryError> {
        if let Ok(existing) = self.get_scoped::<R>(name) {
            return Ok(self.insert_scoped(existing, true).0);
        }
        let name = names::shared(name)?;
        let settings = self.resolve(&name, code)?;
        if settings.limit.is_some() {
            return Err(RegistryError::Unsupported {
                name,
                what: "a scoped compartment's limit is fixed; remove `limit` from its settings \
                       (code, file or BULKHEAD_<NAME>_LIMIT_* variables)",
            });
        }
        if !settings.partitions.is_empty() {
            return Err(RegistryError::Unsupported {
                name,
                what: "a scoped compartment cannot be partitioned; remove the partitions from \
                       its settings (code or the file's [domains.NAME.partitions.*] tables)",
            });
        }
        let mut config = Config::new("", settings.max_concurrent)
            .admission(settings.admission)
            .queue_order(settings.queue_order);
        config.max_waiting = settings.max_waiting;
        let scoped = build(config)?.rebuilt(name)?.max_wait(settings.max_wait);
        // Built outside any lock (`build` is the caller's code). A racing
        // call for the same name may have won meanwhile: then this one is
        // dropped unopened, which costs nothing, and the winner returned.
        Ok(self.insert_scoped(Arc::new(scoped), true).0)
    }

    /// Registers `scoped` (unless `keep_existing` and a scoped compartment
    /// of that name and type exists, which is returned instead), with the
    /// replaced compartment. Lock order: the scoped list, then the map.
    fn insert_scoped<R: Send + Sync + 'static>(
        &self,
        scoped: Arc<Scoped<R>>,
        keep_existing: bool,
    ) -> (Arc<Scoped<R>>, Option<Registered>) {
        let name = scoped.name();
        let mut list = self.scoped.lock().unwrap_or_else(PoisonError::into_inner);
        if keep_existing {
            let existing = list.iter().find(|s| s.name() == name).cloned();
            if let Some(Ok(existing)) = existing.map(|s| s.into_any().downcast::<Scoped<R>>()) {
                // Still the registered compartment of that name (not
                // unregistered or replaced since)? Then nothing to do.
                let registered = self.get(name).ok();
                if registered.is_some_and(|b| Arc::ptr_eq(&b, existing.bulkhead())) {
                    return (existing, None);
                }
                let scoped = existing;
                let replaced = self.register(Arc::clone(scoped.bulkhead()));
                self.set_entry_budget(&scoped);
                return (scoped, replaced);
            }
        }
        let replaced = self.register(Arc::clone(scoped.bulkhead()));
        self.set_entry_budget(&scoped);
        list.retain(|s| s.name() != name);
        list.push(scoped.clone());
        (scoped, replaced)
    }

    /// The registry entry's settings follow the scoped compartment's.
    fn set_entry_budget<R: Send + Sync + 'static>(&self, scoped: &Scoped<R>) {
        if let Some(entry) = self.write().get_mut(scoped.name()) {
            entry.config.max_wait = scoped.wait_budget();
            entry.config.max_waiting = scoped.core_config().max_waiting;
        }
    }

    /// Registers a scoped compartment built in code under its name,
    /// replacing any compartment of that name (as
    /// [`register`](Self::register), whose rules apply), and returns the
    /// replaced one. The registry's [`shutdown_blocking`](Self::shutdown_blocking) closes it,
    /// also after [`unregister`](Self::unregister) removed its name from
    /// the lookups.
    ///
    /// ```
    /// use std::time::Duration;
    /// use bulkhead_std::Config;
    /// use bulkhead_std::registry::Registry;
    /// use bulkhead_std::scoped::{Opener, Scoped};
    ///
    /// let registry = Registry::local();
    /// let reports = Scoped::new(Config::new("reports", 2), "reports-db", Opener::blocking(|_| Ok::<_, std::io::Error>(())))?
    ///     .max_wait(Duration::from_millis(5));
    /// registry.register_scoped(reports);
    /// assert_eq!(registry.config("reports")?.max_wait, bulkhead_std::MaxWait::from_millis(5));
    /// assert!(registry.get_scoped::<()>("reports").is_ok());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn register_scoped<R: Send + Sync + 'static>(
        &self,
        scoped: impl Into<Arc<Scoped<R>>>,
    ) -> Option<Registered> {
        self.insert_scoped(scoped.into(), false).1
    }

    /// The scoped compartment `name`, whose resource is an `R`.
    ///
    /// # Errors
    /// [`RegistryError::NotFound`] for an unknown name;
    /// [`RegistryError::NotScoped`] if `name` is a plain compartment or
    /// holds another resource type.
    pub fn get_scoped<R: Send + Sync + 'static>(
        &self,
        name: &str,
    ) -> Result<Arc<Scoped<R>>, RegistryError> {
        let found = self
            .scoped
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .find(|s| s.name() == name)
            .cloned();
        let not_scoped = |name: Name| RegistryError::NotScoped {
            name,
            wanted: type_name::<R>(),
        };
        match found {
            Some(scoped) => {
                let name = scoped.name().clone();
                scoped.into_any().downcast().map_err(|_| not_scoped(name))
            }
            None => {
                let (registered, _) = self.lookup(name)?;
                Err(not_scoped(registered.snapshot().name))
            }
        }
    }

    /// The resource side of every scoped compartment, by name: open or
    /// not, holders, openings and failed openings.
    ///
    /// ```
    /// use bulkhead_std::registry::{DomainConfig, Registry};
    /// use bulkhead_std::scoped::{Opener, Scoped};
    ///
    /// let registry = Registry::local();
    /// let db = registry.create_scoped("reports", DomainConfig::new(1), |c| {
    ///     Scoped::new(c, "reports-db", Opener::blocking(|_| Ok::<_, std::io::Error>(())))
    /// })?;
    /// assert!(!registry.resource_states()["reports"].open);
    /// db.execute(|_| ())?;
    /// assert!(registry.resource_states()["reports"].open);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn resource_states(&self) -> BTreeMap<Name, ResourceState> {
        self.scoped_list()
            .iter()
            .map(|s| (s.name().clone(), s.resource_state()))
            .collect()
    }

    fn scoped_list(&self) -> Vec<Arc<dyn AnyScoped>> {
        self.scoped
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Stops admissions in every compartment, then returns the scoped
    /// compartments in closing order: the latest opened first, the never
    /// opened last.
    fn begin_shutdown(&self) -> Vec<Arc<dyn AnyScoped>> {
        let compartments: Vec<_> = self
            .read()
            .values()
            .map(|e| e.compartment.clone())
            .collect();
        for compartment in compartments {
            if let Registered::Semaphore(b) = compartment {
                b.close();
            }
        }
        let mut scoped = self.scoped_list();
        for s in &scoped {
            s.bulkhead().close();
        }
        // Sorted once, with the orders read once: an opening that races
        // the shutdown cannot reorder the list mid-sort.
        let mut keyed: Vec<_> = scoped.drain(..).map(|s| (s.opened_order(), s)).collect();
        keyed.sort_by(|(a, _), (b, _)| b.cmp(a));
        keyed.into_iter().map(|(_, s)| s).collect()
    }

    /// Shuts the application's compartments down from a thread:
    ///
    /// 1. every semaphore compartment is closed at once (new callers get
    ///    [`Error::Closed`](crate::Error::Closed), waiters are turned
    ///    away; holders finish normally);
    /// 2. every scoped compartment is shut down in **reverse order of
    ///    opening** (the latest opened first; never opened ones last), as
    ///    [`Scoped::shutdown_blocking`]: wait for its holders, then close
    ///    its resource.
    ///
    /// `bound` is for the whole shutdown: each compartment gets what is
    /// left of it, and one whose holders outlast it has its closing
    /// deferred to its last holder (reported as
    /// [`CloseOutcome::Deferred`](crate::scoped::CloseOutcome::Deferred)).
    /// Thread-pool compartments are left to their own shutdown. Returns one
    /// report per scoped compartment, in the order they were closed.
    ///
    /// ```
    /// use std::time::Duration;
    /// use bulkhead_std::registry::{DomainConfig, Registry};
    /// use bulkhead_std::scoped::{Opener, Scoped};
    ///
    /// let registry = Registry::local();
    /// for name in ["first", "second"] {
    ///     registry.create_scoped(name, DomainConfig::new(1), |c| {
    ///         Scoped::new(c, "pool", Opener::blocking(|_| Ok::<_, std::io::Error>(())))
    ///     })?;
    /// }
    /// registry.get_scoped::<()>("first")?.execute(|_| ())?;
    /// registry.get_scoped::<()>("second")?.execute(|_| ())?;
    /// let closed: Vec<_> = registry.shutdown_blocking(Duration::from_secs(1)).iter().map(|r| r.compartment.clone()).collect();
    /// assert_eq!(closed, ["second", "first"]);
    /// assert!(registry.get("database")?.try_acquire().is_err()); // closed too
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn shutdown_blocking(&self, bound: Duration) -> Vec<ShutdownReport> {
        let started = Instant::now();
        self.begin_shutdown()
            .iter()
            .map(|s| s.shutdown_blocking(bound.saturating_sub(started.elapsed())))
            .collect()
    }

    /// As [`shutdown_blocking`](Self::shutdown_blocking), from async code: waits with the
    /// runtime timer `sleep` (`tokio::time::sleep`, …) and awaits async
    /// close hooks.
    ///
    /// # Cancel safety
    /// Dropping the future leaves every compartment closed and the scoped
    /// compartments not yet reached with their resources open; call it
    /// again to finish.
    ///
    /// ```
    /// use std::time::Duration;
    /// use bulkhead_std::registry::{DomainConfig, Registry};
    /// use bulkhead_std::scoped::{CloseOutcome, Opener, Scoped};
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// let registry = Registry::local();
    /// let api = registry.create_scoped("api", DomainConfig::new(1), |c| {
    ///     Ok(Scoped::new(c, "api-client", Opener::blocking(|_| Ok::<_, std::io::Error>(())))?
    ///         .on_close_async(|()| async { tokio::task::yield_now().await }))
    /// })?;
    /// api.run_timeout(async {}, tokio::time::sleep).await?;
    /// let reports = registry.shutdown_timeout(Duration::from_secs(1), tokio::time::sleep).await;
    /// assert_eq!(reports[0].outcome, CloseOutcome::Closed);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    pub async fn shutdown_timeout<T>(
        &self,
        bound: Duration,
        sleep: impl Fn(Duration) -> T + Send + Sync,
    ) -> Vec<ShutdownReport>
    where
        T: Future<Output = ()> + Send + 'static,
    {
        let started = Instant::now();
        let boxed = move |d: Duration| -> BoxFuture<'static, ()> { Box::pin(sleep(d)) };
        let mut reports = Vec::new();
        for s in self.begin_shutdown() {
            let left = bound.saturating_sub(started.elapsed());
            reports.push(s.shutdown_async(left, &boxed).await);
        }
        reports
    }
}
