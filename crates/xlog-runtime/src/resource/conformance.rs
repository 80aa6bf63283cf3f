//! One conformance suite over the host backend and every adaptor, in several
//! stacking orders. The host backend stands in for device memory here; the same
//! contract is checked on the device backends by the GPU suite.

use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use super::logging::CSV_HEADER;
use super::*;
use crate::error::Error;

#[derive(Clone, Default)]
struct SharedLog(Arc<Mutex<Vec<u8>>>);

impl Write for SharedLog {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

const BIG: usize = 1 << 40;

fn stacks(host: &Arc<HostResource>) -> Vec<(String, Box<dyn DeviceMemoryResource>)> {
    let h = || host.clone();
    let list: Vec<Box<dyn DeviceMemoryResource>> = vec![
        Box::new(h()),
        Box::new(BudgetAdaptor::new(h(), BIG)),
        Box::new(StatsAdaptor::new(h())),
        Box::new(LoggingAdaptor::new(h(), std::io::sink())),
        Box::new(BudgetAdaptor::new(
            StatsAdaptor::new(LoggingAdaptor::new(h(), std::io::sink())),
            BIG,
        )),
        Box::new(StatsAdaptor::new(BudgetAdaptor::new(h(), BIG))),
        Box::new(LoggingAdaptor::new(
            BudgetAdaptor::new(StatsAdaptor::new(h()), BIG),
            std::io::sink(),
        )),
    ];
    list.into_iter().map(|r| (r.describe(), r)).collect()
}

fn for_every_stack(check: impl Fn(&str, &dyn DeviceMemoryResource, &HostResource)) {
    let host = Arc::new(HostResource::new(0));
    for (name, stack) in stacks(&host) {
        check(&name, stack.as_ref(), &host);
        assert_eq!(
            host.bytes_outstanding(),
            0,
            "{name}: test left bytes outstanding"
        );
    }
}

#[test]
fn allocate_free_reap_round_trip() {
    let s = Stream::host_placeholder(1);
    for_every_stack(|name, r, _| {
        let a = r.allocate(1000, &s, AllocTag("a")).unwrap();
        let b = r.allocate(24, &s, AllocTag("b")).unwrap();
        assert_ne!(a.ptr(), b.ptr(), "{name}");
        assert_eq!(r.bytes_outstanding(), 1024, "{name}");
        // SAFETY: host memory, allocated just above by this stack, unused since.
        unsafe { r.deallocate(a, &s) }.unwrap();
        assert_eq!(
            r.bytes_outstanding(),
            1024,
            "{name}: a free is pending until reaped"
        );
        assert_eq!(r.reap_pending().unwrap(), 1000, "{name}");
        assert_eq!(r.bytes_outstanding(), 24, "{name}");
        // SAFETY: as above.
        unsafe { r.deallocate(b, &s) }.unwrap();
        r.reap_pending().unwrap();
        assert_eq!(r.bytes_outstanding(), 0, "{name}");
    });
}

#[test]
fn zero_byte_allocations_are_legal_and_free() {
    let s = Stream::host_placeholder(1);
    for_every_stack(|name, r, host| {
        host.fail_next_allocations(1);
        let z = r.allocate(0, &s, AllocTag::UNTAGGED).unwrap();
        host.fail_next_allocations(0);
        assert_eq!((z.ptr(), z.bytes()), (0, 0), "{name}");
        assert_eq!(r.bytes_outstanding(), 0, "{name}");
        // SAFETY: zero-byte block from this stack.
        unsafe { r.deallocate(z, &s) }.unwrap();
        assert_eq!(r.bytes_outstanding(), 0, "{name}");
    });
}

#[test]
fn stale_block_is_refused_and_changes_nothing() {
    let s = Stream::host_placeholder(1);
    for_every_stack(|name, r, _| {
        let live = r.allocate(64, &s, AllocTag("live")).unwrap();
        let forged = DeviceBlock::new(live.id().device, live.ptr(), 64, AllocTag("forged"));
        // SAFETY: the forged block is refused before any memory is touched.
        let err = unsafe { r.deallocate(forged, &s) }.unwrap_err();
        assert!(
            matches!(err, Error::StaleBlock { ptr, .. } if ptr == live.ptr()),
            "{name}: {err}"
        );
        assert_eq!(r.bytes_outstanding(), 64, "{name}");
        // SAFETY: the genuine block, unused.
        unsafe { r.deallocate(live, &s) }.unwrap();
        r.reap_pending().unwrap();
    });
}

#[test]
fn upstream_failure_leaves_every_counter_as_it_was() {
    let s = Stream::host_placeholder(1);
    for_every_stack(|name, r, host| {
        let keep = r.allocate(128, &s, AllocTag("keep")).unwrap();
        let before = r.bytes_outstanding();
        host.fail_next_allocations(1);
        let err = r.allocate(4096, &s, AllocTag("doomed")).unwrap_err();
        assert!(matches!(err, Error::InjectedFault { .. }), "{name}: {err}");
        assert_eq!(r.bytes_outstanding(), before, "{name}");
        // SAFETY: unused block from this stack.
        unsafe { r.deallocate(keep, &s) }.unwrap();
        r.reap_pending().unwrap();
    });
}

#[test]
fn reap_failure_keeps_bytes_counted_until_a_later_reap() {
    let s: Vec<Stream> = (0..3).map(Stream::host_placeholder).collect();
    for_every_stack(|name, r, host| {
        for st in &s {
            let b = r.allocate(100, st, AllocTag::UNTAGGED).unwrap();
            // SAFETY: unused block from this stack.
            unsafe { r.deallocate(b, st) }.unwrap();
        }
        host.fail_next_reaps(1);
        assert!(r.reap_pending().is_err(), "{name}");
        let left = r.bytes_outstanding();
        assert_eq!(
            left, 300,
            "{name}: the failing sync is the first, nothing retired"
        );
        assert_eq!(r.reap_pending().unwrap(), 300, "{name}");
        assert_eq!(r.bytes_outstanding(), 0, "{name}");
    });
}

#[test]
fn budget_refusal_reports_numbers_and_changes_nothing() {
    let s = Stream::host_placeholder(1);
    let host = Arc::new(HostResource::new(0));
    let stats = StatsAdaptor::new(host.clone());
    let stats_h = stats.handle();
    let budget = BudgetAdaptor::new(stats, 1000);
    let h = budget.handle();
    let a = budget.allocate(700, &s, AllocTag::UNTAGGED).unwrap();
    let snap = stats_h.snapshot();
    let err = budget.allocate(301, &s, AllocTag::UNTAGGED).unwrap_err();
    match err {
        Error::BudgetExceeded {
            requested,
            remaining,
            limit,
            cached,
        } => assert_eq!((requested, remaining, limit, cached), (301, 300, 1000, 0)),
        e => panic!("unexpected {e}"),
    }
    assert_eq!(h.used(), 700);
    assert_eq!(
        stats_h.snapshot(),
        snap,
        "a refusal must not reach upstream"
    );
    assert_eq!(host.bytes_outstanding(), 700);
    let b = budget.allocate(300, &s, AllocTag::UNTAGGED).unwrap();
    assert_eq!(h.remaining(), 0);
    // SAFETY: unused blocks from this stack.
    unsafe {
        budget.deallocate(a, &s).unwrap();
        budget.deallocate(b, &s).unwrap();
    }
    assert_eq!(h.used(), 0);
    budget.reap_pending().unwrap();
}

#[test]
fn concurrent_reservations_never_exceed_the_budget() {
    // One thread alone can hold up to ~9 blocks of up to 7.25 KiB, so even with
    // no overlap between threads the limit is reached.
    const LIMIT: usize = 24 * 1024;
    let host = Arc::new(HostResource::new(0));
    // Statistics *below* the budget see what actually reached the backend.
    let below = StatsAdaptor::new(host.clone());
    let live = below.handle();
    let budget = BudgetAdaptor::new(below, LIMIT);
    let refusals = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for t in 0..16u32 {
            let (budget, live, refusals) = (&budget, &live, &refusals);
            scope.spawn(move || {
                let s = Stream::host_placeholder(t);
                let mut held = Vec::new();
                for i in 0..400usize {
                    let bytes = 256 + ((i * 131 + t as usize * 17) % 8) * 1024;
                    match budget.allocate(bytes, &s, AllocTag::UNTAGGED) {
                        Ok(b) => held.push(b),
                        Err(Error::BudgetExceeded {
                            limit, requested, ..
                        }) => {
                            assert_eq!((limit, requested), (LIMIT, bytes));
                            refusals.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(e) => panic!("{e}"),
                    }
                    let reached = live.snapshot().current_bytes;
                    assert!(
                        reached <= LIMIT,
                        "live bytes behind the budget: {reached} > {LIMIT}"
                    );
                    if i % 5 == 0 || held.len() > 8 {
                        if let Some(b) = held.pop() {
                            // SAFETY: unused block from this stack.
                            unsafe { budget.deallocate(b, &s) }.unwrap();
                        }
                    }
                }
                for b in held {
                    // SAFETY: unused block from this stack.
                    unsafe { budget.deallocate(b, &s) }.unwrap();
                }
            });
        }
    });
    assert!(
        refusals.load(Ordering::Relaxed) > 0,
        "the test must actually hit the limit"
    );
    assert!(
        live.snapshot().peak_bytes <= LIMIT,
        "peak behind the budget"
    );
    assert!(
        live.snapshot().peak_bytes > LIMIT / 2,
        "the threads must actually fill the budget"
    );
    assert_eq!(budget.handle().used(), 0);
    budget.reap_pending().unwrap();
    assert_eq!(host.bytes_outstanding(), 0);
}

#[test]
fn stats_track_current_peak_total_and_reset_a_window() {
    let s = Stream::host_placeholder(1);
    let stats = StatsAdaptor::new(HostResource::new(0));
    let h = stats.handle();
    let a = stats.allocate(100, &s, AllocTag::UNTAGGED).unwrap();
    let b = stats.allocate(50, &s, AllocTag::UNTAGGED).unwrap();
    // SAFETY: unused block from this stack.
    unsafe { stats.deallocate(a, &s) }.unwrap();
    let snap = h.snapshot();
    assert_eq!(
        snap,
        AllocStats {
            current_bytes: 50,
            peak_bytes: 150,
            total_bytes: 150,
            current_count: 1,
            peak_count: 2,
            total_count: 2,
        }
    );
    h.reset_window();
    let c = stats.allocate(10, &s, AllocTag::UNTAGGED).unwrap();
    let snap = h.snapshot();
    assert_eq!(
        (snap.peak_bytes, snap.total_bytes, snap.total_count),
        (60, 10, 1)
    );
    // SAFETY: unused blocks from this stack.
    unsafe {
        stats.deallocate(b, &s).unwrap();
        stats.deallocate(c, &s).unwrap();
    }
    assert_eq!(h.snapshot().current_bytes, 0);
    stats.reap_pending().unwrap();
}

#[test]
fn logging_writes_csv_lines() {
    let log = SharedLog::default();
    let s = Stream::host_placeholder(7);
    let r = LoggingAdaptor::new(HostResource::new(0), log.clone());
    let a = r.allocate(32, &s, AllocTag("col,umn")).unwrap();
    let ptr = a.ptr();
    // SAFETY: unused block from this stack.
    unsafe { r.deallocate(a, &s) }.unwrap();
    r.reap_pending().unwrap();
    let text = String::from_utf8(log.0.lock().unwrap().clone()).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], CSV_HEADER);
    assert_eq!(lines.len(), 3, "{text}");
    let f: Vec<&str> = lines[1].split(',').collect();
    assert_eq!(f[2], "allocate");
    assert_eq!(f[3], format!("{ptr:#x}"));
    assert_eq!(f[4], "32");
    assert_eq!(f[5], "7");
    assert!(lines[1].ends_with("\"col,umn\""), "{}", lines[1]);
    assert!(lines[2].contains(",free,"), "{}", lines[2]);
}

#[test]
fn only_device_backends_claim_stream_tracking() {
    let host = Arc::new(HostResource::new(0));
    for (name, stack) in stacks(&host) {
        assert!(!stack.tracks_streams(), "{name} wraps host memory");
    }
    assert_eq!(
        BudgetAdaptor::new(StatsAdaptor::new(HostResource::new(0)), 1).describe(),
        "budget(stats(host))"
    );
}

/// A backend's own statistics (kept in its ledger) equal what a counting adaptor
/// over it sees and what a model of the sequence says, after every step of a
/// random run of allocations (zero bytes included), frees, refused stale frees,
/// reaps and window resets.
#[test]
fn a_backends_own_statistics_match_an_adaptors_and_the_model() {
    let s = Stream::host_placeholder(1);
    let host = Arc::new(HostResource::new(0));
    let counted = StatsAdaptor::new(host.clone());
    let (own, seen) = (host.stats(), counted.handle());
    let mut model = AllocStats::default();
    let mut live: Vec<DeviceBlock> = Vec::new();
    let mut rng = xlog_test_support::Rng::new(11);
    for step in 0..4000 {
        match rng.below(10) {
            0..=4 => {
                let bytes = [0, 1, 64, 4096][rng.below(4)];
                live.push(counted.allocate(bytes, &s, AllocTag::UNTAGGED).unwrap());
                model.current_bytes += bytes;
                model.current_count += 1;
                model.total_bytes += bytes;
                model.total_count += 1;
            }
            5..=7 if !live.is_empty() => {
                let b = live.swap_remove(rng.below(live.len()));
                let bytes = b.bytes();
                // SAFETY: a block of this stack, never used.
                unsafe { counted.deallocate(b, &s) }.unwrap();
                model.current_bytes -= bytes;
                model.current_count -= 1;
            }
            8 if live.iter().any(|b| b.bytes() > 0) => {
                let b = live.iter().find(|b| b.bytes() > 0).unwrap();
                let stale = DeviceBlock::new(0, b.ptr(), b.bytes(), AllocTag("stale"));
                // SAFETY: refused before any memory is touched.
                assert!(unsafe { counted.deallocate(stale, &s) }.is_err());
            }
            9 if rng.chance(20) => {
                own.reset_window();
                seen.reset_window();
                model.peak_bytes = model.current_bytes;
                model.peak_count = model.current_count;
                model.total_bytes = 0;
                model.total_count = 0;
            }
            _ => {
                counted.reap_pending().unwrap();
            }
        }
        model.peak_bytes = model.peak_bytes.max(model.current_bytes);
        model.peak_count = model.peak_count.max(model.current_count);
        assert_eq!(own.snapshot(), model, "step {step}: the backend's books");
        assert_eq!(seen.snapshot(), model, "step {step}: the adaptor");
    }
    for b in live {
        // SAFETY: as above.
        unsafe { counted.deallocate(b, &s) }.unwrap();
    }
    counted.reap_pending().unwrap();
    assert_eq!(
        (own.snapshot().current_bytes, own.snapshot().current_count),
        (0, 0)
    );
}
