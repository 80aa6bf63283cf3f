//! The report from a fixture results file (figures shaped like a real run's):
//! pairing, ratios, targets and met flags, the markdown tables and the SVG plots.

use std::path::{Path, PathBuf};

use xlog_bench_report::{compare, parse, plots, write_report, Comparison};

const FIXTURE: &str = include_str!("fixtures/results.jsonl");

fn row<'a>(
    rows: &'a [Comparison],
    bench: &str,
    case: &str,
    size: Option<u64>,
    peer: &str,
) -> &'a Comparison {
    rows.iter()
        .find(|r| r.bench == bench && r.case == case && r.size == size && r.peer == peer)
        .unwrap_or_else(|| panic!("no row {bench} / {case} / {size:?} / {peer}"))
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

#[test]
fn ratios_targets_and_met_flags() {
    let rows = compare(&parse(FIXTURE).unwrap());
    // Every peer line of the fixture has an xlog figure before it.
    assert_eq!(rows.len(), 37 - 12);

    let r = row(&rows, "launch_peers", "launch + sync", Some(256), "CubeCL");
    assert!(close(r.ratio, 0.5) && r.xlog == 3100.0);
    assert_eq!(
        (r.target.map(|t| t.to_string()), r.met),
        (Some("≤ 1.00".into()), Some(true))
    );
    // CubeCL's caller-thread figure is only a hand-off to its device thread: no target.
    let r = row(&rows, "launch_peers", "caller thread", Some(256), "CubeCL");
    assert!(close(r.ratio, 2.0) && r.target.is_none() && r.met.is_none());
    let r = row(
        &rows,
        "launch_peers",
        "caller thread",
        Some(256),
        "raw cuLaunchKernel",
    );
    assert!(close(r.ratio, 3000.0 / 2900.0) && r.met == Some(true));

    let r = row(
        &rows,
        "axpy_bandwidth",
        "axpy f32, elements",
        Some(1 << 20),
        "CubeCL (4-wide vectors)",
    );
    assert!(close(r.ratio, 0.9375));
    assert_eq!(
        (r.target.map(|t| t.to_string()), r.met),
        (Some("≥ 1.00".into()), Some(false))
    );
    let r = row(
        &rows,
        "axpy_bandwidth",
        "axpy f32, elements",
        Some(1 << 28),
        "CUDA C++ via NVRTC",
    );
    assert_eq!(r.met, Some(true)); // 0.994 ≥ 0.98

    // The copy bounds the vectorised kernel only; the scalar one is shown against it.
    let r = row(
        &rows,
        "axpy_bandwidth",
        "axpy_vec f32, elements",
        Some(1 << 28),
        "device-to-device copy",
    );
    assert!(close(r.ratio, 4200.0 / 4100.0) && r.met == Some(true));
    let r = row(
        &rows,
        "axpy_bandwidth",
        "axpy f32, elements",
        Some(1 << 28),
        "device-to-device copy",
    );
    assert!(r.target.is_none() && r.met.is_none());

    // Two timings of the same case: each peer is paired with its own xlog figure.
    let r = row(
        &rows,
        "typed_launch",
        "same stream",
        Some(256),
        "raw cuLaunchKernel",
    );
    assert!(r.xlog == 3150.0 && r.met == Some(true)); // exactly at ≤ 1.05
    let r = row(
        &rows,
        "typed_launch",
        "same stream",
        Some(256),
        "cudarc launch_builder",
    );
    assert!(r.xlog == 3300.0 && close(r.ratio, 0.75) && r.target.is_none());

    let r = row(
        &rows,
        "alloc_free",
        "alloc+free, bytes",
        Some(256),
        "raw cuMemAllocAsync/cuMemFreeAsync",
    );
    assert_eq!(r.met, Some(false)); // 1.43 > 1.3
    let r = row(
        &rows,
        "alloc_free",
        "alloc+free, bytes",
        Some(65536),
        "raw cuMemAllocAsync/cuMemFreeAsync",
    );
    assert!(close(r.ratio, 1.25) && r.met == Some(true));
    let r = row(
        &rows,
        "launch_overhead",
        "throughput, 8 threads on 8 streams vs 1 thread",
        None,
        "xlog, 1 thread",
    );
    assert!(r.target.is_none()); // how xlog scales is shown, not held to a bound
    let r = row(
        &rows,
        "launch_overhead",
        "throughput, 8 threads on 8 streams",
        None,
        "raw cuLaunchKernel",
    );
    assert_eq!(r.met, Some(false)); // 0.913 < 0.95

    let judged = rows.iter().filter(|r| r.met.is_some()).count();
    let met = rows.iter().filter(|r| r.met == Some(true)).count();
    assert_eq!((met, judged), (14, 19));
}

fn out_dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

#[test]
fn report_md_and_svg_plots_are_written() {
    let dir = out_dir("report-fixture");
    let results = dir.with_extension("jsonl");
    std::fs::write(&results, FIXTURE).unwrap();
    write_report(
        &results,
        &dir,
        "# report\n\nfixture run",
        Some("raw bench tables\n"),
    )
    .unwrap();

    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(md.contains("Targets met: **14 of 19**"), "{md}");
    for plot in ["bandwidth.svg", "launch.svg", "alloc.svg"] {
        assert!(md.contains(&format!("]({plot})")), "{plot} not linked");
    }
    assert!(
        md.contains("| launch + sync | 256 | 3100 ns | CubeCL | 6200 ns | 0.500 | ≤ 1.00 | yes |")
    );
    assert!(md.contains(
        "| axpy f32, elements | 2^20 | 1500 GB/s | CubeCL (4-wide vectors) | 1600 GB/s | 0.938 | ≥ 1.00 | **no** |"
    ));
    assert!(md.trim_end().ends_with("raw bench tables"));
    // One table per bench, in the order the benches first appear.
    let at = |s: &str| md.find(s).unwrap_or_else(|| panic!("no {s}"));
    assert!(
        at("## launch_peers") < at("## axpy_bandwidth")
            && at("## axpy_bandwidth") < at("## typed_launch")
    );

    let svg = |name: &str| std::fs::read_to_string(dir.join(name)).unwrap();
    let bw = svg("bandwidth.svg");
    assert!(
        bw.starts_with("<svg") && bw.contains("CubeCL (4-wide vectors)") && bw.contains("2^28")
    );
    assert!(
        bw.matches("<polyline").count() >= 5,
        "one line per contender"
    );
    let launch = svg("launch.svg");
    assert!(launch.contains("launch + sync 256 · CubeCL") && launch.contains("6200 ns"));
    assert!(svg("alloc.svg").contains("raw cuMemAllocAsync/cuMemFreeAsync"));
}

#[test]
fn a_malformed_results_file_is_an_error_not_a_report() {
    let dir = out_dir("report-bad");
    let results = dir.with_extension("jsonl");
    std::fs::write(&results, "{\"bench\":\"b\"}\n").unwrap();
    let err = write_report(&results, &dir, "# r", None).unwrap_err();
    assert!(err.to_string().contains("results line 1"), "{err}");
    assert!(!dir.join("report.md").exists());
}

/// The same results give the same plots, byte for byte: drawing follows the file's
/// order, so a regenerated report differs from the committed one only where the
/// figures do. Several renderings, since an order left to a hash map can agree
/// twice by chance.
#[test]
fn plots_are_the_same_every_time() {
    let ms = parse(FIXTURE).unwrap();
    let render = |i: usize| {
        let dir = out_dir(&format!("plots-again-{i}"));
        std::fs::create_dir_all(&dir).unwrap();
        let paths = plots(&ms, &dir).unwrap();
        paths
            .iter()
            .map(|p| {
                let name = p.file_name().unwrap().to_string_lossy().into_owned();
                (name, std::fs::read(p).unwrap())
            })
            .collect::<Vec<_>>()
    };
    let first = render(0);
    let names: Vec<&str> = first.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["bandwidth.svg", "launch.svg", "alloc.svg"]);
    for i in 1..6 {
        for ((name, want), (_, got)) in first.iter().zip(&render(i)) {
            assert!(got == want, "{name} differs between renderings 0 and {i}");
        }
    }
}

#[test]
fn the_readme_table_is_what_its_results_file_gives() {
    // The repository's README: its table must be regenerated when the run it
    // names changes (`xlog-bench-report --readme README.md`).
    let readme = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md");
    let changed = xlog_bench_report::update_readme(&readme, true).unwrap();
    assert!(!changed, "README.md's generated table is stale: run `cargo run -p xlog-bench-report -- --readme README.md`");
}

#[test]
fn a_readme_table_is_spliced_between_its_lines_and_refused_without_them() {
    use xlog_bench_report::{readme_table, splice_readme, README_BEGIN, README_END};
    let readme = format!("intro\n{README_BEGIN}r.jsonl -->\nold table\n{README_END}\nrest\n");
    let mut named = String::new();
    let out = splice_readme(&readme, |source| {
        named = source.to_owned();
        Ok(readme_table(&compare(&parse(FIXTURE)?)))
    })
    .unwrap();
    assert_eq!(named, "r.jsonl");
    assert!(!out.contains("old table"), "{out}");
    assert!(out.starts_with(&format!("intro\n{README_BEGIN}r.jsonl -->\n| benchmark |")));
    assert!(out.ends_with(&format!("{README_END}\nrest\n")), "{out}");
    assert!(out.contains("Targets met: **"), "{out}");
    // Each comparison once, at its largest size.
    let bw: Vec<_> = out
        .lines()
        .filter(|l| l.starts_with("| axpy_bandwidth | axpy f32, elements |"))
        .collect();
    assert!(
        bw.len() >= 2 && bw.iter().all(|l| l.contains("| 2^28 |")),
        "{out}"
    );
    for bad in [
        "no markers\n".to_owned(),
        format!("{README_BEGIN} -->\n{README_END}\n"),
        format!("{README_BEGIN}r.jsonl -->\nno end\n"),
    ] {
        let err = splice_readme(&bad, |_| Ok(String::new())).unwrap_err();
        assert!(err.to_string().starts_with("README: "), "{err}");
    }
}
