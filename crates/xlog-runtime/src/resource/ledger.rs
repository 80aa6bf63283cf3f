//! The books of one backend: the blocks it has handed out, their statistics, and
//! the bytes freed on each stream that no reap has retired yet, under one lock.
//!
//! One lock, taken once per allocation and once per free, keeps the counts in step
//! and the allocation path short: a block moves from live to pending in a single
//! step, so `outstanding` never sees it in both or in neither, and the statistics
//! cost no atomic operation of their own.
//!
//! A free stops counting once its stream has run it: each pending free remembers
//! the epoch its stream had published before the free was queued, and
//! [`Ledger::retire_passed`], called by the stream-ordered backend on its
//! allocations and frees, now and then (every [`RETIRE_EVERY`]th call of a thread)
//! retires the frees below the newest epoch the device has completed on their
//! stream (its fence event, queried) and records the fence again for the frees that
//! remain, so a busy stream's frees retire too, one check later. `reap` remains for
//! a caller that must know the frees have run. A free entered while its call is
//! still queueing it may retire a moment early, with reap as without it.

use std::cell::Cell;
use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::{Arc, Mutex};

use super::stats::{Counted, Counts, StatsHandle};
use super::{BlockId, DeviceBlock};
use crate::error::{Error, Result};
use crate::stream::Stream;
use crate::sync::Unpoisoned;

/// Device addresses are already well spread; a multiplicative hash is enough and
/// keeps the allocation path cheap.
#[derive(Default)]
pub(crate) struct AddressHasher(u64);

impl Hasher for AddressHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ b as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = (v ^ (v >> 29)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

pub(crate) type AddressMap<V> = HashMap<u64, V, BuildHasherDefault<AddressHasher>>;

/// How often (in allocations and frees of one thread) [`Ledger::retire_passed`]
/// asks the streams of pending frees how far they have run.
pub(crate) const RETIRE_EVERY: u32 = 64;

#[derive(Default)]
struct Books {
    /// Live blocks with memory, by address: identity and size.
    live: AddressMap<(BlockId, usize)>,
    /// Live bytes and blocks (zero-byte blocks included), peaks and window totals.
    counts: Counts,
    /// Frees per stream, not yet retired. A handful of streams at most: a vector
    /// beats a hash map here.
    pending: Vec<Pending>,
    pending_bytes: usize,
}

/// The frees queued on one stream that still count.
struct Pending {
    stream: Stream,
    bytes: usize,
    /// Each free's bytes, oldest first, with the epoch its stream had published
    /// before it was queued (the free is covered by any later epoch).
    frees: VecDeque<(u64, usize)>,
}

impl Books {
    /// Take `block` out of the live set if it is the live block at its address;
    /// refuse a stale or forged handle without changing anything. A zero-byte
    /// block has no address to check.
    fn close(&mut self, block: &DeviceBlock) -> Result<()> {
        if block.bytes() == 0 {
            self.counts.freed(0);
            return Ok(());
        }
        // One lookup: take the entry, and put it back if it is not this block's.
        match self.live.remove(&block.ptr()) {
            Some((id, bytes)) if id == block.id() && bytes == block.bytes() => {
                self.counts.freed(bytes);
                Ok(())
            }
            other => {
                if let Some(entry) = other {
                    self.live.insert(block.ptr(), entry);
                }
                Err(Error::StaleBlock {
                    ptr: block.ptr(),
                    generation: block.id().generation.0,
                })
            }
        }
    }

    /// Enter `block` in the live set (a zero-byte block is only counted).
    fn enter(&mut self, block: &DeviceBlock) {
        if block.bytes() > 0 {
            self.live.insert(block.ptr(), (block.id(), block.bytes()));
        }
    }

    fn add_pending(&mut self, stream: &Stream, bytes: usize, after: u64) {
        if bytes > 0 {
            self.entry(stream).frees.push_back((after, bytes));
            self.entry(stream).bytes += bytes;
            self.pending_bytes += bytes;
        }
    }

    fn entry(&mut self, stream: &Stream) -> &mut Pending {
        let at = match self.pending.iter().position(|p| p.stream == *stream) {
            Some(i) => i,
            None => {
                self.pending.push(Pending {
                    stream: stream.clone(),
                    bytes: 0,
                    frees: VecDeque::new(),
                });
                self.pending.len() - 1
            }
        };
        &mut self.pending[at]
    }

    /// Put back an entry a failed reap took, without counting its bytes again.
    fn requeue(&mut self, p: Pending) {
        let e = self.entry(&p.stream);
        e.bytes += p.bytes;
        e.frees.extend(p.frees);
    }
}

impl Counted for Mutex<Books> {
    fn with_counts(&self, f: &mut dyn FnMut(&mut Counts)) {
        f(&mut self.lock_unpoisoned().counts)
    }
}

/// Live blocks, statistics and pending frees of one backend (see the module docs).
#[derive(Default)]
pub(crate) struct Ledger {
    books: Arc<Mutex<Books>>,
}

impl Ledger {
    /// Record a block just handed out.
    pub(crate) fn open(&self, block: &DeviceBlock) {
        let mut books = self.books.lock_unpoisoned();
        books.enter(block);
        books.counts.allocated(block.bytes());
    }

    /// Remove `block` from the live set before freeing it synchronously.
    pub(crate) fn close(&self, block: &DeviceBlock) -> Result<()> {
        self.books.lock_unpoisoned().close(block)
    }

    /// Move `block` from live to pending on `stream`, before queuing its free there
    /// (after the stream published `after`).
    pub(crate) fn close_pending(
        &self,
        block: &DeviceBlock,
        stream: &Stream,
        after: u64,
    ) -> Result<()> {
        let mut books = self.books.lock_unpoisoned();
        books.close(block)?;
        books.add_pending(stream, block.bytes(), after);
        Ok(())
    }

    /// Put a block back after its synchronous free failed.
    pub(crate) fn reopen(&self, block: &DeviceBlock) {
        let mut books = self.books.lock_unpoisoned();
        books.enter(block);
        books.counts.restored(block.bytes());
    }

    /// Undo [`close_pending`](Self::close_pending) after queuing the free failed.
    pub(crate) fn reopen_pending(&self, block: &DeviceBlock, stream: &Stream) {
        let mut books = self.books.lock_unpoisoned();
        // A reap running in between may hold the stream's entry (then the bytes
        // stay counted as pending until it retires them: conservative, never low).
        if let Some(p) = books.pending.iter_mut().find(|p| p.stream == *stream) {
            let undone = p.bytes.min(block.bytes());
            p.bytes -= undone;
            let mut left = undone;
            while left > 0 {
                let Some(last) = p.frees.back_mut() else {
                    break;
                };
                let take = last.1.min(left);
                last.1 -= take;
                left -= take;
                if last.1 == 0 {
                    p.frees.pop_back();
                }
            }
            books.pending_bytes -= undone;
        }
        books.enter(block);
        books.counts.restored(block.bytes());
    }

    /// Live bytes plus freed bytes not yet retired.
    pub(crate) fn outstanding(&self) -> usize {
        let books = self.books.lock_unpoisoned();
        books.counts.live_bytes() + books.pending_bytes
    }

    /// A handle to the statistics these books keep. It shares the books, which may
    /// outlive the resource: see the `Drop` below.
    pub(crate) fn stats(&self) -> StatsHandle {
        StatsHandle::new(self.books.clone())
    }

    /// Whether `id` is the block live at its address.
    pub(crate) fn contains(&self, id: BlockId) -> bool {
        self.books
            .lock_unpoisoned()
            .live
            .get(&id.ptr)
            .map(|(live, _)| *live == id)
            .unwrap_or(false)
    }

    /// Retire pending frees: `sync` each stream that has some (outside the lock),
    /// stopping at the first failure, whose stream and the rest stay pending.
    /// Returns the bytes retired.
    pub(crate) fn reap_with(&self, mut sync: impl FnMut(&Stream) -> Result<()>) -> Result<usize> {
        let drained = std::mem::take(&mut self.books.lock_unpoisoned().pending);
        let mut retired = 0usize;
        let mut iter = drained.into_iter();
        let mut failure = None;
        for p in iter.by_ref() {
            match sync(&p.stream) {
                Ok(()) => retired += p.bytes,
                Err(e) => {
                    failure = Some((e, p));
                    break;
                }
            }
        }
        // Bytes stop counting only once their stream is known to have drained.
        let mut books = self.books.lock_unpoisoned();
        books.pending_bytes -= retired;
        match failure {
            None => Ok(retired),
            Some((e, p)) => {
                for p in std::iter::once(p).chain(iter) {
                    books.requeue(p);
                }
                Err(e)
            }
        }
    }

    /// Every [`RETIRE_EVERY`]th call of this thread: retire the frees below the
    /// newest epoch `completed` says the device has run on their stream (asked
    /// outside the lock), then `mark` each stream that still has frees pending, so
    /// that a later call can retire them. Returns the bytes retired.
    #[inline]
    pub(crate) fn retire_passed(
        &self,
        completed: impl FnMut(&Stream) -> Option<u64>,
        mark: impl FnMut(&Stream),
    ) -> usize {
        thread_local! {
            static CALLS: Cell<u32> = const { Cell::new(0) };
        }
        let due = CALLS.with(|c| {
            let n = c.get().wrapping_add(1);
            c.set(n);
            n % RETIRE_EVERY == 0
        });
        if due {
            self.retire_completed(completed, mark)
        } else {
            0
        }
    }

    #[cold]
    #[inline(never)]
    fn retire_completed(
        &self,
        mut completed: impl FnMut(&Stream) -> Option<u64>,
        mut mark: impl FnMut(&Stream),
    ) -> usize {
        let streams: Vec<Stream> = {
            let books = self.books.lock_unpoisoned();
            if books.pending.is_empty() {
                return 0;
            }
            books.pending.iter().map(|p| p.stream.clone()).collect()
        };
        let passed: Vec<(Stream, Option<u64>)> = streams
            .into_iter()
            .map(|s| {
                let c = completed(&s);
                (s, c)
            })
            .collect();
        let mut retired = 0;
        let mut busy = Vec::new();
        {
            let mut books = self.books.lock_unpoisoned();
            for (stream, done) in &passed {
                // A reap may have taken the entry meanwhile: then it retires the bytes.
                let Some(i) = books.pending.iter().position(|p| p.stream == *stream) else {
                    continue;
                };
                let p = &mut books.pending[i];
                if let Some(c) = *done {
                    while let Some(&(after, bytes)) = p.frees.front() {
                        if after >= c {
                            break;
                        }
                        p.frees.pop_front();
                        p.bytes -= bytes;
                        retired += bytes;
                    }
                }
                if p.frees.is_empty() {
                    books.pending.swap_remove(i);
                } else {
                    busy.push(stream.clone());
                }
            }
            books.pending_bytes -= retired;
        }
        // The streams go outside the lock.
        busy.iter().for_each(&mut mark);
        drop(passed);
        retired
    }

    #[cfg(test)]
    fn add_pending(&self, stream: &Stream, bytes: usize) {
        self.books.lock_unpoisoned().add_pending(stream, bytes, 0);
    }

    #[cfg(test)]
    fn per_stream_total(&self) -> usize {
        let books = self.books.lock_unpoisoned();
        books.pending.iter().map(|p| p.bytes).sum()
    }
}

/// A statistics handle can keep the books after their resource is gone: they must
/// not keep the streams of pending frees (and through them the context) alive.
impl Drop for Ledger {
    fn drop(&mut self) {
        let pending = {
            let mut books = self.books.lock_unpoisoned();
            books.live = AddressMap::default();
            std::mem::take(&mut books.pending)
        };
        // The streams go outside the lock.
        drop(pending);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;
    use crate::error::Error;

    fn streams(n: u32) -> Vec<Stream> {
        (0..n).map(Stream::host_placeholder).collect()
    }

    /// A statistics handle kept after its resource is dropped holds the counts
    /// only: the stream of a free that was never reaped is released.
    #[test]
    fn a_kept_statistics_handle_releases_the_pending_streams() {
        let s = Stream::host_placeholder(1);
        let ledger = Ledger::default();
        let block = DeviceBlock::new(0, 0x1000, 64, crate::resource::AllocTag::UNTAGGED);
        ledger.open(&block);
        ledger.close_pending(&block, &s, 0).unwrap();
        let stats = ledger.stats();
        assert_eq!(std::sync::Arc::strong_count(&s.shared), 2);
        drop(ledger);
        assert_eq!(std::sync::Arc::strong_count(&s.shared), 1);
        assert_eq!(stats.snapshot().total_bytes, 64);
    }

    /// Frees retire without a reap once their stream has run past them, and only
    /// those: a busy stream's later frees stay until a later check, and its mark
    /// is asked for.
    #[test]
    fn frees_retire_as_their_streams_pass_them() {
        let p = Ledger::default();
        let s = streams(2);
        let add = |st: &Stream, bytes, after| {
            p.books.lock_unpoisoned().add_pending(st, bytes, after);
        };
        add(&s[0], 100, 3);
        add(&s[0], 20, 9);
        add(&s[1], 50, 1);
        let marked = std::cell::RefCell::new(Vec::new());
        let mut retired = 0;
        for _ in 0..RETIRE_EVERY {
            retired += p.retire_passed(
                |st| (*st == s[0]).then_some(5),
                |st| marked.borrow_mut().push(st.id()),
            );
        }
        assert_eq!(retired, 100, "stream 0 passed epoch 5; stream 1 is unknown");
        assert_eq!(p.outstanding(), 70);
        assert_eq!(marked.borrow().len(), 2, "both streams still have frees");
        assert_eq!(p.retire_completed(|_| Some(10), |_| {}), 70);
        assert_eq!(p.outstanding(), 0);
        assert_eq!(p.per_stream_total(), 0);
    }

    #[test]
    fn reap_retires_everything_when_every_sync_succeeds() {
        let p = Ledger::default();
        let s = streams(3);
        p.add_pending(&s[0], 10);
        p.add_pending(&s[1], 20);
        p.add_pending(&s[0], 5);
        p.add_pending(&s[2], 0);
        assert_eq!(p.outstanding(), 35);
        assert_eq!(p.reap_with(|_| Ok(())).unwrap(), 35);
        assert_eq!(p.outstanding(), 0);
        assert_eq!(p.per_stream_total(), 0);
    }

    #[test]
    fn reap_failure_restores_the_unsynchronised_entries() {
        let p = Ledger::default();
        let s = streams(4);
        for (i, st) in s.iter().enumerate() {
            p.add_pending(st, 100 * (i + 1));
        }
        let mut calls = 0;
        let err = p
            .reap_with(|_| {
                calls += 1;
                if calls == 2 {
                    Err(Error::InjectedFault { site: "reap" })
                } else {
                    Ok(())
                }
            })
            .unwrap_err();
        assert!(matches!(err, Error::InjectedFault { .. }));
        // Exactly one stream was synchronised; the rest are still counted and queued.
        let remaining = p.outstanding();
        assert!((600..1000).contains(&remaining), "{remaining}");
        assert_eq!(p.per_stream_total(), remaining);
        // The next reap retries them all.
        let retired = p.reap_with(|_| Ok(())).unwrap();
        assert_eq!(retired, remaining);
        assert_eq!(p.outstanding(), 0);
    }

    #[test]
    fn frees_racing_reaps_are_never_split_or_lost() {
        use std::sync::Arc;
        let p = Arc::new(Ledger::default());
        let s = streams(8);
        let total_added = AtomicUsize::new(0);
        let total_reaped = AtomicUsize::new(0);
        std::thread::scope(|scope| {
            for t in 0..4usize {
                let p = &p;
                let s = &s;
                let total_added = &total_added;
                scope.spawn(move || {
                    for i in 0..2000usize {
                        let b = 1 + (i * 7 + t) % 64;
                        p.add_pending(&s[(i + t) % 8], b);
                        total_added.fetch_add(b, Ordering::Relaxed);
                    }
                });
            }
            for _ in 0..2 {
                let p = &p;
                let total_reaped = &total_reaped;
                scope.spawn(move || {
                    for _ in 0..500 {
                        let n = p.reap_with(|_| Ok(())).unwrap();
                        total_reaped.fetch_add(n, Ordering::Relaxed);
                    }
                });
            }
        });
        let last = p.reap_with(|_| Ok(())).unwrap();
        assert_eq!(
            total_reaped.load(Ordering::Relaxed) + last,
            total_added.load(Ordering::Relaxed)
        );
        assert_eq!(p.outstanding(), 0);
    }
}
