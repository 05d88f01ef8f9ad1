//! [`ClassifyResponse`]: how a layer built from an adaptive registry
//! domain turns a response into the outcome its limit is fed.

use bulkhead_core::limit::CallOutcome;
use bulkhead_std::Classify;

/// Turns a response (or the inner service's error) into the
/// [`CallOutcome`] that a [`BulkheadLayer`](super::BulkheadLayer) built from
/// an adaptive registry domain feeds its limit.
///
/// Implemented by [`ErrIsDropped`] (the default) and by every
/// `Fn(&Result<T, E>) -> CallOutcome`, so a closure is the usual form.
pub trait ClassifyResponse<T, E> {
    /// The outcome this response stands for.
    fn classify(&self, response: &Result<T, E>) -> CallOutcome;
}

/// The default classifier: an `Err` of the inner service is
/// [`CallOutcome::Dropped`], an `Ok` a [`CallOutcome::Success`], as for
/// every `Result` the registry's `execute` classifies
/// ([`Classify`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ErrIsDropped;

impl<T, E> ClassifyResponse<T, E> for ErrIsDropped {
    fn classify(&self, response: &Result<T, E>) -> CallOutcome {
        response.outcome()
    }
}

impl<T, E, F: Fn(&Result<T, E>) -> CallOutcome> ClassifyResponse<T, E> for F {
    fn classify(&self, response: &Result<T, E>) -> CallOutcome {
        self(response)
    }
}
