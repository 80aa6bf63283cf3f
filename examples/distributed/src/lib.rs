//! A distributed hash join and group-by over the GPUs of one process,
//!
//! ```sql
//! SELECT c.group, SUM(o.amount) FROM orders o JOIN customers c ON o.customer = c.key
//! GROUP BY c.group
//! ```
//!
//! with each relation spread over the ranks as it arrived. One host thread per
//! rank runs [`query`]'s steps on its GPU, each issuing its own part of every
//! collective, on two streams: `s` for its kernels, `x` for the exchange.
//!
//! 1. **partition**: every rank orders its rows by destination rank (the rank the
//!    key hashes to, [`rank_of`]), stably, with a counting pass over the keys
//!    (`rank_warp_counts`, one count per warp's block of rows and rank), an
//!    exclusive sum of the counts, and one scatter of keys and values together
//!    (`rank_scatter`); both relations are counted before either is scattered,
//!    and the counts are read back on `x` while the scatters run ([`order_by_rank`]);
//! 2. **exchange** (on `x`): the counts of both relations go to every rank with
//!    one all-to-all, then each relation's rows with a group of sends and
//!    receives (views of the ordered columns, each rank's block to it); the
//!    customers a rank keeps are copied on its device in front of those it
//!    receives, the orders it keeps are not moved;
//! 3. **join** and **sum** (on `s`): every rank builds its table over its
//!    customers as soon as they have arrived, joins the orders it kept while the
//!    others are still arriving over NVLink, then those it received, and sums the
//!    pairs by group (`sum_by_group`, each block into its own copy of the sums in
//!    shared memory): rows with one key are on one rank;
//! 4. **all-reduce**: the ranks' group sums are added.
//!
//! Up to [`MAX_RANKS`] ranks (the partition keeps a counter a rank in registers).
//!
//! With one rank every row is already where its key hashes to: steps 1, 2 and 4
//! have nothing to do and are skipped, so one GPU runs the same join and sum over
//! all the rows. That is the baseline `join_bench` measures two GPUs against.

use std::time::{Duration, Instant};

use distributed_kernels::{
    rank_scatter, rank_starts, rank_warp_counts, sum_by_group, warps_for, SUM_SHARED_BYTES,
};
use xlog::nccl::{Communicator, Group, ReduceOp};
use xlog::prelude::*;
use xlog::{BufferView, BufferViewMut};
use xlog_kernels::join::{JoinPairs, JoinTable};

pub use distributed_kernels::{rank_of, MAX_RANKS};

/// Groups of the query.
pub const GROUPS: usize = 256;
/// How long a rank waits for its peers' part of a collective.
pub const TIMEOUT: Duration = Duration::from_secs(60);

/// A 32-bit mix of `i` and `seed` (the generator of every column).
pub fn mix(i: u32, seed: u32) -> u32 {
    let mut x = i.wrapping_mul(0x9E37_79B1) ^ seed;
    x ^= x >> 15;
    x = x.wrapping_mul(0x85EB_CA77);
    x ^ (x >> 13)
}

const KEY_MUL: u32 = 0x2545_F491;
const KEY_XOR: u32 = 0x1234_5678;

/// Customer `j`'s key: a bijection of `j`, so keys are distinct.
fn key(j: u32) -> u32 {
    j.wrapping_mul(KEY_MUL) ^ KEY_XOR
}

/// The tables' sizes; row `i` of each column is a function of `i` alone.
#[derive(Clone, Copy, Debug)]
pub struct Sizes {
    /// Rows of `orders` (the probe side).
    pub orders: usize,
    /// Rows of `customers` (the build side).
    pub customers: usize,
}

impl Sizes {
    /// The customer order `i` names: past the last customer for about one order
    /// in seventeen, which then joins nothing.
    fn customer_of(&self, i: u32) -> u32 {
        let c = self.customers as u32;
        mix(i, 1) % (c + c / 16)
    }

    fn amount(i: u32) -> u32 {
        mix(i, 2) % 10_000
    }

    fn group(j: u32) -> u32 {
        mix(j, 3) % GROUPS as u32
    }
}

/// The two relations, each as a key column and a value column.
pub struct Tables {
    /// `orders.customer`.
    pub o_customer: Vec<u32>,
    /// `orders.amount`.
    pub o_amount: Vec<u32>,
    /// `customers.key`.
    pub c_key: Vec<u32>,
    /// `customers.group`.
    pub c_group: Vec<u32>,
}

/// `f(i)` for every `i` below `len`, computed by every core.
fn column(len: usize, f: impl Fn(u32) -> u32 + Sync) -> Vec<u32> {
    let mut out = vec![0u32; len];
    let threads = std::thread::available_parallelism().map_or(4, |n| n.get());
    let chunk = len.div_ceil(threads).max(1 << 16);
    std::thread::scope(|scope| {
        for (c, part) in out.chunks_mut(chunk).enumerate() {
            let f = &f;
            scope.spawn(move || {
                for (k, v) in part.iter_mut().enumerate() {
                    *v = f((c * chunk + k) as u32);
                }
            });
        }
    });
    out
}

impl Tables {
    /// The tables of `sizes`.
    pub fn generate(sizes: Sizes) -> Tables {
        Tables {
            o_customer: column(sizes.orders, |i| key(sizes.customer_of(i))),
            o_amount: column(sizes.orders, Sizes::amount),
            c_key: column(sizes.customers, key),
            c_group: column(sizes.customers, Sizes::group),
        }
    }

    /// The query on the CPU, through a hash map of the customers.
    pub fn cpu_sums(&self) -> Vec<u64> {
        let group: std::collections::HashMap<u32, u32> = self
            .c_key
            .iter()
            .copied()
            .zip(self.c_group.iter().copied())
            .collect();
        let mut sums = vec![0u64; GROUPS];
        for (c, &a) in self.o_customer.iter().zip(&self.o_amount) {
            if let Some(&g) = group.get(c) {
                sums[g as usize] += a as u64;
            }
        }
        sums
    }
}

/// The query's answer for `sizes` from the generator alone: order `i` joins
/// customer `customer_of(i)` when that is a customer, since keys are a bijection
/// of the customer number. Equal to [`Tables::cpu_sums`] (checked at small sizes)
/// and fast enough for hundreds of millions of orders.
pub fn closed_form_sums(sizes: Sizes) -> Vec<u64> {
    let threads = std::thread::available_parallelism().map_or(4, |n| n.get());
    let chunk = sizes.orders.div_ceil(threads).max(1 << 16);
    let parts: Vec<Vec<u64>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..sizes.orders)
            .step_by(chunk)
            .map(|start| {
                scope.spawn(move || {
                    let mut sums = vec![0u64; GROUPS];
                    for i in start..(start + chunk).min(sizes.orders) {
                        let j = sizes.customer_of(i as u32);
                        if (j as usize) < sizes.customers {
                            sums[Sizes::group(j) as usize] += Sizes::amount(i as u32) as u64;
                        }
                    }
                    sums
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    (0..GROUPS)
        .map(|g| parts.iter().map(|p| p[g]).sum())
        .collect()
}

/// One GPU's rank: its runtime, streams and communicator.
pub struct Rank {
    /// The rank's runtime.
    pub rt: Runtime,
    /// The stream the rank's kernels run on.
    pub s: Stream,
    /// The stream its exchange runs on, beside the kernels.
    pub x: Stream,
    /// The rank's communicator.
    pub comm: Communicator,
}

impl Rank {
    /// One rank per runtime, over one communicator (`init_all`).
    pub fn all(rts: &[Runtime]) -> xlog::Result<Vec<Rank>> {
        let comms = Communicator::init_all(rts)?;
        rts.iter()
            .zip(comms)
            .map(|(rt, comm)| {
                Ok(Rank {
                    s: rt.new_stream()?,
                    x: rt.new_stream()?,
                    rt: rt.clone(),
                    comm,
                })
            })
            .collect()
    }
}

/// A relation's rows on one rank: its key column and one value column.
pub struct Share {
    /// The key column.
    pub keys: DeviceBuffer<u32>,
    /// The value column.
    pub values: DeviceBuffer<u32>,
}

/// One rank's rows of both relations.
pub struct RankData {
    /// `orders.customer`, `orders.amount`.
    pub orders: Share,
    /// `customers.key`, `customers.group`.
    pub customers: Share,
}

/// Rows `i` with `i mod n == r` of each relation on every rank `r` (all rows on
/// one rank), uploaded on the ranks' streams.
pub fn spread(ranks: &[Rank], t: &Tables) -> xlog::Result<Vec<RankData>> {
    let n = ranks.len();
    ranks
        .iter()
        .enumerate()
        .map(|(r, k)| {
            let pick = |col: &[u32]| -> xlog::Result<DeviceBuffer<u32>> {
                if n == 1 {
                    return k.rt.upload_on(&k.s, col);
                }
                let part: Vec<u32> = col.iter().skip(r).step_by(n).copied().collect();
                k.rt.upload_on(&k.s, &part)
            };
            Ok(RankData {
                orders: Share {
                    keys: pick(&t.o_customer)?,
                    values: pick(&t.o_amount)?,
                },
                customers: Share {
                    keys: pick(&t.c_key)?,
                    values: pick(&t.c_group)?,
                },
            })
        })
        .collect()
}

/// Where a rank's time went: each step's milliseconds, measured by waiting for the
/// rank's stream at the end of every step (only when asked for: the waits cost a
/// little).
#[derive(Clone, Debug, Default)]
pub struct Steps(pub Vec<(&'static str, f64)>);

struct Clock<'a> {
    s: &'a Stream,
    last: Option<Instant>,
    steps: Steps,
}

impl<'a> Clock<'a> {
    fn new(s: &'a Stream, timed: bool) -> Self {
        Clock {
            s,
            last: timed.then(Instant::now),
            steps: Steps::default(),
        }
    }

    /// Ends step `name` (waiting for the stream, when timing).
    fn mark(&mut self, name: &'static str) -> xlog::Result<()> {
        if let Some(last) = self.last {
            self.s.synchronize()?;
            let now = Instant::now();
            self.steps
                .0
                .push((name, now.duration_since(last).as_secs_f64() * 1e3));
            self.last = Some(now);
        }
        Ok(())
    }
}

/// Splits the view `rest` into consecutive views of `lens` elements.
fn split_view<'a>(mut rest: BufferViewMut<'a, u32>, lens: &[usize]) -> Vec<BufferViewMut<'a, u32>> {
    let mut out = Vec::with_capacity(lens.len());
    for &len in lens {
        let (head, tail) = rest.split_at_mut(len);
        out.push(head);
        rest = tail;
    }
    out
}

/// Consecutive views of `lens` elements of `buf`.
fn blocks<'a>(buf: &'a DeviceBuffer<u32>, lens: &[usize]) -> Vec<BufferView<'a, u32>> {
    let mut at = 0;
    lens.iter()
        .map(|&len| {
            let v = buf.slice(at..at + len);
            at += len;
            v
        })
        .collect()
}

/// A relation's rows on one rank ordered by destination rank (step 1).
pub struct Ordered {
    /// The rows, those to rank 0 first, then those to rank 1, and so on, each
    /// rank's in their order before.
    pub rows: Share,
    /// Rows to each rank.
    pub send: Vec<usize>,
    /// Where each rank's rows start.
    pub at: Vec<usize>,
}

/// Step 1's counting half for one relation, enqueued on `s`: how many rows of
/// each warp's block go to each rank, summed into where each block's rows of each
/// rank go and where each rank's rows start.
struct Counted<'a> {
    share: &'a Share,
    ranks: usize,
    offsets: DeviceBuffer<u32>,
    starts: DeviceBuffer<u32>,
}

/// Blocks of 256 threads (8 warps) covering `warps` warps.
fn warp_launch(warps: usize) -> LaunchConfig {
    LaunchConfig::new([warps.div_ceil(8) as u32, 1, 1], [256, 1, 1])
}

/// Refuses what [`order_by_rank`] cannot order: `ranks` outside `1..=MAX_RANKS`, more
/// than `u32::MAX` rows, columns of different lengths.
fn check_share(share: &Share, ranks: usize) -> xlog::Result<()> {
    let len = share.keys.len();
    if !(1..=MAX_RANKS).contains(&ranks) || u32::try_from(len).is_err() {
        return Err(xlog::Error::InvalidArgument {
            what: "distributed::order_by_rank".into(),
            reason: format!(
                "orders at most {} rows for 1 to {MAX_RANKS} ranks; got {len} rows for {ranks} ranks",
                u32::MAX
            ),
        });
    }
    if share.values.len() != len {
        return Err(xlog::Error::InvalidArgument {
            what: "distributed::order_by_rank".into(),
            reason: format!(
                "the key column has {len} rows, the value column {}",
                share.values.len()
            ),
        });
    }
    Ok(())
}

fn count_by_rank<'a>(
    rt: &Runtime,
    s: &Stream,
    share: &'a Share,
    ranks: usize,
) -> xlog::Result<Counted<'a>> {
    let len = share.keys.len();
    let warps = warps_for(len);
    let mut starts = rt.alloc_zeroed_on::<u32>(s, ranks)?;
    let mut counts = rt.alloc_zeroed_on::<u32>(s, ranks * warps)?;
    let offsets = if len == 0 {
        counts
    } else {
        rank_warp_counts::launch(
            s,
            warp_launch(warps),
            &share.keys,
            ranks as u32,
            &mut counts,
        )?;
        let offsets = xlog_kernels::scan::exclusive_sum(s, &counts)?;
        rank_starts::launch(
            s,
            LaunchConfig::for_len(ranks),
            &offsets,
            warps as u32,
            &mut starts,
        )?;
        offsets
    };
    Ok(Counted {
        share,
        ranks,
        offsets,
        starts,
    })
}

/// Step 1's second half, enqueued on `s`: the relation's keys and values in one
/// pass each, ordered by destination rank.
fn scatter_by_rank(rt: &Runtime, s: &Stream, c: &Counted<'_>) -> xlog::Result<Share> {
    let len = c.share.keys.len();
    let mut rows = Share {
        keys: rt.alloc_zeroed_on::<u32>(s, len)?,
        values: rt.alloc_zeroed_on::<u32>(s, len)?,
    };
    if len > 0 {
        rank_scatter::launch(
            s,
            warp_launch(warps_for(len)),
            &c.share.keys,
            &c.share.values,
            c.ranks as u32,
            &c.offsets,
            &mut rows.keys,
            &mut rows.values,
        )?;
    }
    Ok(rows)
}

/// Where each rank's rows start and how many there are, read back on `x`: waits
/// only for the counting half, not for the scatter enqueued after it on `s`.
fn sizes_of(c: &Counted<'_>, x: &Stream) -> xlog::Result<(Vec<usize>, Vec<usize>)> {
    let len = c.share.keys.len();
    let at: Vec<usize> = c
        .starts
        .download(x)?
        .into_iter()
        .map(|v| v as usize)
        .collect();
    let send = (0..c.ranks)
        .map(|r| at.get(r + 1).copied().unwrap_or(len) - at[r])
        .collect();
    Ok((at, send))
}

/// Step 1 for several relations on one GPU: each relation's rows ordered by
/// destination rank among `ranks` (at most [`MAX_RANKS`]), stably. The counting
/// passes of every relation are enqueued on `s` first, then their scatters;
/// the sizes are read back on `x`, so the host learns them while the scatters
/// run. Every relation is checked before anything is queued.
///
/// # Errors
///
/// `InvalidArgument` when `ranks` is 0 or above [`MAX_RANKS`], a relation has
/// more than `u32::MAX` rows or columns of different lengths; a budget refusal; a
/// launch error.
pub fn order_by_rank(
    rt: &Runtime,
    s: &Stream,
    x: &Stream,
    rels: &[&Share],
    ranks: usize,
) -> xlog::Result<Vec<Ordered>> {
    for share in rels {
        check_share(share, ranks)?;
    }
    let counted = rels
        .iter()
        .map(|share| count_by_rank(rt, s, share, ranks))
        .collect::<xlog::Result<Vec<_>>>()?;
    let rows = counted
        .iter()
        .map(|c| scatter_by_rank(rt, s, c))
        .collect::<xlog::Result<Vec<_>>>()?;
    counted
        .iter()
        .zip(rows)
        .map(|(c, rows)| {
            let (at, send) = sizes_of(c, x)?;
            Ok(Ordered { rows, send, at })
        })
        .collect()
}

/// Step 2's counts on rank `k`: how many rows of each relation every rank sends
/// this one (one all-to-all on `x`, read back).
fn receive_counts(k: &Rank, rels: &[&Ordered]) -> xlog::Result<Vec<Vec<usize>>> {
    let n = k.comm.ranks() as usize;
    let m = rels.len();
    // Block `p` (to rank `p`) holds each relation's count for `p`.
    let mut host = vec![0u32; n * m];
    for p in 0..n {
        for (i, rel) in rels.iter().enumerate() {
            host[p * m + i] = rel.send[p] as u32;
        }
    }
    let sent = k.rt.upload_on(&k.x, &host)?;
    let mut got = k.rt.alloc_zeroed_on::<u32>(&k.x, n * m)?;
    Group::new()
        .all_to_all(&k.comm, &k.x, &sent, &mut got)
        .launch()?;
    k.comm.wait(&k.x, TIMEOUT)?;
    let got = got.download(&k.x)?;
    Ok((0..m)
        .map(|i| (0..n).map(|p| got[p * m + i] as usize).collect())
        .collect())
}

/// Step 2 for one relation on rank `k`, on `x`: the rows other ranks send this
/// one, received into `into` from row `from` on, in rank order (this rank's own
/// block is left out); this rank's blocks sent to the others.
fn exchange_into(
    k: &Rank,
    rel: &Ordered,
    recv: &[usize],
    into: &mut Share,
    from: usize,
) -> xlog::Result<()> {
    let me = k.comm.rank() as usize;
    let lens: Vec<usize> = recv
        .iter()
        .enumerate()
        .map(|(p, &l)| if p == me { 0 } else { l })
        .collect();
    let (key_from, value_from) = (
        blocks(&rel.rows.keys, &rel.send),
        blocks(&rel.rows.values, &rel.send),
    );
    let (_, key_rest) = into.keys.slice_mut(..).split_at_mut(from);
    let (_, value_rest) = into.values.slice_mut(..).split_at_mut(from);
    let mut key_into = split_view(key_rest, &lens);
    let mut value_into = split_view(value_rest, &lens);
    let mut g = Group::new();
    let into = key_into.iter_mut().zip(value_into.iter_mut());
    for (p, ((keys, values), (ki, vi))) in key_from.iter().zip(&value_from).zip(into).enumerate() {
        if p == me {
            continue;
        }
        let p = p as u32;
        g = g
            .send(&k.comm, &k.x, keys, p)
            .send(&k.comm, &k.x, values, p)
            .recv(&k.comm, &k.x, ki, p)
            .recv(&k.comm, &k.x, vi, p);
    }
    g.launch()
}

/// `sums[group[build_rows[k]]] += amount[probe_rows[k]]` over `pairs`.
fn sum(
    k: &Rank,
    pairs: &JoinPairs,
    group: &(impl xlog::ReadBuffer<u32> + ?Sized),
    amount: &(impl xlog::ReadBuffer<u32> + ?Sized),
    sums: &mut DeviceBuffer<u64>,
) -> xlog::Result<()> {
    if pairs.is_empty() {
        return Ok(());
    }
    // Blocks of 256 threads, 16 pairs a thread, at most 2048 blocks: each block's
    // shared sums are merged with one atomic add a group.
    let blocks = pairs.len().div_ceil(256 * 16).clamp(1, 2048) as u32;
    let cfg = LaunchConfig::new([blocks, 1, 1], [256, 1, 1]).with_shared_bytes(SUM_SHARED_BYTES);
    sum_by_group::launch(
        &k.s,
        cfg,
        &pairs.build_rows,
        &pairs.probe_rows,
        group,
        amount,
        sums,
    )
}

/// The query on rank `k` of `ranks.len()`: its group sums after the all-reduce
/// (every rank's are the same) and, when `timed`, where its time went (each
/// step ended by waiting for `s`, so the exchange on `x` shows in the steps that
/// wait for it).
fn rank_query(k: &Rank, d: &RankData, timed: bool) -> xlog::Result<(Vec<u64>, Steps)> {
    let n = k.comm.ranks() as usize;
    let mut clock = Clock::new(&k.s, timed);
    let mut sums = k.rt.alloc_zeroed_on::<u64>(&k.s, GROUPS)?;
    if n == 1 {
        let table = JoinTable::build(&k.s, &d.customers.keys)?;
        clock.mark("build")?;
        let pairs = table.inner_join(&k.s, &d.orders.keys)?;
        clock.mark("probe")?;
        sum(k, &pairs, &d.customers.values, &d.orders.values, &mut sums)?;
        clock.mark("sum")?;
        let sums = sums.download(&k.s)?;
        clock.mark("sums to host")?;
        return Ok((sums, clock.steps));
    }
    let me = k.comm.rank() as usize;
    let mut ordered = order_by_rank(&k.rt, &k.s, &k.x, &[&d.customers, &d.orders], n)?;
    let o = ordered.pop().expect("two relations ordered");
    let c = ordered.pop().expect("two relations ordered");
    clock.mark("partition")?;
    let recv = receive_counts(k, &[&c, &o])?;
    clock.mark("counts")?;
    // The customers: those this rank keeps, then those it receives.
    let kept = c.send[me];
    let c_total = kept
        + recv[0]
            .iter()
            .enumerate()
            .filter(|&(p, _)| p != me)
            .map(|(_, l)| l)
            .sum::<usize>();
    let mut customers = Share {
        keys: k.rt.alloc_zeroed_on::<u32>(&k.s, c_total)?,
        values: k.rt.alloc_zeroed_on::<u32>(&k.s, c_total)?,
    };
    let at = c.at[me];
    customers
        .keys
        .slice_mut(..kept)
        .copy_from(&k.s, &c.rows.keys.slice(at..at + kept))?;
    customers
        .values
        .slice_mut(..kept)
        .copy_from(&k.s, &c.rows.values.slice(at..at + kept))?;
    exchange_into(k, &c, &recv[0], &mut customers, kept)?;
    // The orders it receives; those it keeps stay where they are.
    let o_in = recv[1]
        .iter()
        .enumerate()
        .filter(|&(p, _)| p != me)
        .map(|(_, l)| l)
        .sum();
    let mut orders_in = Share {
        keys: k.rt.alloc_zeroed_on::<u32>(&k.x, o_in)?,
        values: k.rt.alloc_zeroed_on::<u32>(&k.x, o_in)?,
    };
    exchange_into(k, &o, &recv[1], &mut orders_in, 0)?;
    // The table waits for the customers only; the orders kept are joined while
    // the others arrive.
    let table = JoinTable::build(&k.s, &customers.keys)?;
    clock.mark("build (customers arrived)")?;
    let (at, kept) = (o.at[me], o.send[me]);
    let kept_keys = o.rows.keys.slice(at..at + kept);
    let kept_values = o.rows.values.slice(at..at + kept);
    let pairs = table.inner_join(&k.s, &kept_keys)?;
    clock.mark("probe kept")?;
    sum(k, &pairs, &customers.values, &kept_values, &mut sums)?;
    drop(pairs);
    clock.mark("sum kept")?;
    let pairs = table.inner_join(&k.s, &orders_in.keys)?;
    clock.mark("probe received (orders arrived)")?;
    sum(k, &pairs, &customers.values, &orders_in.values, &mut sums)?;
    clock.mark("sum received")?;
    k.comm.all_reduce_in_place(&k.s, &mut sums, ReduceOp::Sum)?;
    k.comm.wait(&k.s, TIMEOUT)?;
    let sums = sums.download(&k.s)?;
    clock.mark("all-reduce, sums to host")?;
    Ok((sums, clock.steps))
}

/// The whole query over `ranks` (one host thread each), with `data[r]` on rank
/// `r`: the group sums, and each rank's [`Steps`] when `timed`.
pub fn query(
    ranks: &[Rank],
    data: &[RankData],
    timed: bool,
) -> xlog::Result<(Vec<u64>, Vec<Steps>)> {
    assert_eq!(ranks.len(), data.len(), "one share of the data per rank");
    let results: Vec<xlog::Result<(Vec<u64>, Steps)>> = std::thread::scope(|scope| {
        let handles: Vec<_> = ranks
            .iter()
            .zip(data)
            .map(|(k, d)| {
                scope.spawn(move || {
                    let r = rank_query(k, d, timed);
                    if r.is_err() {
                        // The others would wait for this rank's part forever.
                        k.comm.abort();
                    }
                    r
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a rank's thread panicked"))
            .collect()
    });
    let mut sums = None;
    let mut steps = Vec::new();
    for (r, result) in results.into_iter().enumerate() {
        let (s, st) = result?;
        match &sums {
            None => sums = Some(s),
            Some(first) => assert_eq!(&s, first, "rank {r} holds other sums than rank 0"),
        }
        steps.push(st);
    }
    Ok((sums.unwrap_or_default(), steps))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_closed_form_matches_the_cpus_hash_join() {
        for sizes in [
            Sizes {
                orders: 100_000,
                customers: 5_000,
            },
            Sizes {
                orders: 1 << 17,
                customers: 1 << 12,
            },
        ] {
            let t = Tables::generate(sizes);
            assert_eq!(closed_form_sums(sizes), t.cpu_sums(), "{sizes:?}");
        }
    }
}
