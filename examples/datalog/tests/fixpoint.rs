//! The example end to end, as a user runs it: the binary on generated graphs with
//! `--check` (the count against ascent on the CPU). On xlog's simulator always
//! (`XLOG_BACKEND=sim` in the child), so it runs in CI without a GPU; on the GPU
//! too with `--features gpu-tests`, where it fails without a device.

use std::path::PathBuf;
use std::process::{Command, Output};

/// A graph written to a fresh file: `edges` as `source<TAB>target` lines.
fn graph(name: &str, edges: &[(u32, u32)]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("xlog-datalog-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{name}.tsv"));
    let text: String = edges.iter().map(|(a, b)| format!("{a}\t{b}\n")).collect();
    std::fs::write(&path, text).unwrap();
    path
}

/// A `w × h` mesh with edges to the right and down, and a few back (cycles),
/// numbered sparsely (ids are not dense).
fn mesh(w: u32, h: u32) -> Vec<(u32, u32)> {
    let id = |x: u32, y: u32| 7 * (y * w + x) + 3;
    let mut e = Vec::new();
    for y in 0..h {
        for x in 0..w {
            if x + 1 < w {
                e.push((id(x, y), id(x + 1, y)));
            }
            if y + 1 < h {
                e.push((id(x, y), id(x, y + 1)));
            }
            if (x + y) % 5 == 0 && x > 0 {
                e.push((id(x, y), id(x - 1, y)));
            }
        }
    }
    e
}

/// `m` random edges over `n` nodes, with repeats and self-loops.
fn random(n: u32, m: usize, seed: u64) -> Vec<(u32, u32)> {
    let mut x = seed | 1;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x % n as u64) as u32
    };
    (0..m).map(|_| (next(), next())).collect()
}

/// The example's binary: cargo's, or `XLOG_DATALOG_BIN` where this test runs
/// away from its build (the GPU bundle, `scripts/gpu`).
fn datalog(sim: bool, args: &[&str]) -> Output {
    let bin = std::env::var_os("XLOG_DATALOG_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_datalog")));
    let mut c = Command::new(bin);
    c.args(args);
    if sim {
        c.env("XLOG_BACKEND", "sim");
    } else {
        c.env_remove("XLOG_BACKEND");
    }
    c.output().unwrap()
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Both programs on both graphs, whole and in small pieces, match the CPU.
fn every_program_matches_the_cpu(sim: bool) {
    let graphs = [
        ("mesh", graph("mesh", &mesh(7, 5))),
        ("random", graph("random", &random(90, 170, 7))),
    ];
    for (name, path) in &graphs {
        for program in ["tc", "sg"] {
            for piece in [None, Some("50")] {
                let mut args = vec![program, path.to_str().unwrap(), "--check"];
                if let Some(p) = piece {
                    args.extend(["--piece", p]);
                }
                let o = datalog(sim, &args);
                let t = text(&o);
                assert!(o.status.success(), "{program} on {name} {piece:?}: {t}");
                // It ran where it was asked to: the GPU test never passes on the
                // simulator.
                let ran_on = if sim { "(simulator)" } else { "(GPU)" };
                assert!(t.lines().next().is_some_and(|l| l.ends_with(ran_on)), "{t}");
                assert!(t.contains("ok: the count matches the CPU"), "{t}");
                let tuples = t.lines().find_map(|l| l.strip_prefix("tuples ")).unwrap();
                assert!(tuples.parse::<u64>().unwrap() > 0, "{t}");
            }
        }
    }
}

#[test]
fn every_program_matches_the_cpu_on_the_simulator() {
    every_program_matches_the_cpu(true);
}

#[cfg(feature = "gpu-tests")]
#[test]
fn every_program_matches_the_cpu_on_the_gpu() {
    every_program_matches_the_cpu(false);
}

/// A relation that outgrows the budget is a clear error naming it and the bytes,
/// with exit status 1, never a crash.
#[test]
fn a_relation_that_does_not_fit_is_refused_with_its_name_and_size() {
    let path = graph("budget", &random(90, 170, 7));
    let o = datalog(true, &["sg", path.to_str().unwrap(), "--budget", "20000"]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(
        t.contains("error: iteration") || t.contains("error: "),
        "{t}"
    );
    assert!(t.contains("sg"), "{t}");
    assert!(t.contains("bytes"), "{t}");
    assert!(t.contains("refused by the budget"), "{t}");
}

/// No edges, one edge, a self-loop: the smallest relations.
#[test]
fn the_smallest_graphs_give_their_counts() {
    for (edges, tc, sg) in [
        (vec![], 0, 0),
        (vec![(4, 9)], 1, 0),
        (vec![(5, 5)], 1, 0),
        (vec![(1, 2), (1, 3)], 2, 2),
    ] {
        let path = graph("tiny", &edges);
        for (program, want) in [("tc", tc), ("sg", sg)] {
            let o = datalog(true, &[program, path.to_str().unwrap(), "--check"]);
            let t = text(&o);
            assert!(o.status.success(), "{program} on {edges:?}: {t}");
            assert!(
                t.contains(&format!("\ntuples {want}\n")),
                "{program} on {edges:?}: {t}"
            );
        }
    }
}

#[test]
fn bad_input_is_a_clear_error() {
    let path = graph("bad", &[]);
    std::fs::write(&path, "1\t2\n3\tx\n").unwrap();
    let o = datalog(true, &["tc", path.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains(":2: `x` is not a node id"),
        "{}",
        text(&o)
    );
    // A third column, or lines ended by a bare carriage return (one line of many
    // ids), is refused rather than read as something else.
    for bad in ["1\t2\t9\n", "1\t2\r3\t4\r"] {
        std::fs::write(&path, bad).unwrap();
        let o = datalog(true, &["tc", path.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(2), "{}", text(&o));
        assert!(
            text(&o).contains(":1: expected two node ids"),
            "{}",
            text(&o)
        );
    }
    let o = datalog(true, &["closure", path.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains("usage: datalog <tc|sg>"), "{}", text(&o));
    let o = datalog(true, &["tc", "/nonexistent/edges.tsv"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o).contains("cannot read /nonexistent/edges.tsv"),
        "{}",
        text(&o)
    );
}
