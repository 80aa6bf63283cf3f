//! The benches' timer and results table.
//!
//! Every bench times its contenders with [`interleaved`]: untimed warm-up rounds,
//! then rounds that sample each contender once in turn, in the listed order and
//! the reverse order by turns, so clock and thermal drift hit all of them alike
//! and none always runs right after another; each contender's figure is the
//! median of its samples.
//! [`compare`] is the host-cost case (wall-clock batches of calls, xlog against one
//! peer); a bench that times on the device passes its own sampler (CUDA events).
//!
//! Besides its markdown table, every bench writes its figures as [`Measurement`]s,
//! one JSON object a line, to the file named by `XLOG_BENCH_RESULTS` (when set):
//! [`Case::row`] and [`Case::record`] do both. The report generator
//! (`bench/report`) joins the lines of one run into tables and plots; a ratio is
//! always xlog's figure over a peer's figure of the same bench, case and size, so it
//! comes from one run. [`TARGETS`] holds the bound each ratio is held to.
//!
//! With the `gpu` feature, `header` and `runtime_or_exit` open device 0 and
//! print the report's heading.

use std::fmt;
use std::io::Write;
use std::time::Instant;

use serde::{Deserialize, Serialize};

/// The median cost of each contender, sampled in `rounds` interleaved rounds after
/// `warmup` untimed ones.
///
/// A contender is a sampler: it runs the work being measured and returns its cost
/// in the unit it measures (nanoseconds per call, milliseconds, ...). A round calls
/// every sampler once, and runs `between` (untimed) after each call: the timed
/// rounds go through the samplers in order and in reverse order by turns (ABBA),
/// so whatever state one contender leaves behind (a warm cache, a boosted clock)
/// precedes each of the others equally often. Panics if `rounds` is zero.
///
/// # Example
///
/// ```
/// use xlog_test_support::bench::interleaved;
///
/// let (mut a, mut b) = (0.0, 10.0);
/// let [ma, mb] = interleaved(1, 5, [&mut || { a += 1.0; a }, &mut || { b += 1.0; b }], || {});
/// assert_eq!((ma, mb), (4.0, 14.0)); // samples 2..=6 and 12..=16, after a warm-up
/// ```
pub fn interleaved<const N: usize>(
    warmup: usize,
    rounds: usize,
    mut contenders: [&mut dyn FnMut() -> f64; N],
    mut between: impl FnMut(),
) -> [f64; N] {
    assert!(rounds > 0, "a timing needs at least one round");
    for _ in 0..warmup {
        for sample in contenders.iter_mut() {
            sample();
            between();
        }
    }
    let mut samples: [Vec<f64>; N] = std::array::from_fn(|_| Vec::with_capacity(rounds));
    for round in 0..rounds {
        for i in 0..N {
            let i = if round % 2 == 0 { i } else { N - 1 - i };
            samples[i].push(contenders[i]());
            between();
        }
    }
    samples.map(median)
}

/// Median nanoseconds per call of `ours` and of `peer`, each timed by the wall clock
/// over batches of `batch` calls, in `batches` interleaved rounds after one warm-up
/// round. `between` runs untimed after every batch (to synchronise, reap, ...).
///
/// # Example
///
/// ```
/// use xlog_test_support::bench::compare;
///
/// let (mut x, mut y) = (0u64, 0u64);
/// let (ours, peer) = compare(3, 100, || x += 1, || y += 2, || {});
/// assert!(ours >= 0.0 && peer >= 0.0);
/// assert_eq!((x, y), (400, 800)); // warm-up and three batches of 100
/// ```
pub fn compare(
    batches: usize,
    batch: usize,
    ours: impl FnMut(),
    peer: impl FnMut(),
    between: impl FnMut(),
) -> (f64, f64) {
    let [ours, peer] = interleaved(
        1,
        batches,
        [&mut per_call_ns(batch, ours), &mut per_call_ns(batch, peer)],
        between,
    );
    (ours, peer)
}

/// A sampler for [`interleaved`]: nanoseconds per call of `f` over a batch of
/// `batch` calls. The batch loop is compiled for `f` itself, so no dynamic call is
/// timed.
pub fn per_call_ns(batch: usize, f: impl FnMut()) -> impl FnMut() -> f64 {
    per_call_ns_then(batch, f, || {})
}

/// A sampler for [`interleaved`]: nanoseconds per call of `f` over a batch of
/// `batch` calls followed by one call of `finish`, which is timed too (a
/// synchronisation, so that work a contender hands to another thread or queues on
/// the device is paid for inside its own sample).
///
/// ```
/// use xlog_test_support::bench::per_call_ns_then;
///
/// let (mut calls, mut finishes) = (0, 0);
/// let ns = per_call_ns_then(4, || calls += 1, || finishes += 1)();
/// assert!(ns >= 0.0);
/// assert_eq!((calls, finishes), (4, 1));
/// ```
pub fn per_call_ns_then(
    batch: usize,
    mut f: impl FnMut(),
    mut finish: impl FnMut(),
) -> impl FnMut() -> f64 {
    move || {
        let t = Instant::now();
        for _ in 0..batch {
            f();
        }
        finish();
        t.elapsed().as_nanos() as f64 / batch as f64
    }
}

/// The median of `v` (the upper one of an even count). Panics if `v` is empty.
fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The contender name of xlog's own figure in every bench; every other contender of
/// the same bench, case and size is a peer it is compared with.
pub const XLOG: &str = "xlog";

/// The environment variable naming the results file that [`record`] appends to.
pub const RESULTS_ENV: &str = "XLOG_BENCH_RESULTS";

/// One figure of one contender: a line of the results file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Measurement {
    /// The bench's id (`launch_peers`, `alloc_free`, ...).
    pub bench: String,
    /// The scenario within the bench (`same stream`, `launch + sync`, ...).
    pub case: String,
    /// The problem size (elements or bytes, as the case says), where the case has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// Who was measured: [`XLOG`] or a peer's name.
    pub contender: String,
    /// The figure, in `unit`.
    pub value: f64,
    /// `ns`, `GB/s`, `launches/s`, ...
    pub unit: String,
}

impl Measurement {
    /// A figure in nanoseconds of a case without a size: what tests and examples of
    /// the results file build.
    pub fn ns(bench: &str, case: &str, contender: &str, value: f64) -> Measurement {
        Measurement {
            bench: bench.to_owned(),
            case: case.to_owned(),
            size: None,
            contender: contender.to_owned(),
            value,
            unit: "ns".to_owned(),
        }
    }
}

/// Appends `m` as one JSON line to the file named by `XLOG_BENCH_RESULTS`; does
/// nothing when the variable is unset. Panics if the file cannot be written (a
/// bench run that loses its figures must not look complete).
pub fn record(m: &Measurement) {
    let Some(path) = std::env::var_os(RESULTS_ENV) else {
        return;
    };
    let line = serde_json::to_string(m).expect("a measurement serialises");
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .unwrap_or_else(|e| panic!("cannot open {}: {e}", path.to_string_lossy()));
    writeln!(file, "{line}")
        .unwrap_or_else(|e| panic!("cannot write {}: {e}", path.to_string_lossy()));
}

/// One case of a bench: where its figures go and in which unit.
#[derive(Clone, Copy, Debug)]
pub struct Case<'a> {
    /// The bench's id.
    pub bench: &'a str,
    /// The scenario.
    pub case: &'a str,
    /// The problem size, if the case has one.
    pub size: Option<u64>,
    /// The unit of every figure of the case.
    pub unit: &'a str,
}

impl Case<'_> {
    /// Records `value` for `contender` (see [`record`]).
    pub fn record(&self, contender: &str, value: f64) {
        record(&Measurement {
            bench: self.bench.to_owned(),
            case: self.case.to_owned(),
            size: self.size,
            contender: contender.to_owned(),
            value,
            unit: self.unit.to_owned(),
        });
    }

    /// Records xlog's and the peer's figures and prints one row of the bench's
    /// markdown table: xlog, the peer, their ratio and its target from [`TARGETS`].
    pub fn row(&self, xlog: f64, peer: f64, peer_name: &str) {
        self.record(XLOG, xlog);
        self.row_against(xlog, peer, peer_name);
    }

    /// Like [`Case::row`], for a peer timed in the same rounds as an xlog figure
    /// already recorded: records the peer's figure only.
    pub fn row_against(&self, xlog: f64, peer: f64, peer_name: &str) {
        self.record(peer_name, peer);
        self.print_row(xlog, peer, peer_name, "");
    }

    /// Prints one row of the markdown table, `note` after the ratio.
    fn print_row(&self, xlog: f64, peer: f64, peer_name: &str, note: &str) {
        let unit = self.unit;
        let scenario = match self.size {
            Some(n) => format!("{} ({n})", self.case),
            None => self.case.to_owned(),
        };
        let bound = target(self.bench, self.case, peer_name)
            .map_or_else(|| "—".to_owned(), |t| t.bound.to_string());
        println!(
            "| {scenario} | {xlog:.1} {unit} | {peer:.1} {unit} | {peer_name} | {:.3}{note} | {bound} |",
            xlog / peer
        );
    }
}

/// How many fresh processes a host-cost bench takes its figures from (see
/// [`in_processes`]).
pub const PROCESSES: usize = 5;

/// Set in the processes [`in_processes`] starts: the process's index.
pub const PROCESS_ENV: &str = "XLOG_BENCH_PROCESS";

/// Pairs each peer's figure with xlog's nearest earlier figure of the same bench,
/// case and size (the one timed in the same interleaved rounds), as
/// `(xlog's index, the peer's index)` in `ms`, in the order of the peers. A peer
/// with no xlog figure before it is left out.
///
/// ```
/// use xlog_test_support::bench::{pairs, Measurement, XLOG};
///
/// let m = |contender: &str, case: &str| Measurement::ns("b", case, contender, 1.0);
/// let ms = [m(XLOG, "a"), m("raw", "a"), m(XLOG, "b"), m("raw", "a"), m("raw", "c")];
/// assert_eq!(pairs(&ms), [(0, 1), (0, 3)]);
/// ```
pub fn pairs(ms: &[Measurement]) -> Vec<(usize, usize)> {
    let same = |a: &Measurement, b: &Measurement| {
        a.bench == b.bench && a.case == b.case && a.size == b.size
    };
    ms.iter()
        .enumerate()
        .filter(|(_, m)| m.contender != XLOG)
        .filter_map(|(i, m)| {
            let ours = ms[..i]
                .iter()
                .rposition(|o| o.contender == XLOG && same(o, m))?;
            Some((ours, i))
        })
        .collect()
}

/// Runs `body`, the timed part of a host-cost bench, in `n` fresh processes of this
/// executable, one after another, and keeps each case's figures from one of them:
/// the process whose ratio against the case's first peer (the raw driver, where
/// the case has it) is the median of the `n` (see [`median_pairs`]).
///
/// Host costs move by several per cent from one process to the next on the same
/// machine (where code and data land), more than between the rounds of one
/// process, so a verdict taken from one process is a draw. Each pair kept was
/// still timed in one process's interleaved rounds, and all of a case's pairs come
/// from the same process, so its table rows and plot bars agree; each row prints
/// every process's ratio against its peer after the kept one.
///
/// A started process (`XLOG_BENCH_PROCESS` set) runs everything its `main` does
/// before calling `in_processes` again, then `body`, and exits there: call it once
/// per bench, after the setup every process needs. Its figures go to a results
/// file of its own; the lines `body` prints that are not table rows (notes such as
/// a contender left out) are passed on from the first process. Panics if a process
/// fails or the processes did not record the same pairs.
pub fn in_processes(n: usize, body: impl FnOnce()) {
    if std::env::var_os(PROCESS_ENV).is_some() {
        println!("{BODY_STARTS}");
        body();
        std::process::exit(0);
    }
    let exe = std::env::current_exe().expect("the bench's own executable");
    let runs: Vec<(Vec<Measurement>, String)> = (0..n).map(|i| run_process(&exe, i)).collect();
    let figures: Vec<Vec<Measurement>> = runs.iter().map(|(ms, _)| ms.clone()).collect();
    for (x, p, ratios) in median_pairs(&figures) {
        let case = Case {
            bench: &x.bench,
            case: &x.case,
            size: x.size,
            unit: &x.unit,
        };
        case.record(XLOG, x.value);
        case.record(&p.contender, p.value);
        let all: Vec<String> = ratios.iter().map(|r| format!("{r:.3}")).collect();
        let note = format!(" (processes: {})", all.join(", "));
        case.print_row(x.value, p.value, &p.contender, &note);
    }
    // After the table, which a line of text would cut short.
    let notes = runs[0].1.lines().skip_while(|l| *l != BODY_STARTS).skip(1);
    let notes: Vec<&str> = notes
        .filter(|l| !l.trim().is_empty() && !l.starts_with('|'))
        .collect();
    if !notes.is_empty() {
        println!();
    }
    for note in notes {
        println!("{note}");
    }
}

/// The line a started process prints before `body`'s output.
const BODY_STARTS: &str = "<!-- xlog bench: the timed part starts -->";

/// Of the processes' figures `runs`, every xlog–peer pair (see [`pairs`]) from one
/// process per case (bench, case and size): the process whose ratio in the case's
/// first pair is the median of all processes' (the upper one of an even count).
/// Each pair comes with every process's ratio for it, in process order. Panics if
/// the processes did not record the same pairs in the same order, or none.
///
/// ```
/// use xlog_test_support::bench::{median_pairs, Measurement, XLOG};
///
/// let m = |contender: &str, value: f64| Measurement::ns("b", "c", contender, value);
/// let runs = [
///     vec![m(XLOG, 12.0), m("raw", 10.0)],
///     vec![m(XLOG, 30.0), m("raw", 20.0)],
///     vec![m(XLOG, 11.0), m("raw", 10.0)],
/// ];
/// let [(x, p, ratios)] = &median_pairs(&runs)[..] else { panic!() };
/// assert_eq!((x.value, p.value), (12.0, 10.0)); // ratios 1.2, 1.5, 1.1
/// assert_eq!(ratios, &[1.2, 1.5, 1.1]);
/// ```
pub fn median_pairs(runs: &[Vec<Measurement>]) -> Vec<(Measurement, Measurement, Vec<f64>)> {
    type Pair<'a> = (&'a Measurement, &'a Measurement);
    let per_process: Vec<Vec<Pair<'_>>> = runs
        .iter()
        .map(|ms| {
            pairs(ms)
                .into_iter()
                .map(|(x, p)| (&ms[x], &ms[p]))
                .collect()
        })
        .collect();
    let case = |(x, _): &Pair<'_>| (x.bench.clone(), x.case.clone(), x.size);
    let key = |pair: &Pair<'_>| (case(pair), pair.1.contender.clone());
    let ratio = |(x, p): &Pair<'_>| x.value / p.value;
    let first = per_process.first().map(Vec::as_slice).unwrap_or_default();
    assert!(!first.is_empty(), "the bench recorded no xlog–peer pair");
    let same = per_process.iter().all(|pairs| {
        pairs.len() == first.len() && pairs.iter().zip(first).all(|(a, b)| key(a) == key(b))
    });
    assert!(
        same,
        "every process records the same pairs in the same order"
    );
    // The process each case keeps, chosen at the case's first pair.
    type CaseKey = (String, String, Option<u64>);
    let mut chosen: Vec<(CaseKey, usize)> = Vec::new();
    (0..first.len())
        .map(|k| {
            let ratios: Vec<f64> = per_process.iter().map(|pairs| ratio(&pairs[k])).collect();
            let this = case(&first[k]);
            let kept = match chosen.iter().find(|(c, _)| *c == this) {
                Some(&(_, process)) => process,
                None => {
                    let mut order: Vec<usize> = (0..ratios.len()).collect();
                    order.sort_by(|&a, &b| ratios[a].total_cmp(&ratios[b]));
                    chosen.push((this, order[order.len() / 2]));
                    order[order.len() / 2]
                }
            };
            let (x, p) = per_process[kept][k];
            (x.clone(), p.clone(), ratios)
        })
        .collect()
}

/// Runs this executable as process `index` of [`in_processes`]; what it recorded
/// and what it printed.
fn run_process(exe: &std::path::Path, index: usize) -> (Vec<Measurement>, String) {
    let file =
        std::env::temp_dir().join(format!("xlog-bench-{}-{index}.jsonl", std::process::id()));
    let _ = std::fs::remove_file(&file);
    let out = std::process::Command::new(exe)
        .args(std::env::args_os().skip(1))
        .env(PROCESS_ENV, index.to_string())
        .env(RESULTS_ENV, &file)
        .stderr(std::process::Stdio::inherit())
        .output();
    let text = std::fs::read_to_string(&file).unwrap_or_default();
    let _ = std::fs::remove_file(&file);
    let out = out.unwrap_or_else(|e| panic!("cannot start {}: {e}", exe.display()));
    let printed = String::from_utf8_lossy(&out.stdout).into_owned();
    if !out.status.success() {
        print!("{printed}");
        panic!("bench process {index} failed: {}", out.status);
    }
    let figures = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("a results line is a measurement"))
        .collect();
    (figures, printed)
}

/// The bound a ratio (xlog's figure over the peer's) must keep.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Bound {
    /// For costs: the ratio must be at most this.
    AtMost(f64),
    /// For bandwidths and rates: the ratio must be at least this.
    AtLeast(f64),
}

impl Bound {
    /// Whether `ratio` keeps the bound.
    pub fn met(self, ratio: f64) -> bool {
        match self {
            Bound::AtMost(b) => ratio <= b,
            Bound::AtLeast(b) => ratio >= b,
        }
    }
}

impl fmt::Display for Bound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Bound::AtMost(b) => write!(f, "≤ {b:.2}"),
            Bound::AtLeast(b) => write!(f, "≥ {b:.2}"),
        }
    }
}

/// xlog's target against one peer in one bench.
#[derive(Clone, Copy, Debug)]
pub struct Target {
    /// The bench's id.
    pub bench: &'static str,
    /// The cases it applies to, by prefix; `""` for every case of the bench.
    pub case_prefix: &'static str,
    /// The peer's contender name.
    pub peer: &'static str,
    /// The bound on xlog's figure over the peer's.
    pub bound: Bound,
}

/// Peer names shared by the benches and [`TARGETS`].
pub mod peer {
    /// A raw `cuLaunchKernel` of the same entry point.
    pub const RAW_LAUNCH: &str = "raw cuLaunchKernel";
    /// PyTorch's `CUDAGraph.replay` of the same chain, timed in the same run.
    pub const TORCH_GRAPH: &str = "PyTorch CUDA graph replay";
    /// PyTorch issuing the same chain kernel by kernel.
    pub const TORCH_DIRECT: &str = "PyTorch direct launches";
    /// The same kernels as xlog typed launches issued one by one.
    pub const XLOG_DIRECT: &str = "xlog direct typed launches";
    /// The same kernels recorded into one graph as a single chain.
    pub const XLOG_ONE_CHAIN: &str = "xlog graph, one chain";
    /// The same graph replayed without an update.
    pub const XLOG_UNCHANGED: &str = "xlog graph, unchanged replay";
    /// cudarc's `launch_builder`.
    pub const CUDARC: &str = "cudarc launch_builder";
    /// CubeCL (CUDA runtime, JIT through NVRTC), scalar kernel.
    pub const CUBECL: &str = "CubeCL";
    /// CubeCL with 4-wide vectors.
    pub const CUBECL_VEC4: &str = "CubeCL (4-wide vectors)";
    /// CubeCL's sum of a whole tensor over many cubes (`cubek_reduce::shared_sum`).
    pub const CUBECL_SHARED_SUM: &str = "CubeCL shared_sum";
    /// CubeCL's axis reduction (`cubek_reduce::reduce`, `Sum`, cube routine).
    pub const CUBECL_REDUCE: &str = "CubeCL reduce";
    /// The same kernel in CUDA C++, compiled by NVRTC and launched raw.
    pub const NVRTC: &str = "CUDA C++ via NVRTC";
    /// The vectorised kernel in CUDA C++ (`float4` loads and stores), via NVRTC.
    pub const NVRTC_VEC4: &str = "CUDA C++ float4 via NVRTC";
    /// A device-to-device copy of one input (`cuMemcpyDtoDAsync`).
    pub const D2D: &str = "device-to-device copy";
    /// Raw `cuMemAllocAsync` + `cuMemFreeAsync` on the same stream.
    pub const RAW_ALLOC: &str = "raw cuMemAllocAsync/cuMemFreeAsync";
    /// xlog itself from one host thread (the baseline of the scaling case).
    pub const XLOG_ONE_THREAD: &str = "xlog, 1 thread";
    /// xlog's stack without the caching pool (`budget(async)`), in the same process.
    pub const XLOG_WITHOUT_POOL: &str = "xlog without the pool";
    /// PyTorch's `tensor.to("cuda", non_blocking=True)` from pinned memory, and
    /// `pinned.copy_(gpu_tensor, non_blocking=True)` back, each synchronised.
    pub const TORCH_PINNED: &str = "torch non_blocking copy from/to pinned";
    /// `torch.cuda.nccl.all_reduce` over the GPUs of one process (NCCL's
    /// `ncclCommInitAll` communicators, as xlog's `Communicator::init_all`).
    pub const TORCH_NCCL: &str = "torch.cuda.nccl.all_reduce";
    /// `dst.copy_(src)` between tensors on two GPUs (PyTorch's peer copy).
    pub const TORCH_PEER_COPY: &str = "torch copy_ across GPUs";
    /// The same chunks on one stream with blocking copies from and to pageable memory.
    pub const BLOCKING_COPIES: &str = "blocking copies, one stream";
    /// `cupy.sum` with CuPy's CUB accelerator (`cub::DeviceReduce`).
    pub const CUPY_SUM: &str = "CuPy sum (CUB)";
    /// `torch.cumsum` (`cub::DeviceScan`).
    pub const TORCH_CUMSUM: &str = "torch.cumsum (CUB)";
    /// `torch.bincount`.
    pub const TORCH_BINCOUNT: &str = "torch.bincount";
    /// Tensor indexing `x[idx]` with `int64` indices.
    pub const TORCH_INDEXING: &str = "torch indexing";
    /// `Tensor.index_copy_` with `int64` indices.
    pub const TORCH_INDEX_COPY: &str = "torch index_copy_";
    /// `torch.masked_select` (CUB's select).
    pub const TORCH_MASKED_SELECT: &str = "torch.masked_select";
    /// `torch.unique_consecutive(x, return_counts=True)` (CUB's run-length encode).
    pub const TORCH_UNIQUE_CONSECUTIVE: &str = "torch.unique_consecutive";
    /// `torch.segment_reduce(x, "sum", lengths=...)`.
    pub const TORCH_SEGMENT_REDUCE: &str = "torch.segment_reduce";
    /// `cupy.sort` (`cub::DeviceRadixSort`).
    pub const CUPY_SORT: &str = "cupy.sort (CUB)";
    /// `torch.sort` (`cub::DeviceRadixSort`, pairs).
    pub const TORCH_SORT: &str = "torch.sort (CUB)";
    /// xlog's random gather of `f32` by `u64` indices, as long as the probe.
    pub const GATHER_U64: &str = "xlog random gather f32 (u64 indices)";
    /// xlog's random gather of `f32` by `u32` indices, as long as the probe.
    pub const GATHER_U32: &str = "xlog random gather f32 (u32 indices)";
}

/// Every target the benches are held to. A ratio is xlog's figure over the peer's:
/// host costs must stay at or below their bound, bandwidths and rates at or above.
pub const TARGETS: &[Target] = &[
    // The tiled transpose against the textbook CUDA C++ one (32 × 32 tile padded
    // to 33 columns, 32 × 8 threads), same matrix, same process.
    t(
        "single_pass",
        "transpose",
        "CUDA C++ 32×32 padded-tile transpose via NVRTC",
        Bound::AtLeast(0.85),
    ),
    // Typed launch of a 3-buffer kernel (elementwise add).
    // A regression guard since graphs took over the launch-bound workloads.
    t(
        "typed_launch",
        "same stream",
        peer::RAW_LAUNCH,
        Bound::AtMost(1.10),
    ),
    // Graph replay of 500 small kernels in a chain, end to end per kernel.
    t(
        "graph_replay",
        "chain of 500, end to end",
        peer::TORCH_GRAPH,
        Bound::AtMost(1.05),
    ),
    t(
        "graph_replay",
        "chain of 500, end to end",
        peer::XLOG_DIRECT,
        Bound::AtMost(1.0 / 3.0),
    ),
    t(
        "graph_replay",
        "4 chains of 100",
        peer::XLOG_ONE_CHAIN,
        Bound::AtMost(0.4),
    ),
    t(
        "graph_replay",
        "changed scalars",
        peer::XLOG_UNCHANGED,
        Bound::AtMost(1.2),
    ),
    t(
        "typed_launch",
        "cross-stream",
        peer::CUDARC,
        Bound::AtMost(1.0),
    ),
    // The same 3-buffer launch against the nearest peers, in one process.
    t("launch_peers", "", peer::RAW_LAUNCH, Bound::AtMost(1.05)),
    t(
        "launch_peers",
        "launch + sync",
        peer::CUBECL,
        Bound::AtMost(1.0),
    ),
    t("launch_peers", "", peer::CUDARC, Bound::AtMost(1.0)),
    // Untyped recorder launches (hand-written PTX).
    t(
        "launch_overhead",
        "same stream",
        peer::RAW_LAUNCH,
        Bound::AtMost(1.2),
    ),
    t(
        "launch_overhead",
        "cross-stream",
        peer::CUDARC,
        Bound::AtMost(1.0),
    ),
    // Launches per second from 8 threads on 8 streams, against the raw driver from
    // 8 threads: the driver itself scales only about 3× from one thread to 8 on the
    // GPU machines, so the bound is relative to it, not to xlog's one thread.
    t(
        "launch_overhead",
        "throughput, 8 threads on 8 streams",
        peer::RAW_LAUNCH,
        Bound::AtLeast(0.95),
    ),
    // Allocation through the default stack.
    t("alloc_free", "", peer::RAW_ALLOC, Bound::AtMost(1.3)),
    // Allocation through the caching pool: hot sizes from the host-side free list.
    t(
        "pool_alloc_free",
        "alloc+free, bytes",
        peer::RAW_ALLOC,
        Bound::AtMost(0.4),
    ),
    t(
        "pool_alloc_free",
        "throughput, 8 threads on 8 streams",
        peer::XLOG_ONE_THREAD,
        Bound::AtLeast(4.0),
    ),
    // Page-locked copies, both ways, against PyTorch's non-blocking copies.
    t("pinned_copy", "", peer::TORCH_PINNED, Bound::AtLeast(0.95)),
    // A chunked upload-kernel-download pipeline on three streams.
    t(
        "chunked_pipeline",
        "",
        peer::BLOCKING_COPIES,
        Bound::AtLeast(1.7),
    ),
    // Bandwidth of the Rust axpy.
    t("axpy_bandwidth", "", peer::CUBECL, Bound::AtLeast(1.0)),
    t("axpy_bandwidth", "", peer::CUBECL_VEC4, Bound::AtLeast(1.0)),
    t(
        "axpy_bandwidth",
        "axpy f32",
        peer::NVRTC,
        Bound::AtLeast(0.98),
    ),
    t("axpy_bandwidth", "axpy_vec", peer::D2D, Bound::AtLeast(1.0)),
    // The scalar kernel matches CUDA C++; the vectorised one reaches the copy.
    t(
        "elementwise_bandwidth",
        "axpy_f32",
        peer::NVRTC,
        Bound::AtLeast(0.98),
    ),
    t(
        "elementwise_bandwidth",
        "axpy_vec_f32",
        peer::NVRTC_VEC4,
        Bound::AtLeast(0.98),
    ),
    t(
        "elementwise_bandwidth",
        "axpy_vec_f32",
        peer::D2D,
        Bound::AtLeast(1.0),
    ),
    // The query-engine library against CUB (through CuPy and PyTorch), n = 10^8,
    // in elements per second.
    t("library", "sum f32", peer::CUPY_SUM, Bound::AtLeast(0.9)),
    t(
        "library",
        "inclusive scan i32",
        peer::TORCH_CUMSUM,
        Bound::AtLeast(0.9),
    ),
    t(
        "library",
        "histogram 256 bins",
        peer::TORCH_BINCOUNT,
        Bound::AtLeast(1.5),
    ),
    t(
        "library",
        "random gather f32",
        peer::TORCH_INDEXING,
        Bound::AtLeast(0.9),
    ),
    t(
        "library",
        "scatter f32",
        peer::TORCH_INDEX_COPY,
        Bound::AtLeast(0.9),
    ),
    t(
        "library",
        "select 50% f32",
        peer::TORCH_MASKED_SELECT,
        Bound::AtLeast(0.9),
    ),
    t(
        "library",
        "unique counts",
        peer::TORCH_UNIQUE_CONSECUTIVE,
        Bound::AtLeast(1.0),
    ),
    t(
        "library",
        "segmented sum",
        peer::TORCH_SEGMENT_REDUCE,
        Bound::AtLeast(1.0),
    ),
    // All-reduce over two GPUs of one process: bus bandwidth for large messages,
    // end-to-end time (host included) for a small one.
    t(
        "nccl_all_reduce",
        "bus bandwidth",
        peer::TORCH_NCCL,
        Bound::AtLeast(0.95),
    ),
    t(
        "nccl_all_reduce",
        "end to end",
        peer::TORCH_NCCL,
        Bound::AtMost(1.0),
    ),
    // A copy between two GPUs, bandwidth.
    t("peer_copy", "", peer::TORCH_PEER_COPY, Bound::AtLeast(0.9)),
    // Radix sort against CUB's, n = 10^8, keys per second.
    t("sort", "sort", peer::CUPY_SORT, Bound::AtLeast(1.0)),
    t("sort", "sort", peer::TORCH_SORT, Bound::AtLeast(1.0)),
    // The hash join's probes against a random gather of the same length.
    t("join", "", peer::GATHER_U64, Bound::AtLeast(0.8)),
    t("join", "", peer::GATHER_U32, Bound::AtLeast(0.8)),
];

const fn t(
    bench: &'static str,
    case_prefix: &'static str,
    peer: &'static str,
    bound: Bound,
) -> Target {
    Target {
        bench,
        case_prefix,
        peer,
        bound,
    }
}

/// The first of [`TARGETS`] for `peer` in `bench`'s `case`, if any.
pub fn target(bench: &str, case: &str, peer: &str) -> Option<&'static Target> {
    TARGETS
        .iter()
        .find(|t| t.bench == bench && t.peer == peer && case.starts_with(t.case_prefix))
}

/// Milliseconds one call of `f` takes on `s`, between two CUDA events recorded
/// around it.
#[cfg(feature = "gpu")]
pub fn event_ms(s: &xlog_runtime::Stream, f: &mut dyn FnMut()) -> f64 {
    use cudarc::driver::{result, sys};
    // SAFETY: fresh events recorded on a live stream, synchronised before use and
    // destroyed after.
    unsafe {
        let a = result::event::create(sys::CUevent_flags::CU_EVENT_DEFAULT).unwrap();
        let b = result::event::create(sys::CUevent_flags::CU_EVENT_DEFAULT).unwrap();
        result::event::record(a, s.raw()).unwrap();
        f();
        result::event::record(b, s.raw()).unwrap();
        result::event::synchronize(b).unwrap();
        let ms = result::event::elapsed(a, b).unwrap() as f64;
        result::event::destroy(a).unwrap();
        result::event::destroy(b).unwrap();
        ms
    }
}

/// The median [`event_ms`] of `f` over 30 rounds after 3 warm-ups.
#[cfg(feature = "gpu")]
pub fn median_event_ms(s: &xlog_runtime::Stream, f: &mut dyn FnMut()) -> f64 {
    let [ms] = interleaved(3, 30, [&mut || event_ms(s, f)], || {});
    ms
}

/// The CUB side of a bench, timed on the same GPU by a Python script (PyTorch and
/// CuPy call CUB): `XLOG_PYTHON` (default `python3`) runs `XLOG_CUB_SCRIPT` (default
/// `default_script`) with `args`, and each `case<TAB>milliseconds` line it prints
/// becomes an entry. Panics when the script fails: a comparison without its peer
/// is not a result.
pub fn cub_peers(default_script: &str, args: &[String]) -> std::collections::HashMap<String, f64> {
    python_peers("XLOG_CUB_SCRIPT", default_script, args)
}

/// As [`cub_peers`], for a script named by the environment variable `script_env`
/// (default `default_script`): the peer side of a bench timed by a Python script.
pub fn python_peers(
    script_env: &str,
    default_script: &str,
    args: &[String],
) -> std::collections::HashMap<String, f64> {
    let script = std::env::var(script_env).unwrap_or_else(|_| default_script.to_owned());
    let python = std::env::var("XLOG_PYTHON").unwrap_or_else(|_| "python3".to_owned());
    let output = std::process::Command::new(&python)
        .arg(&script)
        .args(args)
        .env_remove(RESULTS_ENV)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {python} {script}: {e}"));
    eprint!("{}", String::from_utf8_lossy(&output.stderr));
    assert!(
        output.status.success(),
        "{script} failed: {}",
        output.status
    );
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|l| {
            let (case, ms) = l.split_once('\t')?;
            Some((case.to_owned(), ms.trim().parse().ok()?))
        })
        .collect()
}

/// Prints (and records) one row per `(case, peer name)` of `cases`: xlog's
/// milliseconds `ours[case]` against `peers[case]`, both as rates of `n` elements
/// per call in `unit` (10^9 a second). Panics after the table when a peer figure is
/// missing.
pub fn peer_table(
    bench: &'static str,
    unit: &'static str,
    n: usize,
    cases: &[(&'static str, &'static str)],
    ours: &std::collections::HashMap<&str, f64>,
    peers: &std::collections::HashMap<String, f64>,
) {
    println!("| case | xlog | CUB peer | peer | ratio (xlog speed / peer speed) | target |");
    println!("| --- | --- | --- | --- | --- | --- |");
    let rate = |ms: f64| n as f64 / ms / 1e6;
    let mut missing = Vec::new();
    for &(case, peer) in cases {
        let c = Case {
            bench,
            case,
            size: Some(n as u64),
            unit,
        };
        let mine = ours[case];
        match peers.get(case) {
            Some(&theirs) => c.row(rate(mine), rate(theirs), peer),
            None => {
                c.record(XLOG, rate(mine));
                missing.push(case);
            }
        }
        println!(
            "<!-- {case}: xlog {mine:.3} ms, {peer} {} -->",
            peers
                .get(case)
                .map_or("missing".to_owned(), |ms| format!("{ms:.3} ms"))
        );
    }
    assert!(missing.is_empty(), "no CUB figure for {missing:?}");
}

/// Device 0's runtime; without one, says why and exits with status 2 (a bench
/// cannot pass without a GPU).
#[cfg(feature = "gpu")]
pub fn runtime_or_exit() -> xlog_runtime::Runtime {
    xlog_runtime::Runtime::get(0).unwrap_or_else(|e| {
        eprintln!("benchmarks need a GPU: {e}");
        std::process::exit(2);
    })
}

/// Entry point `kernel` of `image` as a cudarc function, for peers that launch
/// xlog's own device code through cudarc: the kernel's cubin for the device's
/// architecture when the image carries one (the machine code xlog launches), else
/// the image's PTX, which the driver compiles whole. Panics when the image has no
/// such kernel or the driver refuses it (a bench's setup failing).
#[cfg(feature = "gpu")]
pub fn cudarc_function(
    ctx: &std::sync::Arc<cudarc::driver::CudaContext>,
    image: &xlog_runtime::ModuleImage,
    kernel: &str,
) -> cudarc::driver::CudaFunction {
    let (major, minor) = ctx
        .compute_capability()
        .expect("the device's compute capability");
    let cubin = image
        .cubins_for(&format!("sm_{major}{minor}"))
        .zip(image.kernel_index(kernel))
        .map(|(cubins, i)| cubins[i]);
    let code = match cubin {
        Some(bytes) => cudarc::nvrtc::Ptx::from_binary(bytes.to_vec()),
        None => cudarc::nvrtc::Ptx::from_src(image.ptx()),
    };
    ctx.load_module(code)
        .and_then(|m| m.load_function(kernel))
        .unwrap_or_else(|e| panic!("loading {kernel} of {} through cudarc: {e}", image.name()))
}

/// Prints the title, the device and the host-cost table's header ([`Case::row`] prints
/// its rows); exits with status 2 without a GPU.
#[cfg(feature = "gpu")]
pub fn header(title: &str) {
    let rt = runtime_or_exit();
    let info = rt.device().info();
    println!("## {title}");
    println!();
    println!(
        "device: {} (sm_{}{}), {}",
        info.name,
        info.compute_capability.0,
        info.compute_capability.1,
        std::env::consts::ARCH
    );
    println!();
    println!("| scenario | xlog | peer | peer name | ratio (xlog/peer) | target |");
    println!("| --- | --- | --- | --- | --- | --- |");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(case: &str, contender: &str, value: f64) -> Measurement {
        Measurement::ns("b", case, contender, value)
    }

    /// A case's pairs all come from one process: the one whose ratio against the
    /// case's first peer is the median; the next case chooses again.
    #[test]
    fn each_case_keeps_the_median_process_of_its_first_peer() {
        let run = |x: f64, raw: f64, cudarc: f64, other: f64| {
            vec![
                m("c", XLOG, x),
                m("c", "raw", raw),
                m("c", "cudarc", cudarc),
                m("d", XLOG, other),
                m("d", "raw", 10.0),
            ]
        };
        let runs = [
            run(10.0, 10.0, 20.0, 30.0),
            run(12.0, 10.0, 12.0, 10.0),
            run(11.0, 10.0, 44.0, 20.0),
        ];
        let kept = median_pairs(&runs);
        let got: Vec<(&str, f64, f64, &str)> = kept
            .iter()
            .map(|(x, p, _)| (x.case.as_str(), x.value, p.value, p.contender.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("c", 11.0, 10.0, "raw"),
                ("c", 11.0, 44.0, "cudarc"),
                ("d", 20.0, 10.0, "raw")
            ]
        );
        assert_eq!(kept[1].2, [0.5, 1.0, 0.25]);
    }

    /// A case recorded again after another keeps the process it chose first.
    #[test]
    fn a_case_keeps_its_process_when_it_comes_back() {
        let run = |a: f64, b: f64, again: f64| {
            vec![
                m("a", XLOG, a),
                m("a", "raw", 10.0),
                m("b", XLOG, b),
                m("b", "raw", 10.0),
                m("a", XLOG, again),
                m("a", "cudarc", 10.0),
            ]
        };
        let runs = [
            run(10.0, 30.0, 1.0),
            run(30.0, 10.0, 2.0),
            run(20.0, 20.0, 3.0),
        ];
        let kept: Vec<f64> = median_pairs(&runs).iter().map(|(x, ..)| x.value).collect();
        assert_eq!(kept, [20.0, 20.0, 3.0]);
    }

    /// A process that recorded a pair more than the first is refused too.
    #[test]
    #[should_panic(expected = "same pairs")]
    fn a_process_with_extra_pairs_is_refused() {
        let runs = [
            vec![m("c", XLOG, 1.0), m("c", "raw", 1.0)],
            vec![m("c", XLOG, 1.0), m("c", "raw", 1.0), m("c", "cudarc", 1.0)],
        ];
        median_pairs(&runs);
    }

    #[test]
    #[should_panic(expected = "same pairs")]
    fn processes_that_recorded_different_pairs_are_refused() {
        let runs = [
            vec![m("c", XLOG, 1.0), m("c", "raw", 1.0)],
            vec![m("c", XLOG, 1.0), m("c", "cudarc", 1.0)],
        ];
        median_pairs(&runs);
    }

    #[test]
    fn targets_match_by_bench_case_prefix_and_peer() {
        let t = target("typed_launch", "same stream", peer::RAW_LAUNCH).unwrap();
        assert_eq!(t.bound, Bound::AtMost(1.10));
        assert!(target(
            "typed_launch",
            "cross-stream (alternating)",
            peer::RAW_LAUNCH
        )
        .is_none());
        assert!(target("launch_peers", "caller thread", peer::CUBECL).is_none());
        assert!(target("alloc_free", "alloc+free", peer::RAW_ALLOC).is_some());
        assert!(Bound::AtMost(1.3).met(1.3) && !Bound::AtMost(1.3).met(1.31));
        assert!(Bound::AtLeast(1.0).met(1.2) && !Bound::AtLeast(1.0).met(0.99));
        assert_eq!(Bound::AtLeast(0.98).to_string(), "≥ 0.98");
    }

    #[test]
    fn a_measurement_is_one_json_line_and_back() {
        let m = Measurement::ns("b", "c \"q\"", XLOG, 1.5);
        let line = serde_json::to_string(&m).unwrap();
        assert!(!line.contains('\n') && !line.contains("size"));
        assert_eq!(serde_json::from_str::<Measurement>(&line).unwrap(), m);
    }

    #[test]
    fn median_takes_the_middle_sample() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(vec![4.0, 1.0, 3.0, 2.0]), 3.0);
    }

    #[test]
    fn rounds_interleave_and_warm_up_first() {
        let log = std::cell::RefCell::new(Vec::new());
        let mut a = || {
            log.borrow_mut().push('a');
            1.0
        };
        let mut b = || {
            log.borrow_mut().push('b');
            2.0
        };
        let got = interleaved(1, 3, [&mut a, &mut b], || log.borrow_mut().push('|'));
        assert_eq!(got, [1.0, 2.0]);
        // The warm-up in order, then ABBA: neither always runs right after the other.
        assert_eq!(
            log.into_inner().iter().collect::<String>(),
            "a|b|a|b|b|a|a|b|"
        );
    }
}
