//! The benchmark report: reads the results file the benches write (one
//! [`Measurement`] a line, see `xlog_test_support::bench`) and makes `report.md`, a
//! table per bench (xlog, peer, ratio, target, met?), and SVG plots.
//!
//! - [`parse`] reads the lines;
//! - [`compare`] pairs every peer's figure with xlog's figure of the same bench, case
//!   and size — the nearest one recorded before it, which is the one timed in the
//!   same interleaved rounds — and looks its target up in `bench::TARGETS`;
//! - [`unpaired`] keeps xlog's figures that no peer was compared with (a bench
//!   without a peer, such as the CPU simulator's speed);
//! - [`markdown`] writes the tables, [`plots`] the figures (with `plotters`). The
//!   same results give byte-identical plots: everything drawn is ordered by the
//!   results file, never by a hash map.
//!
//! ```
//! let lines = r#"
//! {"bench":"alloc_free","case":"alloc+free, bytes","size":256,"contender":"xlog","value":700.0,"unit":"ns"}
//! {"bench":"alloc_free","case":"alloc+free, bytes","size":256,"contender":"raw cuMemAllocAsync/cuMemFreeAsync","value":560.0,"unit":"ns"}
//! "#;
//! let rows = xlog_bench_report::compare(&xlog_bench_report::parse(lines)?);
//! assert_eq!(rows.len(), 1);
//! assert!((rows[0].ratio - 1.25).abs() < 1e-12);
//! assert_eq!(rows[0].met, Some(true)); // target ≤ 1.30
//! # Ok::<(), xlog_bench_report::ReportError>(())
//! ```

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

pub use xlog_test_support::bench::Measurement;
use xlog_test_support::bench::{self, Bound, XLOG};

mod plot;

/// What can go wrong making the report.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReportError {
    /// A line of the results file is not a measurement.
    #[error("results line {line}: {source}; each line must be one JSON measurement")]
    Parse {
        /// 1-based line number.
        line: usize,
        /// What serde_json said.
        source: serde_json::Error,
    },
    /// Reading the results or writing the report failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The README has no well-formed generated section.
    #[error("README: {0}")]
    Readme(String),
    /// A plot could not be drawn.
    #[error("plot {path}: {message}")]
    Plot {
        /// The SVG file.
        path: PathBuf,
        /// What plotters said.
        message: String,
    },
}

/// Parses the results file's text: one JSON measurement a line, blank lines skipped.
pub fn parse(text: &str) -> Result<Vec<Measurement>, ReportError> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l).map_err(|source| ReportError::Parse {
                line: i + 1,
                source,
            })
        })
        .collect()
}

/// One row of a bench's table: xlog against one peer.
#[derive(Clone, Debug, PartialEq)]
pub struct Comparison {
    /// The bench's id.
    pub bench: String,
    /// The case.
    pub case: String,
    /// The case's size, if any.
    pub size: Option<u64>,
    /// The unit of both figures.
    pub unit: String,
    /// xlog's figure.
    pub xlog: f64,
    /// The peer's name.
    pub peer: String,
    /// The peer's figure.
    pub peer_value: f64,
    /// `xlog / peer_value`.
    pub ratio: f64,
    /// The target on the ratio, if the pair has one.
    pub target: Option<Bound>,
    /// Whether the ratio keeps its target (`None` without one).
    pub met: Option<bool>,
}

/// Pairs every peer's figure with xlog's nearest earlier figure of the same bench,
/// case and size (peers without one are left out), in the order of the file.
pub fn compare(ms: &[Measurement]) -> Vec<Comparison> {
    bench::pairs(ms)
        .into_iter()
        .map(|(x, p)| {
            let (ours, m) = (&ms[x], &ms[p]);
            let ratio = ours.value / m.value;
            let target = bench::target(&m.bench, &m.case, &m.contender).map(|t| t.bound);
            Comparison {
                bench: m.bench.clone(),
                case: m.case.clone(),
                size: m.size,
                unit: m.unit.clone(),
                xlog: ours.value,
                peer: m.contender.clone(),
                peer_value: m.value,
                ratio,
                target,
                met: target.map(|b| b.met(ratio)),
            }
        })
        .collect()
}

/// xlog's figures that are not part of any comparison (no peer of the same bench,
/// case and size was recorded after them), in the order of the file.
pub fn unpaired(ms: &[Measurement]) -> Vec<Measurement> {
    let paired: Vec<usize> = bench::pairs(ms).into_iter().map(|(x, _)| x).collect();
    ms.iter()
        .enumerate()
        .filter(|(i, m)| m.contender == XLOG && !paired.contains(i))
        .map(|(_, m)| m.clone())
        .collect()
}

/// What each bench measures, for the report's headings.
const HEADINGS: &[(&str, &str)] = &[
    ("launch_peers", "3-buffer launch host cost against CubeCL, cudarc and the raw driver (add_f32; each case from the median process)"),
    ("axpy_bandwidth", "axpy bandwidth against CubeCL, cudarc, CUDA C++ via NVRTC and a device-to-device copy (one process)"),
    ("sum_peers", "sum of 10^8 f32 against CubeCL's reductions (cubek-reduce), one process"),
    ("typed_launch", "typed launch host cost, 3 buffers (add_f32; each case from the median process)"),
    ("graph_replay", "500 axpy kernels of 256 elements recorded once and replayed, against PyTorch's CUDA graph replay timed in the same run, the same launches issued directly, 4 chains against one, a replay after a scalar update; CUDA-event timed"),
    ("launch_overhead", "recorder launch host cost and multi-thread throughput (hand-written PTX; each case from the median process)"),
    ("alloc_free", "allocation + free host cost, default stack against raw stream-ordered allocation (each case from the median process)"),
    ("elementwise_bandwidth", "axpy bandwidth, CUDA-event timed (2^26 elements)"),
    ("library", "query-engine library against CUB through PyTorch / CuPy, CUDA-event timed, one run"),
    ("sort", "radix sort against CUB's through CuPy / PyTorch (n = 10^8 random keys), CUDA-event timed, one run"),
    ("join", "hash join probe against xlog's random gather of the same length, CUDA-event timed"),
    ("single_pass", "decoupled look-back scan and tiled transpose against a device-to-device copy of the same bytes, CUDA-event timed; no targets yet"),
    ("first_use", "the first library call in a fresh process (the module loaded then), wall clock, median of 5 processes; absolute target, no peer"),
    ("nccl_all_reduce", "NCCL all-reduce over two GPUs of one process (f32, sum, in place) against torch.cuda.nccl.all_reduce in the same run: bus bandwidth, and a 4 KiB call end to end, host included"),
    ("peer_copy", "a copy between two GPUs (copy_peer) against PyTorch's copy_ across GPUs in the same run, bandwidth"),
    ("simulator", "the CPU simulator's speed on the bench machine's host CPU (no GPU; not GPU coverage), thread executions per second per worker; no peer"),
];

fn heading(bench: &str) -> String {
    HEADINGS
        .iter()
        .find(|(b, _)| *b == bench)
        .map_or_else(|| bench.to_owned(), |(b, h)| format!("{b}: {h}"))
}

fn figure(v: f64, unit: &str) -> String {
    if v >= 100.0 {
        format!("{v:.0} {unit}")
    } else {
        format!("{v:.2} {unit}")
    }
}

/// The report's markdown: `intro` (a title line and the run's facts), the count of
/// targets met, the plots named in `plots` (file names beside the report), then a
/// table per bench: the benches of `rows` in the order they first appear, then the
/// benches that have only figures without a peer (`solo`, from [`unpaired`]). A
/// bench's figures without a peer are rows of its table with no peer, ratio or
/// target.
pub fn markdown(
    intro: &str,
    rows: &[Comparison],
    solo: &[Measurement],
    plots: &[PathBuf],
) -> String {
    let mut md = String::new();
    let judged: Vec<_> = rows.iter().filter_map(|r| r.met).collect();
    let met = judged.iter().filter(|m| **m).count();
    let _ = writeln!(md, "{}\n", intro.trim_end());
    let _ = writeln!(
        md,
        "Targets met: **{met} of {}**. A ratio is xlog's figure over the peer's, both from this run; \
         host costs (ns) must stay at or below their target, bandwidths and rates at or above.\n",
        judged.len()
    );
    for p in plots {
        if let Some(name) = p.file_name().and_then(|n| n.to_str()) {
            let _ = writeln!(md, "![{}]({name})\n", name.trim_end_matches(".svg"));
        }
    }
    let mut benches: Vec<&str> = Vec::new();
    for b in rows
        .iter()
        .map(|r| &r.bench)
        .chain(solo.iter().map(|m| &m.bench))
    {
        if !benches.contains(&b.as_str()) {
            benches.push(b);
        }
    }
    for b in benches {
        let _ = writeln!(md, "## {}\n", heading(b));
        md.push_str("| case | size | xlog | peer | peer figure | ratio | target | met? |\n");
        md.push_str("| --- | --- | --- | --- | --- | --- | --- | --- |\n");
        for r in rows.iter().filter(|r| r.bench == b) {
            let _ = writeln!(md, "{}", row(r));
        }
        for m in solo.iter().filter(|m| m.bench == b) {
            let _ = writeln!(
                md,
                "| {} | {} | {} | none | — | — | — | — |",
                m.case,
                m.size.map_or_else(|| "—".to_owned(), size_label),
                figure(m.value, &m.unit),
            );
        }
        md.push('\n');
    }
    md
}

/// A comparison as a table row: case, size, xlog, peer, peer figure, ratio, target,
/// met?
fn row(r: &Comparison) -> String {
    format!(
        "| {} | {} | {} | {} | {} | {:.3} | {} | {} |",
        r.case,
        r.size.map_or_else(|| "—".to_owned(), size_label),
        figure(r.xlog, &r.unit),
        r.peer,
        figure(r.peer_value, &r.unit),
        r.ratio,
        r.target.map_or_else(|| "—".to_owned(), |t| t.to_string()),
        match r.met {
            Some(true) => "yes",
            Some(false) => "**no**",
            None => "—",
        }
    )
}

/// `2^k` for powers of two from 1024 up, the number otherwise.
fn size_label(n: u64) -> String {
    if n >= 1024 && n.is_power_of_two() {
        format!("2^{}", n.trailing_zeros())
    } else {
        n.to_string()
    }
}

/// Draws the plots the results allow into `dir` and returns their paths:
/// `bandwidth.svg` (axpy bandwidth against size, every contender), `launch.svg`
/// (host ns per launch, every contender) and `alloc.svg` (host ns per
/// allocation + free against the raw driver).
pub fn plots(ms: &[Measurement], dir: &Path) -> Result<Vec<PathBuf>, ReportError> {
    let mut out = Vec::new();
    let of = |bench: &str| ms.iter().filter(|m| m.bench == bench).collect::<Vec<_>>();

    let bw = of("axpy_bandwidth");
    if !bw.is_empty() {
        let path = dir.join("bandwidth.svg");
        plot::lines(
            &path,
            "axpy bandwidth, f32 (y = a·x + y; copy: 2 buffers)",
            "elements",
            "GB/s",
            &bw,
        )?;
        out.push(path);
    }
    let launch = if of("launch_peers").is_empty() {
        of("typed_launch")
    } else {
        of("launch_peers")
    };
    if !launch.is_empty() {
        let path = dir.join("launch.svg");
        plot::bars(
            &path,
            "host cost per launch, 3 buffers (lower is better)",
            "ns per launch",
            &launch,
        )?;
        out.push(path);
    }
    let alloc = of("alloc_free");
    if !alloc.is_empty() {
        let path = dir.join("alloc.svg");
        plot::bars(
            &path,
            "host cost per allocation + free (lower is better)",
            "ns per pair",
            &alloc,
        )?;
        out.push(path);
    }
    Ok(out)
}

/// Reads `results`, writes `report.md` and the plots into `dir`, and returns the
/// comparisons. `intro` opens the report; `appendix`, if given, is added at the end
/// under "Bench output" (the benches' own markdown).
pub fn write_report(
    results: &Path,
    dir: &Path,
    intro: &str,
    appendix: Option<&str>,
) -> Result<Vec<Comparison>, ReportError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| ReportError::Io { path, source }
    };
    let text = std::fs::read_to_string(results).map_err(io(results))?;
    let ms = parse(&text)?;
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    let plots = plots(&ms, dir)?;
    let rows = compare(&ms);
    let mut md = markdown(intro, &rows, &unpaired(&ms), &plots);
    if let Some(extra) = appendix {
        md.push_str("## Bench output\n\n");
        md.push_str(extra);
        md.push('\n');
    }
    let report = dir.join("report.md");
    std::fs::write(&report, md).map_err(io(&report))?;
    Ok(rows)
}

/// The line that opens the README's generated table; the results file it names
/// (relative to the README's folder) follows on the same line, then ` -->`.
pub const README_BEGIN: &str = "<!-- generated by xlog-bench-report --readme from ";
/// The line that closes the README's generated table.
pub const README_END: &str = "<!-- end of the generated table -->";

/// The README's table of a run: one row for each comparison that has a target,
/// at the largest size its bench, case and peer were measured at, in the order of
/// the results file; then the count of targets met (over every size).
pub fn readme_table(rows: &[Comparison]) -> String {
    // Sizes order as options do: a case without one is its own largest.
    let largest = |r: &Comparison| {
        rows.iter()
            .filter(|o| o.bench == r.bench && o.case == r.case && o.peer == r.peer)
            .map(|o| o.size)
            .max()
            == Some(r.size)
    };
    let mut md = String::from(
        "| benchmark | case | size | xlog | peer | peer figure | ratio | target | met? |\n\
         | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n",
    );
    let mut shown: Vec<(&str, &str, &str)> = Vec::new();
    for r in rows.iter().filter(|r| r.target.is_some() && largest(r)) {
        let key = (r.bench.as_str(), r.case.as_str(), r.peer.as_str());
        if shown.contains(&key) {
            continue;
        }
        shown.push(key);
        let _ = writeln!(md, "| {} {}", r.bench, row(r));
    }
    let judged: Vec<_> = rows.iter().filter_map(|r| r.met).collect();
    let met = judged.iter().filter(|m| **m).count();
    let _ = writeln!(
        md,
        "\nTargets met: **{met} of {}** (every size; the table shows each comparison at its largest).",
        judged.len()
    );
    md
}

/// `readme` with its generated table (between [`README_BEGIN`] and [`README_END`])
/// replaced by `table`; also returns the results file the opening line names.
pub fn splice_readme(
    readme: &str,
    table: impl FnOnce(&str) -> Result<String, ReportError>,
) -> Result<String, ReportError> {
    let missing = |what: &str| ReportError::Readme(format!("no `{what}` line"));
    let begin = readme
        .find(README_BEGIN)
        .ok_or_else(|| missing(README_BEGIN))?;
    let line_end = readme[begin..]
        .find('\n')
        .map(|i| begin + i)
        .ok_or_else(|| missing(README_BEGIN))?;
    let source = readme[begin + README_BEGIN.len()..line_end]
        .trim()
        .strip_suffix("-->")
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| {
            ReportError::Readme(format!(
                "`{README_BEGIN}` must name a results file, then `-->`"
            ))
        })?;
    let end = readme[line_end..]
        .find(README_END)
        .map(|i| line_end + i)
        .ok_or_else(|| missing(README_END))?;
    let generated = table(source)?;
    Ok(format!(
        "{}\n{}{}",
        &readme[..line_end],
        generated,
        &readme[end..]
    ))
}

/// Regenerates the README's table in place from the results file it names, or with
/// `check` only compares: returns whether the file was (or would be) changed.
pub fn update_readme(readme: &Path, check: bool) -> Result<bool, ReportError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| ReportError::Io { path, source }
    };
    let text = std::fs::read_to_string(readme).map_err(io(readme))?;
    let root = readme.parent().unwrap_or(Path::new("."));
    let new = splice_readme(&text, |source| {
        let path = root.join(source);
        let results = std::fs::read_to_string(&path).map_err(io(&path))?;
        Ok(readme_table(&compare(&parse(&results)?)))
    })?;
    let changed = new != text;
    if changed && !check {
        std::fs::write(readme, new).map_err(io(readme))?;
    }
    Ok(changed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(bench: &str, case: &str, contender: &str, value: f64) -> Measurement {
        Measurement::ns(bench, case, contender, value)
    }

    #[test]
    fn a_peer_pairs_with_the_nearest_earlier_xlog_figure_of_its_case() {
        let ms = [
            m("b", "c", XLOG, 10.0),
            m("b", "c", "p", 5.0),
            m("b", "other", XLOG, 99.0),
            m("b", "c", XLOG, 30.0),
            m("b", "c", "q", 15.0),
            m("b", "lonely", "p", 1.0),
        ];
        let rows = compare(&ms);
        let pairs: Vec<_> = rows
            .iter()
            .map(|r| (r.peer.as_str(), r.xlog, r.ratio))
            .collect();
        assert_eq!(pairs, [("p", 10.0, 2.0), ("q", 30.0, 2.0)]);
        assert!(rows.iter().all(|r| r.target.is_none() && r.met.is_none()));
    }

    #[test]
    fn figures_without_a_peer_are_kept_apart() {
        let ms = [
            m("b", "c", XLOG, 10.0),
            m("b", "c", "p", 5.0),
            m("b", "alone", XLOG, 7.0),
            m("sim", "s", XLOG, 3.0),
            m("sim", "s", "q", 1.0),
            m("b", "c", XLOG, 11.0),
        ];
        let solo: Vec<_> = unpaired(&ms)
            .into_iter()
            .map(|m| (m.bench, m.case, m.value))
            .collect();
        assert_eq!(
            solo,
            [
                ("b".to_owned(), "alone".to_owned(), 7.0),
                ("b".to_owned(), "c".to_owned(), 11.0)
            ]
        );
    }

    #[test]
    fn a_bench_without_peers_gets_a_table_after_the_compared_ones() {
        let ms = [
            m("simulator", "simulated axpy", XLOG, 2.5e6),
            m("b", "c", XLOG, 10.0),
            m("b", "c", "p", 5.0),
        ];
        let md = markdown("# r", &compare(&ms), &unpaired(&ms), &[]);
        let at = |s: &str| md.find(s).unwrap_or_else(|| panic!("no {s} in {md}"));
        assert!(at("## b\n") < at("## simulator: the CPU simulator's speed"));
        assert!(md.contains("| simulated axpy | — | 2500000 ns | none | — | — | — | — |"));
        assert!(md.contains("Targets met: **0 of 0**"));
    }

    #[test]
    fn a_bad_line_names_its_number() {
        let err = parse("\n{\"bench\":1}\n").unwrap_err();
        assert!(err.to_string().starts_with("results line 2:"), "{err}");
    }

    #[test]
    fn sizes_print_as_powers_of_two() {
        assert_eq!(size_label(1 << 20), "2^20");
        assert_eq!(size_label(256), "256");
        assert_eq!(size_label(3000), "3000");
    }
}
