//! The CPU simulator driven with closures written like kernel bodies: indices,
//! barriers, warp operations, collectives, shared memory, atomics, look-back,
//! divergence and panics.

use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;

use xlog_device::lookback::{status_words, LookBack};
use xlog_device::sim::{self, Fault, Launch};
use xlog_device::warp::{self, FULL_MASK};
use xlog_device::{atomic, barrier, collective, shared, static_shared, thread, Dim3};

fn d(x: u32, y: u32, z: u32) -> Dim3 {
    Dim3 { x, y, z }
}

fn launch(grid: u32, block: u32) -> Launch {
    Launch {
        grid: d(grid, 1, 1),
        block: d(block, 1, 1),
        dynamic_shared_bytes: 0,
    }
}

/// Host memory the simulated threads write through atomics, read back afterwards.
fn counters(n: usize) -> Vec<AtomicU64> {
    (0..n).map(|_| AtomicU64::new(0)).collect()
}

fn values(c: &[AtomicU64]) -> Vec<u64> {
    c.iter().map(|a| a.load(Relaxed)).collect()
}

#[test]
fn every_thread_of_every_shape_runs_once_with_its_indices() {
    for (grid, block) in [
        (d(3, 1, 1), d(37, 1, 1)),
        (d(2, 3, 1), d(8, 4, 1)),
        (d(2, 2, 3), d(5, 3, 2)),
    ] {
        let l = Launch {
            grid,
            block,
            dynamic_shared_bytes: 0,
        };
        let total = grid.volume() * block.volume();
        let seen = counters(total);
        for workers in [1, 3] {
            sim::run(
                &l,
                &|| {
                    assert_eq!(thread::block_dim(), block);
                    assert_eq!(thread::grid_dim(), grid);
                    let (t, b) = (thread::thread_idx(), thread::block_idx());
                    assert!(t.x < block.x && t.y < block.y && t.z < block.z);
                    assert!(b.x < grid.x && b.y < grid.y && b.z < grid.z);
                    assert_eq!(
                        thread::lane_id() as usize,
                        thread::block_thread_index() % 32
                    );
                    assert_eq!(thread::warp_index(), thread::block_thread_index() / 32);
                    seen[thread::linear_index()].fetch_add(1, Relaxed);
                },
                workers,
            )
            .unwrap();
        }
        assert!(values(&seen).iter().all(|&n| n == 2), "{grid:?} {block:?}");
    }
}

#[test]
fn index_1d_covers_a_one_dimensional_launch() {
    let seen = counters(5 * 100);
    sim::run(
        &launch(5, 100),
        &|| {
            let i = thread::index_1d();
            seen[i.get()].fetch_add(1, Relaxed);
        },
        2,
    )
    .unwrap();
    assert!(values(&seen).iter().all(|&n| n == 1));
}

#[test]
fn a_barrier_makes_every_shared_write_visible_to_the_block() {
    // Each thread writes its slot, waits, reads its neighbour's. Without barriers that
    // interleave the block's threads, thread t would run to its end before t + 1
    // wrote, and read the fill pattern.
    let out = counters(4 * 96);
    sim::run(
        &launch(4, 96),
        &|| {
            let s = static_shared!(SLOTS: [u32; 96]);
            let t = thread::block_thread_index();
            // SAFETY: each thread writes its own slot; the barrier orders the reads.
            unsafe { s.write(t, (thread::block_index() * 1000 + t) as u32) };
            barrier::sync_threads();
            // SAFETY: in bounds, written before the barrier.
            let next = unsafe { s.read((t + 1) % 96) };
            out[thread::linear_index()].store(next as u64, Relaxed);
        },
        2,
    )
    .unwrap();
    for b in 0..4 {
        for t in 0..96 {
            assert_eq!(values(&out)[b * 96 + t], (b * 1000 + (t + 1) % 96) as u64);
        }
    }
}

#[test]
fn barrier_reductions_count_and_combine_the_predicates() {
    let bad = AtomicU32::new(0);
    sim::run(
        &launch(3, 70),
        &|| {
            let t = thread::block_thread_index() as u32;
            let ok = barrier::sync_threads_count(t % 3 == 0) == 24
                && barrier::sync_threads_and(t < 100)
                && !barrier::sync_threads_and(t != 5)
                && barrier::sync_threads_or(t == 69)
                && !barrier::sync_threads_or(false);
            if !ok {
                bad.fetch_add(1, Relaxed);
            }
        },
        1,
    )
    .unwrap();
    assert_eq!(bad.load(Relaxed), 0);
}

#[test]
fn shared_memory_is_per_block_and_starts_with_the_fill_pattern() {
    let seen = counters(6);
    let l = Launch {
        dynamic_shared_bytes: 64,
        ..launch(6, 4)
    };
    sim::run(
        &l,
        &|| {
            let s = static_shared!(ONE: [u32; 1]);
            let dynamic = shared::DynamicShared::<u32>::get();
            assert_eq!(dynamic.len(), 16);
            assert_eq!(dynamic.as_mut_ptr() as usize % 16, 0);
            if thread::block_thread_index() == 0 {
                // SAFETY: thread 0 alone touches slot 0 before the barrier.
                unsafe {
                    let fill = u32::from_ne_bytes([sim::SHARED_FILL; 4]);
                    assert_eq!(s.read(0), fill);
                    assert_eq!(dynamic.read(15), fill);
                    s.write(0, thread::block_index() as u32);
                }
            }
            barrier::sync_threads();
            // SAFETY: written before the barrier.
            let v = unsafe { s.read(0) };
            seen[thread::block_index()].fetch_max(v as u64 + 1, Relaxed);
        },
        3,
    )
    .unwrap();
    assert_eq!(values(&seen), [1, 2, 3, 4, 5, 6]);
}

#[test]
fn tiles_reverse_a_block() {
    let out = counters(2 * 50);
    sim::run(
        &launch(2, 50),
        &|| {
            let t = thread::local_index();
            let mut tile = static_shared!(TILE: [u64; 50]).tile();
            tile.set(t, thread::index_1d().get() as u64);
            let tile = tile.sync();
            out[thread::index_1d().get()].store(tile.get(49 - t.get()), Relaxed);
        },
        1,
    )
    .unwrap();
    let v = values(&out);
    for b in 0..2 {
        for t in 0..50 {
            assert_eq!(v[b * 50 + t], (b * 50 + 49 - t) as u64);
        }
    }
}

/// Runs a one-block launch of `n` threads whose body returns a `u64` per thread.
fn per_thread(n: u32, body: impl Fn() -> u64 + Sync) -> Vec<u64> {
    let out = counters(n as usize);
    sim::run(
        &launch(1, n),
        &|| out[thread::block_thread_index()].store(body(), Relaxed),
        1,
    )
    .unwrap();
    values(&out)
}

#[test]
fn shuffles_move_values_between_lanes() {
    let v = per_thread(64, || {
        let l = thread::lane_id();
        let x = 100 + thread::block_thread_index() as u64;
        // SAFETY: all 64 threads (two full warps) make every call with the full mask.
        unsafe {
            let idx = warp::shuffle_idx(FULL_MASK, x, 31 - l);
            let up = warp::shuffle_up(FULL_MASK, x as u32, 3) as u64;
            let down = warp::shuffle_down(FULL_MASK, x as i32, 5) as u64;
            let xor = warp::shuffle_xor(FULL_MASK, x as f32, 6) as u64;
            idx | up << 16 | down << 32 | xor << 48
        }
    });
    for (t, r) in v.into_iter().enumerate() {
        let (l, base) = (t as u64 % 32, 100 + (t as u64 / 32) * 32);
        assert_eq!(r & 0xffff, base + 31 - l, "idx, thread {t}");
        let up = if l >= 3 { base + l - 3 } else { base + l };
        assert_eq!(r >> 16 & 0xffff, up, "up, thread {t}");
        let down = if l + 5 < 32 { base + l + 5 } else { base + l };
        assert_eq!(r >> 32 & 0xffff, down, "down, thread {t}");
        assert_eq!(r >> 48, base + (l ^ 6), "xor, thread {t}");
    }
}

#[test]
fn votes_ballots_and_reductions_follow_their_masks() {
    let v = per_thread(40, || {
        let l = thread::lane_id();
        let t = thread::block_thread_index() as u32;
        // The partial last warp (lanes 0..8) uses its live lanes, as the GPU code does.
        let mask = warp::active_mask();
        // SAFETY: every live lane of each warp makes every call with `mask`.
        unsafe {
            let ballot = warp::ballot(mask, l % 3 == 0) as u64;
            let all = warp::all(mask, t < 40) as u64;
            let any = warp::any(mask, l == 7) as u64;
            let sum = warp::reduce_add_u32(mask, l) as u64;
            let max = warp::reduce_max_i32(mask, -(l as i32)) as u32 as u64;
            warp::sync_warp(mask);
            ballot ^ all << 32 ^ any << 33 ^ sum << 34 ^ (max & 0xff) << 50
        }
    });
    for (t, r) in v.into_iter().enumerate() {
        let n = if t < 32 { 32 } else { 8 };
        let ballot = (0..n).filter(|l| l % 3 == 0).fold(0u64, |b, l| b | 1 << l);
        let sum: u64 = (0..n).sum();
        let want = ballot ^ 1 << 32 ^ 1 << 33 ^ sum << 34;
        assert_eq!(r, want, "thread {t}");
    }
}

#[test]
fn warp_and_block_collectives_match_a_cpu_reference() {
    for n in [1u32, 7, 32, 45, 64, 100, 256] {
        let input = |t: u32| (t * 7 + 3) % 11;
        let out = Mutex::new(vec![
            (0u32, 0u32, 0u32, 0u32, 0u32, 0u32, (0u32, 0u32));
            n as usize
        ]);
        sim::run(
            &launch(1, n),
            &|| {
                let t = thread::thread_idx().x;
                let v = input(t);
                let wr = collective::warp_reduce(v, u32::wrapping_add);
                let ws = collective::warp_inclusive_scan(v, u32::wrapping_add);
                let wb = collective::warp_broadcast(v, 0);
                let br = collective::block_reduce(v, u32::wrapping_add);
                let (bx, _) = collective::block_exclusive_scan(v, 0, u32::wrapping_add);
                let bb = collective::block_broadcast(v, n as usize - 1);
                let rank = collective::block_rank(v % 2 == 1);
                out.lock().unwrap()[t as usize] = (wr, ws, wb, br, bx, bb, rank);
            },
            1,
        )
        .unwrap();
        let out = out.into_inner().unwrap();
        let all: Vec<u32> = (0..n).map(input).collect();
        for t in 0..n as usize {
            let w0 = t / 32 * 32;
            let w1 = (w0 + 32).min(n as usize);
            let (wr, ws, wb, br, bx, bb, rank) = out[t];
            assert_eq!(wr, all[w0..w1].iter().sum::<u32>(), "n {n} t {t}");
            assert_eq!(ws, all[w0..=t].iter().sum::<u32>(), "n {n} t {t}");
            assert_eq!(wb, all[w0], "n {n} t {t}");
            assert_eq!(br, all.iter().sum::<u32>(), "n {n} t {t}");
            assert_eq!(bx, all[..t].iter().sum::<u32>(), "n {n} t {t}");
            assert_eq!(bb, all[n as usize - 1], "n {n} t {t}");
            let odd = |s: &[u32]| s.iter().filter(|v| *v % 2 == 1).count() as u32;
            assert_eq!(rank, (odd(&all[..t]), odd(&all)), "n {n} t {t}");
        }
    }
}

#[test]
fn atomics_from_many_blocks_add_up() {
    let (sum, fsum, max) = (AtomicU64::new(0), AtomicU64::new(0), AtomicU32::new(0));
    sim::run(
        &launch(64, 128),
        &|| {
            let i = thread::index_1d().get();
            // SAFETY: the pointers address live, aligned words that every thread
            // accesses only atomically.
            unsafe {
                atomic::fetch_add(sum.as_ptr(), i as u64);
                atomic::fetch_add(fsum.as_ptr().cast::<f64>(), 0.5);
                atomic::fetch_max(max.as_ptr(), i as u32);
            }
        },
        4,
    )
    .unwrap();
    let n = 64 * 128u64;
    assert_eq!(sum.into_inner(), n * (n - 1) / 2);
    assert_eq!(f64::from_bits(fsum.into_inner()), n as f64 / 2.0);
    assert_eq!(max.into_inner(), n as u32 - 1);
}

/// A single-pass inclusive sum over `tiles` tiles of `threads` elements with
/// decoupled look-back, launched with `blocks` blocks: one block per tile (tile =
/// block index) when `blocks == tiles`, otherwise blocks looping over tickets taken
/// in start order. Each tile waits for its predecessors' published aggregates.
fn look_back_scan(blocks: u32, tiles: u32, threads: u32, workers: usize) {
    let n = (tiles * threads) as usize;
    let x: Vec<u32> = (0..n as u32).map(|i| i % 13 + 1).collect();
    let out = counters(n);
    let status: Vec<AtomicU64> = counters(status_words(tiles as usize));
    let taken = counters(tiles as usize);
    sim::run(
        &launch(blocks, threads),
        &|| {
            // SAFETY: the words are live for the launch, zeroed, and reached only
            // through this parameter's `LookBack`s (all atomic).
            let mut lb =
                unsafe { LookBack::__from_raw_parts(status.as_ptr() as *mut u64, status.len()) };
            while let Some(tile) = lb.next_tile() {
                let k = tile.index();
                let c = tile.chunk::<1>().get();
                let v = x[c];
                let (before, total) = collective::block_exclusive_scan(v, 0, u32::wrapping_add);
                let prefix = tile.exclusive_prefix(total, u32::wrapping_add).unwrap_or(0);
                out[c].store((prefix + before + v) as u64, Relaxed);
                if thread::thread_idx().x == 0 {
                    taken[k].fetch_add(1, Relaxed);
                }
            }
        },
        workers,
    )
    .unwrap();
    let mut acc = 0u64;
    for (i, o) in values(&out).into_iter().enumerate() {
        acc += x[i] as u64;
        assert_eq!(o, acc, "element {i}, {blocks} blocks, {workers} workers");
    }
    // Every tile was taken exactly once.
    assert_eq!(values(&taken), vec![1; tiles as usize]);
}

#[test]
fn a_look_back_scan_chains_many_blocks_on_one_worker() {
    look_back_scan(200, 200, 64, 1);
    look_back_scan(50, 50, 20, 1);
    // Fewer blocks than tiles: tickets.
    look_back_scan(7, 60, 64, 1);
}

#[test]
fn a_look_back_scan_chains_many_blocks_on_four_workers() {
    look_back_scan(300, 300, 64, 4);
    look_back_scan(120, 120, 20, 4);
    look_back_scan(9, 100, 32, 4);
}

#[test]
fn a_spin_wait_on_a_thread_of_the_same_block_makes_progress() {
    // Thread 0 waits for a flag the last thread sets: the spin's `sleep_ns` yields,
    // so the last thread gets to run on the same OS thread.
    let flag = AtomicU32::new(0);
    sim::run(
        &launch(1, 64),
        &|| {
            if thread::thread_idx().x == 0 {
                while flag.load(Relaxed) == 0 {
                    thread::sleep_ns(100);
                }
            } else if thread::thread_idx().x == 63 {
                flag.store(1, Relaxed);
            }
        },
        1,
    )
    .unwrap();
}

/// A look-back whose tile 1 is never published: the tiles after it wait forever
/// (a hang on the GPU). The simulator stops the launch with a deadlock naming the
/// wait, on one worker and on several.
#[test]
fn a_look_back_tile_never_published_is_a_deadlock() {
    sim::set_deadlock_timeout(std::time::Duration::from_secs(1));
    for workers in [1, 3] {
        let status: Vec<AtomicU64> = counters(status_words(4));
        let started = std::time::Instant::now();
        let r = sim::run(
            &launch(4, 32),
            &|| {
                // SAFETY: the words are live for the launch, zeroed, and reached only
                // through this parameter's `LookBack`s (all atomic).
                let mut lb = unsafe {
                    LookBack::__from_raw_parts(status.as_ptr() as *mut u64, status.len())
                };
                if let Some(tile) = lb.next_tile() {
                    if tile.index() == 1 {
                        return;
                    }
                    let _ = tile.exclusive_prefix(1u32, u32::wrapping_add);
                }
            },
            workers,
        );
        match r {
            Err(Fault::Deadlock {
                what,
                block,
                waited,
                ..
            }) => {
                assert!(what.starts_with("lookback"), "{what}");
                assert!(block.x >= 2, "{workers} workers: block {}", block.x);
                assert!(waited >= std::time::Duration::from_secs(1));
            }
            other => panic!("{workers} workers: expected a deadlock, got {other:?}"),
        }
        assert!(started.elapsed() < std::time::Duration::from_secs(30));
    }
    let e = Fault::Deadlock {
        what: "lookback: a poll of an earlier tile's status",
        block: d(2, 0, 0),
        thread: d(0, 0, 0),
        waited: std::time::Duration::from_millis(300),
    }
    .to_string();
    assert!(
        e.contains("deadlocked") && e.contains("never published"),
        "{e}"
    );
}

/// A block spinning for 2 s on a flag that a thread of another block sets after
/// computing that long without suspending: not a deadlock, even past the timeout.
#[test]
fn a_spin_wait_for_a_long_computation_is_not_a_deadlock() {
    sim::set_deadlock_timeout(std::time::Duration::from_secs(1));
    let flag = AtomicU32::new(0);
    sim::run(
        &launch(2, 32),
        &|| {
            if thread::thread_idx().x != 0 {
                return;
            }
            if thread::block_idx().x == 0 {
                let start = std::time::Instant::now();
                while start.elapsed() < std::time::Duration::from_secs(2) {
                    std::hint::spin_loop();
                }
                flag.store(1, Relaxed);
            } else {
                while flag.load(Relaxed) == 0 {
                    thread::sleep_ns(100);
                }
            }
        },
        2,
    )
    .unwrap();
}

#[test]
fn a_divergence_promises_unspecified_values_not_undefined_ones() {
    let e = Fault::Divergence {
        what: "barrier::sync_threads",
        block: d(0, 0, 0),
        thread: d(1, 0, 0),
    }
    .to_string();
    assert!(e.contains("unspecified values"), "{e}");
    assert!(!e.contains("undefined"), "{e}");
}

fn divergence(result: Result<(), Fault>) -> (&'static str, Dim3, Dim3) {
    match result {
        Err(Fault::Divergence {
            what,
            block,
            thread,
        }) => (what, block, thread),
        other => panic!("expected a divergence, got {other:?}"),
    }
}

#[test]
fn a_barrier_some_threads_skip_is_a_divergence() {
    let r = sim::run(
        &launch(4, 64),
        &|| {
            if thread::block_idx().x == 2 && thread::thread_idx().x >= 60 {
                return;
            }
            barrier::sync_threads();
        },
        2,
    );
    let (what, block, thread) = divergence(r);
    assert_eq!(
        (what, block, thread),
        ("barrier::sync_threads", d(2, 0, 0), d(0, 0, 0))
    );
    let shown = sim::run(
        &launch(1, 2),
        &|| {
            if thread::thread_idx().x == 0 {
                barrier::sync_threads();
            } else {
                barrier::sync_threads_count(true);
            }
        },
        1,
    )
    .unwrap_err()
    .to_string();
    assert!(
        shown.contains("`barrier::sync_threads` was reached by only part of its block"),
        "{shown}"
    );
}

#[test]
fn a_warp_collective_some_lanes_skip_is_a_divergence() {
    let r = sim::run(
        &launch(1, 64),
        &|| {
            if thread::thread_idx().x != 40 {
                collective::warp_reduce(1u32, u32::wrapping_add);
            }
        },
        1,
    );
    let (what, block, thread) = divergence(r);
    assert_eq!((what, block), ("collective::warp_reduce", d(0, 0, 0)));
    assert!((32..64).contains(&thread.x), "{thread:?}");
    // The full mask in a partial warp names lanes that do not exist.
    let r = sim::run(
        &launch(1, 40),
        // SAFETY: deliberately broken (lanes 8..32 of the second warp do not exist),
        // which the simulator reports instead of hanging.
        &|| unsafe {
            warp::ballot(FULL_MASK, true);
        },
        1,
    );
    assert_eq!(divergence(r).0, "warp::ballot");
}

#[test]
fn a_panic_stops_the_launch_with_its_location_thread_and_block() {
    let ran_after = AtomicU32::new(0);
    let line = line!() + 7;
    let r = sim::run(
        &launch(1000, 32),
        &|| {
            let b = thread::block_idx().x;
            let t = thread::thread_idx().x;
            if b == 3 && t == 17 {
                panic!("boom at {t}");
            }
            if b > 500 {
                ran_after.fetch_add(1, Relaxed);
            }
        },
        1,
    );
    let Err(Fault::Panic(record)) = r else {
        panic!("expected a panic, got {r:?}")
    };
    assert!(record.is_complete());
    assert_eq!(record.message(), "boom at 17");
    assert!(record.file().ends_with("tests/sim.rs"), "{}", record.file());
    assert_eq!((record.line, record.column), (line, 17));
    assert_eq!((record.thread, record.block), ([17, 0, 0], [3, 0, 0]));
    assert_eq!(
        ran_after.load(Relaxed),
        0,
        "the launch went on after the panic"
    );
    assert!(Fault::Panic(record)
        .to_string()
        .starts_with("kernel panicked at "));
}

#[test]
fn an_index_out_of_bounds_and_a_suspended_block_are_reported_and_unwound() {
    let x = [1u32; 10];
    let r = sim::run(
        &launch(2, 64),
        &|| {
            barrier::sync_threads();
            if thread::thread_idx().x == 33 {
                let _ = x[thread::thread_idx().x as usize];
            }
            barrier::sync_threads();
        },
        1,
    );
    let Err(Fault::Panic(record)) = r else {
        panic!("expected a panic, got {r:?}")
    };
    assert_eq!(
        record.message(),
        "index out of bounds: the len is 10 but the index is 33"
    );
    assert_eq!((record.thread, record.block), ([33, 0, 0], [0, 0, 0]));
    // Unchecked shared accessors are checked in the simulator.
    let r = sim::run(
        &launch(1, 1),
        // SAFETY: deliberately out of bounds, which the simulator checks.
        &|| unsafe {
            static_shared!(S: [u32; 4]).write(4, 1);
        },
        1,
    );
    let Err(Fault::Panic(record)) = r else {
        panic!("expected a panic, got {r:?}")
    };
    assert_eq!(
        record.message(),
        "shared array index out of bounds: the len is 4 but the index is 4"
    );
}

#[test]
fn device_functions_outside_a_launch_panic_clearly() {
    for f in [
        (|| {
            thread::thread_idx();
        }) as fn(),
        || barrier::sync_threads(),
        || {
            shared::DynamicShared::<u32>::get();
        },
        || {
            static_shared!(X: [u32; 1]);
        },
        || thread::sleep_ns(1),
        || {
            warp::active_mask();
        },
    ] {
        let e = std::panic::catch_unwind(f).unwrap_err();
        let msg = e.downcast_ref::<String>().unwrap();
        assert!(
            msg.contains("runs only inside a kernel launch (GPU or the xlog simulator)"),
            "{msg}"
        );
    }
}

/// The simulator's throughput on an elementwise body (`y[i] = a·x[i] + y[i]`), in
/// thread executions per second on one worker. Run with
/// `cargo test -p xlog-device --release --test sim -- --ignored --nocapture`.
#[test]
#[ignore = "a measurement: run in release with --nocapture"]
fn elementwise_throughput() {
    let n = 1 << 24;
    let x: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let y: Vec<AtomicU32> = (0..n).map(|_| AtomicU32::new(1.0f32.to_bits())).collect();
    let body = || {
        let i = thread::index_1d().get();
        if i < x.len() {
            let v = f32::from_bits(y[i].load(Relaxed));
            y[i].store((2.0 * x[i] + v).to_bits(), Relaxed);
        }
    };
    let l = launch((n / 256) as u32, 256);
    sim::run(&l, &body, 1).unwrap();
    let start = std::time::Instant::now();
    let rounds = 3;
    for _ in 0..rounds {
        sim::run(&l, &body, 1).unwrap();
    }
    let secs = start.elapsed().as_secs_f64();
    let rate = (rounds * n) as f64 / secs;
    println!("elementwise: {rate:.3e} thread executions/s on one worker ({n} threads x {rounds})");
    assert_eq!(f32::from_bits(y[10].load(Relaxed)), 1.0 + 4.0 * 2.0 * 10.0);
    // A body with one barrier per thread: every thread suspends once.
    let m = 1 << 20;
    let l = launch((m / 256) as u32, 256);
    let start = std::time::Instant::now();
    sim::run(&l, &|| barrier::sync_threads(), 1).unwrap();
    let rate = m as f64 / start.elapsed().as_secs_f64();
    println!("one barrier per thread: {rate:.3e} thread executions/s on one worker");
}

/// PTX `shfl.sync` uses only bits 4:0 of its lane operand (`bval[4:0] = b[4:0]` in
/// the ISA's pseudo-code): on the GPU a down-shuffle by 33 is one by 1, a butterfly
/// with 33 one with 1, an up-shuffle by 34 one by 2.
#[test]
fn shuffle_lane_operands_use_their_low_five_bits() {
    let v = per_thread(32, || {
        let x = 100 + thread::lane_id() as u64;
        // SAFETY: all 32 threads (one full warp) make every call with the full mask.
        unsafe {
            let down = warp::shuffle_down(FULL_MASK, x as u32, 33) as u64;
            let xor = warp::shuffle_xor(FULL_MASK, x as u32, 33) as u64;
            let up = warp::shuffle_up(FULL_MASK, x as u32, 34) as u64;
            down | xor << 16 | up << 32
        }
    });
    for (l, r) in v.into_iter().enumerate() {
        let l = l as u64;
        let down = if l + 1 < 32 { 100 + l + 1 } else { 100 + l };
        assert_eq!(r & 0xffff, down, "down by 33, lane {l}");
        assert_eq!(r >> 16 & 0xffff, 100 + (l ^ 1), "xor with 33, lane {l}");
        let up = if l >= 2 { 100 + l - 2 } else { 100 + l };
        assert_eq!(r >> 32, up, "up by 34, lane {l}");
    }
}

/// Safe code keeps a shared tile past its launch (in a thread-local of the calling
/// thread, which is one of the launch's workers) and reads it afterwards: the
/// worker's shared-memory arena has been freed by then, so without the tile's check
/// of its block the read would be a use-after-free of host memory. A GPU kernel
/// cannot smuggle a handle out of its launch; on the host `sim::run` and
/// `static_shared!` are safe to call from anywhere.
#[test]
fn a_shared_tile_kept_past_its_launch_is_refused() {
    use std::cell::RefCell;
    use xlog_device::shared::{Reading, Tile};
    std::thread_local! {
        static KEPT: RefCell<Option<Tile<u32, Reading>>> = const { RefCell::new(None) };
    }
    sim::run(
        &launch(1, 32),
        &|| {
            let mut t = static_shared!(KEEP: [u32; 32]).tile();
            t.set(thread::local_index(), 7);
            let t = t.sync();
            KEPT.with(|k| *k.borrow_mut() = Some(t));
        },
        1,
    )
    .unwrap();
    // Churn the heap so the freed arena is reused.
    let churn: Vec<Vec<u32>> = (0..64).map(|i| vec![i; 64]).collect();
    let read = std::panic::catch_unwind(|| KEPT.with(|k| k.borrow().as_ref().unwrap().get(0)));
    drop(churn);
    let message = read.expect_err("a tile of a finished launch was read");
    let message = message
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| message.downcast_ref::<&str>().copied());
    assert!(
        message.is_some_and(|m| m.contains("used outside the block that made it")),
        "{message:?}"
    );
}

/// A handle kept from one block and used by the next block of the same worker
/// would read the array the worker refilled for that block: every kind of handle
/// refuses it.
#[test]
fn a_shared_handle_kept_for_a_later_block_is_refused() {
    use std::cell::Cell;
    use xlog_device::exchange::SharedWords;
    use xlog_device::shared::DynamicShared;
    std::thread_local! {
        static WORDS: Cell<Option<SharedWords<u32>>> = const { Cell::new(None) };
        static DYNAMIC: Cell<Option<DynamicShared<u32>>> = const { Cell::new(None) };
    }
    let launch = Launch {
        dynamic_shared_bytes: 128,
        ..launch(2, 32)
    };
    let uses: [&(dyn Fn() + Sync); 3] = [
        &|| {
            std::hint::black_box(WORDS.get().unwrap().load(0));
        },
        &|| WORDS.get().unwrap().store(0, 1),
        &|| {
            // SAFETY: element 0 is in bounds, and block 0 wrote it in the same host
            // allocation; the check refuses the read before it happens.
            std::hint::black_box(unsafe { DYNAMIC.get().unwrap().read(0) });
        },
    ];
    for use_kept in uses {
        let fault = sim::run(
            &launch,
            &|| {
                if thread::block_idx().x == 0 {
                    let words = static_shared!(KEPT_WORDS: [u32; 32]).words();
                    words.store(thread::thread_idx().x as usize, 5);
                    WORDS.set(Some(words));
                    let dynamic = DynamicShared::<u32>::get();
                    // SAFETY: thread `t` writes element `t < 32` only.
                    unsafe { dynamic.write(thread::thread_idx().x as usize, 5) };
                    DYNAMIC.set(Some(dynamic));
                } else {
                    use_kept();
                }
            },
            1,
        )
        .expect_err("a handle of block 0 was used in block 1");
        match fault {
            Fault::Panic(record) => {
                assert!(
                    record
                        .to_string()
                        .contains("used outside the block that made it"),
                    "{record}"
                );
                assert_eq!(record.block, [1, 0, 0]);
            }
            other => panic!("{other}"),
        }
    }
}

/// Runs `body` over `launch` on one worker and asserts that it panics because a
/// witness reached a thread that did not make it (`what` says which misuse).
fn assert_refused_witness(launch: &Launch, body: &(dyn Fn() + Sync), what: &str) {
    match sim::run(launch, body, 1).expect_err(what) {
        Fault::Panic(record) => {
            let message = record.to_string();
            assert!(message.contains("did not make it"), "{what}: {message}");
        }
        other => panic!("{what}: not a panic: {other}"),
    }
}

/// The simulator runs a block's threads on one OS thread: a witness kept in a
/// `thread_local!` by one thread and taken by another would give both the same
/// elements (two `&mut` to one element). Every kind of witness refuses it.
#[test]
fn a_witness_kept_in_a_thread_local_is_refused() {
    use std::cell::Cell;
    use xlog_device::thread::{BlockIndex, LocalIndex, ThreadIndex};
    std::thread_local! {
        static INDEX: Cell<Option<ThreadIndex>> = const { Cell::new(None) };
        static LOCAL: Cell<Option<LocalIndex>> = const { Cell::new(None) };
        static LEADER: Cell<Option<BlockIndex>> = const { Cell::new(None) };
        static STRIDE: Cell<Option<ThreadIndex>> = const { Cell::new(None) };
    }
    type Keep = fn();
    type Take = fn() -> usize;
    let cases: [(Keep, Take); 4] = [
        (
            || INDEX.set(Some(thread::index_1d())),
            || INDEX.get().unwrap().get(),
        ),
        (
            || LOCAL.set(Some(thread::local_index())),
            || LOCAL.get().unwrap().get(),
        ),
        (
            || LEADER.set(thread::block_leader()),
            || LEADER.get().unwrap().get(),
        ),
        (
            || STRIDE.set(thread::grid_stride(64).next()),
            || STRIDE.get().unwrap().get(),
        ),
    ];
    for (keep, take) in cases {
        assert_refused_witness(
            &launch(1, 32),
            &|| {
                if thread::thread_idx().x == 0 {
                    keep();
                    // Its maker may use it.
                    std::hint::black_box(take());
                }
                barrier::sync_threads();
                if thread::thread_idx().x == 1 {
                    std::hint::black_box(take());
                }
            },
            "thread 1 used thread 0's witness",
        );
    }
}

/// A witness kept on the worker's OS thread from one launch and used in the next
/// (by the thread with the same index) would race with its real owner, which may
/// run on another worker: refused.
#[test]
fn a_witness_kept_from_an_earlier_launch_is_refused() {
    use std::cell::Cell;
    use xlog_device::thread::ThreadIndex;
    std::thread_local! {
        static KEPT: Cell<Option<ThreadIndex>> = const { Cell::new(None) };
    }
    let keep = || {
        if thread::thread_idx().x == 0 {
            KEPT.set(Some(thread::index_1d()));
        }
    };
    sim::run(&launch(1, 32), &keep, 1).unwrap();
    assert_refused_witness(
        &launch(1, 32),
        &|| {
            if thread::thread_idx().x == 0 {
                std::hint::black_box(KEPT.get().unwrap().get());
            }
        },
        "a witness of an earlier launch was used",
    );
}

/// A transpose tile names its block's output elements; kept in a `thread_local!`
/// and used by a thread of a later block, it would hand that thread witnesses for
/// the first block's elements: refused when it hands out its loads or stores.
#[test]
fn a_transpose_tile_kept_for_another_block_is_refused() {
    use std::cell::RefCell;
    use xlog_device::transpose::{TransposeOut, TransposeTile};
    std::thread_local! {
        static KEPT: RefCell<Option<TransposeTile<4>>> = const { RefCell::new(None) };
    }
    let mut data = vec![0u32; 32];
    let at = data.as_mut_ptr() as usize;
    assert_refused_witness(
        &launch(2, 16),
        &|| {
            // SAFETY: `data` (4 rows of 8) outlives the launch and nothing else
            // touches it; every thread passes the same pointer, length and rows.
            let out = unsafe { TransposeOut::<u32, 4>::__from_raw_parts(at as *mut u32, 32, 4) };
            let first = thread::thread_idx().x == 0;
            if thread::block_idx().x == 0 && first {
                KEPT.with(|k| *k.borrow_mut() = out.tile());
            } else if first {
                // One worker: block 1 runs after block 0, on the same OS thread.
                KEPT.with(|k| std::hint::black_box(k.borrow().as_ref().unwrap().stores().count()));
            }
        },
        "block 1 used block 0's transpose tile",
    );
    drop(data);
}

/// A panic payload whose own `Drop` panics (raised with `panic_any`): the thread's
/// coroutine must not let that second panic unwind past the scheduler, which has
/// the block's other threads suspended at a barrier, pointing into the block. The
/// launch ends with the thread's fault, and every other thread unwinds while its
/// block is alive (each reads the block through `warp::active_mask()` as it does).
#[test]
fn a_payload_that_panics_when_dropped_ends_the_launch_as_a_fault() {
    struct Bomb;
    impl Drop for Bomb {
        fn drop(&mut self) {
            panic!("the payload's drop panics");
        }
    }
    struct Unwinding<'a>(&'a Mutex<Vec<u32>>);
    impl Drop for Unwinding<'_> {
        fn drop(&mut self) {
            if std::thread::panicking() {
                self.0.lock().unwrap().push(warp::active_mask());
            }
        }
    }
    let masks = Mutex::new(Vec::new());
    let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        sim::run(
            &launch(1, 64),
            &|| {
                let _guard = Unwinding(&masks);
                if thread::block_thread_index() == 63 {
                    std::panic::panic_any(Bomb);
                }
                barrier::sync_threads();
            },
            1,
        )
    }));
    assert!(
        matches!(run, Ok(Err(Fault::Panic(_)))),
        "the launch did not end with the thread's fault"
    );
    let masks = masks.into_inner().unwrap();
    // The panicking thread and the 63 waiting at the barrier, each once, each
    // reading its whole warp's mask from the live block.
    assert_eq!(masks.len(), 64, "{masks:x?}");
    assert!(
        masks.iter().all(|&m| m == FULL_MASK),
        "a thread read another mask while unwinding: {masks:x?}"
    );
}

/// A suspended thread of a faulting launch catches the simulator's unwinding (its
/// private abort payload) and keeps it; a thread of a later launch raises it again.
/// The launch must not take that for "another block faulted" and succeed with the
/// rest of the block never run: it ends with a fault of the raising thread.
#[test]
fn an_abort_payload_kept_from_another_launch_is_a_fault() {
    static KEPT: Mutex<Option<Box<dyn std::any::Any + Send>>> = Mutex::new(None);
    let first = sim::run(
        &launch(1, 2),
        &|| {
            if thread::block_thread_index() == 0 {
                // Waits at the barrier until thread 1's panic unwinds it.
                if let Err(p) = catch_unwind(AssertUnwindSafe(barrier::sync_threads)) {
                    *KEPT.lock().unwrap() = Some(p);
                }
            } else {
                panic!("a fault that aborts the block");
            }
        },
        1,
    );
    assert!(matches!(first, Err(Fault::Panic(_))), "{first:?}");
    assert!(KEPT.lock().unwrap().is_some(), "no payload was caught");
    let ran = AtomicU32::new(0);
    let r = sim::run(
        &launch(4, 64),
        &|| {
            if thread::block_index() == 1 && thread::block_thread_index() == 0 {
                if let Some(p) = KEPT.lock().unwrap().take() {
                    resume_unwind(p);
                }
            }
            ran.fetch_add(1, Relaxed);
        },
        1,
    );
    let Err(Fault::Panic(record)) = r else {
        panic!(
            "expected the raising thread's fault, got {r:?} with {} of 256 threads run",
            ran.load(Relaxed)
        )
    };
    assert!(
        record.message().contains("abort signal"),
        "{}",
        record.message()
    );
    assert_eq!((record.thread, record.block), ([0, 0, 0], [1, 0, 0]));
}

/// The last thread to reach a block collective runs its operator for the block; a
/// kernel that catches the operator's panic leaves the other threads waiting there.
/// The launch must stop with a divergence naming the collective and a waiting
/// thread, not with a panic of the scheduler.
#[test]
fn a_caught_panic_in_a_collective_operator_is_a_divergence() {
    for workers in [1, 2] {
        let r = catch_unwind(AssertUnwindSafe(|| {
            sim::run(
                &launch(2, 64),
                &|| {
                    let _ = catch_unwind(AssertUnwindSafe(|| {
                        collective::block_reduce(1u32, |a, b| {
                            if thread::block_thread_index() == 63 {
                                panic!("the operator panics in the finishing thread");
                            }
                            a + b
                        })
                    }));
                },
                workers,
            )
        }));
        let r = r.unwrap_or_else(|_| panic!("the simulator panicked ({workers} workers)"));
        let (what, _, thread) = divergence(r);
        assert_eq!((what, thread), ("collective::block_reduce", d(0, 0, 0)));
    }
}

/// The finishing thread catches its operator's panic and reaches the collective
/// again while the rest of its block still waits in the first one: it waits for
/// ever too (the collective neither runs a second round nor releases the others
/// with it), so the launch stops with a divergence.
#[test]
fn a_collective_reached_again_after_its_operator_panicked_is_a_divergence() {
    let panicked = AtomicU32::new(0);
    let r = sim::run(
        &launch(1, 64),
        &|| {
            let sum = || {
                collective::block_reduce(1u32, |a, b| {
                    if thread::block_thread_index() == 63 && panicked.fetch_add(1, Relaxed) == 0 {
                        panic!("the operator panics once");
                    }
                    a + b
                })
            };
            if catch_unwind(AssertUnwindSafe(sum)).is_err() {
                sum();
            }
        },
        1,
    );
    assert_eq!(divergence(r).0, "collective::block_reduce");
}
