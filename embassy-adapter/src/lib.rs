#![no_std]
#![doc = include_str!("../README.md")]
#![warn(clippy::std_instead_of_core, clippy::alloc_instead_of_core)]
#![cfg_attr(docsrs, feature(doc_cfg))]

#[cfg(feature = "time")]
mod clock;
mod lock;
#[cfg(feature = "time")]
mod time;

/// The core crate itself, for its generic [`Bulkhead<L>`](bulkhead_core::Bulkhead).
pub use bulkhead_core;
// Everything from `bulkhead-core`, so that firmware needs one dependency.
// `Bulkhead` here is the embassy alias; core's generic type stays reachable
// as `bulkhead_core::Bulkhead`. (A plain comment: a doc comment on a glob
// re-export is pasted in front of every re-exported item's summary.)
pub use bulkhead_core::*;
/// embassy-sync's raw mutexes, to name a compartment's lock:
/// `Bulkhead<raw::CriticalSectionRawMutex>`.
pub use embassy_sync::blocking_mutex::raw;

#[cfg(feature = "time")]
pub use clock::EmbassyClock;
pub use lock::EmbassyLock;
#[cfg(all(feature = "time", feature = "partitions", feature = "weights"))]
pub use time::EmbassyAcquirePartitionManyWithin;
#[cfg(feature = "time")]
pub use time::{
    EmbassyAcquire, EmbassyAcquireWithin, acquire_until, acquire_within, to_core_duration,
};
#[cfg(all(feature = "time", feature = "weights"))]
pub use time::{EmbassyAcquireManyWithin, acquire_many_until, acquire_many_within};
#[cfg(all(feature = "time", feature = "partitions"))]
pub use time::{EmbassyAcquirePartition, EmbassyAcquirePartitionWithin};

/// A compartment whose waiter list is guarded by the embassy-sync raw mutex
/// `M`. See [`EmbassyLock`] for which mutex fits where.
///
/// Build it with [`new_static`] in a `static`, or with
/// [`Bulkhead::new`](bulkhead_core::Bulkhead::new) /
/// [`from_config`](bulkhead_core::Bulkhead::from_config), which are `const`
/// too.
pub type Bulkhead<M> = bulkhead_core::Bulkhead<EmbassyLock<M>>;

/// A seat in a [`Bulkhead<M>`](Bulkhead): core's
/// [`Seat`](bulkhead_core::Seat) with the embassy lock. Dropping it gives
/// the seat back. (Core's generic type stays reachable as
/// `bulkhead_core::Seat`.)
pub type Seat<'a, M> = bulkhead_core::Seat<'a, EmbassyLock<M>>;

/// A [partitioned](bulkhead_core::partition) compartment whose table is
/// guarded by the embassy-sync raw mutex `M`: one compartment's seats
/// shared by named partitions, each guaranteed a share. (Core's generic
/// type stays reachable as `bulkhead_core::partition::Partitioned`.)
///
/// Giving a partition's seat back always takes the lock, so seats given
/// back in interrupt handlers need [`CriticalSectionRawMutex`](raw::CriticalSectionRawMutex).
/// Its constructor checks the partitions and is not `const`: build it at
/// start-up (in `main`, or in an embassy-sync `OnceLock`).
///
/// ```
/// use bulkhead_embassy::partition::{Amount, PartitionConfig};
/// use bulkhead_embassy::{Partitioned, raw::CriticalSectionRawMutex};
///
/// let bus: Partitioned<CriticalSectionRawMutex> = Partitioned::new("bus", 4, &[
///     PartitionConfig::new("isr", Amount::Seats(2)).priority(1),
///     PartitionConfig::new("background", Amount::Seats(2)),
/// ])?;
/// let background = bus.id("background")?;
/// // Background work borrows the idle `isr` seats...
/// let seats: [_; 4] = core::array::from_fn(|_| bus.try_acquire(background).unwrap());
/// assert_eq!(bus.partition_state(bus.id("isr")?)?.lent, 2);
/// # drop(seats);
/// # Ok::<(), Box<dyn core::error::Error>>(())
/// ```
#[cfg(feature = "partitions")]
pub type Partitioned<M> = bulkhead_core::partition::Partitioned<EmbassyLock<M>>;

/// A seat of a partition of a [`Partitioned<M>`](Partitioned), borrowing
/// the compartment: core's
/// [`PartitionSeat`](bulkhead_core::partition::PartitionSeat). Dropping it
/// gives the seat back, under the compartment's lock.
#[cfg(feature = "partitions")]
pub type PartitionSeat<'a, M> = bulkhead_core::partition::PartitionSeat<&'a Partitioned<M>>;

/// Builds a compartment for a `static`: `name` with `max_concurrent` seats,
/// first come first served, no queue limit.
///
/// No `static_cell`, no lazy initialisation: the compartment lives in
/// `.data`/`.bss` and is usable from the first instruction of `main`.
///
/// # Panics
///
/// If `max_concurrent` is 0 or above [`MAX_CONCURRENT_LIMIT`]. In a
/// `static` or `const` that panic is a compile error, so a bad size never
/// reaches the device.
///
/// # Examples
///
/// ```
/// use bulkhead_embassy::{Bulkhead, raw::CriticalSectionRawMutex};
///
/// static FLASH: Bulkhead<CriticalSectionRawMutex> = bulkhead_embassy::new_static("flash", 1);
///
/// let seat = FLASH.try_acquire().unwrap();
/// assert!(FLASH.try_acquire().is_err());
/// drop(seat);
/// ```
///
/// ```compile_fail
/// use bulkhead_embassy::{Bulkhead, raw::CriticalSectionRawMutex};
/// static NOBODY: Bulkhead<CriticalSectionRawMutex> = bulkhead_embassy::new_static("nobody", 0);
/// # let _ = &NOBODY;
/// ```
///
/// With settings beyond a size, use a [`Config`]:
///
/// ```
/// use bulkhead_embassy::{Bulkhead, Config, raw::CriticalSectionRawMutex};
///
/// static SPI: Bulkhead<CriticalSectionRawMutex> =
///     Bulkhead::from_config_static(Config::new("spi", 2).max_waiting(4));
/// # assert_eq!(SPI.name(), "spi");
/// ```
pub const fn new_static<M: raw::RawMutex>(
    name: &'static str,
    max_concurrent: usize,
) -> Bulkhead<M> {
    // Core's one const constructor: it validates the `Copy` settings
    // before it builds, so no `Result` holding a lock is ever dropped.
    bulkhead_core::Bulkhead::new_static(name, max_concurrent)
}
