//! Per-buffer use tracking: the rules that make cross-stream hazards impossible
//! to forget.
//!
//! # The protocol
//!
//! Every operation that touches device memory (a kernel, a copy, a memset, a free)
//! goes through the same four verbs:
//!
//! - **record**: name each buffer the work touches and its [`Access`]. Uses of one
//!   buffer collapse to the strongest access, keyed by the buffer's full identity.
//! - **preflight**: check everything that can fail (runtime, device, strictness,
//!   launch configuration) and compute the cross-stream waits the access needs.
//!   Nothing has been queued yet, so a refusal leaves no state behind.
//! - **enqueue**: queue the waits, then the work, on the launch stream.
//! - **commit**: publish a new [`UsePoint`] on the launch stream and fold it into
//!   each buffer's state. Commit cannot fail; it happens in the call that
//!   enqueued, never in a destructor.
//!
//! The allocator adds a fifth verb, **reap**: synchronise the streams that frees
//! were queued on and stop counting those bytes as outstanding.
//!
//! # The state of one buffer
//!
//! A [`UseState`] holds the buffer's last write (initially the allocation-ready
//! point on the allocation stream) and, since that write, the newest read on each
//! stream. The conflict rule is [`Access`]'s: a read waits on the last write made
//! on another stream; a write waits on the last write and every outstanding read
//! made on other streams. Same-stream points are skipped: stream order already
//! covers them. After the work, a read replaces the read of its stream (keeping
//! the newest), a write replaces the last write and clears the reads: the writer
//! already waited on them, so anyone waiting on the writer transitively waits on
//! them too. Two writers preflighted before either committed (disjoint mutable
//! views used from two threads) did not wait on each other: the later commit then
//! keeps the earlier one's point instead of replacing it, dropping only points it
//! certainly follows (its own stream's earlier ones); a version number tells commit
//! whether anything was committed since its preflight. Deallocation makes the allocation stream wait on every point before
//! the free is queued.
//!
//! # Points are cheap
//!
//! A [`UsePoint`] is a stream and an epoch number, not a CUDA event. Each stream
//! publishes a strictly increasing epoch after it enqueues tracked work, and keeps
//! one reusable event that is (re)recorded only when another stream has to wait on
//! a point it has not yet captured (see `stream.rs`). A launch whose buffers stay
//! on one stream therefore records no event at all, and one event record serves
//! every buffer and every waiter that needs the same stream. The price is that a
//! late waiter may wait on a later point of the producing stream than strictly
//! necessary; it never waits on an earlier one.
//!
//! The state is generic over the stream key so the rules are unit-tested without
//! a GPU.

/// How an operation uses a buffer.
///
/// Conflict rule: a [`Access::Read`] conflicts with earlier writes; a
/// [`Access::Write`] or [`Access::ReadWrite`] conflicts with earlier writes and
/// earlier reads. Conflicting uses on different streams are fenced with an event
/// wait; uses on the same stream are ordered by the stream itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Access {
    /// The work only reads the buffer.
    Read,
    /// The work overwrites the buffer without reading it.
    Write,
    /// The work reads and writes the buffer.
    ReadWrite,
}

impl Access {
    /// Whether the work reads the buffer's bytes.
    pub fn reads(self) -> bool {
        matches!(self, Access::Read | Access::ReadWrite)
    }

    /// Whether the work writes the buffer's bytes.
    pub fn writes(self) -> bool {
        matches!(self, Access::Write | Access::ReadWrite)
    }

    /// The strongest access that covers both (read + write = read-write).
    pub fn merge(self, other: Access) -> Access {
        match (
            self.reads() || other.reads(),
            self.writes() || other.writes(),
        ) {
            (_, false) => Access::Read,
            (false, true) => Access::Write,
            (true, true) => Access::ReadWrite,
        }
    }
}

/// A position in one stream's order: "everything enqueued on `stream` before it
/// published `epoch`".
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct UsePoint<S> {
    pub(crate) stream: S,
    pub(crate) epoch: u64,
}

/// Adds the point `epoch` of `stream` to `points`, keeping one point per stream: the
/// newest (a later point of a stream is ordered after its earlier ones, so it
/// stands for them). The stream is cloned only when it is new to `points`.
#[inline]
pub(crate) fn keep_newest<S, P>(points: &mut P, stream: &S, epoch: u64)
where
    S: PartialEq + Clone,
    P: AsMut<[UsePoint<S>]> + Extend<UsePoint<S>>,
{
    match points.as_mut().iter_mut().find(|p| p.stream == *stream) {
        Some(p) => p.epoch = p.epoch.max(epoch),
        None => points.extend(Some(UsePoint {
            stream: stream.clone(),
            epoch,
        })),
    }
}

/// A buffer's write or read points: inline for the usual one or two streams, so
/// allocating a buffer and recording its first uses allocate nothing.
type Points<S> = smallvec::SmallVec<[UsePoint<S>; 2]>;

/// Use state of one buffer (see the module docs).
///
/// `writes` usually holds one point. It holds more only when two pieces of work
/// that write the buffer (through disjoint mutable views, from two threads) were
/// preflighted before either committed: then neither waited on the other, and the
/// state must keep both for later users and for the free.
#[derive(Debug)]
pub(crate) struct UseState<S> {
    writes: Points<S>,
    reads: Points<S>,
    /// Bumped by every commit; preflight remembers it so commit can tell whether
    /// the state it planned against is still the whole state.
    version: u64,
}

impl<S: PartialEq + Clone> UseState<S> {
    /// State of a fresh block whose memory is ready at `ready` (the allocation point).
    pub(crate) fn ready_at(ready: UsePoint<S>) -> Self {
        UseState {
            writes: smallvec::smallvec![ready],
            reads: Points::new(),
            version: 0,
        }
    }

    /// The version a preflight plans against.
    pub(crate) fn version(&self) -> u64 {
        self.version
    }

    /// The points work with `access` on stream `on` must wait for.
    pub(crate) fn waits<'a>(
        &'a self,
        access: Access,
        on: &'a S,
    ) -> impl Iterator<Item = &'a UsePoint<S>> + 'a {
        self.conflicts(access).filter(move |p| p.stream != *on)
    }

    /// Every point `access` conflicts with, on any stream (what work on a stream
    /// xlog does not know must wait for).
    pub(crate) fn conflicts(&self, access: Access) -> impl Iterator<Item = &UsePoint<S>> {
        let reads: &[UsePoint<S>] = if access.writes() { &self.reads } else { &[] };
        self.writes.iter().chain(reads.iter())
    }

    /// Fold the point of completed-enqueue work, preflighted against `planned`
    /// (the version it saw), into the state.
    ///
    /// Inlined: a launch commits every buffer it touches, and the usual cases (a
    /// buffer read again, or written again, on the stream that last used it) only
    /// move a point forward; the rest is out of line.
    #[inline]
    pub(crate) fn commit(&mut self, access: Access, stream: &S, epoch: u64, planned: u64) {
        let current = planned == self.version;
        self.version += 1;
        if !access.writes() {
            keep_newest(&mut self.reads, stream, epoch);
            return;
        }
        if current && self.reads.is_empty() {
            if let [only] = &mut self.writes[..] {
                if only.stream == *stream {
                    only.epoch = epoch;
                    return;
                }
            }
        }
        self.commit_write(stream, epoch, current);
    }

    /// A write that [`commit`](Self::commit) cannot fold into the last write.
    /// `current`: no other work committed after this one's preflight.
    #[inline(never)]
    fn commit_write(&mut self, stream: &S, epoch: u64, current: bool) {
        let point = UsePoint {
            stream: stream.clone(),
            epoch,
        };
        if current {
            // The work waited on every point there is (or follows it on its own
            // stream): the new write subsumes them all.
            self.writes.clear();
            self.reads.clear();
        } else {
            // Other work committed after this one's preflight: keep its points.
            // Only earlier points of the same stream are certainly subsumed.
            let subsumed = |p: &UsePoint<S>| p.stream == *stream && p.epoch <= epoch;
            self.writes.retain(|p| !subsumed(p));
            self.reads.retain(|p| !subsumed(p));
        }
        self.writes.push(point);
    }

    /// Every point still outstanding: what a free must wait for.
    pub(crate) fn all_points(&self) -> impl Iterator<Item = &UsePoint<S>> {
        self.writes.iter().chain(self.reads.iter())
    }
}

/// Collapse a list of uses into one per key with the merged access, keeping
/// first-seen order, in place; returns how many remain (at the front).
pub(crate) fn dedup_by_key<T: Copy, K: PartialEq>(
    uses: &mut [T],
    key: impl Fn(&T) -> K,
    access: impl Fn(&mut T) -> &mut Access,
) -> usize {
    let mut kept = 0;
    for j in 0..uses.len() {
        let mut next = uses[j];
        match uses[..kept].iter_mut().find(|u| key(u) == key(&next)) {
            Some(first) => *access(first) = access(first).merge(*access(&mut next)),
            None => {
                uses[kept] = next;
                kept += 1;
            }
        }
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(stream: u32, epoch: u64) -> UsePoint<u32> {
        UsePoint { stream, epoch }
    }

    fn waits(s: &UseState<u32>, a: Access, on: u32) -> Vec<UsePoint<u32>> {
        s.waits(a, &on).cloned().collect()
    }

    /// Commit as a preflight-then-commit with nothing in between would.
    fn commit_at(s: &mut UseState<u32>, a: Access, p: UsePoint<u32>, planned: u64) {
        s.commit(a, &p.stream, p.epoch, planned);
    }

    trait Seq {
        fn seq(&mut self, a: Access, p: UsePoint<u32>);
    }
    impl Seq for UseState<u32> {
        fn seq(&mut self, a: Access, p: UsePoint<u32>) {
            let v = self.version();
            self.commit(a, &p.stream, p.epoch, v);
        }
    }

    #[test]
    fn fresh_block_fences_other_streams_on_the_allocation_point() {
        let s = UseState::ready_at(p(0, 1));
        assert_eq!(waits(&s, Access::Read, 1), vec![p(0, 1)]);
        assert_eq!(waits(&s, Access::Write, 2), vec![p(0, 1)]);
        assert!(
            waits(&s, Access::ReadWrite, 0).is_empty(),
            "same stream is ordered"
        );
    }

    #[test]
    fn read_waits_only_on_the_last_write() {
        let mut s = UseState::ready_at(p(0, 1));
        s.seq(Access::Read, p(1, 5));
        s.seq(Access::Read, p(2, 3));
        assert_eq!(waits(&s, Access::Read, 3), vec![p(0, 1)]);
    }

    #[test]
    fn write_waits_on_every_cross_stream_read_and_the_last_write() {
        let mut s = UseState::ready_at(p(0, 1));
        s.seq(Access::Read, p(1, 5));
        s.seq(Access::Read, p(2, 3));
        let w = waits(&s, Access::Write, 3);
        assert_eq!(w, vec![p(0, 1), p(1, 5), p(2, 3)]);
        // A writer on stream 1 skips its own stream's read.
        assert_eq!(waits(&s, Access::ReadWrite, 1), vec![p(0, 1), p(2, 3)]);
    }

    #[test]
    fn one_read_per_stream_keeps_the_newest() {
        let mut s = UseState::ready_at(p(0, 1));
        s.seq(Access::Read, p(1, 5));
        s.seq(Access::Read, p(1, 4));
        s.seq(Access::Read, p(1, 9));
        assert_eq!(waits(&s, Access::Write, 2), vec![p(0, 1), p(1, 9)]);
    }

    #[test]
    fn write_replaces_last_write_and_clears_reads() {
        let mut s = UseState::ready_at(p(0, 1));
        s.seq(Access::Read, p(1, 5));
        s.seq(Access::Write, p(2, 7));
        assert_eq!(waits(&s, Access::Write, 3), vec![p(2, 7)]);
        assert_eq!(s.all_points().count(), 1);
        s.seq(Access::Read, p(3, 2));
        assert_eq!(
            s.all_points().cloned().collect::<Vec<_>>(),
            vec![p(2, 7), p(3, 2)]
        );
    }

    #[test]
    fn writes_preflighted_together_keep_each_other() {
        // Two writers (disjoint views, two threads) both preflight against v0.
        let mut s = UseState::ready_at(p(0, 1));
        let v = s.version();
        commit_at(&mut s, Access::Write, p(1, 5), v);
        commit_at(&mut s, Access::Write, p(2, 3), v);
        // The second commit must not drop the first writer's point.
        assert_eq!(waits(&s, Access::Read, 3), vec![p(1, 5), p(2, 3)]);
        assert_eq!(
            s.all_points().count(),
            2,
            "the ready point both writers waited on is gone"
        );
        // A later sequential write subsumes everything again.
        s.seq(Access::Write, p(3, 9));
        assert_eq!(s.all_points().cloned().collect::<Vec<_>>(), vec![p(3, 9)]);
    }

    #[test]
    fn a_read_committed_during_a_write_is_kept() {
        let mut s = UseState::ready_at(p(0, 1));
        let v = s.version();
        commit_at(&mut s, Access::Read, p(1, 4), v); // a reader of another half commits first
        commit_at(&mut s, Access::Write, p(2, 6), v); // the writer planned before that read
        assert_eq!(waits(&s, Access::Write, 3), vec![p(0, 1), p(2, 6), p(1, 4)]);
    }

    #[test]
    fn same_stream_earlier_points_are_subsumed_even_when_concurrent() {
        let mut s = UseState::ready_at(p(0, 1));
        let v = s.version();
        commit_at(&mut s, Access::Write, p(1, 5), v);
        commit_at(&mut s, Access::Write, p(1, 7), v);
        assert_eq!(waits(&s, Access::Write, 2), vec![p(1, 7)]);
    }

    #[test]
    fn merge_is_the_strongest_access() {
        use Access::*;
        assert_eq!(Read.merge(Read), Read);
        assert_eq!(Read.merge(Write), ReadWrite);
        assert_eq!(Write.merge(Write), Write);
        assert_eq!(Write.merge(ReadWrite), ReadWrite);
        assert_eq!(ReadWrite.merge(Read), ReadWrite);
    }

    #[test]
    fn dedup_collapses_same_key_to_strongest_access() {
        let mut e = vec![
            ((1u64, 7u64), Access::Read, "a"),
            ((2, 7), Access::Read, "b"),
            ((1, 7), Access::Write, "c"),
            ((1, 8), Access::Write, "same address, other generation"),
        ];
        let kept = dedup_by_key(&mut e, |u| u.0, |u| &mut u.1);
        e.truncate(kept);
        assert_eq!(e.len(), 3);
        assert_eq!(e[0].0, (1, 7));
        assert_eq!(e[0].1, Access::ReadWrite);
        assert!(e.iter().any(|x| x.0 == (1, 8) && x.1 == Access::Write));
    }
}
