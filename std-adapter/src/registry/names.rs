//! The bounded name interner: how a dynamic name becomes `&'static str`.
//!
//! Core's compartments carry `&'static str` names. A name that is not a
//! literal (a tenant id, a host) is copied once into a leaked string and
//! reused for every later compartment of that name, also after eviction.
//! The interner is process-wide and bounded: at most [`MAX_NAMES`] distinct
//! names of at most [`MAX_NAME_LEN`] bytes each, so the memory it can ever
//! hold is capped (under 2 MiB). A new name beyond the cap is refused with
//! [`RegistryError::TooManyNames`](super::RegistryError::TooManyNames).

use std::collections::HashSet;
use std::sync::{Mutex, PoisonError};

use super::RegistryError;

/// The most distinct dynamic names a process can intern.
pub const MAX_NAMES: usize = 16_384;
/// The longest accepted compartment name, in bytes.
pub const MAX_NAME_LEN: usize = 100;

static NAMES: Mutex<Option<HashSet<&'static str>>> = Mutex::new(None);

/// Checks `name` and returns its interned `'static` copy.
pub(crate) fn intern(name: &str) -> Result<&'static str, RegistryError> {
    if name.is_empty() || name.len() > MAX_NAME_LEN || name.chars().any(char::is_control) {
        return Err(RegistryError::InvalidName {
            name: name.to_owned(),
        });
    }
    let mut guard = NAMES.lock().unwrap_or_else(PoisonError::into_inner);
    let names = guard.get_or_insert_with(HashSet::new);
    if let Some(&interned) = names.get(name) {
        return Ok(interned);
    }
    if names.len() >= MAX_NAMES {
        return Err(RegistryError::TooManyNames { limit: MAX_NAMES });
    }
    // Bounded by MAX_NAMES * MAX_NAME_LEN for the whole process.
    let leaked: &'static str = Box::leak(name.to_owned().into_boxed_str());
    names.insert(leaked);
    Ok(leaked)
}
