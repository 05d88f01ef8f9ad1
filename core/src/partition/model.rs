//! A reference model of partitioned compartments, checked against the real
//! one step by step on random sequences of calls.
//!
//! The model is written from the rules at the top of `table.rs` and the
//! settings' documentation, independently of the code: it keeps plain
//! counts and one `VecDeque` per line, recomputes every sum (the total
//! held, the other partitions' unused reserves, the seats lent) at each
//! decision, and resolves shares from the configuration with its own
//! arithmetic. A proptest drives both with the same steps (try, wait,
//! re-poll, release, cancel, time out, resize, reconfigure and close)
//! and compares after every step: each call's outcome, each waiter's
//! wake-ups (counted by its waker), the compartment's `state` and every
//! partition's `partition_state`.
#![cfg(all(feature = "weights", feature = "lifo"))]

extern crate std;

use core::pin::Pin;
use core::sync::atomic::{AtomicUsize, Ordering};
use core::task::{Context, Poll, Waker};
use core::time::Duration;
use std::boxed::Box;
use std::collections::VecDeque;
use std::sync::Arc;
use std::task::Wake;
use std::vec::Vec;
use std::{format, string::String};

use super::{AcquirePartition, Amount, PartitionConfig, PartitionSeat, Partitioned};
use crate::error::Error;
use crate::queue_order::QueueOrder;
use crate::{CsLock, MAX_CONCURRENT_LIMIT};

/// One call of a test case. Indices are taken modulo what exists.
#[derive(Debug, Clone)]
enum Op {
    /// `try_acquire_many(partition, weight)`.
    Try(usize, usize),
    /// `acquire_many(partition, weight)`, polled once.
    Wait(usize, usize),
    /// Polls a pending waiter again.
    Poll(usize),
    /// Drops a held seat.
    Release(usize),
    /// Drops a pending waiter.
    Cancel(usize),
    /// A pending waiter's budget runs out (`time_out`).
    TimeOut(usize),
    /// `set_max_concurrent(n)`.
    Resize(usize),
    /// `reconfigure` with the other of the case's two configurations.
    Reconfigure,
    /// `close()`.
    Close,
}

/// What a call came to, in the terms both sides can give.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Seat,
    Pending,
    Full,
    Closed,
    Oversized,
    QueueFull,
    Timeout,
}

fn outcome<T>(r: &Result<T, Error>) -> Outcome {
    match r {
        Ok(_) => Outcome::Seat,
        Err(Error::PartitionFull { .. }) => Outcome::Full,
        Err(Error::Closed { .. }) => Outcome::Closed,
        Err(Error::WeightAboveLimit { .. }) => Outcome::Oversized,
        Err(Error::QueueFull { .. }) => Outcome::QueueFull,
        Err(Error::Timeout { .. }) => Outcome::Timeout,
        Err(e) => panic!("an error the model does not expect: {e:?}"),
    }
}

/// The seats an amount comes to out of `whole` (percentages round down).
fn of(a: Amount, whole: usize) -> usize {
    match a {
        Amount::Seats(n) => n,
        // In 64 bits, so that a percentage of the largest limit cannot
        // overflow on a 32-bit target.
        Amount::Percent(p) => (whole as u64 * p as u64 / 100) as usize,
    }
}

/// (share, reserved, may_hold) per partition, or `None` for a
/// configuration the documented checks refuse at `limit`. `strict` (settings
/// given, not a limit moved) also refuses a partition that could hold
/// nothing at a limit above 0.
fn resolve(
    limit: usize,
    cfgs: &[PartitionConfig],
    strict: bool,
) -> Option<Vec<(usize, usize, usize)>> {
    let mut percents = 0;
    for c in cfgs {
        if let (Amount::Seats(s), Some(Amount::Seats(l))) = (c.share, c.lendable)
            && l > s
        {
            return None;
        }
        let zero = |a: Amount| of(a, MAX_CONCURRENT_LIMIT) == 0;
        if zero(c.share) && c.borrow.is_some_and(zero) {
            return None;
        }
        if let Amount::Percent(p) = c.share {
            percents += p as usize;
        }
    }
    let shares: Vec<usize> = cfgs.iter().map(|c| of(c.share, limit)).collect();
    if percents > 100 || shares.iter().sum::<usize>() > limit {
        return None;
    }
    let reserved: Vec<usize> = cfgs
        .iter()
        .zip(&shares)
        .map(|(c, &s)| s - c.lendable.map_or(s, |l| of(l, s).min(s)))
        .collect();
    let unclaimed = limit - shares.iter().sum::<usize>();
    let mut out = Vec::new();
    for (i, c) in cfgs.iter().enumerate() {
        let others = |f: &dyn Fn(usize) -> usize| -> usize {
            (0..cfgs.len()).filter(|&j| j != i).map(f).sum()
        };
        let others_lend = others(&|j| shares[j] - reserved[j]);
        let others_reserved = others(&|j| reserved[j]);
        let borrow = c.borrow.map_or(limit, |b| of(b, limit));
        if c.borrow.is_some() && borrow > 0 && others_lend == 0 && unclaimed == 0 {
            return None;
        }
        let s = shares[i];
        let may_hold = (s + borrow).min(limit - others_reserved).max(s);
        if strict && may_hold == 0 && limit > 0 {
            return None;
        }
        out.push((s, reserved[i], may_hold));
    }
    Some(out)
}

/// A waiter's verdict in the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    Waiting,
    Granted,
    Closed,
    Dropped,
    Oversized,
}

#[derive(Debug)]
struct MWaiter {
    part: usize,
    weight: usize,
    verdict: Verdict,
    wakes: usize,
}

#[derive(Debug)]
struct MPart {
    cfg: PartitionConfig,
    share: usize,
    reserved: usize,
    may_hold: usize,
    active: usize,
    /// Waiter ids, the head first.
    line: VecDeque<usize>,
    rejected: usize,
    timed_out: usize,
}

#[derive(Debug)]
struct Model {
    limit: usize,
    /// The limit before a pause: settings given while paused are checked
    /// against it.
    resumes_at: usize,
    closed: bool,
    /// Where the search for equal ranks starts.
    turn: usize,
    parts: Vec<MPart>,
    waiters: Vec<MWaiter>,
}

/// Why the model refuses a newcomer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Refused {
    Closed,
    Oversized,
    Full,
}

impl Model {
    fn new(limit: usize, cfgs: &[PartitionConfig]) -> Option<Self> {
        let resolved = resolve(limit, cfgs, true)?;
        let parts = cfgs
            .iter()
            .zip(resolved)
            .map(|(c, (share, reserved, may_hold))| MPart {
                cfg: c.clone(),
                share,
                reserved,
                may_hold,
                active: 0,
                line: VecDeque::new(),
                rejected: 0,
                timed_out: 0,
            })
            .collect();
        Some(Self {
            limit,
            resumes_at: limit,
            closed: false,
            turn: 0,
            parts,
            waiters: Vec::new(),
        })
    }

    fn total(&self) -> usize {
        self.parts.iter().map(|p| p.active).sum()
    }

    fn fits(&self, i: usize, w: usize) -> bool {
        let unused_reserves: usize = (0..self.parts.len())
            .filter(|&j| j != i)
            .map(|j| self.parts[j].reserved.saturating_sub(self.parts[j].active))
            .sum();
        self.parts[i].active + w <= self.parts[i].may_hold
            && self.total() + w + unused_reserves <= self.limit
    }

    fn eligible(&self, i: usize, w: usize) -> bool {
        self.parts[i].active + w <= self.parts[i].may_hold
    }

    fn rank(&self, i: usize) -> (bool, u8) {
        (
            self.parts[i].active < self.parts[i].share,
            self.parts[i].cfg.priority,
        )
    }

    /// Whether the serve, searching from `turn`, reaches `j` before `i`
    /// among the best ranks: a higher rank, or an equal rank met first.
    fn served_before(&self, j: usize, i: usize) -> bool {
        let n = self.parts.len();
        let order: Vec<usize> = (0..n).map(|k| (self.turn + k) % n).collect();
        let pos = |x: usize| order.iter().position(|&y| y == x).unwrap();
        self.rank(j) > self.rank(i) || (self.rank(j) == self.rank(i) && pos(j) < pos(i))
    }

    fn head(&self, i: usize) -> Option<(usize, usize)> {
        let id = *self.parts[i].line.front()?;
        Some((id, self.waiters[id].weight))
    }

    fn oversized(&self, i: usize, w: usize) -> bool {
        self.parts[i].may_hold > 0 && w > self.parts[i].may_hold
    }

    /// Rule 5, with the refusals counted as the code counts them.
    fn admit(&mut self, i: usize, w: usize) -> Result<(), Refused> {
        if self.closed {
            return Err(Refused::Closed);
        }
        if self.oversized(i, w) {
            self.parts[i].rejected += 1;
            return Err(Refused::Oversized);
        }
        let blocked = !self.parts[i].line.is_empty()
            || !self.fits(i, w)
            || (self.parts[i].active + w > self.parts[i].share
                && (0..self.parts.len()).any(|j| {
                    j != i
                        && self
                            .head(j)
                            .is_some_and(|(_, h)| self.eligible(j, h) && self.served_before(j, i))
                }));
        if blocked {
            return Err(Refused::Full);
        }
        self.parts[i].active += w;
        Ok(())
    }

    fn settle(&mut self, i: usize, verdict: Verdict) {
        let id = self.parts[i].line.pop_front().expect("a head");
        self.waiters[id].verdict = verdict;
        self.waiters[id].wakes += 1;
    }

    /// Rule 4 and the verdicts owed, until nothing more is owed.
    fn serve(&mut self) {
        let n = self.parts.len();
        loop {
            if self.closed {
                for i in 0..n {
                    while !self.parts[i].line.is_empty() {
                        self.settle(i, Verdict::Closed);
                    }
                }
                return;
            }
            for i in 0..n {
                while let Some((_, w)) = self.head(i)
                    && self.oversized(i, w)
                {
                    self.parts[i].rejected += 1;
                    self.settle(i, Verdict::Oversized);
                }
            }
            let order: Vec<usize> = (0..n).map(|k| (self.turn + k) % n).collect();
            let pick = |ok: &dyn Fn(usize, usize) -> bool| -> Option<usize> {
                let mut best: Option<usize> = None;
                for &i in &order {
                    if let Some((_, w)) = self.head(i)
                        && ok(i, w)
                        && best.is_none_or(|b| self.rank(i) > self.rank(b))
                    {
                        best = Some(i);
                    }
                }
                best
            };
            let lane =
                pick(&|i, w| self.parts[i].active + w <= self.parts[i].share && self.fits(i, w));
            let chosen = match lane {
                Some(i) => i,
                None => match pick(&|i, w| self.eligible(i, w)) {
                    Some(i) if self.fits(i, self.head(i).unwrap().1) => i,
                    _ => return,
                },
            };
            let (_, w) = self.head(chosen).unwrap();
            self.parts[chosen].active += w;
            self.settle(chosen, Verdict::Granted);
            self.turn = (chosen + 1) % n;
        }
    }

    /// Links waiter `id` after a `Full` refusal; `false` if the line is
    /// full (FIFO, or a queue limit of 0), else drops the oldest waiter of
    /// a full newest-first line.
    fn link(&mut self, i: usize, id: usize) -> bool {
        let p = &mut self.parts[i];
        let limit = p.cfg.max_waiting.unwrap_or(usize::MAX);
        let lifo = p.cfg.queue_order == QueueOrder::Lifo;
        if p.line.len() >= limit {
            if !lifo || limit == 0 {
                p.rejected += 1;
                return false;
            }
            let oldest = p.line.pop_back().expect("a full line");
            p.rejected += 1;
            self.waiters[oldest].verdict = Verdict::Dropped;
            self.waiters[oldest].wakes += 1;
        }
        let p = &mut self.parts[i];
        if lifo {
            p.line.push_front(id);
        } else {
            p.line.push_back(id);
        }
        true
    }

    fn unlink(&mut self, id: usize) {
        let i = self.waiters[id].part;
        self.parts[i].line.retain(|&x| x != id);
    }

    fn give_back(&mut self, i: usize, w: usize) {
        self.parts[i].active -= w.min(self.parts[i].active);
    }

    /// Seats partition `i` lends now, as `partition_state` documents it.
    fn lent(&self, i: usize) -> usize {
        let shares: usize = self.parts.iter().map(|p| p.share).sum();
        let borrowed: usize = self
            .parts
            .iter()
            .map(|p| p.active.saturating_sub(p.share))
            .sum();
        let mut owed = borrowed.saturating_sub(self.limit.saturating_sub(shares));
        for (j, p) in self.parts.iter().enumerate() {
            let lendable = p.share - p.reserved;
            let in_use = p.active.saturating_sub(p.reserved).min(lendable);
            let lends = (lendable - in_use).min(owed);
            if j == i {
                return lends;
            }
            owed -= lends;
        }
        0
    }

    /// The outcome a waiter's poll reads from its verdict.
    fn read(&self, id: usize) -> Outcome {
        match self.waiters[id].verdict {
            Verdict::Waiting => Outcome::Pending,
            Verdict::Granted => Outcome::Seat,
            Verdict::Closed => Outcome::Closed,
            Verdict::Dropped => Outcome::QueueFull,
            Verdict::Oversized => Outcome::Oversized,
        }
    }

    fn resize(&mut self, n: usize) -> bool {
        let cfgs: Vec<PartitionConfig> = self.parts.iter().map(|p| p.cfg.clone()).collect();
        let resolved = if n == 0 {
            Some(std::vec![(0, 0, 0); cfgs.len()])
        } else {
            resolve(n, &cfgs, false)
        };
        let ok = resolved.is_some();
        if let Some(r) = resolved {
            self.apply(&cfgs, r);
            if n == 0 && self.limit > 0 {
                self.resumes_at = self.limit;
            }
            self.limit = n;
        }
        self.serve();
        ok
    }

    fn reconfigure(&mut self, cfgs: &[PartitionConfig]) -> bool {
        let at = if self.limit == 0 {
            self.resumes_at
        } else {
            self.limit
        };
        let resolved = resolve(at, cfgs, true);
        let ok = resolved.is_some();
        if let Some(r) = resolved {
            let r = if self.limit == 0 {
                std::vec![(0, 0, 0); cfgs.len()]
            } else {
                r
            };
            self.apply(cfgs, r);
        }
        self.serve();
        ok
    }

    fn apply(&mut self, cfgs: &[PartitionConfig], r: Vec<(usize, usize, usize)>) {
        for ((p, c), (share, reserved, may_hold)) in self.parts.iter_mut().zip(cfgs).zip(r) {
            p.cfg = c.clone();
            (p.share, p.reserved, p.may_hold) = (share, reserved, may_hold);
        }
    }
}

/// A waker that counts its wake-ups.
struct Count(AtomicUsize);

impl Wake for Count {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

type Real<'a> = &'a Partitioned<CsLock>;

/// A pending waiter on both sides.
struct Waiter<'a> {
    fut: Pin<Box<AcquirePartition<Real<'a>>>>,
    count: Arc<Count>,
    id: usize,
}

impl<'a> Waiter<'a> {
    /// Polls with the counting waker; the seat borrows the compartment,
    /// not the future.
    fn poll(&mut self) -> Poll<Result<PartitionSeat<Real<'a>>, Error>> {
        let waker = Waker::from(self.count.clone());
        self.fut.as_mut().poll(&mut Context::from_waker(&waker))
    }
}

/// Runs `ops` on both sides from `cfgs` (and `alt` for reconfiguring) at
/// `limit`; the first difference, described.
fn run(
    limit: usize,
    cfgs: &[PartitionConfig],
    alt: &[PartitionConfig],
    ops: &[Op],
) -> Result<(), String> {
    let real = Partitioned::<CsLock>::new("model", limit, cfgs);
    let Some(mut m) = Model::new(limit, cfgs) else {
        return match real {
            Err(_) => Ok(()),
            Ok(_) => Err(String::from(
                "the model refuses the configuration, core builds it",
            )),
        };
    };
    let p = real.map_err(|e| format!("core refuses a configuration the model accepts: {e}"))?;
    let ids: Vec<_> = p.partitions().map(|(id, _)| id).collect();
    let n = ids.len();
    let mut seats: Vec<(PartitionSeat<Real<'_>>, usize, usize)> = Vec::new();
    let mut waiters: Vec<Waiter<'_>> = Vec::new();
    let mut using_alt = false;
    for (step, op) in ops.iter().enumerate() {
        // The first difference: which step, what differs, the model.
        macro_rules! fail {
            ($($what:tt)*) => {
                return Err(format!("step {step} ({op:?}): {}\nmodel: {m:?}", format!($($what)*)))
            };
        }
        match *op {
            Op::Try(i, w) => {
                let i = i % n;
                let got = p.try_acquire_many(ids[i], w);
                let want = match m.admit(i, w) {
                    Ok(()) => Outcome::Seat,
                    Err(Refused::Full) => {
                        m.parts[i].rejected += 1;
                        Outcome::Full
                    }
                    Err(Refused::Closed) => Outcome::Closed,
                    Err(Refused::Oversized) => Outcome::Oversized,
                };
                m.serve();
                if outcome(&got) != want {
                    fail!("try: core {got:?}, model {want:?}");
                }
                if let Ok(seat) = got {
                    seats.push((seat, i, w));
                }
            }
            Op::Wait(i, w) => {
                let i = i % n;
                let id = m.waiters.len();
                m.waiters.push(MWaiter {
                    part: i,
                    weight: w,
                    verdict: Verdict::Waiting,
                    wakes: 0,
                });
                let want = match m.admit(i, w) {
                    Ok(()) => Outcome::Seat,
                    Err(Refused::Closed) => Outcome::Closed,
                    Err(Refused::Oversized) => Outcome::Oversized,
                    Err(Refused::Full) => {
                        if m.link(i, id) {
                            m.serve();
                            m.read(id)
                        } else {
                            Outcome::QueueFull
                        }
                    }
                };
                m.serve();
                let mut waiter = Waiter {
                    fut: Box::pin(p.acquire_many(ids[i], w)),
                    count: Arc::new(Count(AtomicUsize::new(0))),
                    id,
                };
                let got = waiter.poll();
                match got {
                    Poll::Pending if want == Outcome::Pending => waiters.push(waiter),
                    Poll::Ready(r) if outcome(&r) == want => {
                        if let Ok(seat) = r {
                            seats.push((seat, i, w));
                        }
                        // Settled: no further wake-ups are compared.
                        m.waiters[id].verdict = Verdict::Closed;
                    }
                    got => fail!("wait: core {got:?}, model {want:?}"),
                }
            }
            Op::Poll(k) | Op::Cancel(k) | Op::TimeOut(k) if waiters.is_empty() => {
                let _ = k;
            }
            Op::Poll(k) => {
                let k = k % waiters.len();
                let id = waiters[k].id;
                let want = m.read(id);
                let got = waiters[k].poll();
                match got {
                    Poll::Pending if want == Outcome::Pending => {}
                    Poll::Ready(r) if outcome(&r) == want => {
                        if let Ok(seat) = r {
                            seats.push((seat, m.waiters[id].part, m.waiters[id].weight));
                        }
                        waiters.swap_remove(k);
                    }
                    got => fail!("poll: core {got:?}, model {want:?}"),
                }
            }
            Op::Cancel(k) => {
                let k = k % waiters.len();
                let id = waiters[k].id;
                drop(waiters.swap_remove(k));
                match m.waiters[id].verdict {
                    Verdict::Waiting => m.unlink(id),
                    Verdict::Granted => m.give_back(m.waiters[id].part, m.waiters[id].weight),
                    _ => {}
                }
                m.waiters[id].verdict = Verdict::Closed;
                m.serve();
            }
            Op::TimeOut(k) => {
                let k = k % waiters.len();
                let id = waiters[k].id;
                let mut waiter = waiters.swap_remove(k);
                let got = waiter.fut.as_mut().time_out(Duration::from_millis(1));
                let want = match m.read(id) {
                    Outcome::Pending => {
                        m.unlink(id);
                        m.parts[m.waiters[id].part].timed_out += 1;
                        Outcome::Timeout
                    }
                    other => other,
                };
                m.serve();
                if outcome(&got) != want {
                    fail!("time_out: core {got:?}, model {want:?}");
                }
                if let Ok(seat) = got {
                    seats.push((seat, m.waiters[id].part, m.waiters[id].weight));
                }
                m.waiters[id].verdict = Verdict::Closed;
                drop(waiter);
            }
            Op::Release(_) if seats.is_empty() => {}
            Op::Release(k) => {
                let (seat, i, w) = seats.swap_remove(k % seats.len());
                drop(seat);
                m.give_back(i, w);
                m.serve();
            }
            Op::Resize(size) => {
                let old = m.limit;
                let got = p.set_max_concurrent(size);
                let ok = m.resize(size);
                if got.is_ok() != ok || got.as_ref().is_ok_and(|&o| o != old) {
                    fail!("resize: core {got:?}, model ok = {ok}, old {old}");
                }
            }
            Op::Reconfigure => {
                let next = if using_alt { cfgs } else { alt };
                let got = p.reconfigure(next);
                let ok = m.reconfigure(next);
                if got.is_ok() != ok {
                    fail!("reconfigure: core {got:?}, model ok = {ok}");
                }
                using_alt ^= ok;
            }
            Op::Close => {
                p.close();
                m.closed = true;
                m.serve();
            }
        }
        // Everything observable, after every step.
        for w in &waiters {
            let (got, want) = (w.count.0.load(Ordering::SeqCst), m.waiters[w.id].wakes);
            if got != want {
                fail!("waiter {}: woken {got} times, model {want}", w.id);
            }
        }
        let s = p.state();
        let want_waiting: usize = m.parts.iter().map(|p| p.line.len()).sum();
        if (s.max_concurrent, s.active, s.waiting, s.closed)
            != (m.limit, m.total(), want_waiting, m.closed)
        {
            fail!("state: core {s:?}");
        }
        for (i, &id) in ids.iter().enumerate() {
            let got = p.partition_state(id).unwrap();
            let mp = &m.parts[i];
            let want = (
                mp.share,
                mp.reserved,
                mp.may_hold,
                mp.active,
                mp.active.saturating_sub(mp.share),
                m.lent(i),
                mp.line.len(),
                mp.rejected,
                mp.timed_out,
            );
            let have = (
                got.share,
                got.reserved,
                got.may_hold,
                got.active,
                got.borrowed,
                got.lent,
                got.waiting,
                got.rejected,
                got.timed_out,
            );
            if have != want {
                fail!(
                    "partition {i}: core (share, reserved, may_hold, active, borrowed, lent, \
                     waiting, rejected, timed_out) = {have:?}, model {want:?}"
                );
            }
        }
    }
    // Everything given back: nothing held, nobody waiting.
    drop(waiters);
    drop(seats);
    let s = p.state();
    if (s.active, s.waiting) != (0, 0) {
        return Err(format!("after everything was given back: {s:?}"));
    }
    Ok(())
}

#[cfg(not(miri))]
mod prop {
    use proptest::prelude::*;
    use std::vec::Vec;

    use super::{Amount, Op, PartitionConfig, QueueOrder, run};

    const NAMES: [&str; 3] = ["a", "b", "c"];

    fn amount(max_seats: usize) -> impl Strategy<Value = Amount> {
        prop_oneof![
            (0..=max_seats).prop_map(Amount::Seats),
            prop_oneof![Just(0u8), Just(25), Just(33), Just(50), Just(100)]
                .prop_map(Amount::Percent),
        ]
    }

    /// One partition's settings, named by its place. Some combinations are
    /// refused (shares above the limit, borrowing with nothing to borrow):
    /// both sides must agree on which.
    fn config(i: usize) -> impl Strategy<Value = PartitionConfig> {
        (
            amount(2),
            proptest::option::of(amount(2)),
            proptest::option::of(amount(4)),
            0u8..=2,
            proptest::option::of(0usize..=2),
            any::<bool>(),
        )
            .prop_map(
                move |(share, lendable, borrow, priority, max_waiting, lifo)| {
                    let mut c = PartitionConfig::new(NAMES[i], share).priority(priority);
                    if let Some(l) = lendable {
                        c = c.lendable(l);
                    }
                    if let Some(b) = borrow {
                        c = c.borrow(b);
                    }
                    if let Some(m) = max_waiting {
                        c = c.max_waiting(m);
                    }
                    if lifo {
                        c = c.queue_order(QueueOrder::Lifo);
                    }
                    c
                },
            )
    }

    fn configs(n: usize) -> impl Strategy<Value = Vec<PartitionConfig>> {
        (0..n).map(config).collect::<Vec<_>>()
    }

    /// Mostly 1 seat, sometimes 2 or 3 (above some partitions' limits).
    fn weight() -> impl Strategy<Value = usize> {
        prop_oneof![6 => Just(1usize), 3 => Just(2), 1 => Just(3)]
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => (0usize..3, weight()).prop_map(|(i, w)| Op::Try(i, w)),
            6 => (0usize..3, weight()).prop_map(|(i, w)| Op::Wait(i, w)),
            3 => any::<usize>().prop_map(Op::Poll),
            6 => any::<usize>().prop_map(Op::Release),
            2 => any::<usize>().prop_map(Op::Cancel),
            2 => any::<usize>().prop_map(Op::TimeOut),
            2 => (0usize..=7).prop_map(Op::Resize),
            // About one close in 120 steps: most cases close late, or not.
            2 => (0usize..8).prop_map(|k| if k == 0 { Op::Close } else { Op::Reconfigure }),
        ]
    }

    fn case() -> impl Strategy<Value = (usize, Vec<PartitionConfig>, Vec<PartitionConfig>, Vec<Op>)>
    {
        (2usize..=3, 1usize..=6).prop_flat_map(|(n, limit)| {
            (
                Just(limit),
                configs(n),
                configs(n),
                proptest::collection::vec(op(), 1..120),
            )
        })
    }

    /// 1024 cases by default; `PROPTEST_CASES` overrides it.
    fn proptest_config() -> ProptestConfig {
        let mut config = ProptestConfig::default();
        if std::env::var_os("PROPTEST_CASES").is_none() {
            config.cases = 1024;
        }
        config
    }

    proptest! {
        #![proptest_config(proptest_config())]

        #[test]
        fn partitions_follow_the_reference_model((limit, cfgs, alt, ops) in case()) {
            run(limit, &cfgs, &alt, &ops).map_err(TestCaseError::fail)?;
        }
    }
}

/// A fixed case that reaches every rule: lending, the rank check of a
/// newcomer, a seat kept for a lender, a resize, a drop-oldest and close.
#[test]
fn a_fixed_case_follows_the_reference_model() {
    let cfgs = [
        PartitionConfig::new("a", Amount::Percent(50)).borrow(Amount::Seats(2)),
        PartitionConfig::new("b", Amount::Seats(2))
            .priority(1)
            .lendable(Amount::Seats(1))
            .max_waiting(1)
            .queue_order(QueueOrder::Lifo),
    ];
    let alt = [
        PartitionConfig::new("a", Amount::Percent(50)).priority(2),
        PartitionConfig::new("b", Amount::Seats(2)),
    ];
    let ops = [
        Op::Try(0, 1),
        Op::Try(0, 1),
        Op::Try(0, 1),
        Op::Try(0, 1),
        Op::Wait(1, 2),
        Op::Wait(0, 1),
        Op::Try(0, 1),
        Op::Release(0),
        Op::Wait(1, 1),
        Op::Release(0),
        Op::Poll(0),
        Op::Poll(1),
        Op::Resize(6),
        Op::Reconfigure,
        Op::Wait(0, 3),
        Op::TimeOut(0),
        Op::Resize(2),
        Op::Cancel(0),
        Op::Close,
        Op::Release(0),
    ];
    run(4, &cfgs, &alt, &ops).unwrap();
}
