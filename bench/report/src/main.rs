//! `xlog-bench-report RESULTS OUT_DIR [--title TEXT] [--append FILE]`: writes
//! OUT_DIR/report.md and the SVG plots from the results file the benches wrote
//! (`XLOG_BENCH_RESULTS`). `--title` opens the report (the run's date and device);
//! `--append` adds a file (the benches' own markdown) at its end. Exits non-zero
//! only when the report cannot be made: targets not met are reported, not errors.

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let mut positional = Vec::new();
    let (mut title, mut append) = (None, None);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--title" => title = args.next(),
            "--append" => append = args.next().map(PathBuf::from),
            _ => positional.push(PathBuf::from(a)),
        }
    }
    let [results, dir] = match <[PathBuf; 2]>::try_from(positional) {
        Ok(p) => p,
        Err(_) => {
            eprintln!("usage: xlog-bench-report RESULTS OUT_DIR [--title TEXT] [--append FILE]");
            return ExitCode::from(2);
        }
    };
    let appendix = match append
        .map(|p| std::fs::read_to_string(&p).map_err(|e| (p, e)))
        .transpose()
    {
        Ok(a) => a,
        Err((p, e)) => {
            eprintln!("{}: {e}", p.display());
            return ExitCode::FAILURE;
        }
    };
    let intro = format!("# xlog benchmark report\n\n{}", title.unwrap_or_default());
    match xlog_bench_report::write_report(&results, &dir, &intro, appendix.as_deref()) {
        Ok(rows) => {
            let judged = rows.iter().filter(|r| r.met.is_some()).count();
            let met = rows.iter().filter(|r| r.met == Some(true)).count();
            println!(
                "report: {} ({} comparisons, {met} of {judged} targets met)",
                dir.join("report.md").display(),
                rows.len()
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("report: {e}");
            ExitCode::FAILURE
        }
    }
}
