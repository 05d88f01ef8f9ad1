//! The registry's weighted acquires by name and its `queue_order`
//! setting: from code, the TOML file and the environment, changed live by
//! `reconfigure`, and every misspelling refused with a message that names
//! the key and the accepted values.

use std::pin::pin;
use std::task::{Context, Poll, Waker};

use bulkhead_std::registry::{
    DomainConfig, EnvSource, Registry, RegistryError, SettingsErrorKind as K,
};
use bulkhead_std::{Bulkhead, Error, MaxWait, QueueOrder};

/// Checks, on the live compartment, that the newest waiter is served
/// first and that a full queue (`max_waiting` 1) turns its oldest waiter
/// away: what `QueueOrder::Lifo` does, and `Fifo` does not.
fn assert_serves_newest_first(b: &Bulkhead) {
    assert_eq!(b.state().max_concurrent, 1);
    let mut cx = Context::from_waker(Waker::noop());
    let held = b.try_acquire().unwrap();
    let mut old = pin!(b.acquire());
    assert!(old.as_mut().poll(&mut cx).is_pending());
    let mut new = pin!(b.acquire());
    assert!(new.as_mut().poll(&mut cx).is_pending());
    // The queue holds one: the oldest waiter was dropped for the newcomer.
    let Poll::Ready(Err(Error::QueueFull { .. })) = old.as_mut().poll(&mut cx) else {
        panic!("the oldest waiter was not dropped: not newest first");
    };
    drop(held);
    let Poll::Ready(Ok(_seat)) = new.as_mut().poll(&mut cx) else {
        panic!("the newest waiter did not get the freed seat");
    };
}

#[cfg(feature = "config-file")]
mod file {
    use super::*;

    #[test]
    fn a_lifo_compartment_from_the_file() {
        let registry = Registry::builder()
            .without_env()
            .toml_str(
                "[domains.api]\nmax_concurrent = 1\nmax_waiting = 1\nqueue_order = \"lifo\"\n\
                 [domains.batch]\nmax_concurrent = 1\nqueue_order = \"fifo\"\n",
            )
            .build()
            .unwrap();
        assert_eq!(
            registry.config("api").unwrap().queue_order,
            QueueOrder::Lifo
        );
        let api = registry.get("api").unwrap();
        assert_eq!(api.queue_order(), QueueOrder::Lifo);
        assert_serves_newest_first(&api);
        assert_eq!(
            registry.get("batch").unwrap().queue_order(),
            QueueOrder::Fifo
        );
    }

    #[test]
    fn the_template_takes_queue_order_from_the_default_table() {
        let registry = Registry::builder()
            .without_env()
            .toml_str("[default]\nqueue_order = \"lifo\"\n")
            .build()
            .unwrap();
        let reports = registry.get_or_create_default("reports").unwrap();
        assert_eq!(reports.queue_order(), QueueOrder::Lifo);
    }

    fn file_error(text: &str) -> RegistryError {
        Registry::builder()
            .without_env()
            .toml_str(text)
            .build()
            .unwrap_err()
    }

    #[test]
    fn misspelled_queue_orders_in_the_file_name_the_key_and_the_accepted_words() {
        let cases: &[(&str, &str, K, &str)] = &[
            (
                "queue_order = \"lif\"",
                "lif",
                K::UnknownQueueOrder,
                "did you mean `lifo`?",
            ),
            (
                "queue_order = \"LIFO \"",
                "LIFO ",
                K::UnknownQueueOrder,
                "did you mean `lifo`?",
            ),
            (
                "queue_order = \"Fifo\"",
                "Fifo",
                K::UnknownQueueOrder,
                "did you mean `fifo`?",
            ),
            (
                "queue_order = \"newest\"",
                "newest",
                K::UnknownQueueOrder,
                "newest first",
            ),
            (
                "queue_order = 1",
                "1",
                K::UnknownQueueOrder,
                "in lower case",
            ),
            (
                "queue_order = true",
                "true",
                K::UnknownQueueOrder,
                "oldest first",
            ),
        ];
        for &(line, value, kind, hint) in cases {
            let err = file_error(&format!("[domains.api]\nmax_concurrent = 2\n{line}\n"));
            let settings = err.settings().unwrap_or_else(|| panic!("{line}: {err:?}"));
            assert_eq!(
                (settings.kind(), settings.key(), settings.value()),
                (kind, "domains.api.queue_order", value),
                "{err}"
            );
            let message = err.to_string();
            assert!(message.contains("is not a known queue order"), "{message}");
            assert!(
                message.contains("`fifo` (oldest first) or `lifo` (newest first)"),
                "{message}"
            );
            assert!(message.contains(hint), "{line}: {message}");
        }
        // Nothing near either word: no guess.
        let err = file_error("[domains.api]\nqueue_order = \"newest\"\n");
        assert!(!err.to_string().contains("did you mean"), "{err}");
        assert_eq!(
            file_error("[domains.api]\nqueue_order = \"lif\"\n").to_string(),
            "bulkhead setting `domains.api.queue_order` = \"lif\" is not a known queue order; \
             expected `fifo` (oldest first) or `lifo` (newest first), in lower case; did you \
             mean `lifo`?"
        );
    }

    #[test]
    fn a_misspelled_queue_order_key_in_the_file_is_named_with_the_key_it_nearly_spells() {
        let err = file_error("[domains.api]\nqueue_ordr = \"lifo\"\n");
        let settings = err.settings().unwrap();
        assert_eq!(
            (settings.kind(), settings.key()),
            (K::UnknownKey, "domains.api.queue_ordr")
        );
        let message = err.to_string();
        assert!(message.contains("did you mean queue_order?"), "{message}");
        assert!(message.contains("the TOML string"), "{message}");
    }

    #[test]
    fn admission_lifo_in_the_file_points_to_queue_order() {
        let err = file_error("[domains.api]\nadmission = \"lifo\"\n");
        assert_eq!(err.settings().unwrap().kind(), K::UnknownWord);
        assert!(
            err.to_string()
                .contains("set domains.api.queue_order to `lifo` instead"),
            "{err}"
        );
    }

    /// A default order of newest first is for the semaphores: a pool the
    /// file declares does not inherit it (its queue is its own), and is
    /// built.
    #[test]
    fn a_declared_pool_does_not_inherit_the_default_order() {
        let registry = Registry::builder()
            .without_env()
            .toml_str(
                "[default]\nqueue_order = \"lifo\"\n\
                 [domains.pdf]\nmax_workers = 1\n\
                 [domains.api]\nmax_concurrent = 2\n",
            )
            .build()
            .unwrap();
        assert_eq!(
            registry.config("pdf").unwrap().queue_order,
            QueueOrder::Fifo
        );
        assert!(registry.get_pool("pdf").is_ok());
        assert_eq!(registry.get("api").unwrap().queue_order(), QueueOrder::Lifo);
    }

    #[test]
    fn a_thread_pool_refuses_lifo() {
        let err = file_error("[domains.pdf]\nmax_workers = 1\nqueue_order = \"lifo\"\n");
        assert!(
            matches!(&err, RegistryError::Unsupported { name, .. } if name == "pdf"),
            "{err:?}"
        );
        assert!(err.to_string().contains("queue_order"), "{err}");
    }
}

fn env_registry(pairs: &[(&str, &str)]) -> Result<Registry, RegistryError> {
    Registry::builder()
        .env(EnvSource::from_pairs(pairs.iter().copied()))
        .build()
}

#[test]
fn a_lifo_compartment_from_the_environment() {
    let registry = env_registry(&[
        ("BULKHEAD_API_QUEUE_ORDER", "lifo"),
        ("BULKHEAD_DATABASE_QUEUE_ORDER", "lifo"),
        ("BULKHEAD_QUEUE_ORDER", "lifo"),
    ])
    .unwrap();
    // A dynamic name: applied when code creates it.
    let api = registry
        .get_or_create("api", DomainConfig::new(1).max_waiting(1))
        .unwrap();
    assert_eq!(api.queue_order(), QueueOrder::Lifo);
    assert_serves_newest_first(&api);
    // A built-in, and the template (no name segment).
    assert_eq!(
        registry.get("database").unwrap().queue_order(),
        QueueOrder::Lifo
    );
    assert_eq!(
        registry.config("database").unwrap().queue_order,
        QueueOrder::Lifo
    );
    assert_eq!(
        registry
            .get_or_create_default("reports")
            .unwrap()
            .queue_order(),
        QueueOrder::Lifo
    );
    // Other compartments keep the default.
    assert_eq!(
        registry.get("cache").unwrap().queue_order(),
        QueueOrder::Fifo
    );
}

#[test]
fn the_environment_overrides_code_for_queue_order() {
    let registry = env_registry(&[("BULKHEAD_API_QUEUE_ORDER", "fifo")]).unwrap();
    let api = registry
        .get_or_create("api", DomainConfig::new(1).queue_order(QueueOrder::Lifo))
        .unwrap();
    assert_eq!(api.queue_order(), QueueOrder::Fifo);
}

#[test]
fn misspelled_queue_orders_in_the_environment_name_the_variable() {
    for (value, hint) in [
        ("lif", Some("`lifo`")),
        ("LIFO ", Some("`lifo`")),
        ("LIFO", Some("`lifo`")),
        ("fif0", Some("`fifo`")),
        ("", None),
        ("stack", None),
    ] {
        let err = env_registry(&[("BULKHEAD_DATABASE_QUEUE_ORDER", value)]).unwrap_err();
        let settings = err
            .settings()
            .unwrap_or_else(|| panic!("{value:?}: {err:?}"));
        assert_eq!(
            (settings.kind(), settings.key(), settings.value()),
            (K::UnknownQueueOrder, "BULKHEAD_DATABASE_QUEUE_ORDER", value)
        );
        let message = err.to_string();
        assert!(
            message.contains("`fifo` (oldest first) or `lifo` (newest first)"),
            "{message}"
        );
        match hint {
            Some(word) => assert!(
                message.contains(&format!("did you mean {word}?")),
                "{message}"
            ),
            None => assert!(!message.contains("did you mean"), "{message}"),
        }
    }
}

#[test]
fn a_misspelled_queue_order_variable_is_named_with_the_closest_one() {
    let err = env_registry(&[("BULKHEAD_DATABASE_QUEUE_ORDR", "lifo")]).unwrap_err();
    let settings = err.settings().unwrap();
    assert_eq!(
        (settings.kind(), settings.key()),
        (K::UnknownKey, "BULKHEAD_DATABASE_QUEUE_ORDR")
    );
    assert!(
        err.to_string()
            .contains("BULKHEAD_DATABASE_QUEUE_ORDER, which it nearly spells"),
        "{err}"
    );
}

#[test]
fn admission_lifo_in_the_environment_points_to_queue_order() {
    let err = env_registry(&[("BULKHEAD_DATABASE_ADMISSION", "LIFO")]).unwrap_err();
    assert_eq!(err.settings().unwrap().kind(), K::UnknownWord);
    assert!(
        err.to_string()
            .contains("set BULKHEAD_DATABASE_QUEUE_ORDER to `lifo` instead"),
        "{err}"
    );
}

#[test]
fn reconfigure_changes_the_queue_order_of_the_live_compartment() {
    let registry = Registry::local();
    let api = registry
        .get_or_create("api", DomainConfig::new(1).max_waiting(1))
        .unwrap();
    assert_eq!(api.queue_order(), QueueOrder::Fifo);
    let lifo = registry
        .config("api")
        .unwrap()
        .queue_order(QueueOrder::Lifo);
    registry.reconfigure("api", lifo).unwrap();
    // The same compartment, changed in place.
    assert!(std::sync::Arc::ptr_eq(&api, &registry.get("api").unwrap()));
    assert_eq!(api.queue_order(), QueueOrder::Lifo);
    assert_eq!(
        registry.config("api").unwrap().queue_order,
        QueueOrder::Lifo
    );
    assert_serves_newest_first(&api);
    registry
        .reconfigure("api", lifo.queue_order(QueueOrder::Fifo))
        .unwrap();
    assert_eq!(api.queue_order(), QueueOrder::Fifo);
}

#[test]
fn reconfigure_refuses_lifo_on_a_thread_pool() {
    let registry = Registry::local();
    registry
        .get_or_create_pool("pdf", DomainConfig::new(2).max_workers(1))
        .unwrap();
    let config = registry.config("pdf").unwrap();
    let err = registry
        .reconfigure("pdf", config.queue_order(QueueOrder::Lifo))
        .unwrap_err();
    assert!(matches!(err, RegistryError::Unsupported { .. }), "{err:?}");
    assert_eq!(
        registry.config("pdf").unwrap().queue_order,
        QueueOrder::Fifo
    );
    let err = registry
        .get_or_create_pool("pdf2", DomainConfig::new(2).queue_order(QueueOrder::Lifo))
        .unwrap_err();
    assert!(matches!(err, RegistryError::Unsupported { .. }), "{err:?}");
}

#[test]
fn register_keeps_the_compartments_queue_order_in_its_settings() {
    let registry = Registry::local();
    let core = bulkhead_std::Config::new("api", 2).queue_order(QueueOrder::Lifo);
    registry.register(Bulkhead::from_config(core).unwrap());
    let config = registry.config("api").unwrap();
    assert_eq!(config.queue_order, QueueOrder::Lifo);
    // Reconfiguring with its own settings leaves the order alone.
    registry.reconfigure("api", config).unwrap();
    assert_eq!(registry.get("api").unwrap().queue_order(), QueueOrder::Lifo);
}

#[test]
fn weighted_acquires_by_name_take_and_give_back_the_whole_weight() {
    let registry = Registry::local();
    registry
        .get_or_create(
            "import",
            DomainConfig::new(4).max_wait(MaxWait::from_millis(10)),
        )
        .unwrap();
    let b = registry.get("import").unwrap();
    let seat = registry.try_acquire_many("import", 3).unwrap();
    assert_eq!((seat.weight(), b.state().active), (3, 3));
    // One seat free: a weight of 2 fails fast, or times out with a budget.
    let full = registry.try_acquire_many("import", 2).unwrap_err();
    assert!(
        matches!(full.rejection(), Some(Error::Full { .. })),
        "{full}"
    );
    let timeout = registry.acquire_many_blocking("import", 2).unwrap_err();
    assert!(
        matches!(timeout.rejection(), Some(Error::Timeout { .. })),
        "{timeout}"
    );
    let one = registry.acquire_many_blocking("import", 1).unwrap();
    assert_eq!(one.weight(), 1);
    drop((seat, one));
    assert_eq!(b.state().active, 0);
    let domain = registry.domain("import").unwrap();
    let all = domain.try_acquire_many(4).unwrap();
    assert_eq!((all.weight(), b.state().active), (4, 4));
    drop(all);
    assert_eq!(
        registry
            .execute_weighted("import", 4, || Ok::<_, ()>(b.state().active))
            .unwrap(),
        Ok(4)
    );
    assert_eq!(b.state().active, 0);
}

#[test]
fn weight_above_the_limit_and_zero_weight_through_the_registry() {
    let registry = Registry::local();
    registry
        .get_or_create("import", DomainConfig::new(4).max_wait(MaxWait::Forever))
        .unwrap();
    let b = registry.get("import").unwrap();
    let above = registry.try_acquire_many("import", 5).unwrap_err();
    assert!(
        matches!(
            above.rejection(),
            Some(Error::WeightAboveLimit {
                weight: 5,
                max_concurrent: 4,
                ..
            })
        ),
        "{above}"
    );
    assert!(above.to_string().contains("`import`"), "{above}");
    // Refused at once, though the compartment's budget is forever.
    let above = registry.acquire_many_blocking("import", 5).unwrap_err();
    assert!(
        matches!(above.rejection(), Some(Error::WeightAboveLimit { .. })),
        "{above}"
    );
    assert!(matches!(
        registry
            .domain("import")
            .unwrap()
            .try_acquire_many(5)
            .unwrap_err(),
        Error::WeightAboveLimit { .. }
    ));
    assert!(matches!(
        registry
            .execute_weighted("import", 5, || -> Result<(), ()> { unreachable!() })
            .unwrap_err()
            .rejection(),
        Some(Error::WeightAboveLimit { .. })
    ));
    let zero = registry.try_acquire_many("import", 0).unwrap_err();
    assert!(
        matches!(zero.rejection(), Some(Error::ZeroWeight { .. })),
        "{zero}"
    );
    assert!(matches!(
        registry
            .acquire_many_blocking("import", 0)
            .unwrap_err()
            .rejection(),
        Some(Error::ZeroWeight { .. })
    ));
    // Four weight refusals counted; a zero weight is no rejection.
    assert_eq!(b.state().rejected, 4);
    assert_eq!(b.state().active, 0);
}

#[test]
fn async_weighted_acquires_by_name() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    rt.block_on(async {
        let registry = Registry::local();
        registry
            .get_or_create(
                "gpu",
                DomainConfig::new(4).max_wait(MaxWait::from_millis(5)),
            )
            .unwrap();
        let b = registry.get("gpu").unwrap();
        let seat = registry
            .acquire_many_timeout("gpu", 3, tokio::time::sleep)
            .await
            .unwrap();
        assert_eq!(seat.weight(), 3);
        let err = registry
            .acquire_many_timeout("gpu", 2, tokio::time::sleep)
            .await
            .unwrap_err();
        assert!(
            matches!(err.rejection(), Some(Error::Timeout { .. })),
            "{err}"
        );
        drop(seat);
        let held = registry
            .run_timeout_weighted(
                "gpu",
                4,
                async { Ok::<_, ()>(b.state().active) },
                tokio::time::sleep,
            )
            .await
            .unwrap();
        assert_eq!(held, Ok(4));
        let err = registry
            .run_timeout_weighted("gpu", 5, async { Ok::<_, ()>(()) }, tokio::time::sleep)
            .await
            .unwrap_err();
        assert!(
            matches!(err.rejection(), Some(Error::WeightAboveLimit { .. })),
            "{err}"
        );
    });
}
