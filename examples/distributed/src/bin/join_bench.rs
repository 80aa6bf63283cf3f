//! The distributed join on two GPUs against the same join on one, in one process:
//! `distributed::query` over ranks `[0]` (every row on GPU 0: the local join and
//! sum alone, since one rank has nothing to partition or exchange) and over ranks
//! `[0, 1]` (half the rows on each GPU: partition by key hash, exchange, local
//! join and sum, all-reduce). Both start with the rows on their GPUs and end with
//! the sums on the host.
//!
//! ```sh
//! join_bench [ORDERS [CUSTOMERS [ROUNDS]]]   # default 268435456 16777216 7
//! ```
//!
//! Checks first, at 4,194,304 orders: both against the CPU's hash join, and the
//! CPU's answer from the generator alone (`closed_form_sums`) against it; then at
//! full size every round of both against `closed_form_sums`. Reports the median
//! of the rounds (alternating one GPU and two), the ratio, and each step's time
//! in one more round of each that waits after every step. Writes JSON lines to
//! `$XLOG_BENCH_RESULTS` when set. Needs two GPUs (or two simulated devices, at
//! small sizes).
//!
//! With one device it measures what one device can: the one-GPU round, and the
//! partition step of a two-GPU round on the rows rank 0 would hold
//! ([`order_by_rank`] of half the orders and customers for two ranks), checked
//! against a stable partition on the CPU first.

use std::io::Write;
use std::process::ExitCode;
use std::time::Instant;

use distributed::{
    closed_form_sums, order_by_rank, query, rank_of, spread, Rank, RankData, Share, Sizes, Steps,
    Tables, MAX_RANKS,
};
use xlog::prelude::*;

fn main() -> ExitCode {
    let count = xlog::Device::count().unwrap_or(0);
    if count == 0 {
        eprintln!("join_bench needs a device (found none)");
        return ExitCode::from(2);
    }
    let result = if count == 1 { run_one() } else { run() };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn arg(i: usize, default: usize) -> usize {
    std::env::args()
        .nth(i)
        .map(|a| a.parse().expect("sizes and rounds are numbers"))
        .unwrap_or(default)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// One timed run of the query: milliseconds and the sums.
fn time(ranks: &[Rank], data: &[RankData]) -> xlog::Result<(f64, Vec<u64>)> {
    let start = Instant::now();
    let (sums, _) = query(ranks, data, false)?;
    Ok((start.elapsed().as_secs_f64() * 1e3, sums))
}

struct Out {
    lines: Vec<String>,
}

impl Out {
    fn record(&mut self, case: &str, size: usize, contender: &str, value: f64, unit: &str) {
        self.lines.push(format!(
            "{{\"bench\":\"distributed_join\",\"case\":\"{case}\",\"size\":{size},\
             \"contender\":\"{contender}\",\"value\":{value},\"unit\":\"{unit}\"}}"
        ));
    }

    /// Appends the lines to `$XLOG_BENCH_RESULTS` when set.
    fn write(&self) {
        if let Some(path) = std::env::var_os("XLOG_BENCH_RESULTS") {
            let mut f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .expect("XLOG_BENCH_RESULTS names a writable file");
            for l in &self.lines {
                writeln!(f, "{l}").expect("writing the results");
            }
        }
    }
}

fn steps_table(name: &str, steps: &[Steps]) {
    for (r, st) in steps.iter().enumerate() {
        let total: f64 = st.0.iter().map(|(_, ms)| ms).sum();
        let cells: Vec<String> = st.0.iter().map(|(s, ms)| format!("{s} {ms:.2}")).collect();
        println!("| {name}, rank {r} | {} | {total:.2} |", cells.join(" · "));
    }
}

/// The sizes and rounds from the command line, or the defaults.
fn sizes_and_rounds() -> (Sizes, usize) {
    let sim = xlog::sim::is_active();
    let (orders, customers) = if sim {
        (1 << 16, 1 << 12)
    } else {
        (1 << 28, 1 << 24)
    };
    let sizes = Sizes {
        orders: arg(1, orders),
        customers: arg(2, customers),
    };
    (sizes, arg(3, if sim { 1 } else { 7 }))
}

/// Says how long generating and uploading the tables took.
fn uploaded(sizes: Sizes, start: Instant) {
    println!(
        "{} orders, {} customers: generated and uploaded in {:.1} s",
        sizes.orders,
        sizes.customers,
        start.elapsed().as_secs_f64()
    );
}

/// Every second row of `col`, from row 0: the share rank 0 of two holds.
fn half(col: &[u32]) -> Vec<u32> {
    col.iter().step_by(2).copied().collect()
}

/// `keys` and `values` stably ordered by destination rank among `ranks`, on the CPU.
fn cpu_order(keys: &[u32], values: &[u32], ranks: u32) -> (Vec<u32>, Vec<u32>) {
    let mut rows: Vec<(u32, u32)> = keys.iter().copied().zip(values.iter().copied()).collect();
    rows.sort_by_key(|&(k, _)| rank_of(k, ranks));
    rows.into_iter().unzip()
}

/// One device: the one-GPU round, and the partition of rank 0's share of a
/// two-GPU round (the step one GPU can run alone), both timed.
fn run_one() -> xlog::Result<()> {
    let (sizes, rounds) = sizes_and_rounds();
    let rt = Runtime::get(0)?;
    let one = Rank::all(std::slice::from_ref(&rt))?;
    let k = &one[0];
    println!(
        "one device: {} (the two-GPU round needs two)",
        rt.device().info().name
    );
    let mut out = Out { lines: Vec::new() };

    // The partition against a stable partition on the CPU, at a small size.
    let t = Tables::generate(Sizes {
        orders: sizes.orders.min(1 << 20),
        customers: sizes.customers.min(1 << 16),
    });
    for ranks in [2, 3, 8] {
        let shares =
            [(&t.c_key, &t.c_group), (&t.o_customer, &t.o_amount)].map(|(keys, values)| {
                Ok::<_, xlog::Error>(Share {
                    keys: rt.upload_on(&k.s, keys)?,
                    values: rt.upload_on(&k.s, values)?,
                })
            });
        let [c, o] = shares;
        let (c, o) = (c?, o?);
        let ordered = order_by_rank(&rt, &k.s, &k.x, &[&c, &o], ranks)?;
        for ((keys, values), got) in [(&t.c_key, &t.c_group), (&t.o_customer, &t.o_amount)]
            .into_iter()
            .zip(&ordered)
        {
            let (want_keys, want_values) = cpu_order(keys, values, ranks as u32);
            assert_eq!(
                got.rows.keys.download(&k.s)?,
                want_keys,
                "{ranks} ranks: keys"
            );
            assert_eq!(
                got.rows.values.download(&k.s)?,
                want_values,
                "{ranks} ranks: values"
            );
            let mut at = 0;
            for (r, (&start, &len)) in got.at.iter().zip(&got.send).enumerate() {
                assert_eq!(start, at, "{ranks} ranks: where rank {r}'s rows start");
                at += len;
                assert!(want_keys[start..at]
                    .iter()
                    .all(|&key| rank_of(key, ranks as u32) == r as u32));
            }
            assert_eq!(at, keys.len(), "{ranks} ranks: every row sent once");
        }
    }
    let uneven = Share {
        keys: rt.upload_on(&k.s, &[1u32, 2, 3])?,
        values: rt.upload_on(&k.s, &[1u32, 2])?,
    };
    let fine = Share {
        keys: rt.upload_on(&k.s, &[1u32, 2])?,
        values: rt.upload_on(&k.s, &[1u32, 2])?,
    };
    for (rels, ranks) in [
        (&[&fine][..], 0),
        (&[&fine], MAX_RANKS + 1),
        (&[&fine, &uneven], 2),
    ] {
        let refused = order_by_rank(&rt, &k.s, &k.x, rels, ranks);
        assert!(
            matches!(refused, Err(xlog::Error::InvalidArgument { .. })),
            "{ranks} ranks over {} relations: refused",
            rels.len()
        );
    }
    println!(
        "check: order_by_rank matches a stable partition on the CPU for 2, 3 and 8 ranks, \
         and refuses 0 and {} ranks and uneven columns",
        MAX_RANKS + 1
    );
    drop(t);

    let start = Instant::now();
    let t = Tables::generate(sizes);
    let want = closed_form_sums(sizes);
    let data = spread(&one, &t)?;
    let share = |keys: &[u32], values: &[u32]| -> xlog::Result<Share> {
        Ok(Share {
            keys: rt.upload_on(&k.s, &half(keys))?,
            values: rt.upload_on(&k.s, &half(values))?,
        })
    };
    let (c0, o0) = (
        share(&t.c_key, &t.c_group)?,
        share(&t.o_customer, &t.o_amount)?,
    );
    drop(t);
    k.s.synchronize()?;
    uploaded(sizes, start);
    let partition = || -> xlog::Result<f64> {
        let start = Instant::now();
        let ordered = order_by_rank(&rt, &k.s, &k.x, &[&c0, &o0], 2)?;
        k.s.synchronize()?;
        let ms = start.elapsed().as_secs_f64() * 1e3;
        drop(ordered);
        Ok(ms)
    };
    let (_, got) = time(&one, &data)?;
    assert_eq!(got, want, "one GPU: the sums");
    partition()?;
    let (mut t1, mut tp) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        let (ms, got) = time(&one, &data)?;
        assert_eq!(got, want, "one GPU: the sums");
        t1.push(ms);
        tp.push(partition()?);
    }
    let (m1, mp) = (median(t1), median(tp));
    let (_, s1) = query(&one, &data, true)?;
    println!();
    println!("| step | median ms ({rounds} rounds) |");
    println!("| --- | --- |");
    println!("| one-GPU round | {m1:.2} |");
    println!(
        "| partition of rank 0's share for two ranks ({} orders, {} customers) | {mp:.2} |",
        o0.keys.len(),
        c0.keys.len()
    );
    println!();
    println!("| run | steps (ms, each ended by a stream wait) | total ms |");
    println!("| --- | --- | --- |");
    steps_table("1 GPU", &s1);
    let case = format!("{} orders, {} customers", sizes.orders, sizes.customers);
    out.record(&case, sizes.orders, "xlog, 1 GPU", m1, "ms");
    out.record(
        &format!("{case}, partition of rank 0's share for 2 ranks"),
        o0.keys.len(),
        "xlog, 1 GPU",
        mp,
        "ms",
    );
    for (name, ms) in &s1[0].0 {
        out.record(
            &format!("{case}, step {name}, rank 0"),
            sizes.orders,
            "xlog, 1 GPU",
            *ms,
            "ms",
        );
    }
    out.write();
    Ok(())
}

fn run() -> xlog::Result<()> {
    let (sizes, rounds) = sizes_and_rounds();
    let rts = [Runtime::get(0)?, Runtime::get(1)?];
    let one = Rank::all(&rts[..1])?;
    let two = Rank::all(&rts)?;
    println!(
        "devices: {} | {}",
        rts[0].device().info().name,
        rts[1].device().info().name
    );
    let mut out = Out { lines: Vec::new() };

    // Correctness at a size the CPU's hash join handles quickly.
    let small = Sizes {
        orders: sizes.orders.min(1 << 22),
        customers: sizes.customers.min(1 << 18),
    };
    let t = Tables::generate(small);
    let want = t.cpu_sums();
    assert_eq!(
        closed_form_sums(small),
        want,
        "the closed form matches the CPU join"
    );
    for ranks in [&one, &two] {
        let (got, _) = query(ranks, &spread(ranks, &t)?, false)?;
        assert_eq!(got, want, "{} GPUs against the CPU", ranks.len());
    }
    println!(
        "check: {} orders, {} customers: one GPU, two GPUs, the CPU's hash join and the closed form agree",
        small.orders, small.customers
    );
    drop(t);

    let start = Instant::now();
    let t = Tables::generate(sizes);
    let want = closed_form_sums(sizes);
    let data1 = spread(&one, &t)?;
    let data2 = spread(&two, &t)?;
    drop(t);
    for k in one.iter().chain(&two) {
        k.s.synchronize()?;
    }
    uploaded(sizes, start);
    // A warm-up round each (module loads, NCCL's connections, the pools).
    for (ranks, data) in [(&one, &data1), (&two, &data2)] {
        let (_, got) = time(ranks, data)?;
        assert_eq!(got, want, "{} GPUs: the sums", ranks.len());
    }
    let (mut t1, mut t2) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        let (ms, got) = time(&one, &data1)?;
        assert_eq!(got, want, "one GPU: the sums");
        t1.push(ms);
        let (ms, got) = time(&two, &data2)?;
        assert_eq!(got, want, "two GPUs: the sums");
        t2.push(ms);
    }
    let (m1, m2) = (median(t1.clone()), median(t2.clone()));
    let ratio = m1 / m2;
    println!();
    println!("| GPUs | median ms ({rounds} rounds) | rounds ms | rows/s |");
    println!("| --- | --- | --- | --- |");
    for (n, m, all) in [(1, m1, &t1), (2, m2, &t2)] {
        let cells: Vec<String> = all.iter().map(|ms| format!("{ms:.2}")).collect();
        println!(
            "| {n} | {m:.2} | {} | {:.2e} |",
            cells.join(", "),
            sizes.orders as f64 / (m / 1e3)
        );
    }
    println!();
    println!(
        "two GPUs against one: {ratio:.3}x at {} probe rows (target >= 1.8x: {})",
        sizes.orders,
        if ratio >= 1.8 { "met" } else { "not met" }
    );
    let case = format!("{} orders, {} customers", sizes.orders, sizes.customers);
    out.record(&case, sizes.orders, "xlog, 1 GPU", m1, "ms");
    out.record(&case, sizes.orders, "xlog, 2 GPUs", m2, "ms");
    out.record(&case, sizes.orders, "ratio 1 GPU / 2 GPUs", ratio, "x");

    // Where the time goes: one more round each, waiting after every step.
    let (got, s1) = query(&one, &data1, true)?;
    assert_eq!(got, want);
    let (got, s2) = query(&two, &data2, true)?;
    assert_eq!(got, want);
    println!();
    println!("| run | steps (ms, each ended by a stream wait) | total ms |");
    println!("| --- | --- | --- |");
    steps_table("1 GPU", &s1);
    steps_table("2 GPUs", &s2);
    for (n, steps) in [(1, &s1), (2, &s2)] {
        for (r, st) in steps.iter().enumerate() {
            for (name, ms) in &st.0 {
                out.record(
                    &format!("{case}, step {name}, rank {r}"),
                    sizes.orders,
                    &format!("xlog, {n} GPU{}", if n > 1 { "s" } else { "" }),
                    *ms,
                    "ms",
                );
            }
        }
    }
    out.write();
    Ok(())
}
