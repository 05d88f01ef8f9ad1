//! The process-wide default registry.

use std::sync::{Arc, PoisonError, RwLock};

use super::{Registry, RegistryError};

static GLOBAL: RwLock<Option<Arc<Registry>>> = RwLock::new(None);

/// The process-wide registry, the one accessor to it.
///
/// Built on first use with [`Registry::builder`]: the built-ins, the
/// process's `BULKHEAD_*` variables, no file. Install one built otherwise
/// (a file, bounds) with [`set_global`] at start-up.
///
/// ```
/// use bulkhead_std::registry;
///
/// let db = registry::global()?.get("database")?;
/// assert_eq!(db.name(), "database");
/// # Ok::<(), registry::RegistryError>(())
/// ```
///
/// # Errors
/// The environment's [`RegistryError::Settings`] error if a `BULKHEAD_*`
/// variable is invalid, names no setting or misspells a built-in's name. Nothing is cached then: fix the variable, and the
/// next call builds the registry.
pub fn global() -> Result<Arc<Registry>, RegistryError> {
    if let Some(registry) = GLOBAL
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .as_ref()
    {
        return Ok(registry.clone());
    }
    let mut slot = GLOBAL.write().unwrap_or_else(PoisonError::into_inner);
    if let Some(registry) = slot.as_ref() {
        return Ok(registry.clone());
    }
    let registry = Arc::new(Registry::builder().build()?);
    *slot = Some(registry.clone());
    Ok(registry)
}

/// Installs `registry` as the process-wide one; returns the previous one.
/// Handles already taken from the previous registry stay valid.
///
/// ```
/// use bulkhead_std::registry::{self, Registry};
///
/// registry::set_global(Registry::local());
/// assert!(registry::global()?.get("cache").is_ok());
/// # Ok::<(), registry::RegistryError>(())
/// ```
pub fn set_global(registry: Registry) -> Option<Arc<Registry>> {
    GLOBAL
        .write()
        .unwrap_or_else(PoisonError::into_inner)
        .replace(Arc::new(registry))
}

/// Forgets the process-wide registry (for tests): the next [`global`]
/// builds a fresh one.
///
/// ```
/// use bulkhead_std::registry;
/// registry::reset_global();
/// assert_eq!(registry::global()?.list_names().len(), 4);
/// # Ok::<(), registry::RegistryError>(())
/// ```
pub fn reset_global() {
    GLOBAL
        .write()
        .unwrap_or_else(PoisonError::into_inner)
        .take();
}
