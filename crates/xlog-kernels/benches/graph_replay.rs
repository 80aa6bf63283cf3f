//! Graph replay (bench id `graph_replay`; targets in `bench::TARGETS`): 500
//! `axpy_f32` kernels of 256 elements in a chain, recorded once and replayed, end
//! to end per kernel (CUDA events around a replay), against PyTorch's CUDA graph
//! replay of 500 `y.add_(x, alpha=a)` on the same GPU (timed by the script
//! `XLOG_GRAPH_SCRIPT`, default this crate's `benches/graph_replay_torch.py`, run
//! from here) and against the same 500 typed launches issued directly; host time
//! per replay; 4 independent chains of 100
//! recorded into one graph against the same 400 kernels as one chain; a replay
//! after changing one node's scalar against an unchanged replay; record +
//! instantiate cost per node.

use std::time::Instant;

use xlog::{DeviceBuffer, GraphRecorder, Stream};
use xlog_kernels::elementwise as k;
use xlog_test_support::bench::{self, peer};

const N: usize = 256;
const CHAIN: usize = 500;

fn case<'a>(case: &'a str, unit: &'static str) -> bench::Case<'a> {
    bench::Case {
        bench: "graph_replay",
        case,
        size: Some(N as u64),
        unit,
    }
}

/// Median wall-clock microseconds of `f` followed by a synchronisation of `s`.
fn wall_us(s: &Stream, f: &mut dyn FnMut()) -> f64 {
    let [us] = bench::interleaved(
        3,
        30,
        [&mut || {
            let t = Instant::now();
            f();
            s.synchronize().unwrap();
            t.elapsed().as_secs_f64() * 1e6
        }],
        || {},
    );
    us
}

fn main() {
    bench::header(&format!(
        "graph replay: {CHAIN} axpy_f32 kernels of {N} elements (end to end, CUDA events; medians of 30)"
    ));
    let rt = bench::runtime_or_exit();
    let s = rt.new_stream().unwrap();
    let x = rt.upload_on(&s, &[1.0f32; N]).unwrap();
    let mut y = rt.upload_on(&s, &[0.0f32; N]).unwrap();
    let cfg = k::axpy::config(N);

    // Direct typed launches, end to end.
    let direct_ms = bench::median_event_ms(&s, &mut || {
        for _ in 0..CHAIN {
            k::axpy::launch(&s, cfg, 0.5, &x, &mut y).unwrap();
        }
    });

    // Record + instantiate, per node.
    let t = Instant::now();
    let mut rec = GraphRecorder::new(&s);
    let mut first = None;
    for _ in 0..CHAIN {
        let id = k::axpy::record(&mut rec, cfg, 0.5, &x, &y).unwrap();
        first.get_or_insert(id);
    }
    let record_us = t.elapsed().as_secs_f64() * 1e6 / CHAIN as f64;
    let t = Instant::now();
    let mut graph = rec.instantiate().unwrap();
    let instantiate_us = t.elapsed().as_secs_f64() * 1e6 / CHAIN as f64;

    let replay_ms = bench::median_event_ms(&s, &mut || graph.launch(&s).unwrap());
    // Host time of one replay call (the stream drained between samples).
    let [host_us] = bench::interleaved(
        3,
        100,
        [&mut || {
            let t = Instant::now();
            graph.launch(&s).unwrap();
            let us = t.elapsed().as_secs_f64() * 1e6;
            s.synchronize().unwrap();
            us
        }],
        || {},
    );
    // Changed scalars: one node's scalar changed before each replay, wall clock.
    let node = first.unwrap();
    let mut a = 0.5f32;
    let unchanged_us = wall_us(&s, &mut || graph.launch(&s).unwrap());
    let changed_us = wall_us(&s, &mut || {
        a = if a == 0.5 { 0.25 } else { 0.5 };
        k::axpy::update(&mut graph, node, cfg, a, &x, &y).unwrap();
        graph.launch(&s).unwrap();
    });
    drop(graph);

    // 4 independent chains of 100 vs the same 400 kernels as one chain.
    let mut ys: Vec<DeviceBuffer<f32>> = (0..4)
        .map(|_| rt.upload_on(&s, &[0.0f32; N]).unwrap())
        .collect();
    let branches_ms = {
        let mut rec = GraphRecorder::new(&s);
        for _ in 0..100 {
            for y in &ys {
                k::axpy::record(&mut rec, cfg, 0.5, &x, y).unwrap();
            }
        }
        let g = rec.instantiate().unwrap();
        bench::median_event_ms(&s, &mut || g.launch(&s).unwrap())
    };
    let one_chain_ms = {
        let mut rec = GraphRecorder::new(&s);
        for _ in 0..400 {
            k::axpy::record(&mut rec, cfg, 0.5, &x, &ys[0]).unwrap();
        }
        let g = rec.instantiate().unwrap();
        bench::median_event_ms(&s, &mut || g.launch(&s).unwrap())
    };
    ys.clear();

    let torch = bench::python_peers(
        "XLOG_GRAPH_SCRIPT",
        concat!(env!("CARGO_MANIFEST_DIR"), "/benches/graph_replay_torch.py"),
        &[N.to_string(), CHAIN.to_string()],
    );
    let per_kernel = |ms: f64| ms * 1e3 / CHAIN as f64;
    println!("| case | xlog | peer | peer name | ratio (xlog/peer) | target |");
    println!("| --- | --- | --- | --- | --- | --- |");
    let chain = case("chain of 500, end to end per kernel", "µs");
    let xlog_chain = per_kernel(replay_ms);
    match torch.get("graph replay") {
        Some(&t) => chain.row(xlog_chain, per_kernel(t), peer::TORCH_GRAPH),
        None => panic!("the PyTorch script printed no `graph replay` figure"),
    }
    chain.row_against(xlog_chain, per_kernel(direct_ms), peer::XLOG_DIRECT);
    if let Some(&t) = torch.get("direct") {
        case("chain of 500 issued directly, end to end per kernel", "µs").row(
            per_kernel(direct_ms),
            per_kernel(t),
            peer::TORCH_DIRECT,
        );
    }
    let host = case("chain of 500, host time per replay", "µs");
    match torch.get("graph replay host") {
        Some(&t) => host.row(host_us, t * 1e3, peer::TORCH_GRAPH),
        None => host.record(bench::XLOG, host_us),
    }
    case("4 chains of 100, end to end", "µs").row(
        branches_ms * 1e3,
        one_chain_ms * 1e3,
        peer::XLOG_ONE_CHAIN,
    );
    case("changed scalars, replay wall clock", "µs").row(
        changed_us,
        unchanged_us,
        peer::XLOG_UNCHANGED,
    );
    case("record per node", "µs").record(bench::XLOG, record_us);
    case("instantiate per node", "µs").record(bench::XLOG, instantiate_us);
    println!(
        "\nrecord {record_us:.2} µs/node, instantiate {instantiate_us:.2} µs/node; \
         replay {xlog_chain:.3} µs/kernel end to end (target ≤ 1.2), host {host_us:.1} µs/replay (target ≤ 10)"
    );
}
