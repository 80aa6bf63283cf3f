//! Several GPUs, driven from one thread: a distributed hash join and group-by,
//!
//! ```sql
//! SELECT c.group, SUM(o.amount) FROM orders o JOIN customers c ON o.customer = c.key
//! GROUP BY c.group
//! ```
//!
//! with each relation spread over the GPUs as it arrived (row `i` on GPU `i mod n`):
//!
//! 1. every GPU tags its rows with the rank their key hashes to (`partition`),
//!    sorts the tags keeping the row numbers, counts the rows per rank
//!    (`histogram::counts`) and gathers its columns into rank order;
//! 2. the counts go to every GPU with an all-to-all, then the rows with one group of
//!    sends and receives (views of the sorted columns, each rank's block to it);
//! 3. every GPU joins and sums its part locally (`JoinTable`, `sum_by_group`): rows
//!    with one key are on one GPU;
//! 4. an all-reduce adds the GPUs' group sums.
//!
//! Then a data-parallel loop: each GPU computes an update from its shard, an
//! all-reduce adds them, and every GPU applies the sum to its copy of the weights.
//!
//! Both are checked against the CPU. Needs two devices: GPUs, or the simulator
//! (`XLOG_BACKEND=sim XLOG_SIM_DEVICES=2`); exits 2 with a message otherwise.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use distributed_kernels::{partition, rank_of, sum_by_group};
use xlog::nccl::{Communicator, Group, ReduceOp};
use xlog::prelude::*;
use xlog::{BufferView, BufferViewMut};
use xlog_kernels::gather::gather;
use xlog_kernels::histogram::counts;
use xlog_kernels::join::JoinTable;
use xlog_kernels::sort::{sort_with_indices, Order};

const GROUPS: usize = 256;
const TIMEOUT: Duration = Duration::from_secs(60);

fn mix(i: u32, seed: u32) -> u32 {
    let mut x = i.wrapping_mul(0x9E37_79B1) ^ seed;
    x ^= x >> 15;
    x = x.wrapping_mul(0x85EB_CA77);
    x ^ (x >> 13)
}

struct Tables {
    o_customer: Vec<u32>,
    o_amount: Vec<u32>,
    c_key: Vec<u32>,
    c_group: Vec<u32>,
}

fn tables(orders: usize, customers: usize) -> Tables {
    let key = |j: u32| j.wrapping_mul(0x2545_F491) ^ 0x1234_5678;
    Tables {
        // A few orders name no customer (j past the last one).
        o_customer: (0..orders as u32)
            .map(|i| key(mix(i, 1) % (customers as u32 + customers as u32 / 16)))
            .collect(),
        o_amount: (0..orders as u32).map(|i| mix(i, 2) % 10_000).collect(),
        c_key: (0..customers as u32).map(key).collect(),
        c_group: (0..customers as u32)
            .map(|j| mix(j, 3) % GROUPS as u32)
            .collect(),
    }
}

fn cpu_sums(t: &Tables) -> Vec<u64> {
    let group: std::collections::HashMap<u32, u32> = t
        .c_key
        .iter()
        .copied()
        .zip(t.c_group.iter().copied())
        .collect();
    let mut sums = vec![0u64; GROUPS];
    for (c, &a) in t.o_customer.iter().zip(&t.o_amount) {
        if let Some(&g) = group.get(c) {
            sums[g as usize] += a as u64;
        }
    }
    sums
}

/// One GPU's rank: its runtime, stream and communicator.
struct Rank {
    rt: Runtime,
    s: Stream,
    comm: Communicator,
}

/// A relation's share on one rank: its key column and one value column.
struct Share {
    keys: DeviceBuffer<u32>,
    values: DeviceBuffer<u32>,
}

/// Rows `i` with `i mod n == r` of `keys` / `values`, on every rank `r`.
fn spread(ranks: &[Rank], keys: &[u32], values: &[u32]) -> xlog::Result<Vec<Share>> {
    let n = ranks.len();
    ranks
        .iter()
        .enumerate()
        .map(|(r, k)| {
            let pick = |col: &[u32]| col.iter().skip(r).step_by(n).copied().collect::<Vec<_>>();
            Ok(Share {
                keys: k.rt.upload_on(&k.s, &pick(keys))?,
                values: k.rt.upload_on(&k.s, &pick(values))?,
            })
        })
        .collect()
}

/// Splits `buf` into consecutive views of `lens` elements.
fn split<'a>(buf: &'a mut DeviceBuffer<u32>, lens: &[usize]) -> Vec<BufferViewMut<'a, u32>> {
    let mut rest = buf.slice_mut(..);
    let mut out = Vec::with_capacity(lens.len());
    for &len in lens {
        let (head, tail) = rest.split_at_mut(len);
        out.push(head);
        rest = tail;
    }
    out
}

fn offsets(lens: &[usize]) -> Vec<usize> {
    lens.iter()
        .scan(0, |at, &l| {
            let o = *at;
            *at += l;
            Some(o)
        })
        .collect()
}

/// Steps 1 and 2: every rank's share, with each row moved to the rank its key
/// hashes to.
fn shuffle(ranks: &[Rank], shares: &[Share]) -> xlog::Result<Vec<Share>> {
    let n = ranks.len();
    // 1. Tag, sort by tag, count per rank, gather into rank order.
    let mut sorted = Vec::new();
    let mut sent = Vec::new();
    for (k, share) in ranks.iter().zip(shares) {
        let len = share.keys.len();
        let mut tags = k.rt.alloc_zeroed_on::<u32>(&k.s, len)?;
        if len > 0 {
            partition::launch(
                &k.s,
                LaunchConfig::for_len(len),
                &share.keys,
                n as u32,
                &mut tags,
            )?;
        }
        let (_, rows) = sort_with_indices::<u32, u32>(&k.s, &tags, Order::Ascending)?;
        sent.push(counts(&k.s, &tags, n)?);
        sorted.push(Share {
            keys: gather(&k.s, &share.keys, &rows)?,
            values: gather(&k.s, &share.values, &rows)?,
        });
    }
    // 2a. Every rank learns how many rows each other rank sends it.
    let mut received: Vec<DeviceBuffer<u32>> = ranks
        .iter()
        .map(|k| k.rt.alloc_zeroed_on::<u32>(&k.s, n))
        .collect::<xlog::Result<_>>()?;
    let mut g = Group::new();
    for ((k, from), to) in ranks.iter().zip(&sent).zip(received.iter_mut()) {
        g = g.all_to_all(&k.comm, &k.s, from, to);
    }
    g.launch()?;
    let mut send_lens = Vec::new();
    let mut recv_lens = Vec::new();
    for (k, (s, r)) in ranks.iter().zip(sent.iter().zip(&received)) {
        k.comm.wait(&k.s, TIMEOUT)?;
        send_lens.push(
            s.download(&k.s)?
                .into_iter()
                .map(|c| c as usize)
                .collect::<Vec<_>>(),
        );
        recv_lens.push(
            r.download(&k.s)?
                .into_iter()
                .map(|c| c as usize)
                .collect::<Vec<_>>(),
        );
    }
    // 2b. The rows: rank r's block p goes to rank p, into its block r.
    let mut out: Vec<Share> = ranks
        .iter()
        .zip(&recv_lens)
        .map(|(k, lens)| {
            let total = lens.iter().sum();
            Ok(Share {
                keys: k.rt.alloc_zeroed_on::<u32>(&k.s, total)?,
                values: k.rt.alloc_zeroed_on::<u32>(&k.s, total)?,
            })
        })
        .collect::<xlog::Result<_>>()?;
    let mut key_views: Vec<Vec<BufferViewMut<'_, u32>>> = Vec::new();
    let mut value_views: Vec<Vec<BufferViewMut<'_, u32>>> = Vec::new();
    for (share, lens) in out.iter_mut().zip(&recv_lens) {
        key_views.push(split(&mut share.keys, lens));
        value_views.push(split(&mut share.values, lens));
    }
    // The blocks each rank sends, as views of its sorted columns.
    let blocks: Vec<Vec<(BufferView<'_, u32>, BufferView<'_, u32>)>> = sorted
        .iter()
        .zip(&send_lens)
        .map(|(from, lens)| {
            offsets(lens)
                .into_iter()
                .zip(lens)
                .map(|(at, &len)| {
                    (
                        from.keys.slice(at..at + len),
                        from.values.slice(at..at + len),
                    )
                })
                .collect()
        })
        .collect();
    let mut g = Group::new();
    for ((k, out_blocks), (kv, vv)) in ranks
        .iter()
        .zip(&blocks)
        .zip(key_views.iter_mut().zip(value_views.iter_mut()))
    {
        let into = kv.iter_mut().zip(vv.iter_mut());
        for (p, ((keys, values), (key_into, value_into))) in out_blocks.iter().zip(into).enumerate()
        {
            let p = p as u32;
            g = g
                .send(&k.comm, &k.s, keys, p)
                .send(&k.comm, &k.s, values, p)
                .recv(&k.comm, &k.s, key_into, p)
                .recv(&k.comm, &k.s, value_into, p);
        }
    }
    g.launch()?;
    drop((key_views, value_views));
    Ok(out)
}

/// The whole query: the group sums, added over the ranks (on rank 0).
fn query(ranks: &[Rank], t: &Tables) -> xlog::Result<Vec<u64>> {
    let orders = spread(ranks, &t.o_customer, &t.o_amount)?;
    let customers = spread(ranks, &t.c_key, &t.c_group)?;
    let orders = shuffle(ranks, &orders)?;
    let customers = shuffle(ranks, &customers)?;
    // 3. Local join and sums.
    let mut sums = Vec::new();
    for ((k, o), c) in ranks.iter().zip(&orders).zip(&customers) {
        let mut local = k.rt.alloc_zeroed_on::<u64>(&k.s, GROUPS)?;
        let pairs = JoinTable::build(&k.s, &c.keys)?.inner_join(&k.s, &o.keys)?;
        if !pairs.is_empty() {
            sum_by_group::launch(
                &k.s,
                LaunchConfig::for_len(pairs.len()),
                &pairs.build_rows,
                &pairs.probe_rows,
                &c.values,
                &o.values,
                &mut local,
            )?;
        }
        sums.push(local);
    }
    // 4. Add the ranks' sums.
    let mut g = Group::new();
    for (k, local) in ranks.iter().zip(sums.iter_mut()) {
        g = g.all_reduce_in_place(&k.comm, &k.s, local, ReduceOp::Sum);
    }
    g.launch()?;
    for k in ranks {
        k.comm.wait(&k.s, TIMEOUT)?;
    }
    let total = sums[0].download(&ranks[0].s)?;
    for (k, other) in ranks.iter().zip(&sums).skip(1) {
        assert_eq!(
            other.download(&k.s)?,
            total,
            "every rank holds the same sums"
        );
    }
    Ok(total)
}

/// The data-parallel loop: `w -= 0.5 * sum over ranks of (step + 1) * x_r` for
/// `steps` steps, each rank holding its shard `x_r` and a copy of `w`.
fn data_parallel(ranks: &[Rank], len: usize, steps: usize) -> xlog::Result<Vec<f32>> {
    let shard = |r: usize| -> Vec<f32> { (0..len).map(|i| ((i * 7 + r * 3) % 5) as f32).collect() };
    let shards: Vec<Vec<f32>> = (0..ranks.len()).map(shard).collect();
    let mut xs = Vec::new();
    let mut ws = Vec::new();
    for (k, host) in ranks.iter().zip(&shards) {
        xs.push(k.rt.upload_on(&k.s, host)?);
        ws.push(k.rt.alloc_zeroed_on::<f32>(&k.s, len)?);
    }
    for step in 0..steps {
        let mut grads = Vec::new();
        for (k, x) in ranks.iter().zip(&xs) {
            grads.push(xlog_kernels::scale(&k.s, x, (step + 1) as f32)?);
        }
        let mut g = Group::new();
        for (k, grad) in ranks.iter().zip(grads.iter_mut()) {
            g = g.all_reduce_in_place(&k.comm, &k.s, grad, ReduceOp::Sum);
        }
        g.launch()?;
        for ((k, grad), w) in ranks.iter().zip(&grads).zip(ws.iter_mut()) {
            xlog_kernels::axpy(&k.s, -0.5, grad, w)?;
        }
    }
    for k in ranks {
        k.comm.wait(&k.s, TIMEOUT)?;
    }
    let w0 = ws[0].download(&ranks[0].s)?;
    for (k, w) in ranks.iter().zip(&ws).skip(1) {
        assert_eq!(w.download(&k.s)?, w0, "every rank holds the same weights");
    }
    let want: Vec<f32> = (0..len)
        .map(|i| {
            let x: f32 = shards.iter().map(|h| h[i]).sum();
            let mut w = 0.0f32;
            for step in 0..steps {
                w += -0.5 * ((step + 1) as f32 * x);
            }
            w
        })
        .collect();
    assert_eq!(w0, want, "the weights match the CPU");
    Ok(w0)
}

fn main() -> ExitCode {
    let count = xlog::Device::count().unwrap_or(0);
    if count < 2 {
        eprintln!(
            "this example needs two devices (found {count}): run it on a machine with two \
             GPUs, or on the simulator with XLOG_BACKEND=sim XLOG_SIM_DEVICES=2"
        );
        return ExitCode::from(2);
    }
    match run(count.min(4) as usize) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(n: usize) -> xlog::Result<()> {
    let sim = xlog::sim::is_active();
    let rts: Vec<Runtime> = (0..n as u32)
        .map(Runtime::get)
        .collect::<xlog::Result<_>>()?;
    let comms = Communicator::init_all(&rts)?;
    let ranks: Vec<Rank> = rts
        .into_iter()
        .zip(comms)
        .map(|(rt, comm)| {
            Ok(Rank {
                s: rt.new_stream()?,
                rt,
                comm,
            })
        })
        .collect::<xlog::Result<_>>()?;
    let (orders, customers) = if sim {
        (1 << 16, 1 << 12)
    } else {
        (1 << 24, 1 << 20)
    };
    println!(
        "{n} {}, {orders} orders, {customers} customers, {GROUPS} groups",
        if sim { "simulated devices" } else { "GPUs" }
    );
    let t = tables(orders, customers);
    let want = cpu_sums(&t);
    // Every key goes to exactly one rank.
    debug_assert!(t.c_key.iter().all(|&k| rank_of(k, n as u32) < n as u32));
    let rounds = if sim { 1 } else { 5 };
    let mut times = Vec::new();
    for _ in 0..rounds {
        let start = Instant::now();
        let got = query(&ranks, &t)?;
        times.push(start.elapsed().as_secs_f64() * 1e3);
        assert_eq!(got, want, "the distributed query matches the CPU");
    }
    times.sort_by(f64::total_cmp);
    println!(
        "join + group-by over {n} devices: matches the CPU ({} groups, total {}), median {:.2} ms \
         of {rounds} (uploads included)",
        GROUPS,
        want.iter().sum::<u64>(),
        times[times.len() / 2]
    );
    let len = if sim { 1 << 12 } else { 1 << 22 };
    data_parallel(&ranks, len, 8)?;
    println!("data-parallel loop: 8 steps over {len} weights on {n} devices, matches the CPU");
    if sim {
        for k in &ranks {
            k.s.synchronize()?;
        }
        let hazards = xlog::sim::hazard_count();
        assert_eq!(hazards, 0, "the hazard detector found unfenced accesses");
        println!("hazard detector: no unfenced access");
    }
    Ok(())
}
