//! Graphs (opt-in: `--features gpu-tests`; fails without a device; in CI on the
//! simulator, where the hazard detector checks every replay too).
//!
//! - edges: every access pair (read after write, write after read, write after
//!   write, two reads) and independent chains as parallel branches;
//! - results: replays match the same launches issued eagerly; copies and fills;
//!   changed scalars take effect; a graph re-pointed at other buffers runs on them;
//! - fencing: a replay waits for a write on another stream, eager work on another
//!   stream waits for a replay, with teeth (fencing off shows the race);
//! - refusals: an argument written and overlapping another in one node;
//! - the detector (simulator): a wrong access list given through the `unsafe` API is
//!   reported;
//! - `graph_stress`: random graphs (two alive at a time, over the same buffers)
//!   replayed on 4 streams mixed with eager work, against a CPU model, and its teeth;
//!   `graphs_replayed_from_four_threads`: one graph replayed from four host threads
//!   at once, beside graphs of their own.

use std::sync::{Mutex, MutexGuard};

use xlog::{Access, DeviceBuffer, Graph, GraphRecorder, ReadBuffer, Runtime, Stream};
use xlog_runtime::testing;
use xlog_stress::{at, mix, mix_rw, mix_w};
use xlog_test_support::{gpu_runtime, Rng};

/// Tests here flip the process-wide fencing switch: they run one at a time.
fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|p| p.into_inner())
}

struct RestoreFencing;

impl Drop for RestoreFencing {
    fn drop(&mut self) {
        // SAFETY: turning fencing back on promises nothing.
        unsafe { testing::set_fencing(true) };
    }
}

const N: usize = 4096;
/// How long a slow kernel's threads sleep: long enough that an unfenced reader on
/// another stream runs before the writer finishes.
const SLOW_NS: u32 = 200_000;

fn data(seed: u64, len: usize) -> Vec<u32> {
    let mut r = Rng::new(seed);
    (0..len).map(|_| r.next_u64() as u32).collect()
}

/// The CPU model of `mix_w` / `mix_rw`.
fn model(rw: bool, a: &[u32], b: &[u32], out: &mut [u32], salt: u32) {
    for (i, o) in out.iter_mut().enumerate() {
        let m = mix(at(a, i), at(b, i), salt);
        *o = if rw { m ^ o.rotate_left(5) } else { m };
    }
}

fn upload(rt: &Runtime, s: &Stream, seed: u64) -> DeviceBuffer<u32> {
    let b = rt.upload_on(s, &data(seed, N)).unwrap();
    s.synchronize().unwrap();
    b
}

#[test]
fn edges_follow_every_access_pair() {
    let _g = serial();
    let rt = gpu_runtime();
    let s = rt.new_stream().unwrap();
    let (x, y, z, w) = (
        upload(&rt, &s, 1),
        upload(&rt, &s, 2),
        upload(&rt, &s, 3),
        upload(&rt, &s, 4),
    );
    let cfg = mix_w::config(N);
    let mut rec = GraphRecorder::new(&s);
    let n0 = mix_w::record(&mut rec, cfg, &x, &x, &y, 1, 0).unwrap(); // writes y
    let n1 = mix_w::record(&mut rec, cfg, &y, &y, &z, 2, 0).unwrap(); // reads y: after n0
    let n2 = mix_w::record(&mut rec, cfg, &y, &x, &w, 3, 0).unwrap(); // reads y: after n0 only
    let n3 = mix_w::record(&mut rec, cfg, &x, &x, &y, 4, 0).unwrap(); // writes y after reads n1, n2
    let n4 = mix_rw::record(&mut rec, cfg, &x, &x, &z, 5, 0).unwrap(); // writes z after n1's write
    let n5 = mix_w::record(&mut rec, cfg, &x, &x, &w, 6, 0).unwrap(); // w written by n2, never read since
    assert_eq!(
        rec.dependencies(n0),
        &[] as &[usize],
        "the first node waits for nothing"
    );
    assert_eq!(rec.dependencies(n1), &[0], "read after write");
    assert_eq!(
        rec.dependencies(n2),
        &[0],
        "two reads of y (n1, n2) are not ordered"
    );
    assert_eq!(
        rec.dependencies(n3),
        &[1, 2],
        "write after read, covering the write before"
    );
    assert_eq!(rec.dependencies(n4), &[1], "write after write (z)");
    assert_eq!(rec.dependencies(n5), &[2], "write after write (w)");
    let graph = rec.instantiate().unwrap();
    assert_eq!(graph.len(), 6);
    assert_eq!(graph.buffer_count(), 4);
    assert_eq!(graph.dependencies(n3), &[1, 2]);
    graph.launch(&s).unwrap();
    // The eager equivalent, in program order, on the CPU.
    let (hx, mut hy, mut hz, mut hw) = (data(1, N), data(2, N), data(3, N), data(4, N));
    model(false, &hx, &hx, &mut hy, 1);
    model(false, &hy, &hy, &mut hz, 2);
    model(false, &hy, &hx, &mut hw, 3);
    model(false, &hx, &hx, &mut hy, 4);
    model(true, &hx, &hx, &mut hz, 5);
    model(false, &hx, &hx, &mut hw, 6);
    assert_eq!(y.download(&s).unwrap(), hy);
    assert_eq!(z.download(&s).unwrap(), hz);
    assert_eq!(w.download(&s).unwrap(), hw);
}

#[test]
fn independent_chains_are_parallel_branches_and_replays_repeat() {
    let _g = serial();
    let rt = gpu_runtime();
    let s = rt.new_stream().unwrap();
    let ins: Vec<DeviceBuffer<u32>> = (0..4).map(|c| upload(&rt, &s, 10 + c)).collect();
    let outs: Vec<DeviceBuffer<u32>> = (0..4).map(|c| upload(&rt, &s, 20 + c)).collect();
    let cfg = mix_rw::config(N);
    let mut rec = GraphRecorder::new(&s);
    let mut ids = Vec::new();
    for step in 0..5u32 {
        for c in 0..4 {
            ids.push(mix_rw::record(&mut rec, cfg, &ins[c], &ins[c], &outs[c], step, 0).unwrap());
        }
    }
    // Chain c's node k waits only for chain c's node k - 1.
    for (k, id) in ids.iter().enumerate() {
        let want: Vec<usize> = if k < 4 { vec![] } else { vec![k - 4] };
        assert_eq!(rec.dependencies(*id), want.as_slice(), "node {k}");
    }
    let graph = rec.instantiate().unwrap();
    let replays = 3;
    for _ in 0..replays {
        graph.launch(&s).unwrap();
    }
    for (c, out) in outs.iter().enumerate() {
        let hin = data(10 + c as u64, N);
        let mut hout = data(20 + c as u64, N);
        for _ in 0..replays {
            for step in 0..5 {
                model(true, &hin, &hin, &mut hout, step);
            }
        }
        assert_eq!(out.download(&s).unwrap(), hout, "chain {c}");
    }
}

#[test]
fn copies_and_fills_run_in_order_with_kernels() {
    let _g = serial();
    let rt = gpu_runtime();
    let s = rt.new_stream().unwrap();
    let x = upload(&rt, &s, 30);
    let (y, z) = (upload(&rt, &s, 31), upload(&rt, &s, 32));
    let mut bytes = rt.upload_on(&s, &[0u8; 100]).unwrap();
    let wide = rt.upload_on(&s, &[0u64; 4]).unwrap();
    let tail = bytes.slice_mut(10..20);
    let (empty, empty_too) = (
        rt.alloc_zeroed_on::<u32>(&s, 0).unwrap(),
        rt.alloc_zeroed_on::<u32>(&s, 0).unwrap(),
    );
    let mut rec = GraphRecorder::new(&s);
    rec.fill(&empty, 1u32).unwrap();
    rec.copy(&empty, &empty_too).unwrap();
    rec.fill(&y, 7u32).unwrap();
    mix_rw::record(&mut rec, mix_rw::config(N), &x, &x, &y, 9, 0).unwrap();
    rec.copy(&y, &z).unwrap();
    rec.fill(&tail, 3u8).unwrap();
    let short = x.slice(..10);
    assert!(
        rec.fill(&wide, 1u64).is_err(),
        "8-byte fills with unequal halves are refused"
    );
    rec.fill(&wide, u64::MAX).unwrap();
    assert!(
        rec.copy(&short, &z).is_err(),
        "copies of unequal lengths are refused"
    );
    assert_eq!(rec.len(), 7, "refusals add no node");
    let graph = rec.instantiate().unwrap();
    graph.launch(&s).unwrap();
    drop(graph);
    let hx = data(30, N);
    let mut hy = vec![7u32; N];
    model(true, &hx, &hx, &mut hy, 9);
    assert_eq!(z.download(&s).unwrap(), hy);
    assert_eq!(wide.download(&s).unwrap(), vec![u64::MAX; 4]);
    let mut hb = vec![0u8; 100];
    hb[10..20].fill(3);
    assert_eq!(bytes.download(&s).unwrap(), hb);
}

/// More independent chains than the simulator runs lanes: every chain still gets
/// its result (on the simulator, chains past the 16th share lanes).
#[test]
fn many_independent_chains_all_run() {
    let _g = serial();
    let rt = gpu_runtime();
    let s = rt.new_stream().unwrap();
    let before = xlog_runtime::sim::hazard_count();
    let ins: Vec<DeviceBuffer<u32>> = (0..40).map(|_| upload(&rt, &s, 33)).collect();
    let outs: Vec<DeviceBuffer<u32>> = (0..40).map(|_| upload(&rt, &s, 34)).collect();
    let mut rec = GraphRecorder::new(&s);
    for (c, (i, o)) in ins.iter().zip(&outs).enumerate() {
        rec.fill(i, c as u32).unwrap();
        mix_w::record(&mut rec, mix_w::config(N), i, i, o, 5, 0).unwrap();
    }
    let graph = rec.instantiate().unwrap();
    graph.launch(&s).unwrap();
    drop(graph);
    for (c, o) in outs.iter().enumerate() {
        let mut want = vec![0; N];
        model(false, &[c as u32], &[c as u32], &mut want, 5);
        assert_eq!(o.download(&s).unwrap(), want, "chain {c}");
    }
    assert_eq!(
        xlog_runtime::sim::hazard_count(),
        before,
        "the detector saw a hazard"
    );
}

#[test]
fn a_written_argument_overlapping_another_is_refused() {
    let _g = serial();
    let rt = gpu_runtime();
    let s = rt.new_stream().unwrap();
    let x = upload(&rt, &s, 40);
    let mut y = upload(&rt, &s, 41);
    let cfg = mix_w::config(N / 2);
    let mut rec = GraphRecorder::new(&s);
    let e = mix_w::record(&mut rec, cfg, &x, &y, &y, 1, 0).unwrap_err();
    assert!(e.to_string().contains("overlaps"), "{e}");
    let head = y.slice(..10);
    let e = mix_w::record(&mut rec, cfg, &head, &x, &y, 1, 0).unwrap_err();
    assert!(
        e.to_string().contains("overlaps"),
        "a read view inside the written buffer: {e}"
    );
    assert_eq!(rec.len(), 0, "refusals add no node");
    drop(rec);
    // Disjoint views of one buffer, one read and one written, are one node.
    let (lo, hi) = y.slice_mut(..).split_at_mut(N / 2);
    let mut rec = GraphRecorder::new(&s);
    mix_w::record(&mut rec, cfg, &lo, &x, &hi, 1, 0).unwrap();
    let graph = rec.instantiate().unwrap();
    graph.launch(&s).unwrap();
    drop(graph);
    let mut want = data(41, N);
    let (l, h) = want.split_at_mut(N / 2);
    model(false, l, &data(40, N), h, 1);
    assert_eq!(y.download(&s).unwrap(), want);
}

#[test]
fn changed_scalars_take_effect_and_other_buffers_are_refused() {
    let _g = serial();
    let rt = gpu_runtime();
    let s = rt.new_stream().unwrap();
    let (x, y, z) = (
        upload(&rt, &s, 50),
        upload(&rt, &s, 51),
        upload(&rt, &s, 52),
    );
    let mut rec = GraphRecorder::new(&s);
    let node = mix_w::record(&mut rec, mix_w::config(N), &x, &x, &y, 1, 0).unwrap();
    let mut graph = rec.instantiate().unwrap();
    graph.launch(&s).unwrap();
    let hx = data(50, N);
    let mut want = vec![0; N];
    model(false, &hx, &hx, &mut want, 1);
    assert_eq!(y.download(&s).unwrap(), want);
    // New salt, and half the elements.
    mix_w::update(&mut graph, node, mix_w::config(N), &x, &x, &y, 2, 0).unwrap();
    graph.launch(&s).unwrap();
    model(false, &hx, &hx, &mut want, 2);
    assert_eq!(y.download(&s).unwrap(), want, "the new salt took effect");
    let e = mix_w::update(&mut graph, node, mix_w::config(N), &x, &x, &z, 3, 0).unwrap_err();
    assert!(e.to_string().contains("Graph::update"), "{e}");
    graph.launch(&s).unwrap();
    model(false, &hx, &hx, &mut want, 2);
    assert_eq!(
        y.download(&s).unwrap(),
        want,
        "a refused update changed nothing"
    );
}

#[test]
fn a_graph_repointed_at_other_buffers_runs_on_them_fenced() {
    let _g = serial();
    let rt = gpu_runtime();
    let (a, b) = (rt.new_stream().unwrap(), rt.new_stream().unwrap());
    let before = xlog_runtime::sim::hazard_count();
    let x = upload(&rt, &a, 60);
    let (y, mut y2) = (upload(&rt, &a, 61), upload(&rt, &a, 62));
    fn record<'g>(
        s: &Stream,
        x: &'g DeviceBuffer<u32>,
        out: &'g DeviceBuffer<u32>,
    ) -> GraphRecorder<'g> {
        let mut rec = GraphRecorder::new(s);
        mix_w::record(&mut rec, mix_w::config(N), x, x, out, 5, SLOW_NS).unwrap();
        mix_rw::record(&mut rec, mix_rw::config(N), x, x, out, 6, 0).unwrap();
        rec
    }
    let graph = record(&a, &x, &y).instantiate().unwrap();
    graph.launch(&a).unwrap();
    // y2 is written on stream b just before the re-pointed graph runs on a.
    y2.fill(&b, 1).unwrap();
    let graph: Graph<'_> = graph.update(record(&a, &x, &y2)).unwrap();
    graph.launch(&a).unwrap();
    let got = y2.download(&b).unwrap();
    drop(graph);
    let hx = data(60, N);
    let mut want = vec![0; N];
    model(false, &hx, &hx, &mut want, 5);
    model(true, &hx, &hx, &mut want, 6);
    assert_eq!(got, want, "the download on b waited for the replay on a");
    assert_eq!(y.download(&b).unwrap(), want);
    assert_eq!(
        xlog_runtime::sim::hazard_count(),
        before,
        "the detector saw a hazard"
    );
}

/// Writes `y` slowly on stream `b`, then replays on `a` a graph that reads `y`;
/// then reads the graph's output on `b`, and after the graph ends, writes its
/// output on `b`. Returns whether every value was the fenced one.
fn fenced_around_a_replay(rt: &Runtime) -> bool {
    let (a, b) = (rt.new_stream().unwrap(), rt.new_stream().unwrap());
    let x = upload(rt, &a, 70);
    let mut y = upload(rt, &a, 71);
    let mut z = upload(rt, &a, 72);
    let mut ok = true;
    // A write on b before the replay: the replay must wait for it.
    mix_w::launch(&b, mix_w::config(N), &x, &x, &mut y, 1, SLOW_NS).unwrap();
    {
        let mut rec = GraphRecorder::new(&a);
        mix_w::record(&mut rec, mix_w::config(N), &y, &y, &z, 2, SLOW_NS).unwrap();
        let graph = rec.instantiate().unwrap();
        graph.launch(&a).unwrap();
        // A read on b after the replay waits for it.
        let got = z.download(&b).unwrap();
        let hx = data(70, N);
        let (mut hy, mut hz) = (vec![0; N], vec![0; N]);
        model(false, &hx, &hx, &mut hy, 1);
        model(false, &hy, &hy, &mut hz, 2);
        ok &= got == hz;
        graph.launch(&a).unwrap();
    }
    // A write on b after the replay (the graph is gone, its borrows ended) waits
    // for the replay still running on a.
    z.fill(&b, 9).unwrap();
    ok &= z.download(&b).unwrap() == vec![9; N];
    a.synchronize().unwrap();
    ok
}

#[test]
fn replays_are_fenced_against_eager_work_on_other_streams() {
    let _g = serial();
    let rt = gpu_runtime();
    let before = xlog_runtime::sim::hazard_count();
    assert!(fenced_around_a_replay(&rt), "a replay was not fenced");
    assert_eq!(
        xlog_runtime::sim::hazard_count(),
        before,
        "the detector saw a hazard"
    );
}

#[test]
fn replay_fencing_has_teeth() {
    let _g = serial();
    let rt = gpu_runtime();
    let _restore = RestoreFencing;
    let before = xlog_runtime::sim::hazard_count();
    // SAFETY: this test observes the races fencing prevents, on plain integers it
    // only compares; `serial()` keeps the other tests here out meanwhile.
    unsafe { testing::set_fencing(false) };
    let fenced = fenced_around_a_replay(&rt);
    // SAFETY: turning fencing back on promises nothing.
    unsafe { testing::set_fencing(true) };
    rt.synchronize().unwrap();
    let hazards = xlog_runtime::sim::hazard_count() - before;
    if xlog_runtime::sim::is_active() {
        assert!(hazards > 0, "the detector must report the unfenced replay");
    } else {
        assert!(
            !fenced,
            "without fencing the slow writers must be seen unfinished"
        );
    }
}

/// Foreign work (here a raw `cuMemsetD32Async`, standing in for a library call)
/// joins a graph through the `unsafe` API, ordered by the accesses it names; the
/// simulator refuses it.
#[test]
fn foreign_work_joins_a_graph_with_the_accesses_it_names() {
    let _g = serial();
    let rt = gpu_runtime();
    let s = rt.new_stream().unwrap();
    let (y, z) = (upload(&rt, &s, 90), upload(&rt, &s, 91));
    let mut rec = GraphRecorder::new(&s);
    let yp = y.device_ptr();
    let uses = [(y.arg(), Access::Write)];
    // SAFETY: the closure queues one fill of `y`'s N words on the stream it is
    // given, and `y` is named as written.
    let foreign = unsafe {
        rec.foreign(&uses, |stream| {
            let r = cudarc::driver::sys::cuMemsetD32Async(yp, 5, N, stream);
            assert_eq!(r, cudarc::driver::sys::CUresult::CUDA_SUCCESS);
            Ok(())
        })
    };
    if xlog_runtime::sim::is_active() {
        assert!(
            matches!(foreign, Err(xlog::Error::Unsupported { .. })),
            "{foreign:?}"
        );
        return;
    }
    foreign.unwrap();
    let reader = mix_w::record(&mut rec, mix_w::config(N), &y, &y, &z, 3, 0).unwrap();
    assert_eq!(
        rec.dependencies(reader),
        &[0],
        "read after the foreign write"
    );
    let graph = rec.instantiate().unwrap();
    graph.launch(&s).unwrap();
    drop(graph);
    let mut want = vec![0; N];
    model(false, &[5; N], &[5; N], &mut want, 3);
    assert_eq!(z.download(&s).unwrap(), want);
    assert_eq!(y.download(&s).unwrap(), vec![5; N]);
}

/// The detector checks a graph's edges against what its kernels' signatures
/// touch: a node recorded through the `unsafe` API with a write declared as a read
/// gets no edge to a later reader on another branch, and is reported.
#[test]
fn a_wrong_access_list_is_reported_by_the_detector() {
    let _g = serial();
    if !xlog_runtime::sim::is_active() {
        println!("detector: the hazard detector runs on the simulator only (XLOG_BACKEND=sim)");
        return;
    }
    let rt = gpu_runtime();
    let s = rt.new_stream().unwrap();
    let (x, y, z) = (
        upload(&rt, &s, 80),
        upload(&rt, &s, 81),
        upload(&rt, &s, 82),
    );
    rt.synchronize().unwrap();
    let _ = xlog_runtime::sim::take_hazards();
    let record = |declared: Access| {
        let mut rec = GraphRecorder::new(&s);
        let (xp, yp, n) = (x.device_ptr(), y.device_ptr(), N);
        let (salt, spin) = (1u32, 0u32);
        let p = |v: *const u8| v as *mut std::ffi::c_void;
        let params = [
            p(&xp as *const u64 as _),
            p(&n as *const usize as _),
            p(&xp as *const u64 as _),
            p(&n as *const usize as _),
            p(&yp as *const u64 as _),
            p(&n as *const usize as _),
            p(&salt as *const u32 as _),
            p(&spin as *const u32 as _),
        ];
        let uses = [(x.arg(), Access::Read), (y.arg(), declared)];
        // SAFETY: `mix_w(a, b, out, salt, spin_ns)` takes exactly these values. The
        // access list is wrong on purpose when `declared` is a read: on the
        // simulator the write lands in host memory the buffer owns, and the
        // detector must report the missing edge.
        unsafe { rec.launch_unchecked(mix_w::__handle(), mix_w::config(N), &params, &uses) }
            .unwrap();
        let reader = mix_w::record(&mut rec, mix_w::config(N), &y, &y, &z, 2, 0).unwrap();
        (rec, reader)
    };
    let (right, reader) = record(Access::Write);
    assert_eq!(right.dependencies(reader), &[0], "read after write");
    let graph = right.instantiate().unwrap();
    graph.launch(&s).unwrap();
    drop(graph);
    rt.synchronize().unwrap();
    assert!(
        xlog_runtime::sim::take_hazards().is_empty(),
        "the right list is clean"
    );
    let (wrong, reader) = record(Access::Read);
    assert_eq!(
        wrong.dependencies(reader),
        &[] as &[usize],
        "two declared reads"
    );
    let graph = wrong.instantiate().unwrap();
    graph.launch(&s).unwrap();
    drop(graph);
    rt.synchronize().unwrap();
    let hazards = xlog_runtime::sim::take_hazards();
    assert!(
        !hazards.is_empty(),
        "the write declared as a read must be reported"
    );
    println!("detector: {}", hazards[0]);
}

/// One operation of a random graph program.
#[derive(Clone, Copy, Debug)]
struct Mix {
    rw: bool,
    a: usize,
    b: usize,
    out: usize,
    salt: u32,
    slow: bool,
}

impl Mix {
    fn random(r: &mut Rng, reads: &[usize], writes: &[usize]) -> Mix {
        let out = writes[r.below(writes.len())];
        let pick = |r: &mut Rng| loop {
            let i = reads[r.below(reads.len())];
            if i != out {
                return i;
            }
        };
        Mix {
            rw: r.below(2) == 0,
            a: pick(r),
            b: pick(r),
            out,
            salt: r.next_u64() as u32,
            slow: r.below(4) == 0,
        }
    }

    fn model(&self, host: &mut [Vec<u32>]) {
        let (a, b) = (host[self.a].clone(), host[self.b].clone());
        model(self.rw, &a, &b, &mut host[self.out], self.salt);
    }
}

const STREAMS: usize = 4;
const SLOTS: usize = 8;

/// Random phases: two graphs of 6 nodes over half of the buffers, replayed 4 times
/// in all on random streams, interleaved with eager launches on random streams that
/// read any buffer and write the other half; the graphs end with their phase, so
/// the next phase's eager work writes what this one's graphs touched. Returns mismatched
/// words against the program-order CPU model.
fn graph_program(rt: &Runtime, seed: u64, phases: usize) -> usize {
    let streams: Vec<Stream> = (0..STREAMS).map(|_| rt.new_stream().unwrap()).collect();
    let lens = [N, N / 2, N, 3 * N / 4, N, N / 3, N, N / 5];
    let mut r = Rng::new(seed);
    let mut bufs: Vec<Option<DeviceBuffer<u32>>> = (0..SLOTS)
        .map(|i| {
            Some(
                rt.upload_on(&streams[0], &data(seed * 100 + i as u64, lens[i]))
                    .unwrap(),
            )
        })
        .collect();
    let mut host: Vec<Vec<u32>> = (0..SLOTS)
        .map(|i| data(seed * 100 + i as u64, lens[i]))
        .collect();
    let all: Vec<usize> = (0..SLOTS).collect();
    let spin = |slow: bool| if slow { SLOW_NS / 4 } else { 0 };
    for _ in 0..phases {
        let mut order = all.clone();
        for i in (1..order.len()).rev() {
            order.swap(i, r.below(i + 1));
        }
        let (graph_set, eager_set) = order.split_at(SLOTS / 2);
        // Two graphs over the same buffers: their replays conflict with each other
        // as well as with the eager work.
        let programs: Vec<Vec<Mix>> = (0..2)
            .map(|_| {
                (0..6)
                    .map(|_| Mix::random(&mut r, graph_set, graph_set))
                    .collect()
            })
            .collect();
        let eager: Vec<Mix> = (0..6)
            .map(|_| Mix::random(&mut r, &all, eager_set))
            .collect();
        // The eager outputs move out of `bufs` for the phase (they are written
        // through `&mut`); the graphs borrow the rest.
        let mut taken: Vec<Option<DeviceBuffer<u32>>> = (0..SLOTS).map(|_| None).collect();
        for &i in eager_set {
            taken[i] = bufs[i].take();
        }
        {
            let graphs: Vec<Graph<'_>> = programs
                .iter()
                .map(|nodes| {
                    let mut rec = GraphRecorder::new(&streams[r.below(STREAMS)]);
                    for m in nodes {
                        let b = |i: usize| bufs[i].as_ref().unwrap();
                        let (a, bb, o, n) = (b(m.a), b(m.b), b(m.out), lens[m.out]);
                        let spin = spin(m.slow);
                        if m.rw {
                            mix_rw::record(&mut rec, mix_rw::config(n), a, bb, o, m.salt, spin)
                        } else {
                            mix_w::record(&mut rec, mix_w::config(n), a, bb, o, m.salt, spin)
                        }
                        .unwrap();
                    }
                    rec.instantiate().unwrap()
                })
                .collect();
            let (mut replays, mut next_eager) = (4, 0);
            while replays > 0 || next_eager < eager.len() {
                let s = &streams[r.below(STREAMS)];
                if replays > 0 && (next_eager == eager.len() || r.below(2) == 0) {
                    let g = r.below(graphs.len());
                    graphs[g].launch(s).unwrap();
                    for m in &programs[g] {
                        m.model(&mut host);
                    }
                    replays -= 1;
                    continue;
                }
                let m = eager[next_eager];
                next_eager += 1;
                let mut out = taken[m.out].take().unwrap();
                let src = |i: usize| taken[i].as_ref().or(bufs[i].as_ref()).unwrap();
                let (a, b, n) = (src(m.a), src(m.b), lens[m.out]);
                if m.rw {
                    mix_rw::launch(s, mix_rw::config(n), a, b, &mut out, m.salt, spin(m.slow))
                } else {
                    mix_w::launch(s, mix_w::config(n), a, b, &mut out, m.salt, spin(m.slow))
                }
                .unwrap();
                taken[m.out] = Some(out);
                m.model(&mut host);
            }
        }
        for &i in eager_set {
            bufs[i] = taken[i].take();
        }
    }
    let bufs: Vec<DeviceBuffer<u32>> = bufs.into_iter().map(Option::unwrap).collect();
    let mut mismatches = 0;
    for (i, b) in bufs.iter().enumerate() {
        let s = &streams[r.below(STREAMS)];
        let got = b.download(s).unwrap();
        mismatches += got.iter().zip(&host[i]).filter(|(g, w)| g != w).count();
    }
    rt.synchronize().unwrap();
    mismatches
}

#[test]
fn graph_stress() {
    let _g = serial();
    let rt = gpu_runtime();
    let before = xlog_runtime::sim::hazard_count();
    let seeds = std::env::var("XLOG_STRESS_SEEDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(4u64);
    for seed in 1..=seeds {
        let bad = graph_program(&rt, seed, 6);
        assert_eq!(bad, 0, "seed {seed}: {bad} words differ from the CPU model");
    }
    assert_eq!(
        xlog_runtime::sim::hazard_count(),
        before,
        "the detector saw a hazard"
    );
}

/// Four host threads, each on its own stream, replay one shared graph (which
/// rewrites the same value into a shared buffer: any order gives it) and a graph of
/// their own over their own buffers, and read the shared buffer eagerly between
/// replays; every value must be the fenced one and nothing may deadlock.
#[test]
fn graphs_replayed_from_four_threads() {
    let _g = serial();
    let rt = gpu_runtime();
    let before = xlog_runtime::sim::hazard_count();
    let setup = rt.new_stream().unwrap();
    let x = upload(&rt, &setup, 95);
    let shared = upload(&rt, &setup, 96);
    let mut rec = GraphRecorder::new(&setup);
    mix_w::record(&mut rec, mix_w::config(N), &x, &x, &shared, 7, SLOW_NS / 8).unwrap();
    let common = rec.instantiate().unwrap();
    let hx = data(95, N);
    let mut want_shared = vec![0; N];
    model(false, &hx, &hx, &mut want_shared, 7);
    std::thread::scope(|scope| {
        for t in 0..4u32 {
            let (rt, x, shared, common) = (&rt, &x, &shared, &common);
            let (hx, want_shared) = (&hx, &want_shared);
            scope.spawn(move || {
                let s = rt.new_stream().unwrap();
                let out = upload(rt, &s, 200 + t as u64);
                let mut rec = GraphRecorder::new(&s);
                mix_rw::record(&mut rec, mix_rw::config(N), x, shared, &out, t, 0).unwrap();
                let own = rec.instantiate().unwrap();
                let mut want = data(200 + t as u64, N);
                for _ in 0..5 {
                    common.launch(&s).unwrap();
                    own.launch(&s).unwrap();
                    model(true, hx, want_shared, &mut want, t);
                    assert_eq!(&shared.download(&s).unwrap(), want_shared, "thread {t}");
                }
                drop(own);
                assert_eq!(out.download(&s).unwrap(), want, "thread {t}");
            });
        }
    });
    drop(common);
    rt.synchronize().unwrap();
    assert_eq!(
        xlog_runtime::sim::hazard_count(),
        before,
        "the detector saw a hazard"
    );
}

#[test]
fn graph_stress_has_teeth() {
    let _g = serial();
    let rt = gpu_runtime();
    let _restore = RestoreFencing;
    let before = xlog_runtime::sim::hazard_count();
    // SAFETY: this test observes the races fencing prevents, on plain integers it
    // only compares; `serial()` keeps the other tests here out meanwhile.
    unsafe { testing::set_fencing(false) };
    let bad: usize = (100..103).map(|seed| graph_program(&rt, seed, 6)).sum();
    // SAFETY: turning fencing back on promises nothing.
    unsafe { testing::set_fencing(true) };
    rt.synchronize().unwrap();
    let hazards = xlog_runtime::sim::hazard_count() - before;
    println!("graph teeth: fencing off, mismatched words={bad}, hazards reported={hazards}");
    if xlog_runtime::sim::is_active() {
        assert!(hazards > 0, "the detector must report the unfenced replays");
    } else {
        assert!(
            bad > 0,
            "with fencing off the graph stress must observe hazards"
        );
    }
}

/// A recording and its graph belong to the recording stream's runtime: a buffer of
/// another runtime is refused when recorded (leaving the recording as it was), the
/// graph is refused on another runtime's stream before anything is queued, and a
/// graph re-pointed at another runtime's recording belongs to that runtime.
#[test]
fn buffers_and_streams_of_another_runtime_are_refused() {
    let _g = serial();
    let rt = gpu_runtime();
    let other = Runtime::builder(0).build().unwrap();
    assert_ne!(rt.id(), other.id());
    let (s, t) = (rt.new_stream().unwrap(), other.new_stream().unwrap());
    let (x, y) = (upload(&rt, &s, 100), upload(&rt, &s, 101));
    let (theirs, theirs_out) = (upload(&other, &t, 102), upload(&other, &t, 103));
    let cfg = mix_w::config(N);
    let wrong = |e: xlog::Error| matches!(e, xlog::Error::WrongRuntime { .. });
    let mut rec = GraphRecorder::new(&s);
    let e = mix_w::record(&mut rec, cfg, &x, &x, &theirs, 1, 0).unwrap_err();
    assert!(wrong(e), "a written buffer of another runtime");
    let e = mix_w::record(&mut rec, cfg, &theirs, &x, &y, 1, 0).unwrap_err();
    assert!(wrong(e), "a read buffer of another runtime");
    assert!(wrong(rec.copy(&theirs, &y).unwrap_err()), "a copy's source");
    assert!(wrong(rec.fill(&theirs, 1u32).unwrap_err()), "a fill");
    assert_eq!(rec.len(), 0, "refusals add no node");
    mix_w::record(&mut rec, cfg, &x, &x, &y, 1, 0).unwrap();
    let graph = rec.instantiate().unwrap();
    assert!(
        wrong(graph.launch(&t).unwrap_err()),
        "a stream of another runtime"
    );
    assert_eq!(y.download(&s).unwrap(), data(101, N), "nothing ran");
    graph.launch(&s).unwrap();
    let hx = data(100, N);
    let mut want = vec![0; N];
    model(false, &hx, &hx, &mut want, 1);
    assert_eq!(y.download(&s).unwrap(), want);
    let mut rec = GraphRecorder::new(&t);
    mix_w::record(&mut rec, cfg, &theirs, &theirs, &theirs_out, 2, 0).unwrap();
    let graph = graph.update(rec).unwrap();
    assert!(
        wrong(graph.launch(&s).unwrap_err()),
        "now the other runtime's"
    );
    graph.launch(&t).unwrap();
    let h = data(102, N);
    model(false, &h, &h, &mut want, 2);
    assert_eq!(theirs_out.download(&t).unwrap(), want);
}

/// An update in place names a kernel node of this very graph (not of another
/// recording, not of the recording a `Graph::update` replaced) and runs the same
/// kernel; every refusal leaves the graph as it was.
#[test]
fn updates_name_a_kernel_node_of_this_graph_running_that_kernel() {
    let _g = serial();
    let rt = gpu_runtime();
    let s = rt.new_stream().unwrap();
    let (x, y, z) = (
        upload(&rt, &s, 110),
        upload(&rt, &s, 111),
        upload(&rt, &s, 112),
    );
    let cfg = mix_w::config(N);
    let mut other = GraphRecorder::new(&s);
    other.fill(&z, 1u32).unwrap();
    let others = mix_w::record(&mut other, cfg, &x, &x, &y, 1, 0).unwrap();
    let mut rec = GraphRecorder::new(&s);
    let fill = rec.fill(&z, 3u32).unwrap();
    let node = mix_w::record(&mut rec, cfg, &x, &x, &y, 1, 0).unwrap();
    assert_eq!(others.index(), node.index());
    let mut graph = rec.instantiate().unwrap();
    let refused = |e: xlog::Error, why: &str| {
        let m = e.to_string();
        assert!(m.contains(why), "{m}");
    };
    refused(
        mix_w::update(&mut graph, others, cfg, &x, &x, &y, 2, 0).unwrap_err(),
        "not one of this graph's",
    );
    refused(
        mix_w::update(&mut graph, fill, cfg, &x, &x, &y, 2, 0).unwrap_err(),
        "not a kernel",
    );
    refused(
        mix_rw::update(&mut graph, node, mix_rw::config(N), &x, &x, &y, 2, 0).unwrap_err(),
        "runs `mix_w`",
    );
    graph.launch(&s).unwrap();
    let hx = data(110, N);
    let mut want = vec![0; N];
    model(false, &hx, &hx, &mut want, 1);
    assert_eq!(
        y.download(&s).unwrap(),
        want,
        "the refusals changed nothing"
    );
    assert_eq!(z.download(&s).unwrap(), vec![3; N]);
    drop(other);
    // The same positions in a new recording are new nodes: the old ids are refused.
    let mut rec = GraphRecorder::new(&s);
    rec.fill(&z, 4u32).unwrap();
    let renewed = mix_w::record(&mut rec, cfg, &x, &x, &y, 5, 0).unwrap();
    let mut graph = graph.update(rec).unwrap();
    refused(
        mix_w::update(&mut graph, node, cfg, &x, &x, &y, 6, 0).unwrap_err(),
        "not one of this graph's",
    );
    mix_w::update(&mut graph, renewed, cfg, &x, &x, &y, 6, 0).unwrap();
    graph.launch(&s).unwrap();
    model(false, &hx, &hx, &mut want, 6);
    assert_eq!(y.download(&s).unwrap(), want);
    assert_eq!(z.download(&s).unwrap(), vec![4; N]);
}

/// An update in place may hand a node other views of its buffers, of another
/// length: the node then writes the new view only, and the replay stays fenced
/// against other streams (on the simulator the detector checks the new ranges).
#[test]
fn an_update_to_a_view_of_another_length_writes_that_view_only() {
    let _g = serial();
    let rt = gpu_runtime();
    let (a, b) = (rt.new_stream().unwrap(), rt.new_stream().unwrap());
    let before = xlog_runtime::sim::hazard_count();
    let x = upload(&rt, &a, 130);
    let mut y = upload(&rt, &a, 131);
    let (lo, hi) = y.slice_mut(..).split_at_mut(N / 4);
    let mut rec = GraphRecorder::new(&a);
    let node = mix_w::record(&mut rec, mix_w::config(N / 4), &x, &x, &lo, 1, 0).unwrap();
    let mut graph = rec.instantiate().unwrap();
    graph.launch(&a).unwrap();
    mix_w::update(&mut graph, node, mix_w::config(N), &x, &x, &hi, 2, SLOW_NS).unwrap();
    graph.launch(&a).unwrap();
    // Read on b right after the slow replay on a: fenced.
    let got_hi = hi.as_view().download(&b).unwrap();
    let got_lo = lo.as_view().download(&b).unwrap();
    drop(graph);
    let hx = data(130, N);
    let mut want = data(131, N);
    let (wlo, whi) = want.split_at_mut(N / 4);
    model(false, &hx, &hx, wlo, 1);
    model(false, &hx, &hx, whi, 2);
    assert_eq!(
        got_lo, wlo,
        "the first view keeps the first replay's values"
    );
    assert_eq!(got_hi, whi, "the second replay wrote the new, longer view");
    assert_eq!(
        xlog_runtime::sim::hazard_count(),
        before,
        "the detector saw a hazard"
    );
}

/// A replay's use is committed when `launch` returns, not when the graph drops: a
/// graph forgotten right after a slow replay on stream `b` still makes the free of
/// its buffer (allocated on `a`) wait for that replay, so the caching pool's next
/// block on `a`, the same memory, is not written under it.
#[test]
fn a_forgotten_graph_still_fences_the_free_and_reuse_of_its_buffers() {
    let _g = serial();
    let rt = Runtime::builder(0).caching(true).build().unwrap();
    let (a, b) = (rt.new_stream().unwrap(), rt.new_stream().unwrap());
    let before = xlog_runtime::sim::hazard_count();
    let x = upload(&rt, &a, 140);
    let y = upload(&rt, &a, 141);
    let at = y.device_ptr();
    {
        let mut rec = GraphRecorder::new(&a);
        mix_w::record(&mut rec, mix_w::config(N), &x, &x, &y, 1, SLOW_NS).unwrap();
        let graph = rec.instantiate().unwrap();
        graph.launch(&b).unwrap();
        std::mem::forget(graph);
    }
    drop(y);
    let mut z = rt.alloc_zeroed_on::<u32>(&a, N).unwrap();
    assert_eq!(
        z.device_ptr(),
        at,
        "the pool hands the freed block out again"
    );
    z.fill(&a, 9).unwrap();
    rt.synchronize().unwrap();
    assert_eq!(
        z.download(&a).unwrap(),
        vec![9; N],
        "the replay wrote the new buffer"
    );
    assert_eq!(
        xlog_runtime::sim::hazard_count(),
        before,
        "the detector saw a hazard"
    );
}

/// `Graph::update` to a recording over a shorter buffer (a fill and a kernel, the
/// same topology): the replays then write the shorter buffer only, at its length,
/// and leave the first one as the last replay on it left it.
#[test]
fn a_graph_repointed_at_a_shorter_buffer_writes_only_it() {
    let _g = serial();
    let rt = gpu_runtime();
    let s = rt.new_stream().unwrap();
    let before = xlog_runtime::sim::hazard_count();
    let x = upload(&rt, &s, 150);
    let long = upload(&rt, &s, 151);
    let short = rt.upload_on(&s, &data(152, N / 2)).unwrap();
    let (z_long, z_short) = (
        upload(&rt, &s, 153),
        rt.upload_on(&s, &data(154, N / 2)).unwrap(),
    );
    fn record<'g>(
        s: &Stream,
        x: &'g DeviceBuffer<u32>,
        out: &'g DeviceBuffer<u32>,
        z: &'g DeviceBuffer<u32>,
        salt: u32,
    ) -> GraphRecorder<'g> {
        let mut rec = GraphRecorder::new(s);
        rec.fill(z, salt).unwrap();
        mix_w::record(&mut rec, mix_w::config(out.len()), x, x, out, salt, 0).unwrap();
        rec
    }
    let graph = record(&s, &x, &long, &z_long, 1).instantiate().unwrap();
    graph.launch(&s).unwrap();
    let graph = graph.update(record(&s, &x, &short, &z_short, 2)).unwrap();
    graph.launch(&s).unwrap();
    graph.launch(&s).unwrap();
    let hx = data(150, N);
    let (mut want_long, mut want_short) = (vec![0; N], vec![0; N / 2]);
    model(false, &hx, &hx, &mut want_long, 1);
    model(false, &hx, &hx, &mut want_short, 2);
    assert_eq!(short.download(&s).unwrap(), want_short);
    assert_eq!(z_short.download(&s).unwrap(), vec![2; N / 2]);
    assert_eq!(
        long.download(&s).unwrap(),
        want_long,
        "the first buffer kept the first replay's values"
    );
    assert_eq!(z_long.download(&s).unwrap(), vec![1; N]);
    drop(graph);
    assert_eq!(
        xlog_runtime::sim::hazard_count(),
        before,
        "the detector saw a hazard"
    );
}
