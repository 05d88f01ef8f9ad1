//! A tokio service that uses only the registry: every path that takes a
//! seat (a thread, a tokio task, the tower layer) gets the compartment's
//! configured budget and shows in the metrics, checked with metrics-util's
//! debugging recorder installed globally (tasks run on other threads).
//! One `#[test]`, since the recorder is process-wide.

use std::convert::Infallible;
use std::future::{Ready, poll_fn, ready};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bulkhead_std::metrics as bm;
use bulkhead_std::registry::{DomainConfig, Registry, RegistryError, RegistrySeat};
use bulkhead_tokio::{BoxError, BulkheadLayer, Error, MaxWait, RegistryExt};
use metrics::Unit;
use metrics_util::debugging::{DebugValue, DebuggingRecorder};
use tower_layer::Layer;
use tower_service::Service;

const BUDGET: Duration = Duration::from_millis(300);
const HOLD: Duration = Duration::from_millis(30);

#[derive(Clone)]
struct Echo;

impl Service<u32> for Echo {
    type Response = u32;
    type Error = Infallible;
    type Future = Ready<Result<u32, Infallible>>;
    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }
    fn call(&mut self, n: u32) -> Self::Future {
        ready(Ok(n))
    }
}

/// The only seat of `name`.
fn seat(registry: &Registry, name: &str) -> RegistrySeat {
    registry.domain(name).unwrap().try_acquire().unwrap()
}

/// Holds the only seat of `name` for `HOLD` on another thread.
fn hold(registry: &Registry, name: &str) -> std::thread::JoinHandle<()> {
    let seat = seat(registry, name);
    std::thread::spawn(move || {
        std::thread::sleep(HOLD);
        drop(seat);
    })
}

#[test]
fn threads_tokio_tasks_and_tower_all_get_budgets_and_metrics() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    metrics::set_global_recorder(recorder).unwrap();
    bm::describe(); // metrics in use: from now on waits are timed

    let registry = Arc::new(Registry::local());
    for name in ["via_thread", "via_task", "via_tower"] {
        registry
            .get_or_create(name, DomainConfig::new(1).max_wait(MaxWait::up_to(BUDGET)))
            .unwrap();
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .unwrap();
    runtime.block_on(async {
        // A thread (tokio's blocking pool): waits its configured budget.
        let releaser = hold(&registry, "via_thread");
        let r = registry.clone();
        tokio::task::spawn_blocking(move || r.execute("via_thread", || ()))
            .await
            .unwrap()
            .unwrap();
        releaser.join().unwrap();

        // A tokio task, through the registry only.
        let releaser = hold(&registry, "via_task");
        let r = registry.clone();
        tokio::spawn(async move { r.run_within("via_task", async {}).await })
            .await
            .unwrap()
            .unwrap();
        releaser.join().unwrap();

        // The tower layer, built from the registry with its budget.
        let layer = BulkheadLayer::from_registry(&registry, "via_tower").unwrap();
        assert_eq!(layer.wait_budget(), MaxWait::UpTo(BUDGET));
        let mut svc = layer.layer(Echo);
        let releaser = hold(&registry, "via_tower");
        poll_fn(|cx| svc.poll_ready(cx)).await.unwrap();
        assert_eq!(svc.call(7).await.unwrap(), 7);
        releaser.join().unwrap();

        // One timeout per path: a seat held longer than the budget.
        for name in ["via_thread", "via_task", "via_tower"] {
            let _held = seat(&registry, name);
            let outcome: Result<(), Error> = match name {
                "via_thread" => {
                    let r = registry.clone();
                    tokio::task::spawn_blocking(move || r.acquire_blocking("via_thread").map(drop))
                        .await
                        .unwrap()
                        .map_err(rejected)
                }
                "via_task" => registry
                    .acquire_within(name)
                    .await
                    .map(drop)
                    .map_err(rejected),
                _ => {
                    poll_fn(|cx| svc.poll_ready(cx)).await.unwrap();
                    let err: BoxError = svc.call(1).await.unwrap_err();
                    Err(err.downcast_ref::<Error>().unwrap().clone())
                }
            };
            assert!(
                matches!(outcome, Err(Error::Timeout { budget: BUDGET, .. })),
                "{name}"
            );
        }
    });
    bm::publish_registry(&registry);

    let all = snapshotter.snapshot().into_vec();
    let find = |metric: &str, name: &str| {
        all.iter()
            .find(|(k, ..)| k.key().name() == metric && k.key().labels().any(|l| l.value() == name))
            .map(|(_, unit, description, v)| (*unit, description.is_some(), v))
    };
    for name in ["via_thread", "via_task", "via_tower"] {
        // The holder and the caller that waited were admitted, and so was the
        // holder that made each caller time out.
        assert_eq!(
            find(bm::ADMITTED, name),
            Some((Some(Unit::Count), true, &DebugValue::Counter(3))),
            "{name}"
        );
        assert_eq!(
            find(bm::TIMED_OUT, name),
            Some((Some(Unit::Count), true, &DebugValue::Counter(1))),
            "{name}"
        );
        assert_eq!(
            find(bm::REJECTED, name),
            Some((Some(Unit::Count), true, &DebugValue::Counter(0))),
            "{name}"
        );
        match find(bm::WAIT_SECONDS, name) {
            Some((Some(Unit::Seconds), true, DebugValue::Histogram(samples))) => {
                assert_eq!(samples.len(), 1, "{name}: {samples:?}");
                let waited = samples[0].into_inner();
                assert!(
                    waited > 0.005 && waited < BUDGET.as_secs_f64(),
                    "{name}: {waited}"
                );
            }
            other => panic!("{name}: {other:?}"),
        }
    }
}

fn rejected(e: RegistryError) -> Error {
    match e {
        RegistryError::Rejected(e) => e,
        other => panic!("{other}"),
    }
}
