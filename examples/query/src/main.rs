//! A relational query the way a query engine runs it on a GPU:
//!
//! ```sql
//! SELECT c.group, SUM(o.amount) AS total
//! FROM orders o JOIN customers c ON o.customer = c.key
//! WHERE o.amount >= 2500
//! GROUP BY c.group
//! ORDER BY total DESC, c.group
//! ```
//!
//! Stream B builds the join's hash table over the customers while stream A filters
//! the orders (a compaction kernel) and gathers the surviving columns; A then probes
//! the table (xlog makes it wait for B's build), sums the amounts by group (atomic
//! adds) and downloads the 1000 group sums, which the host orders (the download
//! happens anyway; `xlog_kernels::sort` would order them on the device). Checked
//! against a CPU reference, and timed next to the same query in PyTorch on the same
//! GPU (`query_torch.py`, run when `python3` with `torch` is present). Exits
//! non-zero with a clear message without a GPU.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;

use query_kernels::{select_at_least, sum_by_group};
use xlog::prelude::*;
use xlog_kernels::gather::gather;
use xlog_kernels::join::JoinTable;

const ORDERS: usize = 1 << 25;
const CUSTOMERS: usize = 1 << 21;
const GROUPS: usize = 1000;
const MIN_AMOUNT: u32 = 2500;
const ROUNDS: usize = 5;

/// A cheap integer hash (the same as the pipeline example's).
fn mix(i: u32, seed: u32) -> u32 {
    let mut x = i.wrapping_mul(0x9E37_79B1) ^ seed;
    x ^= x >> 15;
    x = x.wrapping_mul(0x85EB_CA77);
    x ^ (x >> 13)
}

/// Customer key `j`: distinct for distinct `j` (an odd multiplier is a bijection).
fn customer_key(j: u32) -> u32 {
    j.wrapping_mul(0x2545_F491) ^ 0x1234_5678
}

/// The two relations, column by column.
struct Tables {
    o_customer: Vec<u32>,
    o_amount: Vec<u32>,
    c_key: Vec<u32>,
    c_group: Vec<u32>,
}

/// Orders name customers `0..9/8 · CUSTOMERS`, so about one in nine has no
/// customer and drops out of the join; amounts are in `0..10000`.
fn generate() -> Tables {
    let dangling = CUSTOMERS as u32 / 8;
    Tables {
        o_customer: (0..ORDERS as u32)
            .map(|i| customer_key(mix(i, 1) % (CUSTOMERS as u32 + dangling)))
            .collect(),
        o_amount: (0..ORDERS as u32).map(|i| mix(i, 2) % 10_000).collect(),
        c_key: (0..CUSTOMERS as u32).map(customer_key).collect(),
        c_group: (0..CUSTOMERS as u32)
            .map(|j| mix(j, 3) % GROUPS as u32)
            .collect(),
    }
}

/// The query on the CPU: the sum per group.
fn cpu(t: &Tables) -> Vec<u64> {
    let group: HashMap<u32, u32> = t
        .c_key
        .iter()
        .copied()
        .zip(t.c_group.iter().copied())
        .collect();
    let mut sums = vec![0u64; GROUPS];
    for (c, &a) in t.o_customer.iter().zip(&t.o_amount) {
        if a >= MIN_AMOUNT {
            if let Some(&g) = group.get(c) {
                sums[g as usize] += a as u64;
            }
        }
    }
    sums
}

/// `ORDER BY total DESC, group`: the groups with their sums.
fn ranked(sums: &[u64]) -> Vec<(u32, u64)> {
    let mut r: Vec<(u32, u64)> = sums
        .iter()
        .enumerate()
        .map(|(g, &s)| (g as u32, s))
        .collect();
    r.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    r
}

/// The relations on the device: orders uploaded on `a`, customers on `b`.
struct OnDevice {
    o_customer: DeviceBuffer<u32>,
    o_amount: DeviceBuffer<u32>,
    c_key: DeviceBuffer<u32>,
    c_group: DeviceBuffer<u32>,
}

/// The query on the GPU, on streams `a` (orders) and `b` (customers): the sum per
/// group.
fn gpu(rt: &Runtime, a: &Stream, b: &Stream, d: &OnDevice) -> xlog::Result<Vec<u64>> {
    // B: the hash table over the customers, while A filters.
    let table = JoinTable::build(b, &d.c_key)?;

    // A: WHERE amount >= MIN_AMOUNT, then the surviving rows' columns.
    let n = d.o_amount.len();
    let mut rows = rt.alloc_zeroed_on::<u32>(a, n)?;
    let mut count = rt.alloc_zeroed_on::<u32>(a, 1)?;
    select_at_least::launch(
        a,
        LaunchConfig::for_len(n),
        &d.o_amount,
        MIN_AMOUNT,
        &mut rows,
        &mut count,
    )?;
    let kept = count.download(a)?[0] as usize;
    let rows = rows.slice(..kept);
    let customer = gather(a, &d.o_customer, &rows)?;
    let amount = gather(a, &d.o_amount, &rows)?;

    // A: JOIN customers ON key (waits for B's build), GROUP BY group SUM(amount).
    let pairs = table.inner_join(a, &customer)?;
    let mut sums = rt.alloc_zeroed_on::<u64>(a, GROUPS)?;
    if !pairs.is_empty() {
        sum_by_group::launch(
            a,
            LaunchConfig::for_len(pairs.len()),
            &pairs.build_rows,
            &pairs.probe_rows,
            &d.c_group,
            &amount,
            &mut sums,
        )?;
    }
    sums.download(a)
}

fn median_ms(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The PyTorch script: `XLOG_QUERY_SCRIPT`, or `query_torch.py` next to this
/// example's manifest, or under `examples/query` of the working directory (a
/// bundle run from the repository root on another machine).
fn torch_script() -> Option<PathBuf> {
    if let Ok(p) = std::env::var("XLOG_QUERY_SCRIPT") {
        return Some(p.into());
    }
    [
        concat!(env!("CARGO_MANIFEST_DIR"), "/query_torch.py"),
        "examples/query/query_torch.py",
    ]
    .into_iter()
    .map(PathBuf::from)
    .find(|p| p.exists())
}

/// The PyTorch side's result: its median milliseconds and its ranked groups.
struct Torch {
    version: String,
    ms: f64,
    ranked: Vec<(u32, u64)>,
}

/// Writes the relations to `dir` and runs the PyTorch script on them; `Err` says
/// why there is no PyTorch figure.
fn run_torch(script: &Path, dir: &Path, t: &Tables) -> Result<Torch, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    for (name, col) in [
        ("o_customer", &t.o_customer),
        ("o_amount", &t.o_amount),
        ("c_key", &t.c_key),
        ("c_group", &t.c_group),
    ] {
        let bytes: Vec<u8> = col.iter().flat_map(|v| v.to_le_bytes()).collect();
        std::fs::write(dir.join(name), bytes).map_err(|e| format!("cannot write {name}: {e}"))?;
    }
    let python = std::env::var("XLOG_PYTHON").unwrap_or_else(|_| "python3".to_owned());
    let out = Command::new(&python)
        .arg(script)
        .arg(dir)
        .args([ORDERS, CUSTOMERS, GROUPS, MIN_AMOUNT as usize, ROUNDS].map(|v| v.to_string()))
        .output()
        .map_err(|e| format!("cannot run {python}: {e}"))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(format!(
            "{} exited with {}: {}",
            script.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let field = |key: &str| {
        stdout
            .lines()
            .find_map(|l| l.strip_prefix(key)?.strip_prefix('\t'))
            .ok_or_else(|| format!("no `{key}` line from {}", script.display()))
    };
    let ms = field("ms")?
        .trim()
        .parse()
        .map_err(|e| format!("bad `ms` line: {e}"))?;
    let ranked = field("ranked")?
        .split(',')
        .map(|e| {
            let (g, s) = e.split_once(':')?;
            Some((g.parse().ok()?, s.parse().ok()?))
        })
        .collect::<Option<Vec<_>>>()
        .ok_or("bad `ranked` line")?;
    Ok(Torch {
        version: field("torch")?.to_owned(),
        ms,
        ranked,
    })
}

/// Runs the example; returns how many group sums differ from the CPU reference
/// (and from PyTorch's, when it ran).
fn run() -> xlog::Result<usize> {
    let rt = Runtime::get(0)?;
    let info = rt.device().info();
    println!(
        "device: {} (sm_{}{})",
        info.name, info.compute_capability.0, info.compute_capability.1
    );
    let t = generate();
    let (a, b) = (rt.new_stream()?, rt.new_stream()?);
    let d = OnDevice {
        o_customer: rt.upload_on(&a, &t.o_customer)?,
        o_amount: rt.upload_on(&a, &t.o_amount)?,
        c_key: rt.upload_on(&b, &t.c_key)?,
        c_group: rt.upload_on(&b, &t.c_group)?,
    };
    println!(
        "orders: {ORDERS} rows, customers: {CUSTOMERS} rows, {GROUPS} groups; WHERE amount >= {MIN_AMOUNT}"
    );

    let clock = Instant::now();
    let want = cpu(&t);
    let cpu_ms = clock.elapsed().as_secs_f64() * 1e3;
    let got = gpu(&rt, &a, &b, &d)?; // also the warm-up: module loads, pool growth
    let mut bad = got.iter().zip(&want).filter(|(g, w)| g != w).count();
    let times: Vec<f64> = (0..ROUNDS)
        .map(|_| {
            let clock = Instant::now();
            let again = gpu(&rt, &a, &b, &d)?;
            bad += usize::from(again != got);
            Ok(clock.elapsed().as_secs_f64() * 1e3)
        })
        .collect::<xlog::Result<_>>()?;
    let xlog_ms = median_ms(times);
    let result = ranked(&got);
    println!(
        "xlog: {xlog_ms:.2} ms (median of {ROUNDS}; filter, 2 gathers, join build on stream B, probe, group-by, download); CPU reference {cpu_ms:.0} ms; {bad} mismatches"
    );
    if let Some(st) = rt.stats() {
        println!(
            "device memory: peak {:.1} MiB held from the driver by {}",
            st.peak_bytes as f64 / (1 << 20) as f64,
            rt.describe_resource()
        );
    }
    println!("ORDER BY total DESC on the host (1000 rows, after the download):");
    for (g, s) in result.iter().take(5) {
        println!("  group {g:>4}  total {s}");
    }

    match torch_script() {
        None => println!("PyTorch: skipped (query_torch.py not found; set XLOG_QUERY_SCRIPT)"),
        Some(script) => {
            let dir = std::env::temp_dir().join(format!("xlog-query-{}", std::process::id()));
            let torch = run_torch(&script, &dir, &t);
            let _ = std::fs::remove_dir_all(&dir);
            match torch {
                Ok(torch) => {
                    let differ = torch
                        .ranked
                        .iter()
                        .zip(&result)
                        .filter(|(p, x)| p != x)
                        .count()
                        + torch.ranked.len().abs_diff(result.len());
                    bad += differ;
                    println!(
                        "PyTorch {}: {:.2} ms (median of {ROUNDS}; boolean mask, sort + searchsorted join, index_add_, argsort) on the same GPU; xlog / PyTorch time {:.2}; {differ} groups differ from xlog's",
                        torch.version,
                        torch.ms,
                        xlog_ms / torch.ms
                    );
                }
                Err(why) => println!("PyTorch: skipped ({why})"),
            }
        }
    }
    Ok(bad)
}

fn main() -> ExitCode {
    match run() {
        Ok(0) => {
            println!("ok: the GPU result matches the CPU");
            ExitCode::SUCCESS
        }
        Ok(bad) => {
            eprintln!("error: {bad} group sums differ from the reference");
            ExitCode::FAILURE
        }
        Err(e) if e.is_no_gpu() => {
            eprintln!("error: this example needs an NVIDIA GPU: {e}");
            ExitCode::from(2)
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
