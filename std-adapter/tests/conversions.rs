//! Conversions people expect: a rejection as an `io::Error` with a fitting
//! kind, pool errors likewise, and the inner `Error` reachable from a
//! boxed `RegistryError`.

use std::io::ErrorKind;
use std::time::Duration;

use bulkhead_std::registry::{DomainConfig, Registry, RegistryError};
use bulkhead_std::{Error, PoolError};

#[test]
fn every_rejection_becomes_an_io_error_of_a_fitting_kind_and_keeps_the_error() {
    let cases = [
        (
            Error::Full {
                name: "db".into(),
                max_concurrent: 1,
                active: 1,
            },
            ErrorKind::WouldBlock,
        ),
        (
            Error::QueueFull {
                name: "db".into(),
                max_waiting: 4,
            },
            ErrorKind::ResourceBusy,
        ),
        (
            Error::Timeout {
                name: "db".into(),
                budget: Duration::from_millis(5),
            },
            ErrorKind::TimedOut,
        ),
        (Error::Closed { name: "db".into() }, ErrorKind::NotConnected),
    ];
    for (error, kind) in cases {
        let io = std::io::Error::from(error.clone());
        assert_eq!(io.kind(), kind, "{error}");
        assert_eq!(io.to_string(), error.to_string());
        assert_eq!(io.get_ref().unwrap().downcast_ref::<Error>(), Some(&error));
    }
}

#[test]
fn question_mark_works_in_io_functions() {
    fn read(db: &bulkhead_std::Bulkhead) -> std::io::Result<u8> {
        let _seat = db.try_acquire()?;
        Ok(1)
    }
    let db = bulkhead_std::Bulkhead::new("io", 1).unwrap();
    let _held = db.try_acquire().unwrap();
    assert_eq!(read(&db).unwrap_err().kind(), ErrorKind::WouldBlock);
}

#[test]
fn pool_errors_become_io_errors() {
    let cases = [
        (
            PoolError::Rejected(Error::Closed { name: "p".into() }),
            ErrorKind::NotConnected,
        ),
        (
            PoolError::Timeout {
                name: "p".into(),
                timeout: Duration::from_secs(1),
            },
            ErrorKind::TimedOut,
        ),
        (
            PoolError::Panicked {
                name: "p".into(),
                message: "boom".into(),
            },
            ErrorKind::Other,
        ),
        (
            PoolError::Cancelled { name: "p".into() },
            ErrorKind::Interrupted,
        ),
    ];
    for (error, kind) in cases {
        let io = std::io::Error::from(error.clone());
        assert_eq!(io.kind(), kind, "{error}");
        assert_eq!(
            io.get_ref().unwrap().downcast_ref::<PoolError>(),
            Some(&error)
        );
    }
}

#[test]
fn a_boxed_registry_rejection_leads_to_the_inner_error() {
    let registry = Registry::local();
    let db = registry
        .get_or_create("single", DomainConfig::new(1))
        .unwrap();
    let _held = db.try_acquire().unwrap();
    let err: Box<dyn std::error::Error + Send + Sync> =
        registry.acquire_blocking("single").unwrap_err().into();
    let outer = err.downcast_ref::<RegistryError>().unwrap();
    assert!(matches!(
        outer.rejection(),
        Some(Error::Full { name, .. }) if name == "single"
    ));
    let source = err.source().unwrap();
    assert!(matches!(
        source.downcast_ref::<Error>(),
        Some(Error::Full { .. })
    ));
}
