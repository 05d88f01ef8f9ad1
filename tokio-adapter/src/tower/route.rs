//! How a [`PartitionedLayer`](super::PartitionedLayer) maps each request
//! to a partition: [`ClassifyPartition`], with [`ByHeader`], [`ByPath`],
//! [`ByExtension`] and every `Fn(&Req) -> PartitionId`.
//!
//! Partition names are resolved to ids when a classifier is built, so an
//! unknown name is an error then ([`UnknownPartition`], listing the
//! partitions there are), and a request costs the classifier's own match
//! (a header's bytes, a path's prefix, an extension's type), no
//! allocation and no lookup of a partition by name.

// Built once, these return core's `UnknownPartition` as `Partitioned::id`
// does: it is large (the known names, inline, without allocating), but
// only at build time, never per request.
#![allow(clippy::result_large_err)]

use std::borrow::Cow;
use std::sync::Arc;

use bulkhead_core::partition::{PartitionId, Partitioned, UnknownPartition};
use bulkhead_core::{Name, RawLock};
use http::{HeaderName, Request};

/// Maps a request to the partition it is admitted through. Called once
/// per request, in `call`, before a seat is asked for.
///
/// Implemented by [`ByHeader`], [`ByPath`] and [`ByExtension`] (for
/// `http::Request<B>`), and by every `Fn(&Req) -> PartitionId`, for a
/// rule of your own; look the ids up once with
/// [`Partitioned::id`] before building the closure.
///
/// An id of another compartment is not a panic: that request is turned
/// away with [`Error::ForeignPartition`](crate::Error::ForeignPartition)
/// (answered `500` by [`HttpRejection`](super::HttpRejection)).
pub trait ClassifyPartition<Req> {
    /// The partition `request` belongs to.
    fn partition(&self, request: &Req) -> PartitionId;
}

impl<Req, F: Fn(&Req) -> PartitionId> ClassifyPartition<Req> for F {
    #[inline]
    fn partition(&self, request: &Req) -> PartitionId {
        self(request)
    }
}

/// The partitions of one compartment by name, copied when a classifier
/// is built (at most [`MAX_PARTITIONS`](bulkhead_core::partition::MAX_PARTITIONS)
/// names), so that it can resolve names without holding the compartment.
#[derive(Debug, Clone)]
struct Directory {
    compartment: Name,
    parts: Vec<(Name, PartitionId)>,
}

impl Directory {
    fn new<L: RawLock>(compartment: &Partitioned<L>) -> Self {
        Self {
            compartment: compartment.name_handle(),
            parts: compartment
                .partitions()
                .map(|(id, name)| (name.clone(), id))
                .collect(),
        }
    }

    fn find(&self, name: &str) -> Option<PartitionId> {
        self.parts
            .iter()
            .find(|(n, _)| n.as_str() == name)
            .map(|(_, id)| *id)
    }

    /// `name`'s id, or core's error naming the partitions there are.
    fn id(&self, name: &str) -> Result<PartitionId, UnknownPartition> {
        self.find(name).ok_or_else(|| {
            let mut asked = heapless::String::new();
            for c in name.chars() {
                if asked.push(c).is_err() {
                    break;
                }
            }
            let mut known = heapless::Vec::new();
            for (n, _) in &self.parts {
                // A compartment has at most `MAX_PARTITIONS`: it fits.
                let _ = known.push(n.clone());
            }
            UnknownPartition {
                compartment: self.compartment.clone(),
                asked,
                known,
            }
        })
    }
}

/// A copy of `routes` with one more: routes are kept in an `Arc` so that
/// each service made from a layer shares them (cloned at build time only).
fn push<T: Clone>(routes: &Arc<[T]>, route: T) -> Arc<[T]> {
    let mut v = routes.to_vec();
    v.push(route);
    v.into()
}

/// Routes a request by a header's value: each value given with
/// [`route`](Self::route) leads to a partition; a request without the
/// header, or with a value not routed, goes to the default partition.
///
/// Values are compared byte for byte with the header's (case matters);
/// the first routed value wins. A request costs one header lookup and a
/// comparison per route.
///
/// ```
/// use bulkhead_tokio::{ByHeader, StdLock, ClassifyPartition};
/// use bulkhead_tokio::bulkhead_core::partition::{Amount, PartitionConfig, Partitioned};
/// use http::{HeaderName, Request};
///
/// let db: Partitioned<StdLock> = Partitioned::new("db", 8, &[
///     PartitionConfig::new("live", Amount::Seats(6)),
///     PartitionConfig::new("batch", Amount::Seats(2)),
/// ])?;
/// let by_tier = ByHeader::new(&db, HeaderName::from_static("x-tier"), "live")?
///     .route("bulk", "batch")?;
/// let bulk = Request::builder().header("x-tier", "bulk").body(())?;
/// assert_eq!(by_tier.partition(&bulk), db.id("batch")?);
/// let plain = Request::new(());
/// assert_eq!(by_tier.partition(&plain), db.id("live")?); // the default
///
/// // A name the compartment does not have is refused when building.
/// let err = ByHeader::new(&db, HeaderName::from_static("x-tier"), "live")?
///     .route("gold", "premium")
///     .unwrap_err();
/// assert!(err.to_string().contains("`live`, `batch`"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct ByHeader {
    header: HeaderName,
    routes: Arc<[(Box<[u8]>, PartitionId)]>,
    default: PartitionId,
    directory: Arc<Directory>,
}

impl ByHeader {
    /// Routes by `header`, to the partition called `default` unless a
    /// [`route`](Self::route) matches.
    ///
    /// # Errors
    /// [`UnknownPartition`] if `compartment` has no partition `default`.
    pub fn new<L: RawLock>(
        compartment: &Partitioned<L>,
        header: HeaderName,
        default: &str,
    ) -> Result<Self, UnknownPartition> {
        let directory = Directory::new(compartment);
        Ok(Self {
            header,
            routes: Arc::new([]),
            default: directory.id(default)?,
            directory: Arc::new(directory),
        })
    }

    /// Sends requests whose header is exactly `value` to the partition
    /// called `partition`.
    ///
    /// # Errors
    /// [`UnknownPartition`] if the compartment has no partition
    /// `partition`.
    pub fn route(mut self, value: &str, partition: &str) -> Result<Self, UnknownPartition> {
        let id = self.directory.id(partition)?;
        self.routes = push(&self.routes, (value.as_bytes().into(), id));
        Ok(self)
    }
}

impl<B> ClassifyPartition<Request<B>> for ByHeader {
    fn partition(&self, request: &Request<B>) -> PartitionId {
        let Some(value) = request.headers().get(&self.header) else {
            return self.default;
        };
        self.routes
            .iter()
            .find(|(v, _)| **v == *value.as_bytes())
            .map_or(self.default, |(_, id)| *id)
    }
}

/// Routes a request by its path's prefix: each prefix given with
/// [`prefix`](Self::prefix) leads to a partition, the longest matching
/// prefix wins, and a path no prefix matches goes to the default
/// partition.
///
/// A prefix is a plain string prefix of the URI's path: `"/reports"` also
/// matches `"/reportsx"`; end it with `/` to match whole segments.
///
/// ```
/// use bulkhead_tokio::{ByPath, StdLock, ClassifyPartition};
/// use bulkhead_tokio::bulkhead_core::partition::{Amount, PartitionConfig, Partitioned};
/// use http::Request;
///
/// let db: Partitioned<StdLock> = Partitioned::new("db", 8, &[
///     PartitionConfig::new("live", Amount::Seats(6)),
///     PartitionConfig::new("batch", Amount::Seats(2)),
/// ])?;
/// let by_path = ByPath::new(&db, "live")?
///     .prefix("/reports/", "batch")?
///     .prefix("/reports/today", "live")?; // longer: wins over "/reports/"
/// let path = |p: &str| Request::get(p).body(()).unwrap();
/// assert_eq!(by_path.partition(&path("/reports/2024")), db.id("batch")?);
/// assert_eq!(by_path.partition(&path("/reports/today")), db.id("live")?);
/// assert_eq!(by_path.partition(&path("/checkout")), db.id("live")?);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct ByPath {
    // Longest prefix first.
    routes: Arc<[(Box<str>, PartitionId)]>,
    default: PartitionId,
    directory: Arc<Directory>,
}

impl ByPath {
    /// Routes by path, to the partition called `default` unless a
    /// [`prefix`](Self::prefix) matches.
    ///
    /// # Errors
    /// [`UnknownPartition`] if `compartment` has no partition `default`.
    pub fn new<L: RawLock>(
        compartment: &Partitioned<L>,
        default: &str,
    ) -> Result<Self, UnknownPartition> {
        let directory = Directory::new(compartment);
        Ok(Self {
            routes: Arc::new([]),
            default: directory.id(default)?,
            directory: Arc::new(directory),
        })
    }

    /// Sends requests whose path starts with `prefix` to the partition
    /// called `partition` (unless a longer prefix matches too).
    ///
    /// # Errors
    /// [`UnknownPartition`] if the compartment has no partition
    /// `partition`.
    pub fn prefix(mut self, prefix: &str, partition: &str) -> Result<Self, UnknownPartition> {
        let id = self.directory.id(partition)?;
        let mut routes = push(&self.routes, (prefix.into(), id)).to_vec();
        // Stable: of equal prefixes, the first given wins.
        routes.sort_by_key(|(p, _)| std::cmp::Reverse(p.len()));
        self.routes = routes.into();
        Ok(self)
    }
}

impl<B> ClassifyPartition<Request<B>> for ByPath {
    fn partition(&self, request: &Request<B>) -> PartitionId {
        let path = request.uri().path();
        self.routes
            .iter()
            .find(|(p, _)| path.starts_with(&**p))
            .map_or(self.default, |(_, id)| *id)
    }
}

/// A partition's name carried in a request's extensions, for
/// [`ByExtension`]: what a layer in front (authentication, a tenant
/// lookup) inserts to say which partition the request belongs to.
///
/// ```
/// use bulkhead_tokio::PartitionName;
///
/// let mut request = http::Request::new(());
/// request.extensions_mut().insert(PartitionName::new("batch"));
/// # assert_eq!(request.extensions().get::<PartitionName>().unwrap().as_str(), "batch");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PartitionName(Cow<'static, str>);

impl PartitionName {
    /// A partition's name: a `&'static str` (no allocation) or a `String`.
    pub fn new(name: impl Into<Cow<'static, str>>) -> Self {
        Self(name.into())
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Routes a request by an extension a layer in front inserted: a
/// [`PartitionId`] (used as it is; the cheapest) or a [`PartitionName`]
/// (looked up among the compartment's at most
/// [`MAX_PARTITIONS`](bulkhead_core::partition::MAX_PARTITIONS) names).
/// A request with neither, or with a name the compartment does not have,
/// goes to the default partition.
///
/// ```
/// use bulkhead_tokio::{ByExtension, ClassifyPartition, PartitionName, StdLock};
/// use bulkhead_tokio::bulkhead_core::partition::{Amount, PartitionConfig, Partitioned};
///
/// let db: Partitioned<StdLock> = Partitioned::new("db", 8, &[
///     PartitionConfig::new("live", Amount::Seats(6)),
///     PartitionConfig::new("batch", Amount::Seats(2)),
/// ])?;
/// let by_ext = ByExtension::new(&db, "live")?;
/// let mut request = http::Request::new(());
/// request.extensions_mut().insert(PartitionName::new("batch"));
/// assert_eq!(by_ext.partition(&request), db.id("batch")?);
/// request.extensions_mut().insert(db.id("live")?); // an id wins over a name
/// assert_eq!(by_ext.partition(&request), db.id("live")?);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct ByExtension {
    default: PartitionId,
    directory: Arc<Directory>,
}

impl ByExtension {
    /// Routes by extension, to the partition called `default` when the
    /// request carries none.
    ///
    /// # Errors
    /// [`UnknownPartition`] if `compartment` has no partition `default`.
    pub fn new<L: RawLock>(
        compartment: &Partitioned<L>,
        default: &str,
    ) -> Result<Self, UnknownPartition> {
        let directory = Directory::new(compartment);
        Ok(Self {
            default: directory.id(default)?,
            directory: Arc::new(directory),
        })
    }
}

impl<B> ClassifyPartition<Request<B>> for ByExtension {
    fn partition(&self, request: &Request<B>) -> PartitionId {
        let extensions = request.extensions();
        if let Some(id) = extensions.get::<PartitionId>() {
            return *id;
        }
        extensions
            .get::<PartitionName>()
            .and_then(|name| self.directory.find(name.as_str()))
            .unwrap_or(self.default)
    }
}
