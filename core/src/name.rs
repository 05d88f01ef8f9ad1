//! [`Name`], a compartment's name as errors, states and adapters keep it.
//!
//! A compartment is named either by a `&'static str` (a literal: free,
//! and the only kind without the `alloc` feature) or, with `alloc`, by a
//! shared `Arc<str>` made at run time (a tenant, a host). A shared name
//! lives as long as the compartment and every [`Name`] cloned from it (an
//! error, a state, a registry key), and is freed with the last of them:
//! nothing is leaked, and a process may create and drop any number of
//! named compartments. See `docs/design.md`, "Names".

#[cfg(feature = "alloc")]
use alloc::sync::Arc;
use core::borrow::Borrow;
use core::cmp::Ordering;
use core::fmt;
use core::hash::{Hash, Hasher};
use core::ops::Deref;

/// A compartment's name: a `&'static str`, or (with the `alloc` feature)
/// a shared `Arc<str>`.
///
/// It reads as a `str` (`Deref`, `AsRef`, `Borrow`, `Display`, and
/// comparisons with `str` and `&str`), and is cheap to clone: a copy of
/// the reference, or one reference-count increment. It is deliberately
/// not `Copy`, so that the shared kind can exist where `alloc` is on.
///
/// ```
/// use bulkhead_core::Name;
///
/// let name = Name::from_static("database");
/// assert_eq!(name, "database");
/// assert_eq!(name.len(), 8);
/// assert_eq!(name.as_static(), Some("database"));
/// assert_eq!(format!("{name}"), "database");
/// ```
#[derive(Clone)]
pub struct Name(Repr);

#[derive(Clone)]
pub(crate) enum Repr {
    Static(&'static str),
    #[cfg(feature = "alloc")]
    Shared(Arc<str>),
}

impl Name {
    /// The name `name`, for a literal or any other `&'static str`. Costs
    /// nothing.
    pub const fn from_static(name: &'static str) -> Self {
        Self(Repr::Static(name))
    }

    /// The shared name `name`, made at run time.
    #[cfg(feature = "alloc")]
    pub fn shared(name: Arc<str>) -> Self {
        Self(Repr::Shared(name))
    }

    /// The name as a `str`.
    pub fn as_str(&self) -> &str {
        match &self.0 {
            Repr::Static(name) => name,
            #[cfg(feature = "alloc")]
            Repr::Shared(name) => name,
        }
    }

    /// The `&'static str` this name was made from, or `None` for a shared
    /// name (which may be freed once the last holder lets go).
    pub const fn as_static(&self) -> Option<&'static str> {
        match &self.0 {
            Repr::Static(name) => Some(name),
            #[cfg(feature = "alloc")]
            Repr::Shared(_) => None,
        }
    }

    /// What the name is made of.
    pub(crate) fn into_repr(self) -> Repr {
        self.0
    }

    /// The shared string of a shared name, or `None` for a `&'static str`.
    #[cfg(feature = "alloc")]
    pub fn as_shared(&self) -> Option<&Arc<str>> {
        match &self.0 {
            Repr::Static(_) => None,
            Repr::Shared(name) => Some(name),
        }
    }
}

impl From<&'static str> for Name {
    fn from(name: &'static str) -> Self {
        Self::from_static(name)
    }
}

#[cfg(feature = "alloc")]
impl From<Arc<str>> for Name {
    fn from(name: Arc<str>) -> Self {
        Self::shared(name)
    }
}

impl Deref for Name {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for Name {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

/// Consistent with `str`'s `Eq`, `Ord` and `Hash`, so a `Name` can key a
/// map that is looked up by `&str`.
impl Borrow<str> for Name {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl fmt::Display for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self.as_str(), f)
    }
}

/// As the `str`: `"database"`, with the quotes.
impl fmt::Debug for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl PartialEq for Name {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for Name {}

impl PartialEq<str> for Name {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for Name {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialEq<Name> for str {
    fn eq(&self, other: &Name) -> bool {
        self == other.as_str()
    }
}

impl PartialEq<Name> for &str {
    fn eq(&self, other: &Name) -> bool {
        *self == other.as_str()
    }
}

impl PartialOrd for Name {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Name {
    fn cmp(&self, other: &Self) -> Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl Hash for Name {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_str().hash(state);
    }
}
