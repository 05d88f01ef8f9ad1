//! The partitioned tower layer: requests routed to partitions by header,
//! path, extension and closure through one shared compartment (borrowing
//! visible in the partitions' counters, the live partition served first
//! when seats free), per-partition budgets (configured or set on the
//! layer), unknown partition names refused at build time, and
//! `PartitionFull` answered `503` with `Retry-After`.

use std::future::{Future, Pending, pending};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use bulkhead_tokio::bulkhead_core::partition::{Amount, PartitionConfig, PartitionId, Partitioned};
use bulkhead_tokio::{
    BoxError, ByExtension, ByHeader, ByPath, Error, HttpRejection, MaxWait, PartitionName,
    PartitionedLayer, ServiceError, StdLock,
};
use http::{HeaderName, Request, StatusCode};
use tower_layer::Layer;
use tower_service::Service;

/// Never answers, so an admitted request holds its seat until its
/// response future is dropped; counts its calls.
#[derive(Clone, Default)]
struct Hold {
    calls: Arc<AtomicUsize>,
}

impl Service<Request<()>> for Hold {
    type Response = ();
    type Error = std::io::Error;
    type Future = Pending<Result<(), std::io::Error>>;
    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), std::io::Error>> {
        Poll::Ready(Ok(()))
    }
    fn call(&mut self, _: Request<()>) -> Self::Future {
        self.calls.fetch_add(1, Ordering::SeqCst);
        pending()
    }
}

/// Polls a response future once (pinned in a box: a waiting one holds a
/// queued wait).
fn poll_once<F: Future>(f: &mut Pin<Box<F>>) -> Poll<F::Output> {
    f.as_mut().poll(&mut Context::from_waker(Waker::noop()))
}

/// 4 seats: `live` (2, first in line, waits up to 1 s by configuration)
/// and `batch` (2, may borrow 2 more, fails fast).
fn shared() -> Arc<Partitioned<StdLock>> {
    Arc::new(
        Partitioned::new(
            "db",
            4,
            &[
                PartitionConfig::new("live", Amount::Seats(2))
                    .priority(1)
                    .max_wait(MaxWait::from_millis(1000)),
                PartitionConfig::new("batch", Amount::Seats(2)).borrow(Amount::Seats(2)),
            ],
        )
        .unwrap(),
    )
}

fn tier(value: &str) -> Request<()> {
    Request::builder().header("x-tier", value).body(()).unwrap()
}

fn path(p: &str) -> Request<()> {
    Request::get(p).body(()).unwrap()
}

fn active(db: &Partitioned<StdLock>, name: &str) -> usize {
    db.partition_state(db.id(name).unwrap()).unwrap().active
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn routes_by_header_through_a_shared_compartment() {
    let db = shared();
    let by_tier = ByHeader::new(&db, HeaderName::from_static("x-tier"), "live")
        .unwrap()
        .route("bulk", "batch")
        .unwrap();
    let layer = PartitionedLayer::new(db.clone(), by_tier);
    let inner = Hold::default();
    let mut svc = layer.layer(inner.clone());

    // Batch borrows live's idle seats: 4 of 4, 2 beyond its share.
    let mut flood: Vec<_> = (0..4).map(|_| Box::pin(svc.call(tier("bulk")))).collect();
    for f in &mut flood {
        assert!(poll_once(f).is_pending());
    }
    let batch = db.partition_state(db.id("batch").unwrap()).unwrap();
    let live = db.partition_state(db.id("live").unwrap()).unwrap();
    assert_eq!((batch.active, batch.borrowed, live.lent), (4, 2, 2));
    // Batch fails fast: a fifth is turned away, uncalled, with a 503.
    let err: BoxError = svc.call(tier("bulk")).await.unwrap_err();
    assert!(
        matches!(err.downcast_ref::<Error>(), Some(Error::PartitionFull { partition, .. }) if partition == "batch"),
        "{err:?}"
    );
    let answer = HttpRejection::find(&err).unwrap().response::<()>();
    assert_eq!(answer.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(answer.headers()["retry-after"], "1");
    assert_eq!(inner.calls.load(Ordering::SeqCst), 4);

    // Live waits (its configured budget): no header and an unrouted value
    // both go to the default, `live`.
    let mut live_wait = Box::pin(svc.call(Request::new(())));
    let mut live_other = Box::pin(svc.call(tier("gold")));
    assert!(poll_once(&mut live_wait).is_pending());
    assert!(poll_once(&mut live_other).is_pending());
    assert_eq!(
        db.partition_state(db.id("live").unwrap()).unwrap().waiting,
        2
    );
    // Each seat a borrower frees goes to live first.
    drop(flood.pop());
    assert!(poll_once(&mut live_wait).is_pending()); // admitted: inner called, pending
    assert_eq!((active(&db, "live"), active(&db, "batch")), (1, 3));
    drop(flood.pop());
    assert!(poll_once(&mut live_other).is_pending());
    assert_eq!((active(&db, "live"), active(&db, "batch")), (2, 2));
    assert_eq!(inner.calls.load(Ordering::SeqCst), 6);
    drop((flood, live_wait, live_other));
    assert_eq!(db.state().active, 0);
}

/// `request` is admitted through `partition` (and no other) in `call`,
/// and its seat is given back when its response future is dropped.
fn admits<S>(db: &Partitioned<StdLock>, svc: &mut S, request: Request<()>, partition: &str)
where
    S: Service<Request<()>>,
{
    let mut response = Box::pin(svc.call(request));
    assert!(poll_once(&mut response).is_pending());
    assert_eq!(active(db, partition), 1, "admitted through `{partition}`");
    assert_eq!(db.state().active, 1);
    drop(response);
    assert_eq!(db.state().active, 0);
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn routes_by_path_extension_and_closure() {
    let db = shared();
    let live = db.id("live").unwrap();
    let batch = db.id("batch").unwrap();

    let by_path = ByPath::new(&db, "live")
        .unwrap()
        .prefix("/reports/", "batch")
        .unwrap()
        .prefix("/reports/urgent/", "live")
        .unwrap();
    let by_ext = ByExtension::new(&db, "live").unwrap();
    let by_fn = move |r: &Request<()>| {
        if r.method() == http::Method::POST {
            batch
        } else {
            live
        }
    };

    let with_ext = |ext: Option<PartitionName>| {
        let mut r = Request::new(());
        if let Some(ext) = ext {
            r.extensions_mut().insert(ext);
        }
        r
    };
    let mut with_id = Request::new(());
    with_id.extensions_mut().insert(batch);

    let mut path_svc = PartitionedLayer::new(db.clone(), by_path).layer(Hold::default());
    let mut ext_svc = PartitionedLayer::new(db.clone(), by_ext).layer(Hold::default());
    let mut fn_svc = PartitionedLayer::new(db.clone(), by_fn).layer(Hold::default());

    admits(&db, &mut path_svc, path("/reports/2024"), "batch");
    admits(&db, &mut path_svc, path("/reports/urgent/now"), "live");
    admits(&db, &mut path_svc, path("/checkout"), "live");
    let named = with_ext(Some(PartitionName::new("batch")));
    admits(&db, &mut ext_svc, named, "batch");
    let unknown = with_ext(Some(PartitionName::new(String::from("nope"))));
    admits(&db, &mut ext_svc, unknown, "live");
    admits(&db, &mut ext_svc, with_ext(None), "live");
    admits(&db, &mut ext_svc, with_id, "batch");
    let post = Request::post("/").body(()).unwrap();
    admits(&db, &mut fn_svc, post, "batch");
    admits(&db, &mut fn_svc, path("/"), "live");
    assert_eq!(db.state().active, 0);
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn budgets_come_from_the_configuration_or_the_layer() {
    let db = shared();
    let live = db.id("live").unwrap();
    let batch = db.id("batch").unwrap();
    let classify = |_: &Request<()>| live;
    let layer = PartitionedLayer::new(db.clone(), classify);
    assert_eq!(layer.wait_budget(live), MaxWait::from_millis(1000));
    assert_eq!(layer.wait_budget(batch), MaxWait::FailFast);
    let layer = layer
        .max_wait("live", Duration::from_millis(30))
        .unwrap()
        .typed_errors();
    assert_eq!(layer.wait_budget(live), MaxWait::from_millis(30));

    // Live's 2 and batch's 2 taken by batch callers that may not be
    // reclaimed in time: live times out after its budget, counted.
    let _held: Vec<_> = (0..4).map(|_| db.try_acquire(batch).unwrap()).collect();
    let mut svc = layer.layer(Hold::default());
    let start = tokio::time::Instant::now();
    let err = svc.call(Request::new(())).await.unwrap_err();
    assert_eq!(start.elapsed(), Duration::from_millis(30));
    assert!(
        matches!(err, ServiceError::Rejected(Error::Timeout { .. })),
        "{err:?}"
    );
    assert_eq!(db.partition_state(live).unwrap().timed_out, 1);
    assert_eq!(
        HttpRejection::from_service_error(&err).unwrap().status,
        StatusCode::SERVICE_UNAVAILABLE
    );
}

#[test]
fn unknown_partition_names_are_refused_at_build_time() {
    let db = shared();
    let header = HeaderName::from_static("x-tier");
    let known = "its partitions are `live`, `batch`";

    let err = ByHeader::new(&db, header.clone(), "gold").unwrap_err();
    assert!(err.to_string().contains("no partition `gold`"), "{err}");
    assert!(err.to_string().contains(known), "{err}");
    let err = ByHeader::new(&db, header, "live")
        .unwrap()
        .route("bulk", "bulk")
        .unwrap_err();
    assert_eq!(err.asked, "bulk");
    let err = ByPath::new(&db, "live")
        .unwrap()
        .prefix("/x", "reports")
        .unwrap_err();
    assert!(err.to_string().contains(known), "{err}");
    assert!(ByExtension::new(&db, "default").is_err());
    let live = db.id("live").unwrap();
    let err = PartitionedLayer::new(db.clone(), move |_: &Request<()>| live)
        .max_wait("checkout", Duration::from_millis(5))
        .unwrap_err();
    assert!(err.to_string().contains("no partition `checkout`"), "{err}");
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn weights_and_foreign_ids_are_the_requests_errors() {
    let db = shared();
    let batch = db.id("batch").unwrap();
    let other =
        Partitioned::<StdLock>::new("other", 1, &[PartitionConfig::new("x", Amount::Seats(1))])
            .unwrap();
    let foreign: PartitionId = other.id("x").unwrap();
    let inner = Hold::default();
    let mut svc = PartitionedLayer::new(db.clone(), move |r: &Request<()>| {
        if r.uri().path() == "/foreign" {
            foreign
        } else {
            batch
        }
    })
    .weight(|r: &Request<()>| r.uri().path().len() - 1) // "/xx" weighs 2
    .typed_errors()
    .layer(inner.clone());

    let mut two = Box::pin(svc.call(path("/xx")));
    assert!(poll_once(&mut two).is_pending());
    assert_eq!(active(&db, "batch"), 2);
    let err = svc.call(path("/xxxxx")).await.unwrap_err(); // 5 > 2 + 2
    assert!(
        matches!(
            err,
            ServiceError::Rejected(Error::WeightAboveLimit { weight: 5, .. })
        ),
        "{err:?}"
    );
    let err = svc.call(path("/foreign")).await.unwrap_err();
    assert!(
        matches!(err, ServiceError::Rejected(Error::ForeignPartition { .. })),
        "{err:?}"
    );
    let answer = HttpRejection::from_service_error(&err).unwrap();
    assert_eq!(
        (answer.status, answer.retry_after),
        (StatusCode::INTERNAL_SERVER_ERROR, None)
    );
    assert_eq!(inner.calls.load(Ordering::SeqCst), 1);
    drop(two);
    assert_eq!(db.state().active, 0);
}
