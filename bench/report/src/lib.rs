//! The benchmark report: reads the results file the benches write (one
//! [`Measurement`] a line, see `xlog_test_support::bench`) and makes `report.md`, a
//! table per bench (xlog, peer, ratio, target, met?), and SVG plots.
//!
//! - [`parse`] reads the lines;
//! - [`compare`] pairs every peer's figure with xlog's figure of the same bench, case
//!   and size — the nearest one recorded before it, which is the one timed in the
//!   same interleaved rounds — and looks its target up in `bench::TARGETS`;
//! - [`markdown`] writes the tables, [`plots`] the figures (with `plotters`).
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

/// What each bench measures, for the report's headings.
const HEADINGS: &[(&str, &str)] = &[
    ("launch_peers", "3-buffer launch host cost against CubeCL, cudarc and the raw driver (add_f32; each case from the median process)"),
    ("axpy_bandwidth", "axpy bandwidth against CubeCL, NVRTC and a device-to-device copy (one process)"),
    ("sum_peers", "sum of 10^8 f32 against CubeCL's reductions (cubek-reduce), one process"),
    ("typed_launch", "typed launch host cost, 3 buffers (add_f32; each case from the median process)"),
    ("launch_overhead", "recorder launch host cost and multi-thread throughput (hand-written PTX; each case from the median process)"),
    ("alloc_free", "allocation + free host cost, default stack against raw stream-ordered allocation (each case from the median process)"),
    ("elementwise_bandwidth", "axpy bandwidth, CUDA-event timed (2^26 elements)"),
    ("library", "query-engine library against CUB through PyTorch / CuPy, CUDA-event timed, one run"),
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
/// table per bench in the order the benches first appear.
pub fn markdown(intro: &str, rows: &[Comparison], plots: &[PathBuf]) -> String {
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
    for r in rows {
        if !benches.contains(&r.bench.as_str()) {
            benches.push(&r.bench);
        }
    }
    for b in benches {
        let _ = writeln!(md, "## {}\n", heading(b));
        md.push_str("| case | size | xlog | peer | peer figure | ratio | target | met? |\n");
        md.push_str("| --- | --- | --- | --- | --- | --- | --- | --- |\n");
        for r in rows.iter().filter(|r| r.bench == b) {
            let _ = writeln!(
                md,
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
            );
        }
        md.push('\n');
    }
    md
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
    let mut md = markdown(intro, &rows, &plots);
    if let Some(extra) = appendix {
        md.push_str("## Bench output\n\n");
        md.push_str(extra);
        md.push('\n');
    }
    let report = dir.join("report.md");
    std::fs::write(&report, md).map_err(io(&report))?;
    Ok(rows)
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
