//! [`RequestWeight`]: how many of a compartment's seats a request takes
//! through a [`BulkheadLayer`](super::BulkheadLayer).

/// How many seats a request takes: the weight a
/// [`BulkheadLayer`](super::BulkheadLayer) asks the compartment for when it
/// admits the request (see [`Seat::weight`](bulkhead_core::Seat::weight)).
///
/// Implemented by [`WeightOne`] (the default: every request takes one
/// seat) and by every `Fn(&Req) -> usize`, so a closure given to
/// [`BulkheadLayer::weight`](super::BulkheadLayer::weight) is the usual
/// form.
///
/// It is called once per request, in `call`, before the request is
/// admitted or turned away. A weight of 0, or one above the compartment's
/// limit, is not a panic: that request alone is turned away with
/// [`Error::ZeroWeight`](bulkhead_core::Error::ZeroWeight) or
/// [`Error::WeightAboveLimit`](bulkhead_core::Error::WeightAboveLimit),
/// and the inner service is not called.
pub trait RequestWeight<Req> {
    /// The seats `request` takes, at least 1.
    fn weight(&self, request: &Req) -> usize;
}

/// The default [`RequestWeight`]: every request takes one seat. It is a
/// constant the compiler sees through, so a layer without a weight
/// function admits exactly as one with no notion of weight.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WeightOne;

impl<Req> RequestWeight<Req> for WeightOne {
    #[inline(always)]
    fn weight(&self, _: &Req) -> usize {
        1
    }
}

impl<Req, F: Fn(&Req) -> usize> RequestWeight<Req> for F {
    #[inline]
    fn weight(&self, request: &Req) -> usize {
        self(request)
    }
}
