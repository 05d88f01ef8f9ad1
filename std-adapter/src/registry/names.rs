//! Dynamic compartment names: checked, then shared.
//!
//! A name that is not a literal (a tenant id, a host) becomes one
//! `Arc<str>`, shared by the registry's entry, its compartment, and every
//! error, snapshot and metric label that names it (core's
//! [`Name`](bulkhead_core::Name)). It is freed with the last of them, so
//! the names a process holds are those of its live compartments (and of
//! the values that still name them): there is no process-wide table and no
//! cap on how many distinct names a long-running service goes through.

use std::sync::Arc;

use bulkhead_core::Name;

use super::error::RegistryError;
use super::spelling::MAX_NAME_LEN;

/// Checks `name` and returns it as a shared [`Name`].
pub(crate) fn shared(name: &str) -> Result<Name, RegistryError> {
    if name.is_empty() || name.len() > MAX_NAME_LEN || name.chars().any(char::is_control) {
        return Err(RegistryError::InvalidName {
            name: name.to_owned(),
        });
    }
    Ok(Name::shared(Arc::from(name)))
}
