//! Shared names: a compartment built with `with_shared_name` keeps one
//! reference to its name, errors and states take more, and the last one
//! to go frees the string. Run under miri (`.ci/run`, with `alloc`): a
//! use after free or a leak of the name fails there.

use std::string::ToString;
use std::sync::{Arc, Weak};
use std::vec::Vec;

use super::{Task, TestBulkhead, TestLock, boxed, with_config};
use crate::{Config, ConfigError, Error, MAX_NAME_LEN, Name};

fn shared(text: &str) -> (Arc<str>, Weak<str>) {
    let name: Arc<str> = Arc::from(text);
    let weak = Arc::downgrade(&name);
    (name, weak)
}

fn compartment(name: Arc<str>, config: Config) -> TestBulkhead {
    TestBulkhead::with_shared_name(name, config, TestLock::default()).unwrap()
}

/// The compartment owns exactly one reference, gives it back when it is
/// dropped, and its name reads right in between.
#[test]
fn a_compartment_owns_one_reference_to_its_name_and_gives_it_back() {
    let (name, weak) = shared("tenant-1");
    let b = compartment(name, Config::new("ignored", 1));
    assert_eq!(weak.strong_count(), 1, "the compartment's own reference");
    assert_eq!(b.name(), "tenant-1");
    let moved = b; // moving the compartment moves no string
    assert_eq!(moved.name(), "tenant-1");
    drop(moved);
    assert_eq!(
        weak.strong_count(),
        0,
        "dropping the compartment frees the name"
    );
}

/// Errors, states and handles share the name and outlive the compartment;
/// the string goes with the last of them.
#[test]
fn errors_and_states_share_the_name_past_the_compartment() {
    let (name, weak) = shared("tenant-2");
    let b = compartment(name, Config::new("", 1).max_waiting(0));
    let seat = b.try_acquire().unwrap();
    let full = b.try_acquire().unwrap_err();
    let task = Task::new();
    let queue_full = match task.poll(boxed(b.acquire()).as_mut()) {
        core::task::Poll::Ready(Err(e)) => e,
        other => panic!("expected QueueFull, got ready: {}", other.is_ready()),
    };
    let state = b.state();
    let handle = b.name_handle();
    drop(seat);
    b.close();
    let closed = b.try_acquire().unwrap_err();
    assert_eq!(
        weak.strong_count(),
        6,
        "the compartment, 4 values and the handle"
    );
    drop(b);
    assert!(matches!(full, Error::Full { .. }));
    assert!(matches!(queue_full, Error::QueueFull { .. }));
    assert!(matches!(closed, Error::Closed { .. }));
    for e in [&full, &queue_full, &closed] {
        assert_eq!(e.name(), "tenant-2");
        assert!(e.to_string().contains("`tenant-2`"), "{e}");
    }
    assert_eq!(state.name, "tenant-2");
    assert_eq!(handle.as_static(), None);
    let clones: Vec<Name> = (0..3).map(|_| handle.clone()).collect();
    assert_eq!(weak.strong_count(), 8);
    drop((full, queue_full, closed, state, handle, clones));
    assert_eq!(weak.strong_count(), 0, "the last holder freed the name");
}

/// A timed-out wait names the compartment too (the engine's other path).
#[test]
fn a_timed_out_wait_shares_the_name() {
    let (name, weak) = shared("tenant-3");
    let b = compartment(name, Config::new("", 1));
    let seat = b.try_acquire().unwrap();
    let task = Task::new();
    let mut waiter = boxed(b.acquire());
    assert!(task.poll(waiter.as_mut()).is_pending());
    let timed_out = waiter
        .as_mut()
        .time_out(core::time::Duration::from_millis(5))
        .unwrap_err();
    drop(waiter);
    drop(seat);
    drop(b);
    assert_eq!(timed_out.name(), "tenant-3");
    assert_eq!(weak.strong_count(), 1);
    drop(timed_out);
    assert_eq!(weak.strong_count(), 0);
}

/// Bad settings are refused naming the shared name, and the refused name
/// is not kept (nor leaked: miri would report it).
#[test]
fn bad_settings_name_the_shared_name_and_keep_nothing() {
    let (name, weak) = shared("tenant-4");
    let err =
        TestBulkhead::with_shared_name(name, Config::new("placeholder", 0), TestLock::default())
            .unwrap_err();
    assert_eq!(
        err,
        ConfigError::ZeroCapacity {
            name: "tenant-4".into()
        }
    );
    assert!(err.to_string().contains("`tenant-4`"), "{err}");
    drop(err);
    assert_eq!(weak.strong_count(), 0);
}

/// A static name stays a `&'static str`, and shares nothing.
#[test]
fn a_static_name_is_the_static_str() {
    static TEXT: &str = "static-name";
    let b = with_config(Config::new(TEXT, 1));
    let handle = b.name_handle();
    assert_eq!(handle.as_static().map(str::as_ptr), Some(TEXT.as_ptr()));
    assert_eq!(b.state().name.as_static(), Some(TEXT));
    assert_eq!(MAX_NAME_LEN, (u32::MAX >> 1) as usize);
}
