//! Pending-free accounting: bytes freed on a stream but not yet known to be free.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use crate::error::Result;
use crate::stream::Stream;
use crate::sync::Unpoisoned;

/// Freed-but-not-reaped bytes, per stream.
///
/// The per-stream map and the total move together under one mutex, so a free that
/// races a reap is counted entirely before the reap's drain (and reaped now) or
/// entirely after (and kept for the next reap), never split.
#[derive(Default)]
pub(crate) struct PendingFrees {
    // A handful of streams at most: a vector beats a hash map here.
    per_stream: Mutex<Vec<(Stream, usize)>>,
    total: AtomicUsize,
}

impl PendingFrees {
    pub(crate) fn add(&self, stream: &Stream, bytes: usize) {
        if bytes == 0 {
            return;
        }
        let mut map = self.per_stream.lock_unpoisoned();
        bump(&mut map, stream, bytes);
        self.total.fetch_add(bytes, Ordering::AcqRel);
    }

    pub(crate) fn bytes(&self) -> usize {
        self.total.load(Ordering::Acquire)
    }

    /// Drain the map, synchronise each stream with `sync`, and retire only what
    /// was synchronised. On the first failure, the failing entry and every entry
    /// not yet tried go back into the map so the next reap retries them.
    pub(crate) fn reap_with(&self, mut sync: impl FnMut(&Stream) -> Result<()>) -> Result<usize> {
        let drained: Vec<(Stream, usize)> = {
            let mut map = self.per_stream.lock_unpoisoned();
            std::mem::take(&mut *map)
        };
        let mut retired = 0usize;
        let mut iter = drained.into_iter();
        let mut failure = None;
        for (stream, bytes) in iter.by_ref() {
            match sync(&stream) {
                Ok(()) => retired += bytes,
                Err(e) => {
                    failure = Some((e, stream, bytes));
                    break;
                }
            }
        }
        if let Some((err, stream, bytes)) = failure {
            let mut map = self.per_stream.lock_unpoisoned();
            for (s, b) in std::iter::once((stream, bytes)).chain(iter) {
                bump(&mut map, &s, b);
            }
            self.total.fetch_sub(retired, Ordering::AcqRel);
            return Err(err);
        }
        self.total.fetch_sub(retired, Ordering::AcqRel);
        Ok(retired)
    }

    #[cfg(test)]
    pub(crate) fn per_stream_total(&self) -> usize {
        let map = self.per_stream.lock().unwrap();
        map.iter().map(|(_, b)| *b).sum()
    }
}

fn bump(map: &mut Vec<(Stream, usize)>, stream: &Stream, bytes: usize) {
    match map.iter_mut().find(|(s, _)| s == stream) {
        Some((_, b)) => *b += bytes,
        None => map.push((stream.clone(), bytes)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;

    fn streams(n: u32) -> Vec<Stream> {
        (0..n).map(Stream::host_placeholder).collect()
    }

    #[test]
    fn reap_retires_everything_when_every_sync_succeeds() {
        let p = PendingFrees::default();
        let s = streams(3);
        p.add(&s[0], 10);
        p.add(&s[1], 20);
        p.add(&s[0], 5);
        p.add(&s[2], 0);
        assert_eq!(p.bytes(), 35);
        assert_eq!(p.reap_with(|_| Ok(())).unwrap(), 35);
        assert_eq!(p.bytes(), 0);
        assert_eq!(p.per_stream_total(), 0);
    }

    #[test]
    fn reap_failure_restores_the_unsynchronised_entries() {
        let p = PendingFrees::default();
        let s = streams(4);
        for (i, st) in s.iter().enumerate() {
            p.add(st, 100 * (i + 1));
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
        let remaining = p.bytes();
        assert!((600..1000).contains(&remaining), "{remaining}");
        assert_eq!(p.per_stream_total(), remaining);
        // The next reap retries them all.
        let retired = p.reap_with(|_| Ok(())).unwrap();
        assert_eq!(retired, remaining);
        assert_eq!(p.bytes(), 0);
    }

    #[test]
    fn frees_racing_reaps_are_never_split_or_lost() {
        use std::sync::Arc;
        let p = Arc::new(PendingFrees::default());
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
                        p.add(&s[(i + t) % 8], b);
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
        assert_eq!(p.bytes(), 0);
    }
}
