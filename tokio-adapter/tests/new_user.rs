//! What a new user meets first with the tower layer: a rejection that
//! went through `io::Error`, error chains printed whole, and a layer over a
//! compartment the settings file declares.

use std::convert::Infallible;
use std::error::Error as StdError;
use std::future::{Ready, ready};
use std::sync::Arc;
use std::task::{Context, Poll};

use bulkhead_std::registry::{Registry, RegistryError};
use bulkhead_tokio::{BoxError, Bulkhead, BulkheadLayer, Error, HttpRejection, ServiceError};
use tower_layer::Layer;
use tower_service::Service;

/// Every message of `err`'s source chain, outermost first.
fn chain(err: &(dyn StdError + 'static)) -> Vec<String> {
    let mut messages = Vec::new();
    let mut current = Some(err);
    while let Some(e) = current {
        messages.push(e.to_string());
        current = e.source();
    }
    messages
}

/// Asserts that no message of the chain repeats another's text.
fn assert_said_once(err: &(dyn StdError + 'static)) -> Vec<String> {
    let messages = chain(err);
    for (i, outer) in messages.iter().enumerate() {
        for inner in &messages[i + 1..] {
            assert!(
                !outer.contains(inner.as_str()),
                "`{outer}` repeats its source `{inner}` (chain: {messages:?})"
            );
        }
    }
    messages
}

fn full() -> Error {
    Error::Full {
        name: "db".into(),
        max_concurrent: 8,
        active: 8,
    }
}

#[test]
fn a_rejection_inside_an_io_error_still_answers_503() {
    // A handler that used `?` into `io::Result`.
    fn handler() -> std::io::Result<()> {
        Err(full())?;
        Ok(())
    }
    let err: BoxError = handler().unwrap_err().into();
    let answer = HttpRejection::find(&err).expect("the rejection inside the io::Error");
    assert_eq!(answer.status, http::StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(answer.retry_after, Some(HttpRejection::DEFAULT_RETRY_AFTER));

    // Deeper: a registry rejection wrapped by `io::Error::other`, and a
    // pool's rejection converted with its `From`.
    let err: BoxError = Box::new(std::io::Error::other(RegistryError::Rejected(
        Error::Closed { name: "db".into() },
    )));
    assert_eq!(HttpRejection::find(&err).unwrap().retry_after, None);
    let err: BoxError = Box::new(std::io::Error::from(bulkhead_std::PoolError::Rejected(
        full(),
    )));
    assert!(HttpRejection::find(&err).is_some());
    // An io::Error that wraps something else is not a rejection.
    let err: BoxError = Box::new(std::io::Error::other("connection reset"));
    assert_eq!(HttpRejection::find(&err), None);
    let err: BoxError = Box::new(std::io::Error::from(std::io::ErrorKind::WouldBlock));
    assert_eq!(HttpRejection::find(&err), None);
}

#[test]
fn typed_service_errors_say_everything_once() {
    let rejected = ServiceError::<std::io::Error>::Rejected(full());
    let messages = assert_said_once(&rejected);
    assert_eq!(
        messages.len(),
        2,
        "the rejection is the source: {messages:?}"
    );
    assert!(messages[0].contains("`db`"), "{messages:?}");

    // The inner service's error is shown, not repeated as a source.
    let inner = ServiceError::Inner(std::io::Error::other("upstream reset"));
    assert_eq!(assert_said_once(&inner), ["upstream reset"]);
}

/// Answers every request.
#[derive(Clone)]
struct Ok200;

impl Service<()> for Ok200 {
    type Response = u16;
    type Error = Infallible;
    type Future = Ready<Result<u16, Infallible>>;
    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }
    fn call(&mut self, (): ()) -> Self::Future {
        ready(Ok(200))
    }
}

#[tokio::test(flavor = "current_thread")]
async fn a_layer_over_a_domain_the_file_declares_needs_no_get_or_create() {
    let registry = Registry::builder()
        .without_env()
        .toml_str("[domains.search]\nmax_concurrent = 1\n")
        .build()
        .unwrap();
    let layer = BulkheadLayer::from_registry(&registry, "search").unwrap();
    let mut svc = layer.layer(Ok200);
    std::future::poll_fn(|cx| svc.poll_ready(cx)).await.unwrap();
    assert_eq!(svc.call(()).await.unwrap(), 200);
    let search: Arc<Bulkhead> = registry.get("search").unwrap();
    assert_eq!(search.state().max_concurrent, 1);
}
