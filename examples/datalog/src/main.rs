//! A Datalog fixpoint on the GPU: transitive closure or same generation over an
//! edge list, evaluated semi-naively with xlog's kernel library.
//!
//! ```text
//! path(x, y) :- edge(x, y).              sg(x, y) :- edge(p, x), edge(p, y), x != y.
//! path(x, z) :- path(x, y), edge(y, z).  sg(x, y) :- edge(a, x), sg(a, b), edge(b, y).
//! ```
//!
//! ```text
//! cargo run --release -p datalog -- <tc|sg> EDGES.tsv [--check] [--cpu] [--phases] [--trace] [--budget BYTES] [--piece TUPLES]
//! ```
//!
//! Each iteration joins the new tuples (the delta) with the edges (this crate's
//! kernels, over an edge index in compressed-row form), sorts the result, keeps
//! the tuples not known yet (`xlog_kernels::set::difference`, which also drops
//! duplicates) as the next delta, and merges them into the relation
//! (`xlog_kernels::set::merge`). A relation is two sorted runs of `u64` keys
//! `x << shift | y`: a long one, and a short one that takes each iteration's new
//! tuples and merges into the long one when it passes a quarter of its length. Prints `tuples N` and the timings; `--check` compares the
//! count with a CPU evaluation (ascent), `--cpu` times that evaluation on every
//! core, `--phases` synchronises after each phase to time it (slower overall),
//! `--budget` caps the device memory xlog may use, `--piece` the derived tuples
//! made at once (by default an eighth of the relation, at least 2^22).

mod cpu;

use std::fmt;
use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use datalog_kernels::{
    count, expand, off_diagonal, owners, SAME_GENERATION, TILE, TRANSITIVE_CLOSURE,
};
use xlog::prelude::*;
use xlog::DeviceBuffer;
use xlog_kernels::compact::select_flagged;
use xlog_kernels::scan::inclusive_sum;
use xlog_kernels::set::{difference, merge};
use xlog_kernels::sort::{sort_keys_low_bits, Order};

/// The two programs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Program {
    /// Transitive closure (`path`).
    Tc,
    /// Same generation (`sg`).
    Sg,
}

impl Program {
    /// The name of the relation it computes.
    fn relation(self) -> &'static str {
        match self {
            Program::Tc => "path",
            Program::Sg => "sg",
        }
    }

    /// Its number in the join kernels.
    fn kernel(self) -> u32 {
        match self {
            Program::Tc => TRANSITIVE_CLOSURE,
            Program::Sg => SAME_GENERATION,
        }
    }
}

/// The command line.
struct Args {
    program: Program,
    edges: String,
    check: bool,
    cpu: bool,
    phases: bool,
    trace: bool,
    budget: Option<usize>,
    piece: Option<usize>,
}

const USAGE: &str =
    "usage: datalog <tc|sg> EDGES.tsv [--check] [--cpu] [--phases] [--trace] [--budget BYTES] [--piece TUPLES]";

fn parse_args() -> Result<Args, String> {
    let mut it = std::env::args().skip(1);
    let program = match it.next().as_deref() {
        Some("tc") => Program::Tc,
        Some("sg") => Program::Sg,
        _ => return Err(USAGE.to_owned()),
    };
    let edges = it.next().ok_or(USAGE)?;
    let mut args = Args {
        program,
        edges,
        check: false,
        cpu: false,
        phases: false,
        trace: false,
        budget: None,
        piece: None,
    };
    while let Some(a) = it.next() {
        match a.as_str() {
            "--check" => args.check = true,
            "--cpu" => args.cpu = true,
            "--phases" => args.phases = true,
            "--trace" => {
                args.phases = true;
                args.trace = true;
            }
            "--budget" => {
                let v = it.next().ok_or(USAGE)?;
                args.budget = Some(v.parse().map_err(|_| format!("bad --budget {v}"))?);
            }
            "--piece" => {
                let v = it.next().ok_or(USAGE)?;
                args.piece = Some(v.parse().map_err(|_| format!("bad --piece {v}"))?);
            }
            other => return Err(format!("unknown argument {other}\n{USAGE}")),
        }
    }
    Ok(args)
}

/// Reads a tab- or space-separated edge list, one `source target` pair a line.
fn read_edges(path: &Path) -> Result<Vec<(u32, u32)>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let mut edges = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let mut cols = line.split_whitespace();
        let (Some(a), Some(b), None) = (cols.next(), cols.next(), cols.next()) else {
            if line.trim().is_empty() {
                continue;
            }
            return Err(format!(
                "{}:{}: expected two node ids (source and target), separated by a tab or spaces",
                path.display(),
                n + 1
            ));
        };
        let parse = |v: &str| {
            v.parse::<u32>()
                .map_err(|_| format!("{}:{}: `{v}` is not a node id", path.display(), n + 1))
        };
        edges.push((parse(a)?, parse(b)?));
    }
    if edges.len() > u32::MAX as usize {
        // The edge index numbers successors in u32.
        return Err(format!(
            "{}: {} edges, more than the {} this example indexes",
            path.display(),
            edges.len(),
            u32::MAX
        ));
    }
    Ok(edges)
}

/// The edge relation as an index: dense node ids, and each node's successors
/// in compressed-row form.
struct EdgeIndex {
    /// `offsets[v]..offsets[v + 1]` are node `v`'s successors in `targets`.
    offsets: Vec<u32>,
    /// Successors, by source, each list sorted and without duplicates.
    targets: Vec<u32>,
    /// Bits a dense node id needs.
    shift: u32,
}

impl EdgeIndex {
    /// Numbers the nodes densely (in order of their ids, so pairs keep their
    /// order) and sorts and deduplicates the edges.
    fn new(edges: &[(u32, u32)]) -> EdgeIndex {
        let mut ids: Vec<u32> = edges.iter().flat_map(|&(a, b)| [a, b]).collect();
        ids.sort_unstable();
        ids.dedup();
        let dense = |v: u32| ids.binary_search(&v).expect("every endpoint is numbered") as u32;
        let mut pairs: Vec<(u32, u32)> = edges.iter().map(|&(a, b)| (dense(a), dense(b))).collect();
        pairs.sort_unstable();
        pairs.dedup();
        let nodes = ids.len();
        let mut offsets = vec![0u32; nodes + 1];
        for &(a, _) in &pairs {
            offsets[a as usize + 1] += 1;
        }
        for v in 0..nodes {
            offsets[v + 1] += offsets[v];
        }
        let shift = (usize::BITS - nodes.saturating_sub(1).leading_zeros()).max(1);
        EdgeIndex {
            offsets,
            targets: pairs.iter().map(|&(_, b)| b).collect(),
            shift,
        }
    }

    /// The edges as relation keys, sorted.
    fn keys(&self) -> Vec<u64> {
        let mut keys = Vec::with_capacity(self.targets.len());
        for v in 0..self.offsets.len() - 1 {
            let (lo, hi) = (self.offsets[v] as usize, self.offsets[v + 1] as usize);
            keys.extend(
                self.targets[lo..hi]
                    .iter()
                    .map(|&t| (v as u64) << self.shift | t as u64),
            );
        }
        keys
    }
}

/// Time spent in each phase (measured only with `--phases`).
#[derive(Default)]
struct Phases {
    join: Duration,
    sort: Duration,
    difference: Duration,
    merge: Duration,
}

/// What one evaluation found.
struct Outcome {
    tuples: usize,
    iterations: usize,
    /// From the edge list in host memory to the count on the host.
    solve: Duration,
    phases: Option<Phases>,
    peak_bytes: Option<usize>,
    allocations: Option<usize>,
}

/// A failure, with the relation and step it happened in.
struct Failure {
    step: String,
    error: Box<xlog::Error>,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.step, self.error)
    }
}

/// Attaches the step to an xlog error.
trait Step<T> {
    fn during(self, step: impl FnOnce() -> String) -> Result<T, Failure>;
}

impl<T> Step<T> for xlog::Result<T> {
    fn during(self, step: impl FnOnce() -> String) -> Result<T, Failure> {
        self.map_err(|error| Failure {
            step: step(),
            error: Box::new(error),
        })
    }
}

/// Times the phases when asked: each phase ends with a synchronisation.
struct Clock<'a> {
    s: &'a Stream,
    phases: Option<Phases>,
    at: Instant,
}

impl Clock<'_> {
    /// Ends the current phase, adding its time to `pick`'s field.
    fn lap(&mut self, pick: fn(&mut Phases) -> &mut Duration) -> xlog::Result<()> {
        if let Some(p) = &mut self.phases {
            self.s.synchronize()?;
            let now = Instant::now();
            *pick(p) += now - self.at;
            self.at = now;
        }
        Ok(())
    }
}

/// A relation as two sorted runs of distinct keys that share none: a long one
/// and a short one that the new tuples of each iteration merge into. The short run
/// merges into the long one when it passes a quarter of its length, so an
/// iteration's merge costs the short run's length, not the relation's.
struct Relation {
    long: DeviceBuffer<u64>,
    short: DeviceBuffer<u64>,
}

impl Relation {
    /// The number of tuples.
    fn len(&self) -> usize {
        self.long.len() + self.short.len()
    }

    /// The distinct tuples of sorted `derived` that the relation lacks.
    /// `derived` is freed as soon as it is no longer needed.
    fn subtract(&self, s: &Stream, derived: DeviceBuffer<u64>) -> xlog::Result<DeviceBuffer<u64>> {
        let fresh = difference(s, &derived, &self.long)?;
        drop(derived);
        if self.short.is_empty() {
            return Ok(fresh);
        }
        difference(s, &fresh, &self.short)
    }

    /// Adds `fresh` (sorted, distinct, new to the relation).
    fn add(&mut self, s: &Stream, fresh: &DeviceBuffer<u64>) -> xlog::Result<()> {
        self.short = merge(s, &self.short, fresh)?;
        if self.short.len() > self.long.len() / 4 {
            self.long = merge(s, &self.long, &self.short)?;
            self.short = s.runtime()?.alloc_zeroed_on::<u64>(s, 0)?;
        }
        Ok(())
    }
}

/// What every step of one evaluation shares.
struct Context<'a> {
    s: &'a Stream,
    program: Program,
    /// The edge index on the device.
    offsets: DeviceBuffer<u32>,
    targets: DeviceBuffer<u32>,
    /// Bits of a node id, and of a pair.
    shift: u32,
    bits: u32,
    /// Keeps only pairs `(x, y)` with `x != y` (same generation's first rule).
    off_diagonal: bool,
}

/// A join step's matches counted: `ends` is the inclusive scan of each delta
/// tuple's number of matches, `total` their sum.
struct Matches {
    ends: DeviceBuffer<u64>,
    total: usize,
}

impl Context<'_> {
    /// Counts the matches of each tuple of `delta` (synchronises to read the
    /// total).
    fn count(&self, delta: &DeviceBuffer<u64>) -> xlog::Result<Matches> {
        let (s, n) = (self.s, delta.len());
        let mut counts = s.runtime()?.alloc_zeroed_on::<u64>(s, n)?;
        let cfg = LaunchConfig::for_len(n);
        let program = self.program.kernel();
        count::launch(
            s,
            cfg,
            delta,
            &self.offsets,
            self.shift,
            program,
            &mut counts,
        )?;
        let ends = inclusive_sum(s, &counts)?;
        let total = ends.slice(n - 1..n).download(s)?[0] as usize;
        Ok(Matches { ends, total })
    }

    /// The derived tuples at output positions `range` of `delta`'s matches,
    /// unsorted.
    fn derive(
        &self,
        delta: &DeviceBuffer<u64>,
        m: &Matches,
        range: std::ops::Range<usize>,
    ) -> xlog::Result<DeviceBuffer<u64>> {
        let s = self.s;
        let rt = s.runtime()?;
        let first = range.start as u64;
        let mut bounds = rt.alloc_zeroed_on::<u64>(s, range.len().div_ceil(TILE) + 1)?;
        owners::launch(
            s,
            LaunchConfig::for_len(bounds.len()),
            &m.ends,
            first,
            &mut bounds,
        )?;
        let mut out = rt.alloc_zeroed_on::<u64>(s, range.len())?;
        let cfg = LaunchConfig::for_len(range.len());
        let (o, t, sh) = (&self.offsets, &self.targets, self.shift);
        let p = self.program.kernel();
        expand::launch(
            s, cfg, delta, &m.ends, &bounds, o, t, sh, p, first, &mut out,
        )?;
        if !self.off_diagonal {
            return Ok(out);
        }
        let mut flags = rt.alloc_zeroed_on::<u8>(s, out.len())?;
        off_diagonal::launch(s, cfg, &out, sh, &mut flags)?;
        select_flagged(s, &out, &flags)
    }

    /// One semi-naive step: the tuples derived from `delta` that `full` lacks,
    /// sorted and distinct. The derived tuples are made, sorted and subtracted in
    /// pieces of at most `piece` tuples, so their memory stays bounded however
    /// many there are; each piece's new tuples are merged into those of the
    /// pieces before it.
    fn step(
        &self,
        delta: &DeviceBuffer<u64>,
        full: &Relation,
        piece: usize,
        clock: &mut Clock<'_>,
        trace: &mut Trace,
    ) -> Result<DeviceBuffer<u64>, Failure> {
        let (s, rel, it) = (self.s, self.program.relation(), trace.iteration);
        if delta.is_empty() {
            return s
                .runtime()
                .and_then(|rt| rt.alloc_zeroed_on::<u64>(s, 0))
                .during(|| "allocating".into());
        }
        let m = self.count(delta).during(|| {
            format!(
                "iteration {it}: counting the matches of {} new {rel} tuples",
                delta.len()
            )
        })?;
        trace.derived = m.total;
        trace.pieces = 0;
        let mut fresh: Option<DeviceBuffer<u64>> = None;
        for first in (0..m.total).step_by(piece.max(1)) {
            let range = first..m.total.min(first + piece);
            let len = range.len();
            trace.pieces += 1;
            let mut derived = self.derive(delta, &m, range).during(|| {
                format!(
                    "iteration {it}: deriving {len} {rel} tuples ({} bytes)",
                    len * 8
                )
            })?;
            clock.lap(|p| &mut p.join).during(|| "timing".into())?;
            sort_keys_low_bits(s, &mut derived, Order::Ascending, self.bits).during(|| {
                format!(
                    "iteration {it}: sorting {len} derived {rel} tuples ({} bytes)",
                    len * 8
                )
            })?;
            clock.lap(|p| &mut p.sort).during(|| "timing".into())?;
            let new = full.subtract(s, derived).during(|| {
                format!(
                    "iteration {it}: subtracting {rel} ({} tuples) from {len} derived ones",
                    full.len()
                )
            })?;
            fresh = Some(match fresh {
                None => new,
                // Tuples new to the relation may repeat those of earlier pieces.
                Some(before) => {
                    let (n, b) = (new.len(), before.len());
                    let merged = difference(s, &new, &before).and_then(|unseen| {
                        drop(new);
                        merge(s, &before, &unseen)
                    });
                    merged.during(|| {
                        format!("iteration {it}: merging {n} new {rel} tuples into the {b} of earlier pieces")
                    })?
                }
            });
            clock
                .lap(|p| &mut p.difference)
                .during(|| "timing".into())?;
        }
        match fresh {
            Some(f) => Ok(f),
            None => s
                .runtime()
                .and_then(|rt| rt.alloc_zeroed_on::<u64>(s, 0))
                .during(|| "allocating".into()),
        }
    }
}

/// What `--trace` prints of an iteration.
#[derive(Default)]
struct Trace {
    iteration: usize,
    derived: usize,
    pieces: usize,
}

/// The most derived tuples made at once for a relation of `full` tuples: `fixed`
/// when given (`--piece`), else an eighth of the relation and at least 2^22 (each
/// costs about 25 bytes while it is sorted and subtracted).
fn piece_len(full: usize, fixed: Option<usize>) -> usize {
    fixed.unwrap_or((full / 8).max(1 << 22)).max(1)
}

/// Evaluates `program` over `edges` on the GPU (or the simulator).
fn solve(
    rt: &Runtime,
    program: Program,
    edges: &[(u32, u32)],
    phases: bool,
    trace: bool,
    piece: Option<usize>,
) -> Result<Outcome, Failure> {
    let start = Instant::now();
    let rel = program.relation();
    let s = rt.stream().during(|| "opening a stream".into())?;
    let index = EdgeIndex::new(edges);
    let shift = index.shift;
    let mut cx = Context {
        s: &s,
        program,
        offsets: rt
            .upload_on(&s, &index.offsets)
            .during(|| "uploading the edge index".into())?,
        targets: rt
            .upload_on(&s, &index.targets)
            .during(|| "uploading the edge index".into())?,
        shift,
        bits: 2 * shift,
        off_diagonal: false,
    };
    let mut clock = Clock {
        s: &s,
        phases: phases.then(Phases::default),
        at: Instant::now(),
    };
    let mut t = Trace::default();

    // The first rule gives the first delta, which is also the whole relation so far.
    let mut delta = match program {
        Program::Tc => rt
            .upload_on(&s, &index.keys())
            .during(|| "uploading edge".into())?,
        Program::Sg => {
            // `edge(p, x), edge(p, y)` is the recursive rule's join applied to the
            // pairs `(p, p)`; then `x != y`.
            let diagonal: Vec<u64> = (0..index.offsets.len() as u64 - 1)
                .filter(|&p| index.offsets[p as usize + 1] > index.offsets[p as usize])
                .map(|p| p << shift | p)
                .collect();
            let seed = rt
                .upload_on(&s, &diagonal)
                .during(|| "uploading sg's seed".into())?;
            let none = Relation {
                long: rt
                    .alloc_zeroed_on::<u64>(&s, 0)
                    .during(|| "allocating".into())?,
                short: rt
                    .alloc_zeroed_on::<u64>(&s, 0)
                    .during(|| "allocating".into())?,
            };
            cx.off_diagonal = true;
            let first = cx.step(&seed, &none, piece_len(0, piece), &mut clock, &mut t)?;
            cx.off_diagonal = false;
            first
        }
    };
    let mut full = {
        let mut f = rt
            .alloc_zeroed_on::<u64>(&s, delta.len())
            .during(|| format!("allocating {rel}"))?;
        f.copy_from(&s, &delta)
            .during(|| format!("copying {rel}"))?;
        let short = rt
            .alloc_zeroed_on::<u64>(&s, 0)
            .during(|| "allocating".into())?;
        Relation { long: f, short }
    };
    clock.at = Instant::now();
    let mut iterations = 0;
    while !delta.is_empty() {
        iterations += 1;
        t.iteration = iterations;
        let fresh = cx.step(
            &delta,
            &full,
            piece_len(full.len(), piece),
            &mut clock,
            &mut t,
        )?;
        // The old delta is done with: free it before the merge, which may copy
        // the whole relation.
        let delta_len = std::mem::replace(&mut delta, fresh).len();
        if !delta.is_empty() {
            full.add(&s, &delta).during(|| {
                format!(
                    "iteration {iterations}: merging {} new tuples into {rel}, which grows to {} tuples ({} bytes)",
                    delta.len(),
                    full.len() + delta.len(),
                    (full.len() + delta.len()) * 8
                )
            })?;
        }
        clock.lap(|p| &mut p.merge).during(|| "timing".into())?;
        if trace {
            let p = clock.phases.as_ref().expect("--trace times the phases");
            let peak = rt.stats().map_or(0, |st| st.peak_bytes);
            eprintln!(
                "iteration {iterations}: delta {delta_len} derived {} in {} pieces, fresh {}, {rel} {} (peak so far {peak} bytes) | cumulative join {} sort {} difference {} merge {}",
                t.derived,
                t.pieces,
                delta.len(),
                full.len(),
                ms(p.join),
                ms(p.sort),
                ms(p.difference),
                ms(p.merge)
            );
        }
    }
    s.synchronize().during(|| "synchronising".into())?;
    let stats = rt.stats();
    Ok(Outcome {
        tuples: full.len(),
        iterations,
        solve: start.elapsed(),
        phases: clock.phases,
        peak_bytes: stats.map(|st| st.peak_bytes),
        allocations: stats.map(|st| st.total_count),
    })
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let wall = Instant::now();
    let edges = match read_edges(Path::new(&args.edges)) {
        Ok(e) => e,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let read = wall.elapsed();
    let mut builder = Runtime::builder(0);
    if let Some(b) = args.budget {
        builder = builder.budget(b);
    }
    let rt = match builder.build() {
        Ok(rt) => rt,
        Err(e) if e.is_no_gpu() => {
            eprintln!("error: this example needs an NVIDIA GPU: {e}");
            eprintln!("hint: run it on xlog's CPU simulator instead (small graphs): XLOG_BACKEND=sim cargo run --release -p datalog -- ...");
            return ExitCode::from(2);
        }
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    let info = rt.device().info();
    println!(
        "device: {} ({})",
        info.name,
        if xlog::sim::is_active() {
            "simulator"
        } else {
            "GPU"
        }
    );
    println!("edges: {} read in {}", edges.len(), ms(read));
    let out = match solve(
        &rt,
        args.program,
        &edges,
        args.phases,
        args.trace,
        args.piece,
    ) {
        Ok(o) => o,
        Err(f) => {
            eprintln!("error: {f}");
            return ExitCode::FAILURE;
        }
    };
    println!("iterations {}", out.iterations);
    println!("tuples {}", out.tuples);
    println!(
        "solve {} (edge list in host memory to the count)",
        ms(out.solve)
    );
    println!(
        "end-to-end {} (with reading the file and opening the device)",
        ms(wall.elapsed())
    );
    if let Some(p) = &out.phases {
        println!(
            "phases: join {}, sort {}, difference {}, merge {}",
            ms(p.join),
            ms(p.sort),
            ms(p.difference),
            ms(p.merge)
        );
    }
    if let (Some(peak), Some(allocs)) = (out.peak_bytes, out.allocations) {
        println!(
            "peak device memory {} bytes ({:.2}× the final relation's {} bytes), {allocs} allocations",
            peak,
            peak as f64 / (out.tuples * 8).max(1) as f64,
            out.tuples * 8
        );
    }
    if args.check || args.cpu {
        let t = Instant::now();
        let want = match args.program {
            Program::Tc => cpu::transitive_closure(&edges, args.cpu),
            Program::Sg => cpu::same_generation(&edges, args.cpu),
        };
        println!(
            "cpu ({}) tuples {want} in {}",
            if args.cpu {
                "ascent, parallel"
            } else {
                "ascent"
            },
            ms(t.elapsed())
        );
        if want != out.tuples as u64 {
            eprintln!("error: the GPU found {} tuples, the CPU {want}", out.tuples);
            return ExitCode::FAILURE;
        }
        println!("ok: the count matches the CPU");
    }
    ExitCode::SUCCESS
}
