//! Reliability suite (opt-in: `--features gpu-tests`; fails without a device).
//!
//! - `stress`: random multi-stream programs (16 streams, 64 buffer slots of random
//!   sizes, kernels with random read / write / read-write sets, copies, uploads,
//!   fills, frees and re-allocations, writes to the two halves of one buffer from two
//!   threads at once) issued concurrently from several host threads — every
//!   operation waits only for earlier ones that touch the same buffer, one of them
//!   writing — run through xlog and checked word for word against a program-order
//!   CPU model. Reproducible by seed; a
//!   failing seed is shrunk and the minimal failing program printed.
//! - `stress_has_teeth`: the same with fencing switched off must report mismatches.
//! - `detector_reports_every_unfenced_pair` (simulator only): with fencing off and
//!   one host thread, the hazard detector reports exactly the conflicting,
//!   unordered access pairs a CPU model of the program predicts.
//! - `stress_through_the_caching_pool`: the same programs on a runtime with the
//!   caching pool, whose freed blocks come back on other streams behind a wait;
//!   `the_pool_stress_has_teeth`: with fencing off, mismatches again.
//!   `stress` itself runs on the default stack, without the pool unless
//!   `XLOG_POOL=1` puts it on.
//! - `stress_peak_memory_with_the_pool_against_without`: the same programs with the
//!   pool and without; prints both peaks of device memory and their ratio.
//! - `sixteen_threads_share_a_budgeted_runtime` (with the pool and without),
//!   `injected_faults_leave_the_runtime_usable`.
//!
//! Scale with XLOG_STRESS_SEEDS, XLOG_STRESS_OPS, XLOG_STRESS_THREADS.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, RwLock};

use xlog::{AllocTag, DeviceBuffer, Error, LaunchConfig, Runtime, Stream};
use xlog_runtime::testing::{self, Site};
use xlog_stress::{at, mix, mix_rw, mix_w};
use xlog_test_support::{gpu_runtime, Rng};

/// Tests here flip process-wide switches: they run one at a time.
fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|p| p.into_inner())
}

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// `len` words of upload data: the low 32 bits of `Rng::new(seed)`'s values.
fn host_data(seed: u64, len: usize) -> Vec<u32> {
    let mut r = Rng::new(seed);
    (0..len).map(|_| r.next_u64() as u32).collect()
}

#[derive(Clone, Debug)]
enum Op {
    Alloc {
        slot: usize,
        len: usize,
        stream: usize,
        upload_seed: Option<u64>,
    },
    Free {
        slot: usize,
    },
    Kernel {
        rw: bool,
        a: usize,
        b: usize,
        out: usize,
        salt: u32,
        spin_ns: u32,
        stream: usize,
    },
    /// Two host threads at once, each launching on its own half of `out`
    /// (`split_at_mut`) on its own stream: concurrent commits to one buffer.
    Halves {
        a: usize,
        out: usize,
        salt: u32,
        streams: (usize, usize),
    },
    Copy {
        src: usize,
        dst: usize,
        stream: usize,
    },
    Upload {
        slot: usize,
        off: usize,
        len: usize,
        seed: u64,
        stream: usize,
    },
    Fill {
        slot: usize,
        off: usize,
        len: usize,
        value: u32,
        stream: usize,
    },
    Download {
        slot: usize,
        stream: usize,
    },
}

struct Shape {
    streams: usize,
    slots: usize,
    max_len: usize,
    slow_percent: u64,
}

const SHAPE: Shape = Shape {
    streams: 16,
    slots: 64,
    max_len: 4096,
    slow_percent: 5,
};

fn generate(seed: u64, ops: usize, shape: &Shape) -> Vec<Op> {
    let mut r = Rng::new(seed);
    let mut prog = Vec::with_capacity(ops + shape.slots);
    for slot in 0..shape.slots {
        let len = if r.chance(3) {
            0
        } else {
            1 + r.below(shape.max_len)
        };
        prog.push(Op::Alloc {
            slot,
            len,
            stream: r.below(shape.streams),
            upload_seed: Some(r.next_u64()),
        });
    }
    for _ in 0..ops {
        let stream = r.below(shape.streams);
        let slot = r.below(shape.slots);
        let op = match r.below(100) {
            0..=3 => Op::Alloc {
                slot,
                len: if r.chance(5) {
                    0
                } else {
                    1 + r.below(shape.max_len)
                },
                stream,
                upload_seed: if r.chance(50) {
                    Some(r.next_u64())
                } else {
                    None
                },
            },
            4..=6 => Op::Free { slot },
            7..=64 => {
                let (a, b) = (r.below(shape.slots), r.below(shape.slots));
                let spin_ns = if r.chance(shape.slow_percent) {
                    20_000 + r.below(200_000) as u32
                } else {
                    0
                };
                Op::Kernel {
                    rw: r.chance(50),
                    a,
                    b,
                    out: slot,
                    salt: r.next_u64() as u32,
                    spin_ns,
                    stream,
                }
            }
            65..=69 => Op::Halves {
                a: r.below(shape.slots),
                out: slot,
                salt: r.next_u64() as u32,
                streams: (stream, r.below(shape.streams)),
            },
            70..=79 => Op::Copy {
                src: r.below(shape.slots),
                dst: slot,
                stream,
            },
            80..=87 => {
                let (off, len) = (r.below(shape.max_len), 1 + r.below(256));
                Op::Upload {
                    slot,
                    off,
                    len,
                    seed: r.next_u64(),
                    stream,
                }
            }
            88..=96 => {
                let (off, len) = (r.below(shape.max_len), 1 + r.below(shape.max_len));
                Op::Fill {
                    slot,
                    off,
                    len,
                    value: r.next_u64() as u32,
                    stream,
                }
            }
            _ => Op::Download { slot, stream },
        };
        prog.push(op);
    }
    prog
}

/// Fields are read through `Debug` in failure reports.
#[derive(Debug)]
#[allow(dead_code)]
struct Mismatch {
    op: usize,
    slot: usize,
    index: usize,
    got: u32,
    want: u32,
}

/// Clamp a view `[off, off+len)` to a buffer of `n` elements.
fn clamp(off: usize, len: usize, n: usize) -> (usize, usize) {
    let start = off.min(n);
    (start, len.min(n - start))
}

struct Outcome {
    mismatches: Vec<Mismatch>,
    checked_words: usize,
}

impl Op {
    /// The slots an operation touches, and whether it writes each.
    fn slots(&self) -> Vec<(usize, bool)> {
        match *self {
            Op::Alloc { slot, .. } | Op::Free { slot } => vec![(slot, true)],
            Op::Kernel { a, b, out, .. } => vec![(a, false), (b, false), (out, true)],
            Op::Halves { a, out, .. } => vec![(a, false), (out, true)],
            Op::Copy { src, dst, .. } => vec![(src, false), (dst, true)],
            Op::Upload { slot, .. } | Op::Fill { slot, .. } => vec![(slot, true)],
            Op::Download { slot, .. } => vec![(slot, false)],
        }
    }
}

/// The CPU model, run once in program order: which operations take effect and what
/// each download (and the end state) must see.
struct Expected {
    effective: Vec<bool>,
    downloads: Vec<Option<Vec<u32>>>,
    end: Vec<Option<Vec<u32>>>,
}

fn model(prog: &[Op], slots: usize) -> Expected {
    let mut m: Vec<Option<Vec<u32>>> = vec![None; slots];
    let mut effective = vec![true; prog.len()];
    let mut downloads = vec![None; prog.len()];
    let mix_into = |out: &mut [u32], a: &[u32], b: &[u32], salt: u32, rw: bool| {
        for (idx, v) in out.iter_mut().enumerate() {
            let x = mix(at(a, idx), at(b, idx), salt);
            *v = if rw { x ^ v.rotate_left(5) } else { x };
        }
    };
    for (i, op) in prog.iter().enumerate() {
        match *op {
            Op::Alloc {
                slot,
                len,
                upload_seed,
                ..
            } => {
                m[slot] = Some(match upload_seed {
                    Some(seed) => host_data(seed, len),
                    None => vec![0; len],
                })
            }
            Op::Free { slot } => m[slot] = None,
            Op::Kernel {
                rw,
                a,
                b,
                out,
                salt,
                ..
            } => {
                let ok = out != a
                    && out != b
                    && m[a].is_some()
                    && m[b].is_some()
                    && m[out].as_ref().is_some_and(|o| !o.is_empty());
                effective[i] = ok;
                if ok {
                    let (ma, mb) = (m[a].clone().unwrap(), m[b].clone().unwrap());
                    mix_into(m[out].as_mut().unwrap(), &ma, &mb, salt, rw);
                }
            }
            Op::Halves { a, out, salt, .. } => {
                let ok =
                    out != a && m[a].is_some() && m[out].as_ref().is_some_and(|o| o.len() >= 2);
                effective[i] = ok;
                if ok {
                    let ma = m[a].clone().unwrap();
                    let o = m[out].as_mut().unwrap();
                    let mid = o.len() / 2;
                    let (l, r) = o.split_at_mut(mid);
                    mix_into(l, &ma, &[], salt, false);
                    mix_into(r, &ma, &[], salt ^ 1, false);
                }
            }
            Op::Copy { src, dst, .. } => {
                let ok = src != dst && m[src].is_some() && m[dst].is_some();
                effective[i] = ok;
                if ok {
                    let n = m[src]
                        .as_ref()
                        .unwrap()
                        .len()
                        .min(m[dst].as_ref().unwrap().len());
                    let from = m[src].as_ref().unwrap()[..n].to_vec();
                    m[dst].as_mut().unwrap()[..n].copy_from_slice(&from);
                }
            }
            Op::Upload {
                slot,
                off,
                len,
                seed,
                ..
            } => {
                effective[i] = m[slot].is_some();
                if let Some(buf) = m[slot].as_mut() {
                    let (start, n) = clamp(off, len, buf.len());
                    buf[start..start + n].copy_from_slice(&host_data(seed, n));
                }
            }
            Op::Fill {
                slot,
                off,
                len,
                value,
                ..
            } => {
                effective[i] = m[slot].is_some();
                if let Some(buf) = m[slot].as_mut() {
                    let (start, n) = clamp(off, len, buf.len());
                    buf[start..start + n].fill(value);
                }
            }
            Op::Download { slot, .. } => {
                effective[i] = m[slot].is_some();
                downloads[i] = m[slot].clone();
            }
        }
    }
    Expected {
        effective,
        downloads,
        end: m,
    }
}

/// Run `prog` on the GPU through xlog from `threads` host threads. Each operation
/// belongs to a random thread and starts once every earlier operation it conflicts
/// with (same slot, one of them writing) has finished, so independent operations —
/// and reads of one buffer — are issued concurrently, and the outcome still equals
/// the program-order CPU model. Every download is compared with that model.
fn execute(rt: &Runtime, streams: &[Stream], prog: &[Op], threads: usize, seed: u64) -> Outcome {
    let slots = prog
        .iter()
        .flat_map(|o| o.slots())
        .map(|(s, _)| s + 1)
        .max()
        .unwrap_or(0)
        .max(SHAPE.slots);
    let want = model(prog, slots);
    let gpu: Vec<RwLock<Option<DeviceBuffer<u32>>>> =
        (0..slots).map(|_| RwLock::new(None)).collect();
    // Predecessors: the last earlier writer of each slot, and for a writer every
    // reader since that writer.
    let mut preds: Vec<Vec<usize>> = vec![Vec::new(); prog.len()];
    let mut last_write: Vec<Option<usize>> = vec![None; slots];
    let mut reads_since: Vec<Vec<usize>> = vec![Vec::new(); slots];
    for (i, op) in prog.iter().enumerate() {
        for (slot, writes) in op.slots() {
            preds[i].extend(last_write[slot]);
            if writes {
                preds[i].append(&mut reads_since[slot]);
                last_write[slot] = Some(i);
            } else {
                reads_since[slot].push(i);
            }
        }
        preds[i].sort_unstable();
        preds[i].dedup();
        preds[i].retain(|&p| p != i);
    }
    let done: Vec<AtomicBool> = prog.iter().map(|_| AtomicBool::new(false)).collect();
    let mismatches = Mutex::new(Vec::new());
    let checked = AtomicUsize::new(0);
    let mut owner = Rng::new(seed ^ 0xA5A5);
    let owners: Vec<usize> = prog.iter().map(|_| owner.below(threads)).collect();

    let compare = |op: usize, slot: usize, got: &[u32], want: &[u32]| {
        checked.fetch_add(want.len(), Ordering::Relaxed);
        if got.len() != want.len() {
            mismatches.lock().unwrap().push(Mismatch {
                op,
                slot,
                index: usize::MAX,
                got: got.len() as u32,
                want: want.len() as u32,
            });
        } else if let Some(i) = (0..got.len()).find(|&i| got[i] != want[i]) {
            mismatches.lock().unwrap().push(Mismatch {
                op,
                slot,
                index: i,
                got: got[i],
                want: want[i],
            });
        }
    };
    let read = |slot: usize| gpu[slot].read().unwrap_or_else(|p| p.into_inner());
    let write = |slot: usize| gpu[slot].write().unwrap_or_else(|p| p.into_inner());

    let step = |i: usize| {
        if !want.effective[i] {
            return;
        }
        match prog[i] {
            Op::Alloc {
                slot,
                len,
                stream,
                upload_seed,
            } => {
                let mut g = write(slot);
                *g = None; // free first, in stream order
                let s = &streams[stream];
                *g = Some(match upload_seed {
                    Some(seed) => rt.upload_on(s, &host_data(seed, len)).unwrap(),
                    None => rt.alloc_zeroed_on::<u32>(s, len).unwrap(),
                });
            }
            Op::Free { slot } => *write(slot) = None,
            Op::Kernel {
                rw,
                a,
                b,
                out,
                salt,
                spin_ns,
                stream,
            } => {
                // Locks in slot order; `a == b` is one read lock.
                let ga = read(a);
                let gb = if b == a { None } else { Some(read(b)) };
                let mut o = write(out);
                let (ga, o) = (ga.as_ref().unwrap(), o.as_mut().unwrap());
                let gb = gb.as_ref().map(|g| g.as_ref().unwrap()).unwrap_or(ga);
                let (s, cfg) = (&streams[stream], LaunchConfig::for_len(o.len()));
                if rw {
                    mix_rw::launch(s, cfg, ga, gb, o, salt, spin_ns).unwrap();
                } else {
                    mix_w::launch(s, cfg, ga, gb, o, salt, spin_ns).unwrap();
                }
            }
            Op::Halves {
                a,
                out,
                salt,
                streams: (s1, s2),
            } => {
                let ga = read(a);
                let mut o = write(out);
                let (ga, o) = (ga.as_ref().unwrap(), o.as_mut().unwrap());
                let rt_empty = rt.upload_on::<u32>(&streams[s1], &[]).unwrap();
                let mid = o.len() / 2;
                let (mut l, mut r) = o.slice_mut(..).split_at_mut(mid);
                let empty = &rt_empty;
                std::thread::scope(|sc| {
                    sc.spawn(|| {
                        mix_w::launch(
                            &streams[s1],
                            LaunchConfig::for_len(l.len()),
                            ga,
                            empty,
                            &mut l,
                            salt,
                            20_000,
                        )
                        .unwrap()
                    });
                    sc.spawn(|| {
                        mix_w::launch(
                            &streams[s2],
                            LaunchConfig::for_len(r.len()),
                            ga,
                            empty,
                            &mut r,
                            salt ^ 1,
                            0,
                        )
                        .unwrap()
                    });
                });
            }
            Op::Copy { src, dst, stream } => {
                let gs = read(src);
                let mut gd = write(dst);
                let (gs, gd) = (gs.as_ref().unwrap(), gd.as_mut().unwrap());
                let n = gs.len().min(gd.len());
                gd.slice_mut(0..n)
                    .copy_from(&streams[stream], &gs.slice(0..n))
                    .unwrap();
            }
            Op::Upload {
                slot,
                off,
                len,
                seed,
                stream,
            } => {
                let mut g = write(slot);
                let buf = g.as_mut().unwrap();
                let (start, n) = clamp(off, len, buf.len());
                buf.slice_mut(start..start + n)
                    .copy_from_host(&streams[stream], &host_data(seed, n))
                    .unwrap();
            }
            Op::Fill {
                slot,
                off,
                len,
                value,
                stream,
            } => {
                let mut g = write(slot);
                let buf = g.as_mut().unwrap();
                let (start, n) = clamp(off, len, buf.len());
                buf.slice_mut(start..start + n)
                    .fill(&streams[stream], value)
                    .unwrap();
            }
            Op::Download { slot, stream } => {
                let got = read(slot)
                    .as_ref()
                    .unwrap()
                    .download(&streams[stream])
                    .unwrap();
                compare(i, slot, &got, want.downloads[i].as_ref().unwrap());
            }
        }
    };

    std::thread::scope(|sc| {
        for t in 0..threads {
            let (owners, done, preds, step) = (&owners, &done, &preds, &step);
            sc.spawn(move || {
                for i in (0..prog.len()).filter(|&i| owners[i] == t) {
                    for &p in &preds[i] {
                        while !done[p].load(Ordering::Acquire) {
                            std::thread::yield_now();
                        }
                    }
                    step(i);
                    done[i].store(true, Ordering::Release);
                }
            });
        }
    });

    // Final check of every live buffer, each downloaded on a random stream.
    let mut r = Rng::new(seed ^ 0x5A5A);
    for slot in 0..slots {
        let g = read(slot);
        if let (Some(buf), Some(w)) = (g.as_ref(), &want.end[slot]) {
            let got = buf.download(&streams[r.below(streams.len())]).unwrap();
            compare(prog.len(), slot, &got, w);
        }
    }
    drop(gpu);
    Outcome {
        mismatches: mismatches.into_inner().unwrap(),
        checked_words: checked.into_inner(),
    }
}

/// Shrink a failing program: cut everything after the first mismatch, then drop
/// chunks of operations while the program still fails. Bounded by `budget` runs.
fn shrink(
    rt: &Runtime,
    streams: &[Stream],
    mut prog: Vec<Op>,
    first_bad: usize,
    mut budget: usize,
) -> Vec<Op> {
    prog.truncate((first_bad + 1).min(prog.len()));
    prog.push(Op::Download { slot: 0, stream: 0 });
    let fails = |p: &[Op]| !execute(rt, streams, p, 1, 7).mismatches.is_empty();
    let mut chunk = prog.len() / 2;
    while chunk >= 1 && budget > 0 {
        let mut i = 0;
        while i < prog.len() && budget > 0 {
            let mut candidate = prog.clone();
            candidate.drain(i..(i + chunk).min(candidate.len()));
            budget -= 1;
            if !candidate.is_empty() && fails(&candidate) {
                prog = candidate;
            } else {
                i += chunk;
            }
        }
        chunk /= 2;
    }
    prog
}

struct Totals {
    ops: usize,
    words: usize,
    mismatches: usize,
}

fn run_seeds(
    rt: &Runtime,
    seeds: std::ops::Range<u64>,
    ops: usize,
    threads: usize,
    shape: &Shape,
    report: bool,
) -> Totals {
    let streams: Vec<Stream> = (0..shape.streams)
        .map(|_| rt.new_stream().unwrap())
        .collect();
    let mut t = Totals {
        ops: 0,
        words: 0,
        mismatches: 0,
    };
    for seed in seeds {
        let prog = generate(seed, ops, shape);
        let out = execute(rt, &streams, &prog, threads, seed);
        t.ops += prog.len();
        t.words += out.checked_words;
        t.mismatches += out.mismatches.len();
        if report && !out.mismatches.is_empty() {
            let first = out.mismatches.iter().map(|m| m.op).min().unwrap();
            eprintln!(
                "seed {seed}: {} mismatches, first {:?}",
                out.mismatches.len(),
                out.mismatches[0]
            );
            let minimal = shrink(rt, &streams, prog, first, 300);
            eprintln!(
                "seed {seed}: minimal failing program ({} ops):",
                minimal.len()
            );
            for (i, op) in minimal.iter().enumerate() {
                eprintln!("  {i:4}: {op:?}");
            }
        }
    }
    rt.reap().unwrap();
    t
}

#[test]
fn stress() {
    let _g = serial();
    let rt = gpu_runtime();
    let (seeds, ops, threads) = (
        env("XLOG_STRESS_SEEDS", 4) as u64,
        env("XLOG_STRESS_OPS", 5_000),
        env("XLOG_STRESS_THREADS", 4),
    );
    let t0 = std::time::Instant::now();
    let t = run_seeds(&rt, 0..seeds, ops, threads, &SHAPE, true);
    println!(
        "stress: seeds={seeds} ops={} streams={} slots={} threads={threads} words_compared={} mismatches={} in {:.1}s",
        t.ops,
        SHAPE.streams,
        SHAPE.slots,
        t.words,
        t.mismatches,
        t0.elapsed().as_secs_f64()
    );
    println!(
        "stress: peak device memory {} bytes held from the driver by {}",
        rt.stats().map_or(0, |st| st.peak_bytes),
        rt.describe_resource()
    );
    let hazards = xlog_runtime::sim::take_hazards();
    assert!(
        hazards.is_empty(),
        "the simulator's detector found {} hazards in the fenced stress; first: {}",
        hazards.len(),
        hazards[0]
    );
    assert_eq!(
        t.mismatches, 0,
        "the fenced stress saw hazards (seeds printed above)"
    );
    assert_eq!(rt.drop_errors(), 0);
}

/// A runtime of device 0 with the caching pool or without, on the backend
/// `XLOG_BACKEND` names.
fn runtime_with(caching: bool) -> Runtime {
    let _ = gpu_runtime();
    let backend = match std::env::var("XLOG_BACKEND").as_deref() {
        Ok("direct") => xlog_runtime::Backend::Direct,
        _ => xlog_runtime::Backend::Async,
    };
    Runtime::builder(0)
        .backend(backend)
        .caching(caching)
        .build()
        .unwrap_or_else(|e| panic!("the GPU suite was requested but device 0 cannot be used: {e}"))
}

fn pool_runtime() -> Runtime {
    runtime_with(true)
}

/// Peak device memory (held from the driver) of the same stress programs with
/// the caching pool and without: the pool's cache costs at most half as much
/// again. Both runs must match the CPU model.
#[test]
fn stress_peak_memory_with_the_pool_against_without() {
    let _g = serial();
    let (seeds, ops, threads) = (
        env("XLOG_STRESS_SEEDS", 4) as u64,
        env("XLOG_STRESS_OPS", 5_000),
        env("XLOG_STRESS_THREADS", 4),
    );
    let mut peaks = [0usize; 2];
    for (i, caching) in [false, true].into_iter().enumerate() {
        let rt = runtime_with(caching);
        let _ = xlog_runtime::sim::take_hazards();
        let t = run_seeds(&rt, 200..200 + seeds, ops, threads, &SHAPE, true);
        assert_eq!(t.mismatches, 0, "{} saw hazards", rt.describe_resource());
        assert!(xlog_runtime::sim::take_hazards().is_empty());
        peaks[i] = rt.stats().map_or(0, |st| st.peak_bytes);
    }
    let ratio = peaks[1] as f64 / peaks[0] as f64;
    println!(
        "stress peak: {} bytes with the pool, {} without ({ratio:.3}x), seeds={seeds} ops={ops} threads={threads}",
        peaks[1], peaks[0]
    );
    assert!(
        peaks[0] > 0 && ratio <= 1.5,
        "the pool's peak is {ratio:.3}x the plain stack's"
    );
}

#[test]
fn stress_through_the_caching_pool() {
    let _g = serial();
    let rt = pool_runtime();
    // Reports left by a teeth test that ran before are not this test's.
    let _ = xlog_runtime::sim::take_hazards();
    let (seeds, ops, threads) = (
        env("XLOG_STRESS_SEEDS", 4) as u64,
        env("XLOG_STRESS_OPS", 5_000),
        env("XLOG_STRESS_THREADS", 4),
    );
    let t = run_seeds(&rt, 0..seeds, ops, threads, &SHAPE, true);
    println!(
        "stress: peak device memory {} bytes held from the driver by {}",
        rt.stats().map_or(0, |st| st.peak_bytes),
        rt.describe_resource()
    );
    let st = rt.pool_stats().unwrap();
    println!(
        "stress through the pool: ops={} words_compared={} mismatches={} {st:?}",
        t.ops, t.words, t.mismatches
    );
    let hazards = xlog_runtime::sim::take_hazards();
    assert!(
        hazards.is_empty(),
        "the simulator's detector found {} hazards in the pooled stress; first: {}",
        hazards.len(),
        hazards[0]
    );
    assert_eq!(
        t.mismatches, 0,
        "the pooled stress saw hazards (seeds printed above)"
    );
    assert!(st.waits > 0, "no block was reused across streams: {st:?}");
    assert!(st.hits > 0, "no block was reused on its stream: {st:?}");
    assert_eq!(rt.drop_errors(), 0);
}

#[test]
fn the_pool_stress_has_teeth() {
    let _g = serial();
    let rt = pool_runtime();
    let _restore = RestoreFencing;
    // SAFETY: this test exists to observe the races fencing prevents, on plain
    // integers it only compares; `serial()` keeps every other test out meanwhile.
    unsafe { testing::set_fencing(false) };
    let shape = Shape {
        slow_percent: 40,
        ..SHAPE
    };
    let t = run_seeds(&rt, 1100..1103, 1_500, 2, &shape, false);
    // SAFETY: turning fencing back on promises nothing.
    unsafe { testing::set_fencing(true) };
    rt.synchronize().unwrap();
    let _ = xlog_runtime::sim::take_hazards();
    assert!(
        t.mismatches > 0,
        "with fencing disabled the pooled stress must observe hazards; it saw none"
    );
}

/// Turns fencing back on when dropped, also when the test fails with it off.
struct RestoreFencing;

impl Drop for RestoreFencing {
    fn drop(&mut self) {
        // SAFETY: turning fencing back on promises nothing.
        unsafe { testing::set_fencing(true) };
    }
}

/// What the simulator's hazard detector must report for `prog` issued by one host
/// thread with fencing off: every pair of accesses to overlapping bytes of one
/// buffer, at least one writing, on two streams, unless a download (a host wait)
/// on the earlier access's stream came between them. Mirrors what each operation
/// enqueues: an allocation and its upload or zeroing on its stream, a free on the
/// allocation stream, nothing for zero bytes, the final check and the frees at the
/// end of `execute`.
fn unfenced_pairs(prog: &[Op], streams: usize, seed: u64) -> usize {
    struct Past {
        bytes: std::ops::Range<usize>,
        write: bool,
        stream: usize,
        tick: u64,
    }
    struct Buf {
        len: usize,
        stream: usize,
        history: Vec<Past>,
    }
    struct Sim {
        bufs: Vec<Option<Buf>>,
        ticks: Vec<u64>,
        host: Vec<u64>,
        pairs: usize,
    }
    impl Sim {
        /// One operation on `stream` touching `(slot, word range, writes)`.
        fn op(&mut self, stream: usize, touches: &[(usize, std::ops::Range<usize>, bool)]) {
            self.ticks[stream] += 1;
            let tick = self.ticks[stream];
            for (slot, words, write) in touches.iter().cloned() {
                let bytes = words.start * 4..words.end * 4;
                if bytes.is_empty() {
                    continue;
                }
                let buf = self.bufs[slot].as_mut().unwrap();
                self.pairs += buf
                    .history
                    .iter()
                    .filter(|p| {
                        (p.write || write)
                            && p.bytes.start < bytes.end
                            && bytes.start < p.bytes.end
                            && p.stream != stream
                            && self.host[p.stream] < p.tick
                    })
                    .count();
                buf.history.push(Past {
                    bytes,
                    write,
                    stream,
                    tick,
                });
            }
        }
        fn len(&self, slot: usize) -> usize {
            self.bufs[slot].as_ref().map_or(0, |b| b.len)
        }
        fn free(&mut self, slot: usize) {
            if let Some(b) = &self.bufs[slot] {
                let (stream, len) = (b.stream, b.len);
                self.op(stream, &[(slot, 0..len, true)]);
            }
            self.bufs[slot] = None;
        }
        fn download(&mut self, slot: usize, stream: usize) {
            let len = self.len(slot);
            if len > 0 {
                self.op(stream, &[(slot, 0..len, false)]);
                self.synchronised(stream);
            }
        }
        /// The host waited for everything queued on `stream` (a download or an
        /// upload returns once its copy has run).
        fn synchronised(&mut self, stream: usize) {
            self.host[stream] = self.ticks[stream];
        }
    }
    let slots = SHAPE.slots;
    let want = model(prog, slots);
    let mut m = Sim {
        bufs: (0..slots).map(|_| None).collect(),
        ticks: vec![0; streams],
        host: vec![0; streams],
        pairs: 0,
    };
    for (i, op) in prog.iter().enumerate() {
        if !want.effective[i] {
            continue;
        }
        match *op {
            Op::Alloc {
                slot,
                len,
                stream,
                upload_seed,
            } => {
                m.free(slot);
                m.bufs[slot] = Some(Buf {
                    len,
                    stream,
                    history: Vec::new(),
                });
                // The allocation, then its upload (which waits for the stream) or
                // zeroing.
                m.op(stream, &[(slot, 0..len, true)]);
                m.op(stream, &[(slot, 0..len, true)]);
                if upload_seed.is_some() && len > 0 {
                    m.synchronised(stream);
                }
            }
            Op::Free { slot } => m.free(slot),
            Op::Kernel {
                a, b, out, stream, ..
            } => {
                let mut t = vec![(a, 0..m.len(a), false)];
                if b != a {
                    t.push((b, 0..m.len(b), false));
                }
                t.push((out, 0..m.len(out), true));
                m.op(stream, &t);
            }
            Op::Halves {
                a,
                out,
                streams: (s1, s2),
                ..
            } => {
                let (n, mid) = (m.len(out), m.len(out) / 2);
                m.op(s1, &[(a, 0..m.len(a), false), (out, 0..mid, true)]);
                m.op(s2, &[(a, 0..m.len(a), false), (out, mid..n, true)]);
            }
            Op::Copy { src, dst, stream } => {
                let n = m.len(src).min(m.len(dst));
                m.op(stream, &[(src, 0..n, false), (dst, 0..n, true)]);
            }
            Op::Upload {
                slot,
                off,
                len,
                stream,
                ..
            } => {
                let (start, n) = clamp(off, len, m.len(slot));
                m.op(stream, &[(slot, start..start + n, true)]);
                if n > 0 {
                    m.synchronised(stream);
                }
            }
            Op::Fill {
                slot,
                off,
                len,
                stream,
                ..
            } => {
                let (start, n) = clamp(off, len, m.len(slot));
                m.op(stream, &[(slot, start..start + n, true)]);
            }
            Op::Download { slot, stream } => m.download(slot, stream),
        }
    }
    let mut r = Rng::new(seed ^ 0x5A5A);
    for slot in 0..slots {
        if m.bufs[slot].is_some() && want.end[slot].is_some() {
            let stream = r.below(streams);
            m.download(slot, stream);
        }
    }
    for slot in 0..slots {
        m.free(slot);
    }
    m.pairs
}

/// The simulator's hazard detector reports every hazard the unfenced stress
/// creates, exactly as many as the CPU model predicts, whether or not the timing
/// exposed it as a wrong value.
#[test]
fn detector_reports_every_unfenced_pair() {
    let _g = serial();
    if !xlog_runtime::sim::is_active() {
        println!("detector: the hazard detector runs on the simulator only (XLOG_BACKEND=sim)");
        return;
    }
    // The model frees each block on its allocation stream and never reuses it: no
    // caching pool (with fencing off, its reuse adds hazards of its own).
    let rt = runtime_with(false);
    let _restore = RestoreFencing;
    let streams: Vec<Stream> = (0..SHAPE.streams)
        .map(|_| rt.new_stream().unwrap())
        .collect();
    rt.synchronize().unwrap();
    let _ = xlog_runtime::sim::take_hazards();
    let (mut predicted, mut reported) = (0, 0);
    for seed in 2000..2003 {
        let prog = generate(seed, 1_500, &SHAPE);
        // SAFETY: the test observes the races fencing prevents, on plain integers it
        // only counts; `serial()` keeps every other test out meanwhile.
        unsafe { testing::set_fencing(false) };
        let _ = execute(&rt, &streams, &prog, 1, seed);
        // SAFETY: turning fencing back on promises nothing.
        unsafe { testing::set_fencing(true) };
        rt.synchronize().unwrap();
        let want = unfenced_pairs(&prog, streams.len(), seed);
        let got = xlog_runtime::sim::take_hazards();
        println!(
            "detector: seed {seed}: {} hazards reported, {want} predicted",
            got.len()
        );
        if let Some(h) = got.first() {
            println!("  first: {h}");
        }
        assert_eq!(got.len(), want, "seed {seed}");
        predicted += want;
        reported += got.len();
    }
    assert!(predicted > 0, "the unfenced programs must contain hazards");
    assert_eq!(reported, predicted);
}

#[test]
fn stress_has_teeth() {
    let _g = serial();
    let rt = gpu_runtime();
    let _restore = RestoreFencing;
    // SAFETY: this test exists to observe the races fencing prevents, on plain
    // integers it only compares; `serial()` keeps every other test out meanwhile.
    unsafe { testing::set_fencing(false) };
    let shape = Shape {
        slow_percent: 40,
        ..SHAPE
    };
    let t = run_seeds(&rt, 1000..1003, 1_500, 2, &shape, false);
    // SAFETY: turning fencing back on promises nothing.
    unsafe { testing::set_fencing(true) };
    rt.synchronize().unwrap();
    println!(
        "teeth: fencing off, ops={} mismatches={}",
        t.ops, t.mismatches
    );
    assert!(
        t.mismatches > 0,
        "with fencing disabled the stress must observe hazards; it saw none, so it cannot see them"
    );
}

/// Sixteen threads allocate past a small budget: clean refusals, the budget never
/// exceeded, every byte back at the end; without the caching pool and with it
/// (whose refusals first give its cache back and retry).
#[test]
fn sixteen_threads_share_a_budgeted_runtime() {
    let _g = serial();
    for caching in [false, true] {
        sixteen_threads_share_a_budget(caching);
    }
}

fn sixteen_threads_share_a_budget(caching: bool) {
    const LIMIT: usize = 8 << 20;
    let rt = Runtime::builder(0)
        .caching(caching)
        .budget(LIMIT)
        .build()
        .unwrap();
    let shared = rt.upload(&host_data(1, 1 << 16)).unwrap();
    let want_first = mix(at(&host_data(1, 1 << 16), 0), 0, 9);
    let refusals = AtomicUsize::new(0);
    std::thread::scope(|sc| {
        for t in 0..16u64 {
            let (rt, shared, refusals) = (&rt, &shared, &refusals);
            sc.spawn(move || {
                let s = rt.new_stream().unwrap();
                let mut r = Rng::new(t + 1);
                let mut held = Vec::new();
                for _ in 0..200 {
                    let len = 1 + r.below(256 << 10);
                    // SAFETY: fully written by mix_w below before any read.
                    match unsafe { rt.alloc_uninit::<u32>(&s, len, AllocTag("contention")) } {
                        Ok(mut b) => {
                            let empty = rt.upload_on::<u32>(&s, &[]).unwrap();
                            mix_w::launch(
                                &s,
                                LaunchConfig::for_len(len),
                                shared,
                                &empty,
                                &mut b,
                                9,
                                0,
                            )
                            .unwrap();
                            held.push(b);
                        }
                        Err(Error::BudgetExceeded {
                            limit,
                            remaining,
                            requested,
                            ..
                        }) => {
                            // Through the pool: the block of the request's size class.
                            assert_eq!(limit, LIMIT);
                            assert!(requested == len * 4 || caching && requested >= len * 4);
                            assert!(remaining < requested);
                            refusals.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(e) => panic!("unexpected error under contention: {e}"),
                    }
                    let used = rt.budget().unwrap().used();
                    assert!(used <= LIMIT, "budget exceeded: {used} > {LIMIT}");
                    if !held.is_empty() && (held.len() > 3 || r.chance(30)) {
                        let b = held.swap_remove(0);
                        assert_eq!(b.slice(0..1).download(&s).unwrap()[0], want_first);
                    }
                }
            });
        }
    });
    assert!(
        refusals.load(Ordering::Relaxed) > 0,
        "the test must reach the limit"
    );
    drop(shared);
    rt.trim().unwrap();
    rt.reap().unwrap();
    assert_eq!(rt.bytes_outstanding(), 0);
    assert_eq!(rt.budget().unwrap().used(), 0);
    assert_eq!(rt.drop_errors(), 0);
    let trims = rt.pool_stats().map_or(0, |st| st.trims);
    println!(
        "contention: 16 threads on {}, limit {LIMIT} B, {} clean refusals, {trims} trims",
        rt.describe_resource(),
        refusals.load(Ordering::Relaxed)
    );
    if caching {
        assert!(trims > 1, "no refusal gave the pool's cache back");
    }
}

#[test]
fn injected_faults_leave_the_runtime_usable() {
    let _g = serial();
    // The faults are the backend's (its frees, reaps): no caching pool in front.
    let rt = Runtime::builder(0).caching(false).build().unwrap();
    let (a, b) = (rt.new_stream().unwrap(), rt.new_stream().unwrap());
    let x = rt.upload_on(&a, &host_data(2, 4096)).unwrap();
    let empty = rt.upload_on::<u32>(&a, &[]).unwrap();
    let mut out = rt.alloc_zeroed_on::<u32>(&a, 4096).unwrap();
    let cfg = LaunchConfig::for_len(4096);

    // Module load fails once (this runtime has not loaded the module yet), then works.
    testing::inject(Site::ModuleLoad, 1);
    let e = mix_w::launch(&b, cfg, &x, &empty, &mut out, 1, 0).unwrap_err();
    assert!(matches!(e, Error::InjectedFault { .. }), "{e}");
    assert!(
        out.download(&a).unwrap().iter().all(|&v| v == 0),
        "nothing ran"
    );

    // A launch fails once: nothing enqueued, nothing committed, then it works.
    testing::inject(Site::Launch, 1);
    let outstanding = rt.bytes_outstanding();
    assert!(matches!(
        mix_w::launch(&b, cfg, &x, &empty, &mut out, 1, 0),
        Err(Error::InjectedFault { .. })
    ));
    assert_eq!(rt.bytes_outstanding(), outstanding);
    mix_w::launch(&b, cfg, &x, &empty, &mut out, 1, 0).unwrap();
    let want: Vec<u32> = host_data(2, 4096).iter().map(|&v| mix(v, 0, 1)).collect();
    assert_eq!(out.download(&a).unwrap(), want);

    // A pre-free wait fails: the free falls back to a host synchronisation, the
    // failure is counted, and the slow reader on b still sees intact data.
    let victim = rt.upload_on(&a, &host_data(3, 1 << 16)).unwrap();
    let mut seen = rt.alloc_zeroed_on::<u32>(&b, 1 << 16).unwrap();
    mix_w::launch(
        &b,
        LaunchConfig::for_len(1 << 16),
        &victim,
        &empty,
        &mut seen,
        5,
        50_000,
    )
    .unwrap();
    testing::inject(Site::DeallocWait, 1);
    let errors = rt.drop_errors();
    drop(victim);
    assert_eq!(
        rt.drop_errors(),
        errors + 1,
        "the failed wait is reported where it happens"
    );
    let mut scribble = rt.alloc_zeroed_on::<u32>(&a, 1 << 16).unwrap();
    scribble.fill(&a, 0xDEAD).unwrap();
    let want: Vec<u32> = host_data(3, 1 << 16)
        .iter()
        .map(|&v| mix(v, 0, 5))
        .collect();
    assert_eq!(seen.download(&b).unwrap(), want);

    // A reap fails part-way: bytes stay counted, the next reap retires them.
    drop(scribble);
    drop(seen);
    testing::inject(Site::Reap, 1);
    let before = rt.bytes_outstanding();
    assert!(rt.reap().is_err());
    assert_eq!(
        rt.bytes_outstanding(),
        before,
        "a failed reap retires nothing it did not synchronise"
    );
    rt.reap().unwrap();
    drop((x, empty, out));
    rt.reap().unwrap();
    assert_eq!(rt.bytes_outstanding(), 0);
    for site in [
        Site::Reap,
        Site::DeallocWait,
        Site::ModuleLoad,
        Site::Launch,
    ] {
        assert_eq!(testing::pending(site), 0);
    }
}
