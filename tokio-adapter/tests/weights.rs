//! Weighted seats and queue order through tokio's waits:
//! `acquire_many_within` (borrowed, owned, adaptive), the head of a FIFO
//! line never passed by lighter waiters, newest-first order with
//! drop-oldest, and weighted owned seats moving into spawned tasks.
//!
//! As in `waits.rs`: the tests that measure time run on a current-thread
//! runtime with tokio's clock paused and assert that clock's exact
//! durations; the tests about threads assert nothing about time.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bulkhead_tokio::bulkhead_core::limit::{Adaptive, Aimd, AimdParams, CallOutcome};
use bulkhead_tokio::{
    Bulkhead, Config, Error, MaxWait, OwnedSeat, QueueOrder, TokioAcquire, TokioAcquireAdaptive,
    TokioClock,
};
use tokio::task::{JoinHandle, yield_now};
use tokio::time::{Instant, sleep};

const MS: Duration = Duration::from_millis(1);

fn compartment(name: &'static str, seats: usize) -> Arc<Bulkhead> {
    Arc::new(Bulkhead::new(name, seats).unwrap())
}

/// Yields until `b` has `n` waiters, so that tasks spawned one after the
/// other join the line in that order.
async fn until_waiting(b: &Bulkhead, n: usize) {
    while b.state().waiting < n {
        yield_now().await;
    }
}

/// A task that waits for `weight` seats within `budget`; the seat it
/// gets is held until the test drops it.
fn waiter(
    b: &Arc<Bulkhead>,
    weight: usize,
    budget: Duration,
) -> JoinHandle<Result<OwnedSeat<Arc<Bulkhead>>, Error>> {
    tokio::spawn(Arc::clone(b).acquire_many_within_owned(weight, budget))
}

// === weighted waits within a budget ===

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_weighted_wait_is_admitted_when_enough_seats_free_within_its_budget() {
    let db = compartment("db", 4);
    let first = OwnedSeat::try_acquire_many(db.clone(), 2).unwrap();
    let second = OwnedSeat::try_acquire(db.clone()).unwrap();
    tokio::spawn(async move {
        sleep(10 * MS).await;
        drop(first); // 3 free: not enough for 4
        sleep(20 * MS).await;
        drop(second); // 4 free
    });
    let start = Instant::now();
    let seat = db.acquire_many_within(4, 100 * MS).await.unwrap();
    assert_eq!(
        start.elapsed(),
        30 * MS,
        "admitted when the fourth seat freed"
    );
    assert_eq!((seat.weight(), db.state().active), (4, 4));
    drop(seat);
    assert_eq!(db.state().active, 0);
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_weighted_wait_times_out_after_exactly_its_budget_and_returns_the_kept_seats() {
    let db = compartment("db", 4);
    let held = OwnedSeat::try_acquire_many(db.clone(), 3).unwrap();
    let mut held = Some(held);
    let start = Instant::now();
    let heavy = db.acquire_many_within(4, 50 * MS);
    let release_some = async {
        sleep(10 * MS).await;
        // Two of the three back: kept for the heavy waiter, not enough.
        let mut part = held.take().unwrap();
        drop(part.split(2).unwrap());
        held = Some(part);
        std::future::pending::<()>().await
    };
    let err = tokio::select! {
        result = heavy => result.unwrap_err(),
        () = release_some => unreachable!(),
    };
    assert_eq!(
        err,
        Error::Timeout {
            name: "db".into(),
            budget: 50 * MS
        }
    );
    assert_eq!(start.elapsed(), 50 * MS);
    // The two seats kept for it are free again, for anyone.
    let state = db.state();
    assert_eq!((state.active, state.waiting, state.timed_out), (1, 0, 1));
    let three = db
        .try_acquire_many(3)
        .expect("the kept seats were given back");
    drop((three, held));
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn weighted_fail_fast_and_bad_weights_decide_at_the_first_poll() {
    let db = compartment("db", 4);
    let _held = db.try_acquire_many(2).unwrap();
    let start = Instant::now();
    for budget in [MaxWait::FailFast, (50 * MS).into(), MaxWait::Forever] {
        let err = db.acquire_many_within(0, budget).await.unwrap_err();
        assert_eq!(err, Error::ZeroWeight { name: "db".into() }, "{budget:?}");
        let err = db.acquire_many_within(5, budget).await.unwrap_err();
        assert_eq!(
            err,
            Error::WeightAboveLimit {
                name: "db".into(),
                weight: 5,
                max_concurrent: 4
            },
            "{budget:?}: refused at once, since waiting could never help"
        );
        let err = db
            .clone()
            .acquire_many_within_owned(usize::MAX, budget)
            .await
            .unwrap_err();
        assert!(matches!(err, Error::WeightAboveLimit { .. }), "{err:?}");
    }
    assert_eq!(start.elapsed(), Duration::ZERO, "no bad weight waited");
    let err = db
        .acquire_many_within(3, MaxWait::FailFast)
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Full { .. }), "{err:?}");
    // Counted: the weights above the limit and `Full`; not the zero weights.
    assert_eq!(db.state().rejected, 3 * 2 + 1);
    assert_eq!(
        db.acquire_many_within(2, MaxWait::FailFast)
            .await
            .unwrap()
            .weight(),
        2
    );
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_weight_above_32_bits_is_reported_as_asked_by_every_wait() {
    let db = compartment("db", 4);
    let weight = usize::try_from(u64::from(u32::MAX) + 1).unwrap_or(usize::MAX);
    for budget in [MaxWait::FailFast, (50 * MS).into(), MaxWait::Forever] {
        let err = db.acquire_many_within(weight, budget).await.unwrap_err();
        assert_eq!(
            err,
            Error::WeightAboveLimit {
                name: "db".into(),
                weight,
                max_concurrent: 4
            },
            "{budget:?}"
        );
    }
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_waiter_heavier_than_a_shrunk_limit_is_refused_not_left_waiting() {
    let db = compartment("db", 4);
    let held = db.try_acquire_many(4).unwrap();
    let heavy = waiter(&db, 3, Duration::from_secs(60));
    until_waiting(&db, 1).await;
    let start = Instant::now();
    db.set_max_concurrent(2).unwrap();
    drop(held);
    let err = heavy.await.unwrap().unwrap_err();
    assert!(
        matches!(
            err,
            Error::WeightAboveLimit {
                weight: 3,
                max_concurrent: 2,
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(
        start.elapsed(),
        Duration::ZERO,
        "refused without waiting out its budget"
    );
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_limit_of_zero_pauses_a_weighted_wait_rather_than_refusing_it() {
    let db = compartment("db", 4);
    db.set_max_concurrent(0).unwrap();
    let err = db
        .acquire_many_within(2, MaxWait::FailFast)
        .await
        .unwrap_err();
    assert!(
        matches!(err, Error::Full { .. }),
        "paused, not too heavy: {err:?}"
    );
    let resume = Arc::clone(&db);
    tokio::spawn(async move {
        sleep(10 * MS).await;
        resume.set_max_concurrent(3).unwrap();
    });
    let start = Instant::now();
    let seat = db.acquire_many_within(2, 50 * MS).await.unwrap();
    assert_eq!(start.elapsed(), 10 * MS, "admitted when the limit rose");
    assert_eq!(seat.weight(), 2);
}

// === a heavy waiter is not passed by lighter ones (FIFO) ===

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_heavy_waiter_at_the_head_is_not_passed_by_lighter_later_ones() {
    let db = compartment("db", 4);
    let mut held = db.try_acquire_many(4).unwrap();
    let budget = Duration::from_secs(60);
    let heavy = waiter(&db, 3, budget);
    until_waiting(&db, 1).await;
    let light: Vec<_> = (0..3).map(|_| waiter(&db, 1, budget)).collect();
    until_waiting(&db, 4).await;

    // Two seats back: enough for every light waiter, not for the heavy one
    // at the head. They stay reserved for it; nobody behind it, nor a
    // newcomer, takes them.
    drop(held.split(2).unwrap());
    sleep(10 * MS).await;
    assert!(!heavy.is_finished());
    assert!(
        light.iter().all(|l| !l.is_finished()),
        "a lighter waiter passed the head"
    );
    assert!(matches!(db.try_acquire(), Err(Error::Full { .. })));
    assert_eq!(db.state().waiting, 4);

    // One more: the head has its three.
    drop(held.split(1).unwrap());
    let heavy = heavy.await.unwrap().unwrap();
    assert_eq!(heavy.weight(), 3);
    sleep(10 * MS).await;
    assert!(
        light.iter().all(|l| !l.is_finished()),
        "all four seats are held"
    );
    assert_eq!(db.state().waiting, 3);
    drop((held, heavy));
    let mut seats = Vec::new();
    for l in light {
        seats.push(l.await.unwrap().unwrap());
    }
    assert_eq!(db.state().active, 3);
    drop(seats);
    assert_eq!(db.state().active, 0);
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_cancelled_heavy_head_hands_its_kept_seats_to_the_next_waiter_at_once() {
    let db = compartment("db", 4);
    let mut held = db.try_acquire_many(4).unwrap();
    let budget = Duration::from_secs(60);
    let heavy = waiter(&db, 4, budget);
    until_waiting(&db, 1).await;
    let light = waiter(&db, 2, budget);
    until_waiting(&db, 2).await;
    drop(held.split(3).unwrap()); // three kept for the head
    sleep(10 * MS).await;
    assert!(!light.is_finished(), "not passed while the head waits");

    heavy.abort();
    assert!(heavy.await.unwrap_err().is_cancelled());
    // The three kept seats went on: the light waiter is admitted with the
    // last seat still held.
    let light = light.await.unwrap().unwrap();
    assert_eq!((light.weight(), db.state().active), (2, 3));
    drop((held, light));
    assert_eq!(db.state().active, 0);
}

// === newest first (LIFO) ===

fn lifo(name: &'static str, seats: usize, max_waiting: Option<usize>) -> Arc<Bulkhead> {
    let mut config = Config::new(name, seats).queue_order(QueueOrder::Lifo);
    config.max_waiting = max_waiting;
    Arc::new(Bulkhead::from_config(config).unwrap())
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn lifo_serves_the_newest_tokio_waiter_first() {
    let api = lifo("api", 1, None);
    let order = Arc::new(Mutex::new(Vec::new()));
    let held = api.try_acquire().unwrap();
    let mut tasks = Vec::new();
    for i in 1..=3 {
        let (mine, order) = (Arc::clone(&api), Arc::clone(&order));
        tasks.push(tokio::spawn(async move {
            let _seat = mine.acquire_within(Duration::from_secs(60)).await.unwrap();
            order.lock().unwrap().push(i);
            sleep(MS).await; // holds the seat a moment
        }));
        until_waiting(&api, i).await;
    }
    drop(held);
    for task in tasks {
        task.await.unwrap();
    }
    assert_eq!(*order.lock().unwrap(), [3, 2, 1]);
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_full_lifo_line_turns_its_oldest_tokio_waiter_away() {
    let api = lifo("api", 1, Some(2));
    let held = OwnedSeat::try_acquire(api.clone()).unwrap();
    let budget = Duration::from_secs(60);
    let oldest = tokio::spawn(api.clone().acquire_many_within_owned(1, budget));
    until_waiting(&api, 1).await;
    let middle = tokio::spawn(api.clone().acquire_within_owned(budget));
    until_waiting(&api, 2).await;
    let start = Instant::now();
    let newest = tokio::spawn(api.clone().acquire_within_owned(budget));
    // The newcomer is queued, and the oldest waiter leaves with `QueueFull`
    // at once rather than after its budget.
    let err = oldest.await.unwrap().unwrap_err();
    assert!(matches!(err, Error::QueueFull { .. }), "{err:?}");
    assert_eq!(start.elapsed(), Duration::ZERO);
    assert_eq!(api.state().waiting, 2);
    drop(held);
    let seat = newest.await.unwrap().expect("the newest is served first");
    assert!(!middle.is_finished());
    drop(seat);
    drop(middle.await.unwrap().unwrap());
    let state = api.state();
    assert_eq!((state.active, state.waiting, state.rejected), (0, 0, 1));
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn set_queue_order_lets_newcomers_pass_the_tokio_waiters_already_in_line() {
    let api = compartment("api", 1);
    let order = Arc::new(Mutex::new(Vec::new()));
    let held = api.try_acquire().unwrap();
    let mut tasks = Vec::new();
    for i in 1..=3 {
        if i == 3 {
            assert_eq!(api.set_queue_order(QueueOrder::Lifo), QueueOrder::Fifo);
        }
        let (mine, order) = (Arc::clone(&api), Arc::clone(&order));
        tasks.push(tokio::spawn(async move {
            let _seat = mine.acquire_within(Duration::from_secs(60)).await.unwrap();
            order.lock().unwrap().push(i);
            sleep(MS).await;
        }));
        until_waiting(&api, i).await;
    }
    drop(held);
    for task in tasks {
        task.await.unwrap();
    }
    // The newcomer after the switch is served first; the two that queued
    // oldest first keep their places.
    assert_eq!(*order.lock().unwrap(), [3, 1, 2]);
}

// === owned weighted seats in spawned tasks ===

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn owned_weighted_seats_move_into_spawned_tasks_whole_or_split() {
    let gpu = compartment("gpu", 4);
    let mut seat = gpu
        .clone()
        .acquire_many_within_owned(3, MaxWait::FailFast)
        .await
        .unwrap();
    let part = seat.split(1).unwrap();
    let (go, wait) = tokio::sync::oneshot::channel::<()>();
    let helper = tokio::spawn(async move {
        wait.await.unwrap();
        part.weight()
    });
    let main = tokio::spawn(async move {
        yield_now().await;
        seat.weight()
    });
    assert_eq!(main.await.unwrap(), 2);
    // The helper still holds its one seat on another task.
    assert_eq!(gpu.state().active, 1);
    go.send(()).unwrap();
    assert_eq!(helper.await.unwrap(), 1);
    assert_eq!(gpu.state().active, 0);
    assert_eq!(
        Arc::strong_count(&gpu),
        1,
        "every split seat let its handle go"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spawned_weighted_owned_wait_is_admitted_when_seats_free_on_another_worker() {
    let gpu = compartment("gpu", 4);
    let held = OwnedSeat::try_acquire_many(gpu.clone(), 3).unwrap();
    let (go, release) = tokio::sync::oneshot::channel::<()>();
    let holder = tokio::spawn(async move {
        release.await.unwrap();
        drop(held);
    });
    let fut = gpu
        .clone()
        .acquire_many_within_owned(4, Duration::from_secs(3600));
    fn assert_send_static<T: Send + 'static>(_: &T) {}
    assert_send_static(&fut);
    let waiter = tokio::spawn(async move {
        let seat = fut.await?;
        Ok::<_, Error>(seat)
    });
    until_waiting(&gpu, 1).await;
    go.send(()).unwrap();
    let seat = waiter.await.unwrap().expect("all four seats, once freed");
    holder.await.unwrap();
    assert_eq!((seat.weight(), gpu.state().active), (4, 4));
    drop(seat);
    assert_eq!(gpu.state().active, 0);
}

// === adaptive: one sample per call, whatever the weight ===

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_weighted_adaptive_seat_records_one_sample() {
    let aimd = Aimd::new(AimdParams {
        initial: 8,
        min: 1,
        ..AimdParams::DEFAULT
    })
    .unwrap();
    let api = Adaptive::new(Bulkhead::new("api", 8).unwrap(), aimd, TokioClock::new());
    let seat = api.acquire_many_within(5, 10 * MS).await.unwrap();
    assert_eq!(seat.in_flight(), 5, "the limit counts seats");
    assert_eq!(api.bulkhead().state().active, 5);
    seat.record(CallOutcome::Dropped);
    // One multiplicative decrease, floor(0.9 × 8), not five.
    assert_eq!(api.limit(), 7);
    assert_eq!(api.controller().changes(), 1);
    assert_eq!(api.bulkhead().state().active, 0);

    let err = api
        .acquire_many_within(8, MaxWait::FailFast)
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::WeightAboveLimit {
                weight: 8,
                max_concurrent: 7,
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(api.controller().changes(), 1, "a rejection records nothing");
}

/// The registry's weighted waits on tokio's clock: `acquire_many_within`
/// takes the weight at once or waits the compartment's budget, and
/// `run_within_weighted` runs work under a weighted seat.
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn the_registry_takes_weights_on_tokios_clock() {
    use bulkhead_tokio::prelude::*;
    use bulkhead_tokio::registry::{DomainConfig, Registry};
    let registry = Registry::local();
    registry
        .get_or_create(
            "db",
            DomainConfig::new(4).max_wait(bulkhead_tokio::MaxWait::from_millis(20)),
        )
        .unwrap();
    let import = registry.acquire_many_within("db", 3).await.unwrap();
    assert_eq!(import.weight(), 3);
    let started = tokio::time::Instant::now();
    let err = registry.acquire_many_within("db", 2).await.unwrap_err();
    assert!(err.to_string().contains("db"), "{err}");
    assert_eq!(started.elapsed(), std::time::Duration::from_millis(20));
    drop(import);
    let rows = registry
        .run_within_weighted("db", 4, async { Ok::<u32, std::io::Error>(42) })
        .await
        .unwrap();
    assert_eq!(rows.unwrap(), 42);
    assert_eq!(registry.get("db").unwrap().state().active, 0);
}
