//! Partitions that lend and borrow: one compartment's seats shared by
//! priority classes, each guaranteed its share (feature `partitions`).
//!
//! A plain compartment isolates by walling capacity off, and walls waste
//! it: with `checkout` at 24 seats and `reports` at 8, reports waits at
//! night while 24 checkout seats sit idle. One shared compartment of 32
//! would let a report flood take checkout's seats. A [`Partitioned`]
//! compartment does both: each **partition** is guaranteed a **share** of
//! the limit, lends the idle part of it (its *lendable* part) to the
//! others, may **borrow** beyond its share up to a limit, and a freed seat
//! goes first to a partition below its share, then by **priority**.
//!
//! ```
//! use bulkhead_core::CsLock;
//! use bulkhead_core::partition::{Amount, PartitionConfig, Partitioned};
//!
//! let db: Partitioned<CsLock> = Partitioned::new("db", 32, &[
//!     PartitionConfig::new("live", Amount::Seats(24)).priority(1),
//!     PartitionConfig::new("batch", Amount::Seats(8)).borrow(Amount::Seats(16)),
//! ])?;
//! let (live, batch) = (db.id("live")?, db.id("batch")?);
//!
//! // At night, batch borrows live's idle seats: 8 of its own and 16 more.
//! let night: Vec<_> = (0..24).map(|_| db.try_acquire(batch).unwrap()).collect();
//! assert!(db.try_acquire(batch).is_err()); // its borrowing limit
//! assert_eq!(db.partition_state(live)?.lent, 16);
//!
//! // Live traffic still finds its seats: 8 are free, the rest come back
//! // as batch calls end, before any batch caller gets one.
//! let seat = db.try_acquire(live)?;
//! # drop((night, seat));
//! # Ok::<(), Box<dyn core::error::Error>>(())
//! ```
//!
//! # The rules
//!
//! Admission is decided under the compartment's lock, from every
//! partition's count and line at once (no single atomic word holds that).
//! For a partition holding `a` seats with a share `s`:
//!
//! 1. **Fits**: it never holds more than its share plus its borrowing
//!    limit ([`PartitionState::may_hold`]), the total never passes the
//!    limit, and every other partition's *reserve* (the part of its share
//!    it does not lend) stays free for it.
//! 2. **Rank**: a partition below its share (`a < s`) ranks above one at
//!    or above it; then higher priority; equal ranks take turns.
//! 3. **Serve**: a freed seat goes first to a waiter that stays within its
//!    share, then to the best-ranked waiter that could be admitted once
//!    running calls end, and is kept for it until it has all it asked for.
//! 4. **Newcomers** queue behind their own partition's line, and take a
//!    free seat only where the serve would give it to them.
//!
//! So running work is never pre-empted, and a lender that needs its seats
//! back gets each seat a borrower frees, before any borrower: once a
//! waiter below its share is the best-ranked one, no partition at or above
//! its share takes a seat until it is served.

//! # Waiting
//!
//! Each partition has its own line, its own queue limit and order, and
//! every way to wait that a plain compartment has: [`acquire`](Partitioned::acquire)
//! (a future without limit), [`acquire_timeout`](Partitioned::acquire_timeout)
//! (on a timer of your choice), and the adapters' blocking, tokio and
//! embassy waits built on them.
//!
//! # Locks
//!
//! Giving a partition's seat back takes the lock (a plain compartment's
//! seat skips it when nobody waits), so a lock that refuses some contexts
//! (embassy's `ThreadModeRawMutex` in an interrupt handler) refuses the
//! release there too, and a release the lock refuses cannot be counted: the
//! seat stays held for good (a plain compartment only loses a wake-up
//! there). Give seats back from interrupt handlers only with a lock that
//! works there (`CsLock`, `CriticalSectionRawMutex`).

mod acquire;
#[cfg(test)]
mod model;
mod seat;
mod settings;
mod table;
#[cfg(test)]
#[allow(clippy::std_instead_of_core)]
mod tests;
#[cfg(test)]
#[allow(clippy::std_instead_of_core)]
mod tests_review;

use core::fmt;
use core::mem::ManuallyDrop;

use heapless::Vec;

pub use acquire::{AcquirePartition, AcquirePartitionTimeout};
pub use seat::{PartitionHandle, PartitionSeat};
pub use settings::{Amount, MAX_PARTITIONS, PartitionConfig};
#[cfg(bulkhead_shuttle)]
pub use table::SectionView;

use self::settings::{Resolved, resolve};
use self::table::{Part, Table, Wakers};
use crate::config::State;
use crate::error::{ConfigError, Error};
use crate::list::List;
use crate::lock::{ConstInit, RawLock};
use crate::max_wait::MaxWait;
use crate::name::Name;
use crate::sync::Ordering::Relaxed;
use crate::sync::{AtomicUsize, UnsafeCell};
use crate::word::MAX_CONCURRENT_LIMIT;

/// A compartment whose seats are shared by named partitions, each
/// guaranteed a share; see the [module](self) for the rules.
///
/// Built once with its partitions, which stay fixed (their settings can
/// change live with [`reconfigure`](Self::reconfigure)). Holds up to
/// [`MAX_PARTITIONS`] partitions inline: no allocation.
pub struct Partitioned<L: RawLock> {
    name: Name,
    /// Distinguishes this compartment's ids from another's.
    tag: u32,
    /// The partitions' names, in order: fixed, so read without the lock.
    names: Vec<Name, MAX_PARTITIONS>,
    lock: L,
    /// The table's limit, copied under the lock at every change, so that
    /// an adaptive limit's controller reads it without waiting. `Relaxed`:
    /// a statistic; every decision reads the table's own under the lock.
    limit: AtomicUsize,
    /// # Safety
    /// Accessed only inside `lock`'s closures.
    table: UnsafeCell<Table>,
}

// SAFETY: the table (counts and the lines' raw pointers) is only touched
// under `lock`; the nodes belong to `Send` futures that unlink them before
// they move or die. Names are `Send + Sync`.
unsafe impl<L: RawLock + Send> Send for Partitioned<L> {}
// SAFETY: as above; shared access to the table goes through `lock`.
unsafe impl<L: RawLock + Sync> Sync for Partitioned<L> {}

// A panic never leaves the table inconsistent: no foreign code runs under
// the lock, and seats and waiters are given back by `Drop`.
impl<L: RawLock + core::panic::RefUnwindSafe> core::panic::RefUnwindSafe for Partitioned<L> {}
impl<L: RawLock + core::panic::UnwindSafe> core::panic::UnwindSafe for Partitioned<L> {}

/// A partition of one [`Partitioned`] compartment, looked up once by name
/// with [`Partitioned::id`], then used to take its seats. Cheap to copy.
///
/// An id works only with the compartment that made it; used with another,
/// the call fails with [`Error::ForeignPartition`]. (Compartments are told
/// apart by a 32-bit tag: a program that builds more than 2^32 partitioned
/// compartments may see two share a tag, and an id of one then counts in
/// the other.)
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PartitionId {
    index: u8,
    tag: u32,
}

impl PartitionId {
    /// The partition's place in the order it was declared in, from 0.
    pub const fn index(self) -> usize {
        self.index as usize
    }
}

/// Why [`Partitioned::id`] found no partition: the name asked for (cut at
/// 64 bytes) and the names the compartment has.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownPartition {
    /// The compartment.
    pub compartment: Name,
    /// The name asked for, cut to at most 64 bytes.
    pub asked: heapless::String<64>,
    /// The partitions the compartment has.
    pub known: Vec<Name, MAX_PARTITIONS>,
}

impl fmt::Display for UnknownPartition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "bulkhead `{}` has no partition `{}`; its partitions are ",
            self.compartment, self.asked
        )?;
        for (k, name) in self.known.iter().enumerate() {
            let sep = if k == 0 { "" } else { ", " };
            write!(f, "{sep}`{name}`")?;
        }
        Ok(())
    }
}

impl core::error::Error for UnknownPartition {}

/// One partition's counters, from [`Partitioned::partition_state`]: its
/// settings at the current limit, and what it holds, lends, borrows and
/// has refused.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PartitionState {
    /// The partition's name.
    pub name: Name,
    /// Its guaranteed share at the current limit.
    pub share: usize,
    /// The part of its share it never lends.
    pub reserved: usize,
    /// The most it may hold, borrowing included.
    pub may_hold: usize,
    /// Seats it holds.
    pub active: usize,
    /// Of those, the seats beyond its share.
    pub borrowed: usize,
    /// Seats of its idle share that others use now (see
    /// [`Partitioned::partition_state`] for how a borrowed seat is
    /// attributed to a lender).
    pub lent: usize,
    /// Callers waiting in its line.
    pub waiting: usize,
    /// Callers turned away (full, queue full, too heavy, dropped from a
    /// newest-first line). Saturates.
    pub rejected: usize,
    /// Callers whose wait budget ran out. Saturates.
    pub timed_out: usize,
}

/// Builds a partition's state for the table.
fn part(config: &PartitionConfig, resolved: Resolved) -> Part {
    Part {
        config: config.clone(),
        resolved,
        active: 0,
        waiting: 0,
        rejected: 0,
        timed_out: 0,
        list: List::new(),
    }
}

/// The next compartment's tag. Not modelled by loom or shuttle: a plain
/// counter, `Relaxed` (it orders nothing; only distinctness matters).
fn next_tag() -> u32 {
    static NEXT: portable_atomic::AtomicU32 = portable_atomic::AtomicU32::new(1);
    NEXT.fetch_add(1, core::sync::atomic::Ordering::Relaxed)
}

/// Checks the partitions' number and names.
fn check_names(name: &Name, partitions: &[PartitionConfig]) -> Result<(), ConfigError> {
    if partitions.is_empty() {
        return Err(ConfigError::NoPartitions { name: name.clone() });
    }
    if partitions.len() > MAX_PARTITIONS {
        return Err(ConfigError::TooManyPartitions {
            name: name.clone(),
            count: partitions.len(),
            limit: MAX_PARTITIONS,
        });
    }
    for (i, p) in partitions.iter().enumerate() {
        if p.name.len() > crate::config::MAX_NAME_LEN {
            return Err(ConfigError::NameTooLong {
                length: p.name.len(),
                limit: crate::config::MAX_NAME_LEN,
            });
        }
        if partitions[..i].iter().any(|q| q.name == p.name) {
            return Err(ConfigError::DuplicatePartition {
                name: name.clone(),
                partition: p.name.clone(),
            });
        }
    }
    Ok(())
}

/// Resolves `partitions` (checked by `check_names`) at `limit`.
/// `strict` as in `resolve`.
fn resolve_all(
    name: &Name,
    limit: usize,
    partitions: &[&PartitionConfig],
    strict: bool,
) -> Result<[Resolved; MAX_PARTITIONS], ConfigError> {
    let mut out = [Resolved::default(); MAX_PARTITIONS];
    resolve(
        name,
        limit,
        partitions,
        &mut out[..partitions.len()],
        strict,
    )?;
    Ok(out)
}

/// Checks a limit's range.
fn check_limit(name: &Name, max_concurrent: usize) -> Result<(), ConfigError> {
    if max_concurrent > MAX_CONCURRENT_LIMIT {
        return Err(ConfigError::CapacityOverflow {
            name: name.clone(),
            requested: max_concurrent,
            limit: MAX_CONCURRENT_LIMIT,
        });
    }
    Ok(())
}

impl<L: RawLock + ConstInit> Partitioned<L> {
    /// A compartment called `name` with `max_concurrent` seats, divided
    /// into `partitions`.
    ///
    /// # Errors
    /// [`ConfigError::ZeroCapacity`], [`ConfigError::CapacityOverflow`] as
    /// for a plain compartment; for the partitions:
    /// [`NoPartitions`](ConfigError::NoPartitions),
    /// [`TooManyPartitions`](ConfigError::TooManyPartitions),
    /// [`DuplicatePartition`](ConfigError::DuplicatePartition),
    /// [`PercentAbove100`](ConfigError::PercentAbove100),
    /// [`SharePercentsAbove100`](ConfigError::SharePercentsAbove100),
    /// [`SharesExceedLimit`](ConfigError::SharesExceedLimit),
    /// [`LendableAboveShare`](ConfigError::LendableAboveShare),
    /// [`BorrowWithoutLender`](ConfigError::BorrowWithoutLender),
    /// [`EmptyPartition`](ConfigError::EmptyPartition),
    /// [`QueueLimitOverflow`](ConfigError::QueueLimitOverflow),
    /// [`LifoUnavailable`](ConfigError::LifoUnavailable).
    ///
    /// ```
    /// use bulkhead_core::{ConfigError, CsLock};
    /// use bulkhead_core::partition::{Amount, PartitionConfig, Partitioned};
    ///
    /// let err = Partitioned::<CsLock>::new("db", 10, &[
    ///     PartitionConfig::new("live", Amount::Seats(8)),
    ///     PartitionConfig::new("batch", Amount::Seats(4)),
    /// ]).err().unwrap();
    /// assert!(matches!(err, ConfigError::SharesExceedLimit { shares: 12, .. }));
    /// ```
    pub fn new(
        name: &'static str,
        max_concurrent: usize,
        partitions: &[PartitionConfig],
    ) -> Result<Self, ConfigError> {
        Self::with_lock(Name::from_static(name), max_concurrent, partitions, L::INIT)
    }
}

impl<L: RawLock> Partitioned<L> {
    /// As [`new`](Self::new), for a name kept as a [`Name`] and a lock of
    /// your choice.
    ///
    /// # Errors
    /// As [`new`](Self::new), and [`ConfigError::NameTooLong`].
    pub fn with_lock(
        name: Name,
        max_concurrent: usize,
        partitions: &[PartitionConfig],
        lock: L,
    ) -> Result<Self, ConfigError> {
        if name.len() > crate::config::MAX_NAME_LEN {
            return Err(ConfigError::NameTooLong {
                length: name.len(),
                limit: crate::config::MAX_NAME_LEN,
            });
        }
        if max_concurrent == 0 {
            return Err(ConfigError::ZeroCapacity { name });
        }
        check_limit(&name, max_concurrent)?;
        check_names(&name, partitions)?;
        let refs: Vec<&PartitionConfig, MAX_PARTITIONS> = partitions.iter().collect();
        let resolved = resolve_all(&name, max_concurrent, &refs, true)?;
        let mut parts = Vec::new();
        let mut names = Vec::new();
        for (p, r) in partitions.iter().zip(resolved) {
            // Checked by `check_names`: at most `MAX_PARTITIONS`.
            let _ = parts.push(part(p, r));
            let _ = names.push(p.name.clone());
        }
        Ok(Self {
            name,
            tag: next_tag(),
            names,
            lock,
            limit: AtomicUsize::new(max_concurrent),
            table: UnsafeCell::new(Table::new(max_concurrent, parts)),
        })
    }

    /// The compartment's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The compartment's name, to keep.
    pub fn name_handle(&self) -> Name {
        self.name.clone()
    }

    /// The lock guarding the table (for adapters that record events
    /// through it).
    pub fn raw_lock(&self) -> &L {
        &self.lock
    }

    /// The partition called `name`.
    ///
    /// # Errors
    /// [`UnknownPartition`], listing the partitions there are.
    // The error lists the names there are (no allocation in core to box
    // it); a lookup runs once, when a caller is set up, not per call.
    #[allow(clippy::result_large_err)]
    pub fn id(&self, name: &str) -> Result<PartitionId, UnknownPartition> {
        match self.names.iter().position(|n| n.as_str() == name) {
            // At most `MAX_PARTITIONS` (8): fits in a `u8`.
            Some(i) => Ok(PartitionId {
                index: i as u8,
                tag: self.tag,
            }),
            None => {
                let mut asked = heapless::String::new();
                for c in name.chars() {
                    if asked.push(c).is_err() {
                        break;
                    }
                }
                Err(UnknownPartition {
                    compartment: self.name.clone(),
                    asked,
                    known: self.names.clone(),
                })
            }
        }
    }

    /// Every partition's id and name, in declaration order.
    pub fn partitions(&self) -> impl Iterator<Item = (PartitionId, &Name)> {
        let tag = self.tag;
        self.names.iter().enumerate().map(move |(i, n)| {
            (
                PartitionId {
                    index: i as u8,
                    tag,
                },
                n,
            )
        })
    }

    /// `id`'s index, if the id is this compartment's.
    fn index(&self, id: PartitionId) -> Result<usize, Error> {
        if id.tag != self.tag || id.index() >= self.names.len() {
            return Err(Error::ForeignPartition {
                name: self.name.clone(),
            });
        }
        Ok(id.index())
    }

    /// Takes a seat of partition `id` without waiting.
    ///
    /// # Errors
    /// [`Error::PartitionFull`] if the partition has no seat for the
    /// caller now, [`Error::Closed`], [`Error::ForeignPartition`].
    pub fn try_acquire(&self, id: PartitionId) -> Result<PartitionSeat<&Self>, Error> {
        PartitionSeat::try_acquire(self, id)
    }

    /// Takes `weight` seats of partition `id` together, without waiting.
    ///
    /// # Errors
    /// As [`try_acquire`](Self::try_acquire), and [`Error::ZeroWeight`],
    /// [`Error::WeightAboveLimit`] (more than the partition may ever hold).
    #[cfg(feature = "weights")]
    pub fn try_acquire_many(
        &self,
        id: PartitionId,
        weight: usize,
    ) -> Result<PartitionSeat<&Self>, Error> {
        PartitionSeat::try_acquire_many(self, id, weight)
    }

    /// Waits for a seat of partition `id`, without limit.
    ///
    /// ```
    /// # use bulkhead_core::CsLock;
    /// # use bulkhead_core::partition::{Amount, PartitionConfig, Partitioned};
    /// # let db: Partitioned<CsLock> = Partitioned::new("db", 2, &[
    /// #     PartitionConfig::new("live", Amount::Seats(1)),
    /// #     PartitionConfig::new("batch", Amount::Seats(1)),
    /// # ]).unwrap();
    /// let live = db.id("live")?;
    /// let wait = db.acquire(live); // a future: `.await` it
    /// # drop(wait);
    /// # Ok::<(), bulkhead_core::partition::UnknownPartition>(())
    /// ```
    pub fn acquire(&self, id: PartitionId) -> AcquirePartition<&Self> {
        AcquirePartition::new(self, id, 1)
    }

    /// Waits for `weight` seats of partition `id` together, without limit.
    #[cfg(feature = "weights")]
    pub fn acquire_many(&self, id: PartitionId, weight: usize) -> AcquirePartition<&Self> {
        AcquirePartition::new(self, id, weight)
    }

    /// Waits for a seat of partition `id` at most `max_wait`, on the timer
    /// `sleep(d)` returns (as a plain compartment's `acquire_timeout`).
    pub fn acquire_timeout<T: Future>(
        &self,
        id: PartitionId,
        max_wait: MaxWait,
        sleep: impl FnOnce(core::time::Duration) -> T,
    ) -> AcquirePartitionTimeout<&Self, T> {
        AcquirePartitionTimeout::new(AcquirePartition::new(self, id, 1), max_wait, sleep)
    }

    /// As [`acquire_timeout`](Self::acquire_timeout), for `weight` seats.
    #[cfg(feature = "weights")]
    pub fn acquire_many_timeout<T: Future>(
        &self,
        id: PartitionId,
        weight: usize,
        max_wait: MaxWait,
        sleep: impl FnOnce(core::time::Duration) -> T,
    ) -> AcquirePartitionTimeout<&Self, T> {
        AcquirePartitionTimeout::new(AcquirePartition::new(self, id, weight), max_wait, sleep)
    }

    /// Moves the limit to `max_concurrent`; percentage shares and borrowing
    /// limits follow, and waiters are served at once. Returns the old limit.
    /// 0 pauses the compartment. Running calls are never pre-empted: after
    /// a shrink, `active` may exceed the limit until they end.
    ///
    /// # Errors
    /// [`ConfigError::CapacityOverflow`], and
    /// [`ConfigError::SharesExceedLimit`] if the shares given as counts no
    /// longer fit (give shares as percentages to shed load by resizing).
    /// The limit is then unchanged.
    pub fn set_max_concurrent(&self, max_concurrent: usize) -> Result<usize, ConfigError> {
        check_limit(&self.name, max_concurrent)?;
        self.section(|t, _| self.resize(t, max_concurrent))
    }

    /// As [`set_max_concurrent`](Self::set_max_concurrent) if the lock is
    /// free right now; `Ok(None)`, changing nothing, if it is not (for an
    /// adaptive limit's controller, which must not wait).
    ///
    /// # Errors
    /// As [`set_max_concurrent`](Self::set_max_concurrent).
    pub fn try_set_max_concurrent(
        &self,
        max_concurrent: usize,
    ) -> Result<Option<usize>, ConfigError> {
        check_limit(&self.name, max_concurrent)?;
        match self.try_section(|t, _| self.resize(t, max_concurrent)) {
            Some(result) => result.map(Some),
            None => Ok(None),
        }
    }

    /// Replaces the partitions' settings live: the same partitions, by
    /// name and in order, with new shares, lending, borrowing, priorities,
    /// queue limits and orders. Waiters keep their places; a line whose
    /// new queue limit it exceeds keeps its waiters (the limit applies to
    /// newcomers).
    ///
    /// # Errors
    /// [`ConfigError::PartitionsChanged`] if the names or their order
    /// differ; otherwise as [`new`](Self::new). Nothing changes then.
    pub fn reconfigure(&self, partitions: &[PartitionConfig]) -> Result<(), ConfigError> {
        self.check_same_partitions(partitions)?;
        // The replaced settings hold names, whose drop may free memory:
        // dropped after unlocking.
        let mut replaced: Vec<PartitionConfig, MAX_PARTITIONS> = Vec::new();
        let result = self.section(|t, _| {
            let refs: Vec<&PartitionConfig, MAX_PARTITIONS> = partitions.iter().collect();
            // While paused (a limit of 0) the settings are checked against
            // the limit the compartment had, and resolve to 0 until it
            // resumes.
            let at = if t.limit == 0 { t.resumes_at } else { t.limit };
            let resolved = resolve_all(&self.name, at, &refs, true)?;
            let resolved = if t.limit == 0 {
                [Resolved::default(); MAX_PARTITIONS]
            } else {
                resolved
            };
            for ((p, new), r) in t.parts.iter_mut().zip(partitions).zip(resolved) {
                let old = core::mem::replace(&mut p.config, new.clone());
                let _ = replaced.push(old);
                p.resolved = r;
            }
            Ok(())
        });
        drop(replaced);
        result
    }

    /// Moves the limit and replaces the partitions' settings together, in
    /// one step: the settings are checked against the new limit (against
    /// the limit before a pause while paused), so no pair of a limit and
    /// settings that a new compartment would refuse is ever in force, not
    /// even between two calls. Returns the old limit.
    ///
    /// ```
    /// use bulkhead_core::CsLock;
    /// use bulkhead_core::partition::{Amount, PartitionConfig, Partitioned};
    ///
    /// let db: Partitioned<CsLock> = Partitioned::new("db", 8, &[
    ///     PartitionConfig::new("live", Amount::Seats(6)),
    ///     PartitionConfig::new("batch", Amount::Seats(2)),
    /// ])?;
    /// // Shrink to 4 seats with shares that fit it; neither step alone would.
    /// db.reconfigure_with_limit(4, &[
    ///     PartitionConfig::new("live", Amount::Seats(3)),
    ///     PartitionConfig::new("batch", Amount::Seats(1)),
    /// ])?;
    /// assert_eq!(db.state().max_concurrent, 4);
    /// # Ok::<(), bulkhead_core::ConfigError>(())
    /// ```
    ///
    /// # Errors
    /// As [`reconfigure`](Self::reconfigure) and
    /// [`set_max_concurrent`](Self::set_max_concurrent); nothing changes
    /// then.
    pub fn reconfigure_with_limit(
        &self,
        max_concurrent: usize,
        partitions: &[PartitionConfig],
    ) -> Result<usize, ConfigError> {
        check_limit(&self.name, max_concurrent)?;
        self.check_same_partitions(partitions)?;
        // The replaced settings hold names, whose drop may free memory:
        // dropped after unlocking.
        let mut replaced: Vec<PartitionConfig, MAX_PARTITIONS> = Vec::new();
        let result = self.section(|t, _| {
            let refs: Vec<&PartitionConfig, MAX_PARTITIONS> = partitions.iter().collect();
            let at = match (max_concurrent, t.limit) {
                (0, 0) => t.resumes_at,
                (0, now) => now,
                (new, _) => new,
            };
            // Checked strictly first, so that nothing changes on an error.
            resolve_all(&self.name, at, &refs, true)?;
            for (p, new) in t.parts.iter_mut().zip(partitions) {
                let _ = replaced.push(core::mem::replace(&mut p.config, new.clone()));
            }
            self.resize(t, max_concurrent)
        });
        drop(replaced);
        result
    }

    /// Closes the compartment: newcomers are refused with
    /// [`Error::Closed`], and every waiter is woken with it. Seats already
    /// held stay valid.
    pub fn close(&self) {
        self.section(|t, _| t.closed = true);
    }

    /// Whether [`close`](Self::close) was called.
    pub fn is_closed(&self) -> bool {
        self.section(|t, _| t.closed)
    }

    /// The whole compartment's counters, summed over its partitions.
    pub fn state(&self) -> State {
        self.section(|t, _| State {
            name: self.name.clone(),
            max_concurrent: t.limit,
            active: t.active,
            waiting: t.parts.iter().map(|p| p.waiting).sum(),
            rejected: t
                .parts
                .iter()
                .fold(0usize, |s, p| s.saturating_add(sat(p.rejected))),
            timed_out: t
                .parts
                .iter()
                .fold(0usize, |s, p| s.saturating_add(sat(p.timed_out))),
            closed: t.closed,
        })
    }

    /// One partition's counters.
    ///
    /// `lent` attributes borrowed seats to lenders: seats borrowed beyond
    /// every share come first from seats no share claims, then from the
    /// lenders' idle lendable seats, in declaration order.
    ///
    /// # Errors
    /// [`Error::ForeignPartition`] for another compartment's id.
    pub fn partition_state(&self, id: PartitionId) -> Result<PartitionState, Error> {
        let i = self.index(id)?;
        Ok(self.section(|t, _| {
            let p = &t.parts[i];
            PartitionState {
                name: p.config.name.clone(),
                share: p.resolved.share,
                reserved: p.resolved.reserved,
                may_hold: p.resolved.may_hold,
                active: p.active,
                borrowed: p.active.saturating_sub(p.resolved.share),
                lent: t.lent(i),
                waiting: p.waiting,
                rejected: sat(p.rejected),
                timed_out: sat(p.timed_out),
            }
        }))
    }

    /// A partition's settings as they are now.
    ///
    /// # Errors
    /// [`Error::ForeignPartition`] for another compartment's id.
    pub fn partition_config(&self, id: PartitionId) -> Result<PartitionConfig, Error> {
        let i = self.index(id)?;
        Ok(self.section(|t, _| t.parts[i].config.clone()))
    }

    /// Runs `f` under the lock, then serves; wakes what it collected after
    /// unlocking, and serves again while a full batch cut it short.
    ///
    /// Waking runs other tasks' wakers (foreign code, which may panic)
    /// before this returns: a caller whose section took seats for itself
    /// uses [`section_then`](Self::section_then) instead, so that the seat
    /// is its own before anything can unwind.
    fn section<R>(&self, f: impl FnOnce(&mut Table, &mut Wakers) -> R) -> R {
        let mut owed = Owed::new();
        let r = self.section_then(&mut owed, f);
        self.finish(&mut owed);
        r
    }

    /// As [`section`](Self::section), without waking: the wakers are left
    /// in `owed`, for [`finish`](Self::finish) once the caller has made
    /// what the section decided its own. If the lock panics before its
    /// closure (`RawLock` promise 4), nothing ran and nothing is owed.
    /// (`owed` is the caller's, not returned, so that the batch is never
    /// copied.)
    fn section_then<R>(&self, owed: &mut Owed, f: impl FnOnce(&mut Table, &mut Wakers) -> R) -> R {
        // SAFETY: only this type locks its lock, and the table is only
        // touched inside its closures.
        unsafe {
            self.lock.with_lock(|| {
                self.table.with_mut(|t| {
                    let t = &mut *t;
                    let r = f(t, &mut owed.wake);
                    owed.more = t.serve(&mut owed.wake);
                    r
                })
            })
        }
    }

    /// Wakes what a section collected, after unlocking, and serves again
    /// while a full batch cut the serve short. If a waker (foreign code)
    /// panics, `OnUnwind` goes on with the rest as the panic unwinds (a
    /// second panic then aborts, as anywhere in Rust).
    #[inline]
    fn finish(&self, owed: &mut Owed) {
        // Most sections wake nobody: checked inline, the loop out of line.
        if owed.wake.is_empty() && !owed.more {
            return;
        }
        self.wake_owed(owed);
    }

    /// [`finish`](Self::finish), with something to wake or serve.
    #[inline(never)]
    fn wake_owed(&self, owed: &mut Owed) {
        /// Resumes `wake_owed` if a waker panics.
        struct OnUnwind<'b, 'a, L: RawLock>(&'a Partitioned<L>, &'b mut Owed);
        impl<L: RawLock> Drop for OnUnwind<'_, '_, L> {
            fn drop(&mut self) {
                self.0.wake_owed(self.1);
            }
        }
        loop {
            while let Some(waker) = owed.wake.pop_front() {
                let guard = OnUnwind(self, owed);
                waker.wake();
                core::mem::forget(guard);
            }
            if !owed.more {
                return;
            }
            let wake = &mut *owed.wake;
            // SAFETY: as in `section_then`.
            owed.more = unsafe {
                self.lock
                    .with_lock(|| self.table.with_mut(|t| (*t).serve(wake)))
            };
        }
    }

    /// As [`section`](Self::section) if the lock is free right now.
    fn try_section<R>(&self, f: impl FnOnce(&mut Table, &mut Wakers) -> R) -> Option<R> {
        let mut owed = Owed::new();
        // SAFETY: as in `section_then`.
        let r = unsafe {
            self.lock.try_with_lock(|| {
                self.table.with_mut(|t| {
                    let t = &mut *t;
                    let r = f(t, &mut owed.wake);
                    owed.more = t.serve(&mut owed.wake);
                    r
                })
            })
        };
        self.finish(&mut owed);
        r
    }

    /// Checks that `partitions` are this compartment's, by name and in
    /// order.
    fn check_same_partitions(&self, partitions: &[PartitionConfig]) -> Result<(), ConfigError> {
        check_names(&self.name, partitions)?;
        if partitions.len() != self.names.len()
            || partitions
                .iter()
                .zip(&self.names)
                .any(|(p, n)| p.name != *n)
        {
            return Err(ConfigError::PartitionsChanged {
                name: self.name.clone(),
            });
        }
        Ok(())
    }

    /// The name an error about partition `i` carries: `compartment/partition`
    /// with the `alloc` feature (a name made at run time), the compartment's
    /// alone without it.
    pub(crate) fn error_name(&self, i: usize) -> Name {
        #[cfg(feature = "alloc")]
        {
            let mut name =
                alloc::string::String::with_capacity(self.name.len() + 1 + self.names[i].len());
            name.push_str(&self.name);
            name.push('/');
            name.push_str(&self.names[i]);
            Name::shared(alloc::sync::Arc::from(name))
        }
        #[cfg(not(feature = "alloc"))]
        {
            let _ = i;
            self.name.clone()
        }
    }

    /// The most seats partition `i` may hold now, for error messages.
    fn figures(&self, t: &Table, i: usize) -> (usize, usize, usize) {
        let p = &t.parts[i];
        (p.active, p.resolved.share, p.resolved.may_hold)
    }

    /// Describes a refusal of partition `i` (counted by the caller).
    fn full_error(&self, t: &Table, i: usize) -> Error {
        let (active, share, may_hold) = self.figures(t, i);
        Error::PartitionFull {
            name: self.name.clone(),
            partition: self.names[i].clone(),
            active,
            share,
            may_hold,
        }
    }
}

/// An adaptive limit drives a partitioned compartment as it drives a plain
/// one: `Controller::record(&partitioned, &sample)` moves the limit, and
/// percentage shares and borrowing limits follow. Shares given as counts
/// bound how far it can shrink (a limit below their sum is refused and the
/// old one kept).
impl<L: RawLock> crate::limit::Resize for Partitioned<L> {
    fn max_concurrent(&self) -> usize {
        self.limit.load(Relaxed)
    }

    fn try_set_max_concurrent(&self, max_concurrent: usize) -> Result<Option<usize>, ConfigError> {
        Partitioned::try_set_max_concurrent(self, max_concurrent)
    }
}

/// Shuttle builds only: observing every decision.
#[cfg(bulkhead_shuttle)]
impl<L: RawLock> Partitioned<L> {
    /// Calls `observer(views, i, w)` whenever partition `i` is handed `w`
    /// seats (a newcomer admitted or a waiter served), under the lock and
    /// before the seats are counted, with every partition's
    /// [`SectionView`] in declaration order: a randomized test can check
    /// each decision against the rules. `observer` must not touch the
    /// compartment (it runs under its lock).
    pub fn observe_decisions(&self, observer: fn(&[SectionView], usize, usize)) {
        self.section(|t, _| t.observer = Some(observer));
    }
}

/// A count for a `usize` field: saturates on 32-bit targets.
fn sat(n: u64) -> usize {
    usize::try_from(n).unwrap_or(usize::MAX)
}

impl<L: RawLock> Partitioned<L> {
    /// Moves the table's limit; the caller serves afterwards.
    fn resize(&self, t: &mut Table, max_concurrent: usize) -> Result<usize, ConfigError> {
        let name = &self.name;
        let refs: Vec<&PartitionConfig, MAX_PARTITIONS> =
            t.parts.iter().map(|p| &p.config).collect();
        let resolved = if max_concurrent == 0 {
            // A pause: every share and borrowing limit is 0, and callers wait.
            [Resolved::default(); MAX_PARTITIONS]
        } else {
            resolve_all(name, max_concurrent, &refs, false)?
        };
        drop(refs);
        if max_concurrent == 0 && t.limit > 0 {
            t.resumes_at = t.limit;
        }
        for (p, r) in t.parts.iter_mut().zip(resolved) {
            p.resolved = r;
        }
        self.limit.store(max_concurrent, Relaxed);
        Ok(core::mem::replace(&mut t.limit, max_concurrent))
    }
}

/// Wakers a section collected and not yet woken, and whether a full batch
/// cut its serve short. Hand it to [`Partitioned::finish`]: dropped instead,
/// its wakers are dropped unwoken (only a caller that is itself unwinding
/// does that).
struct Owed {
    /// Never dropped as a whole: `Drop` below drops what is left in it, and
    /// the empty deque (inline storage, nothing to free) is left behind,
    /// which saves an uncontended section the deque's own drop loop.
    wake: ManuallyDrop<Wakers>,
    more: bool,
}

impl Owed {
    fn new() -> Self {
        Self {
            wake: ManuallyDrop::new(Wakers::new()),
            more: false,
        }
    }
}

impl Drop for Owed {
    #[inline]
    fn drop(&mut self) {
        // Only a caller that is itself unwinding leaves wakers here.
        while let Some(waker) = self.wake.pop_front() {
            drop(waker);
        }
    }
}

impl<L: RawLock> fmt::Debug for Partitioned<L> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Partitioned")
            .field("name", &self.name)
            .field("partitions", &self.names)
            .finish_non_exhaustive()
    }
}
