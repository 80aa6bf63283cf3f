//! Several devices (opt-in: `--features gpu-tests`; fails with fewer than two
//! devices; in CI on the simulator with `XLOG_SIM_DEVICES=2` and `4`, where the
//! hazard detector checks every collective and peer copy too).
//!
//! - results: every collective, over every element type (`f16` and `bf16`
//!   included) and reduction operator, against the CPU; all-to-all and send/receive in one group;
//! - fencing: a collective waits for a slow kernel that wrote its input on another
//!   stream, and a kernel on another stream waits for a collective's output, with
//!   teeth (fencing off shows the race, or the detector reports it);
//! - peer copies: fenced on both devices' streams;
//! - refusals: a buffer or stream of another device, lengths, roots and peers out
//!   of range, each leaving nothing queued;
//! - failures: a rank that never issues its part is an error after the timeout,
//!   not a hang, and the communicator then refuses work; ranks of one process that
//!   disagree, in one group or apart, are refused before anything is queued;
//! - two processes (GPU): `torchrun`-style ranks joined through an id file (with
//!   a timeout, so nonblocking communicators), checking they agree; a rank that
//!   exits makes the other's wait an error, not a hang;
//! - initialisation (GPU): a rank whose peer never joins gets an error at its
//!   timeout, not a hang.

use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use xlog::{DeviceBuffer, Runtime, Stream};
use xlog_runtime::nccl::{Communicator, Group, ProcessEnv, ReduceOp, Reducible, UniqueId};
use xlog_runtime::{copy_peer, testing, Device, Error};
use xlog_stress::{at, mix, mix_w};
use xlog_test_support::Rng;

const TIMEOUT: Duration = Duration::from_secs(60);
const N: usize = 4096;
/// How long a slow kernel's threads sleep: long enough that unfenced work on
/// another stream runs before the writer finishes.
const SLOW_NS: u32 = 200_000;

/// Tests here share the devices' communicators and flip the fencing switch: one
/// at a time.
fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|p| p.into_inner())
}

struct RestoreFencing;

impl Drop for RestoreFencing {
    fn drop(&mut self) {
        // SAFETY: turning fencing back on promises nothing.
        unsafe { testing::set_fencing(true) };
    }
}

fn sim() -> bool {
    xlog_runtime::sim::is_active()
}

/// One runtime per device, up to four; at least two or the test fails.
fn runtimes() -> Vec<Runtime> {
    let count = Device::count().unwrap_or(0);
    assert!(
        count >= 2,
        "the multi-device suite needs at least two devices (found {count}); on the \
         simulator set XLOG_SIM_DEVICES=2"
    );
    (0..count.min(4))
        .map(|d| Runtime::get(d).unwrap_or_else(|e| panic!("device {d}: {e}")))
        .collect()
}

struct Ranks {
    rts: Vec<Runtime>,
    comms: Vec<Communicator>,
    streams: Vec<Stream>,
}

fn ranks() -> Ranks {
    let rts = runtimes();
    let comms = Communicator::init_all(&rts).expect("init_all");
    let streams = rts.iter().map(|rt| rt.new_stream().unwrap()).collect();
    Ranks {
        rts,
        comms,
        streams,
    }
}

impl Ranks {
    fn n(&self) -> usize {
        self.rts.len()
    }

    fn upload<T: xlog::DeviceCopy>(&self, host: &[Vec<T>]) -> Vec<DeviceBuffer<T>> {
        (0..self.n())
            .map(|r| self.rts[r].upload_on(&self.streams[r], &host[r]).unwrap())
            .collect()
    }

    fn zeroed<T: xlog::DeviceCopy>(&self, len: usize) -> Vec<DeviceBuffer<T>> {
        (0..self.n())
            .map(|r| self.rts[r].alloc_zeroed_on(&self.streams[r], len).unwrap())
            .collect()
    }

    fn download<T: xlog::DeviceCopy>(&self, bufs: &[DeviceBuffer<T>]) -> Vec<Vec<T>> {
        for (r, c) in self.comms.iter().enumerate() {
            c.wait(&self.streams[r], TIMEOUT).unwrap();
        }
        bufs.iter()
            .zip(&self.streams)
            .map(|(b, s)| b.download(s).unwrap())
            .collect()
    }
}

fn data(seed: u64, len: usize) -> Vec<u32> {
    let mut r = Rng::new(seed);
    (0..len).map(|_| r.next_u64() as u32).collect()
}

/// Small values, so sums and products stay exact in every type.
fn small<T: From<i8>>(rank: usize, len: usize) -> Vec<T> {
    (0..len)
        .map(|i| T::from(((i * 7 + rank * 3) % 5) as i8 - 1))
        .collect()
}

fn cpu_reduce<T: Reducible + PartialOrd + std::ops::Add<Output = T> + std::ops::Mul<Output = T>>(
    inputs: &[Vec<T>],
    op: ReduceOp,
) -> Vec<T> {
    let mut acc = inputs[0].clone();
    for x in &inputs[1..] {
        for (a, &b) in acc.iter_mut().zip(x) {
            *a = match op {
                ReduceOp::Sum => *a + b,
                ReduceOp::Prod => *a * b,
                ReduceOp::Max => {
                    if b > *a {
                        b
                    } else {
                        *a
                    }
                }
                _ => {
                    if b < *a {
                        b
                    } else {
                        *a
                    }
                }
            };
        }
    }
    acc
}

const OPS: [ReduceOp; 4] = [ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Max, ReduceOp::Min];

fn all_reduce_matches_the_cpu<T>(ranks: &Ranks)
where
    T: Reducible
        + From<i8>
        + PartialOrd
        + PartialEq
        + std::fmt::Debug
        + std::ops::Add<Output = T>
        + std::ops::Mul<Output = T>,
{
    let len = 1000;
    let host: Vec<Vec<T>> = (0..ranks.n()).map(|r| small(r, len)).collect();
    for op in OPS {
        let send = ranks.upload(&host);
        let mut recv = ranks.zeroed::<T>(len);
        let mut g = Group::new();
        for (r, out) in recv.iter_mut().enumerate() {
            g = g.all_reduce(&ranks.comms[r], &ranks.streams[r], &send[r], out, op);
        }
        g.launch().unwrap();
        let want = cpu_reduce(&host, op);
        for (r, got) in ranks.download(&recv).into_iter().enumerate() {
            assert_eq!(
                got,
                want,
                "{} {op:?} on rank {r}",
                std::any::type_name::<T>()
            );
        }
    }
}

#[test]
fn all_reduce_over_every_element_type_and_operator() {
    let _g = serial();
    let ranks = ranks();
    all_reduce_matches_the_cpu::<i8>(&ranks);
    all_reduce_matches_the_cpu::<i32>(&ranks);
    all_reduce_matches_the_cpu::<i64>(&ranks);
    all_reduce_matches_the_cpu::<f32>(&ranks);
    all_reduce_matches_the_cpu::<f64>(&ranks);
    all_reduce_matches_the_cpu::<half::f16>(&ranks);
    all_reduce_matches_the_cpu::<half::bf16>(&ranks);
    // Unsigned types: values 0..4 (small() minus one could wrap).
    fn unsigned<T: Reducible + TryFrom<u8> + PartialEq + std::fmt::Debug>(ranks: &Ranks)
    where
        <T as TryFrom<u8>>::Error: std::fmt::Debug,
    {
        let len = 777;
        let v = |r: usize, i: usize| ((i * 5 + r) % 4) as u8;
        let host: Vec<Vec<T>> = (0..ranks.n())
            .map(|r| (0..len).map(|i| T::try_from(v(r, i)).unwrap()).collect())
            .collect();
        let mut bufs = ranks.upload(&host);
        let mut g = Group::new();
        for (r, b) in bufs.iter_mut().enumerate() {
            g = g.all_reduce_in_place(&ranks.comms[r], &ranks.streams[r], b, ReduceOp::Max);
        }
        g.launch().unwrap();
        let want: Vec<T> = (0..len)
            .map(|i| T::try_from((0..ranks.n()).map(|r| v(r, i)).max().unwrap()).unwrap())
            .collect();
        for got in ranks.download(&bufs) {
            assert_eq!(got, want, "{}", std::any::type_name::<T>());
        }
    }
    unsigned::<u8>(&ranks);
    unsigned::<u32>(&ranks);
    unsigned::<u64>(&ranks);
}

#[test]
fn broadcast_reduce_gather_and_scatter_match_the_cpu() {
    let _g = serial();
    let ranks = ranks();
    let n = ranks.n();
    let host: Vec<Vec<u32>> = (0..n).map(|r| data(10 + r as u64, N)).collect();
    // Broadcast from the last rank, in place.
    let root = (n - 1) as u32;
    let mut bufs = ranks.upload(&host);
    let mut g = Group::new();
    for (r, b) in bufs.iter_mut().enumerate() {
        g = g.broadcast(&ranks.comms[r], &ranks.streams[r], b, root);
    }
    g.launch().unwrap();
    for got in ranks.download(&bufs) {
        assert_eq!(got, host[n - 1]);
    }
    // Reduce (sum) to rank 1: only the root's receive buffer changes.
    let send = ranks.upload(&host);
    let mut recv = ranks.upload(&vec![vec![7u32; N]; n]);
    let mut g = Group::new();
    for (r, out) in recv.iter_mut().enumerate() {
        g = g.reduce(
            &ranks.comms[r],
            &ranks.streams[r],
            &send[r],
            out,
            ReduceOp::Sum,
            1,
        );
    }
    g.launch().unwrap();
    let sum: Vec<u32> = (0..N)
        .map(|i| host.iter().fold(0u32, |a, h| a.wrapping_add(h[i])))
        .collect();
    for (r, got) in ranks.download(&recv).into_iter().enumerate() {
        if r == 1 {
            assert_eq!(got, sum);
        } else {
            assert_eq!(got, vec![7; N], "rank {r} is not the root");
        }
    }
    // All-gather: every rank gets every rank's block, in rank order.
    let mut gathered = ranks.zeroed::<u32>(N * n);
    let mut g = Group::new();
    for (r, out) in gathered.iter_mut().enumerate() {
        g = g.all_gather(&ranks.comms[r], &ranks.streams[r], &send[r], out);
    }
    g.launch().unwrap();
    let all: Vec<u32> = host.concat();
    for got in ranks.download(&gathered) {
        assert_eq!(got, all);
    }
    // Reduce-scatter: rank r gets block r of the sum of every rank's send.
    let big: Vec<Vec<u32>> = (0..n).map(|r| data(30 + r as u64, N * n)).collect();
    let send = ranks.upload(&big);
    let mut blocks = ranks.zeroed::<u32>(N);
    let mut g = Group::new();
    for (r, out) in blocks.iter_mut().enumerate() {
        g = g.reduce_scatter(
            &ranks.comms[r],
            &ranks.streams[r],
            &send[r],
            out,
            ReduceOp::Sum,
        );
    }
    g.launch().unwrap();
    for (r, got) in ranks.download(&blocks).into_iter().enumerate() {
        let want: Vec<u32> = (r * N..(r + 1) * N)
            .map(|i| big.iter().fold(0u32, |a, h| a.wrapping_add(h[i])))
            .collect();
        assert_eq!(got, want, "block of rank {r}");
    }
}

#[test]
fn all_to_all_and_send_receive_match_the_cpu() {
    let _g = serial();
    let ranks = ranks();
    let n = ranks.n();
    let block = 333;
    let host: Vec<Vec<u64>> = (0..n)
        .map(|r| (0..block * n).map(|i| (r * 1_000_000 + i) as u64).collect())
        .collect();
    let send = ranks.upload(&host);
    let mut recv = ranks.zeroed::<u64>(block * n);
    let mut g = Group::new();
    for (r, out) in recv.iter_mut().enumerate() {
        g = g.all_to_all(&ranks.comms[r], &ranks.streams[r], &send[r], out);
    }
    g.launch().unwrap();
    for (r, got) in ranks.download(&recv).into_iter().enumerate() {
        let want: Vec<u64> = (0..n)
            .flat_map(|src| host[src][r * block..(r + 1) * block].to_vec())
            .collect();
        assert_eq!(got, want, "rank {r}");
    }
    // A ring of sends and receives in one group: rank r sends to r + 1.
    let mut got = ranks.zeroed::<u64>(block * n);
    let mut g = Group::new();
    for (r, out) in got.iter_mut().enumerate() {
        let (to, from) = ((r + 1) % n, (r + n - 1) % n);
        g = g
            .send(&ranks.comms[r], &ranks.streams[r], &send[r], to as u32)
            .recv(&ranks.comms[r], &ranks.streams[r], out, from as u32);
    }
    g.launch().unwrap();
    for (r, got) in ranks.download(&got).into_iter().enumerate() {
        assert_eq!(got, host[(r + n - 1) % n], "rank {r}");
    }
}

/// One host thread per rank, each issuing its own rank's collectives (a group of
/// one each time), as a process that gives every GPU a thread does.
#[test]
fn one_thread_per_rank_issues_its_own_collectives() {
    let _g = serial();
    let ranks = ranks();
    let n = ranks.n();
    let results: Vec<Vec<u64>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..n)
            .map(|r| {
                let (rt, s, comm) = (&ranks.rts[r], &ranks.streams[r], &ranks.comms[r]);
                scope.spawn(move || {
                    let mut buf = rt.upload_on(s, &vec![r as u64 + 1; 5000]).unwrap();
                    for _ in 0..3 {
                        comm.all_reduce_in_place(s, &mut buf, ReduceOp::Sum)
                            .unwrap();
                    }
                    comm.broadcast(s, &mut buf, 0).unwrap();
                    comm.wait(s, TIMEOUT).unwrap();
                    buf.download(s).unwrap()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let total = (n * (n + 1) / 2) as u64;
    let want = total * (n as u64).pow(2);
    for (r, got) in results.into_iter().enumerate() {
        assert_eq!(got, vec![want; 5000], "rank {r}");
    }
}

/// Rank 0's input is written by a slow kernel on another stream of device 0, the
/// collective reads it; then a kernel on another stream of each device reads the
/// collective's output. Returns whether every value was the fenced one.
fn fenced_around_a_collective(ranks: &Ranks) -> bool {
    let n = ranks.n();
    let other: Vec<Stream> = ranks
        .rts
        .iter()
        .map(|rt| rt.new_stream().unwrap())
        .collect();
    let host: Vec<Vec<u32>> = (0..n).map(|r| data(50 + r as u64, N)).collect();
    let mut inputs = ranks.upload(&host);
    let seed = ranks.rts[0].upload_on(&other[0], &data(60, N)).unwrap();
    for s in ranks.streams.iter().chain(&other) {
        s.synchronize().unwrap();
    }
    // Slow write of rank 0's input on `other[0]`.
    mix_w::launch(
        &other[0],
        mix_w::config(N),
        &seed,
        &seed,
        &mut inputs[0],
        1,
        SLOW_NS,
    )
    .unwrap();
    let mut sums = ranks.zeroed::<u32>(N);
    let mut g = Group::new();
    for (r, out) in sums.iter_mut().enumerate() {
        g = g.all_reduce(
            &ranks.comms[r],
            &ranks.streams[r],
            &inputs[r],
            out,
            ReduceOp::Sum,
        );
    }
    g.launch().unwrap();
    // A reader of the output on another stream of each device.
    let mut mixed = ranks.zeroed::<u32>(N);
    for r in 0..n {
        mix_w::launch(
            &other[r],
            mix_w::config(N),
            &sums[r],
            &sums[r],
            &mut mixed[r],
            2,
            0,
        )
        .unwrap();
    }
    let seed_h = data(60, N);
    let mut first = vec![0u32; N];
    for (i, f) in first.iter_mut().enumerate() {
        *f = mix(at(&seed_h, i), at(&seed_h, i), 1);
    }
    let sum: Vec<u32> = (0..N)
        .map(|i| (1..n).fold(first[i], |a, r| a.wrapping_add(host[r][i])))
        .collect();
    let want: Vec<u32> = (0..N).map(|i| mix(sum[i], sum[i], 2)).collect();
    let mut ok = true;
    for r in 0..n {
        ranks.comms[r].wait(&ranks.streams[r], TIMEOUT).unwrap();
        ok &= mixed[r].download(&other[r]).unwrap() == want;
    }
    ok
}

#[test]
fn collectives_are_fenced_against_kernels_on_other_streams() {
    let _g = serial();
    let ranks = ranks();
    let before = xlog_runtime::sim::hazard_count();
    assert!(
        fenced_around_a_collective(&ranks),
        "a collective was not fenced"
    );
    assert_eq!(
        xlog_runtime::sim::hazard_count(),
        before,
        "the detector saw a hazard"
    );
}

#[test]
fn collective_fencing_has_teeth() {
    let _g = serial();
    let ranks = ranks();
    let _restore = RestoreFencing;
    let before = xlog_runtime::sim::hazard_count();
    // SAFETY: this test observes the races fencing prevents, on plain integers it
    // only compares; `serial()` keeps the other tests here out meanwhile.
    unsafe { testing::set_fencing(false) };
    let fenced = fenced_around_a_collective(&ranks);
    // SAFETY: turning fencing back on promises nothing.
    unsafe { testing::set_fencing(true) };
    for rt in &ranks.rts {
        rt.synchronize().unwrap();
    }
    let hazards = xlog_runtime::sim::hazard_count() - before;
    if sim() {
        assert!(
            hazards > 0,
            "the detector must report the unfenced collective"
        );
    } else {
        assert!(
            !fenced,
            "without fencing the slow writer must be seen unfinished"
        );
    }
}

/// A slow kernel writes `src` on device 0; it is copied to device 1; then `src`
/// is overwritten on device 0 on another stream, which must wait for the copy.
fn fenced_around_a_peer_copy(rts: &[Runtime]) -> bool {
    let (a0, b0, a1) = (
        rts[0].new_stream().unwrap(),
        rts[0].new_stream().unwrap(),
        rts[1].new_stream().unwrap(),
    );
    let seed = rts[0].upload_on(&a0, &data(70, N)).unwrap();
    let mut src = rts[0].alloc_zeroed_on::<u32>(&a0, N).unwrap();
    let mut dst = rts[1].alloc_zeroed_on::<u32>(&a1, N).unwrap();
    a0.synchronize().unwrap();
    a1.synchronize().unwrap();
    mix_w::launch(&a0, mix_w::config(N), &seed, &seed, &mut src, 3, SLOW_NS).unwrap();
    let _ = copy_peer(&a1, &mut dst, &b0, &src).unwrap();
    // Overwrite the source on another stream of device 0: after the copy read it.
    src.fill(&a0, 5).unwrap();
    let seed_h = data(70, N);
    let want: Vec<u32> = (0..N)
        .map(|i| mix(at(&seed_h, i), at(&seed_h, i), 3))
        .collect();
    let got = dst.download(&a1).unwrap();
    let src_now = src.download(&b0).unwrap();
    got == want && src_now == vec![5; N]
}

#[test]
fn peer_copies_are_fenced_on_both_devices() {
    let _g = serial();
    let rts = runtimes();
    let before = xlog_runtime::sim::hazard_count();
    assert!(
        fenced_around_a_peer_copy(&rts),
        "a peer copy was not fenced"
    );
    assert_eq!(
        xlog_runtime::sim::hazard_count(),
        before,
        "the detector saw a hazard"
    );
    // Copy back and forth between every pair of the first two devices, views too.
    let s: Vec<Stream> = rts.iter().map(|rt| rt.new_stream().unwrap()).collect();
    let h = data(80, N);
    let a = rts[0].upload_on(&s[0], &h).unwrap();
    let mut b = rts[1].alloc_zeroed_on::<u32>(&s[1], N / 2).unwrap();
    let _ = copy_peer(&s[1], &mut b, &s[0], &a.slice(N / 2..)).unwrap();
    assert_eq!(b.download(&s[1]).unwrap(), h[N / 2..]);
    let e = copy_peer(&s[1], &mut b, &s[0], &a).unwrap_err();
    assert!(e.to_string().contains("elements"), "{e}");
}

#[test]
fn peer_copy_fencing_has_teeth() {
    let _g = serial();
    let rts = runtimes();
    let _restore = RestoreFencing;
    let before = xlog_runtime::sim::hazard_count();
    // SAFETY: as in `collective_fencing_has_teeth`.
    unsafe { testing::set_fencing(false) };
    let fenced = fenced_around_a_peer_copy(&rts);
    // SAFETY: turning fencing back on promises nothing.
    unsafe { testing::set_fencing(true) };
    for rt in &rts {
        rt.synchronize().unwrap();
    }
    let hazards = xlog_runtime::sim::hazard_count() - before;
    if sim() {
        assert!(
            hazards > 0,
            "the detector must report the unfenced peer copy"
        );
    } else {
        assert!(
            !fenced,
            "without fencing the slow writer must be seen unfinished"
        );
    }
}

#[test]
fn bad_arguments_are_refused_before_anything_is_queued() {
    let _g = serial();
    let ranks = ranks();
    let n = ranks.n();
    let (c0, c1, s0, s1) = (
        &ranks.comms[0],
        &ranks.comms[1],
        &ranks.streams[0],
        &ranks.streams[1],
    );
    let a0 = ranks.rts[0].upload_on(s0, &data(90, N)).unwrap();
    let mut b0 = ranks.rts[0].alloc_zeroed_on::<u32>(s0, N).unwrap();
    let a1 = ranks.rts[1].upload_on(s1, &data(91, N)).unwrap();
    let mut short = ranks.rts[0].alloc_zeroed_on::<u32>(s0, N - 1).unwrap();
    let expect = |r: xlog::Result<()>, needle: &str| {
        let e = r.expect_err(needle).to_string();
        assert!(e.contains(needle), "`{e}` does not say `{needle}`");
    };
    // A buffer of device 1 on rank 0's stream.
    expect(c0.all_reduce(s0, &a1, &mut b0, ReduceOp::Sum), "device");
    // Rank 0's communicator on device 1's stream.
    expect(c0.all_reduce(s1, &a0, &mut b0, ReduceOp::Sum), "device 1");
    expect(
        c0.all_reduce(s0, &a0, &mut short, ReduceOp::Sum),
        "elements",
    );
    expect(c0.broadcast(s0, &mut b0, n as u32), "not a rank");
    expect(c0.send(s0, &a0, 99), "not a rank");
    expect(
        Group::new().all_gather(c0, s0, &a0, &mut b0).launch(),
        "ranks",
    );
    expect(
        Group::new().all_to_all(c0, s0, &a0, &mut short).launch(),
        "multiple",
    );
    // Ranks of one communicator must agree: in one group, or (below) apart.
    let host: Vec<Vec<u32>> = (0..n).map(|r| vec![1; 100 + r]).collect();
    let mut uneven = ranks.upload(&host);
    let mut g = Group::new();
    for (r, b) in uneven.iter_mut().enumerate() {
        g = g.all_reduce_in_place(&ranks.comms[r], &ranks.streams[r], b, ReduceOp::Sum);
    }
    expect(g.launch(), "issues all_reduce of 101 elements");
    let [u0, u1, ..] = &mut uneven[..] else {
        unreachable!()
    };
    let pair = Group::new()
        .all_reduce_in_place(c0, s0, u0, ReduceOp::Sum)
        .all_reduce_in_place(c1, s1, u1, ReduceOp::Sum);
    expect(pair.launch(), "issues all_reduce of 101 elements");
    let mut seven = ranks.rts[1].alloc_zeroed_on::<u32>(s1, 7).unwrap();
    let lonely = Group::new()
        .send(c0, s0, &a0, 1)
        .recv(c1, s1, &mut seven, 0);
    expect(lonely.launch(), "which receives 28");
    // The first bad part refuses the whole group, good parts before it included.
    let mut b1 = ranks.rts[1].alloc_zeroed_on::<u32>(s1, N).unwrap();
    let group = Group::new()
        .all_reduce(c1, s1, &a1, &mut b1, ReduceOp::Sum)
        .all_reduce(c0, s0, &a0, &mut short, ReduceOp::Sum);
    expect(group.launch(), "elements");
    // Nothing was queued: every rank still works, in step.
    let host: Vec<Vec<u32>> = (0..n).map(|r| vec![r as u32 + 1; 64]).collect();
    let mut bufs = ranks.upload(&host);
    let mut g = Group::new();
    for (r, b) in bufs.iter_mut().enumerate() {
        g = g.all_reduce_in_place(&ranks.comms[r], &ranks.streams[r], b, ReduceOp::Sum);
    }
    g.launch().unwrap();
    let total = (n * (n + 1) / 2) as u32;
    for got in ranks.download(&bufs) {
        assert_eq!(got, vec![total; 64]);
    }
}

/// Rank 0 issues an all-reduce no other rank joins: its wait is an error at the
/// timeout, not a hang, and the communicator refuses work afterwards.
#[test]
fn a_rank_left_alone_times_out_and_is_aborted() {
    let _g = serial();
    let ranks = ranks();
    let n = ranks.n();
    // One collective with every rank first, so the links are set up.
    let mut bufs = ranks.upload(&vec![vec![1u32; 256]; n]);
    let mut g = Group::new();
    for (r, b) in bufs.iter_mut().enumerate() {
        g = g.all_reduce_in_place(&ranks.comms[r], &ranks.streams[r], b, ReduceOp::Sum);
    }
    g.launch().unwrap();
    ranks.download(&bufs);
    let (c0, s0) = (&ranks.comms[0], &ranks.streams[0]);
    c0.all_reduce_in_place(s0, &mut bufs[0], ReduceOp::Sum)
        .unwrap();
    let start = std::time::Instant::now();
    let e = c0.wait(s0, Duration::from_millis(500)).unwrap_err();
    assert!(start.elapsed() < Duration::from_secs(30), "the wait hung");
    assert!(
        matches!(e, Error::CommTimeout { .. } | Error::Nccl { .. }),
        "{e:?}"
    );
    assert!(c0.failure().is_some());
    let again = c0
        .all_reduce_in_place(s0, &mut bufs[0], ReduceOp::Sum)
        .unwrap_err();
    assert!(again.to_string().contains("failed earlier"), "{again}");
    // Abort the other ranks too: they would wait on the aborted one.
    for c in &ranks.comms {
        c.abort();
    }
}

/// Ranks of one process issuing their parts apart (a group each, as one thread
/// per rank would): the first to issue a collective sets its shape, and a rank
/// that issues another is refused before anything of it is queued. The ranks that
/// agreed wait for it: an error at the timeout, never a hang.
#[test]
fn ranks_that_disagree_apart_are_refused_before_queueing() {
    let _g = serial();
    let ranks = ranks();
    let n = ranks.n();
    // One collective with every rank first, so the links are set up.
    let mut warm = ranks.upload(&vec![vec![1u32; 64]; n]);
    let mut g = Group::new();
    for (r, b) in warm.iter_mut().enumerate() {
        g = g.all_reduce_in_place(&ranks.comms[r], &ranks.streams[r], b, ReduceOp::Sum);
    }
    g.launch().unwrap();
    ranks.download(&warm);
    let host: Vec<Vec<u32>> = (0..n).map(|r| vec![r as u32; 100 + r]).collect();
    let mut bufs = ranks.upload(&host);
    let [b0, rest @ ..] = &mut bufs[..] else {
        unreachable!()
    };
    ranks.comms[0]
        .all_reduce_in_place(&ranks.streams[0], b0, ReduceOp::Sum)
        .unwrap();
    for (r, b) in rest.iter_mut().enumerate() {
        let r = r + 1;
        let e = ranks.comms[r]
            .all_reduce_in_place(&ranks.streams[r], b, ReduceOp::Sum)
            .unwrap_err()
            .to_string();
        assert!(e.contains("but rank 0 issued all_reduce of 100"), "{e}");
    }
    // Refused: nothing of theirs was queued, their data is untouched.
    for r in 1..n {
        assert_eq!(bufs[r].download(&ranks.streams[r]).unwrap(), host[r]);
    }
    let e = ranks.comms[0]
        .wait(&ranks.streams[0], Duration::from_millis(300))
        .unwrap_err();
    assert!(
        matches!(e, Error::CommTimeout { .. } | Error::Nccl { .. }),
        "{e:?}"
    );
    for c in &ranks.comms {
        c.abort();
    }
}

/// Two processes, `torchrun`-style: this test starts itself twice as ranks 0 and
/// 1 (`two_process_rank`, below), joined through an id file.
#[test]
fn two_processes_all_reduce_and_a_rank_that_exits_is_an_error() {
    let _g = serial();
    if sim() {
        // Simulated communicators live in one process.
        let e = ProcessEnv {
            rank: 0,
            world_size: 2,
            local_rank: 0,
        }
        .communicator(Duration::from_secs(1))
        .unwrap_err();
        assert!(
            matches!(e, Error::Unsupported { .. }) || e.to_string().contains("XLOG_NCCL_ID"),
            "{e}"
        );
        return;
    }
    let _ = runtimes();
    let dir = std::env::temp_dir().join(format!("xlog-two-proc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let id_file = dir.join("id");
    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = (0..2)
        .map(|rank| {
            std::process::Command::new(&exe)
                .args(["--exact", "two_process_rank", "--ignored", "--nocapture"])
                .env("RANK", rank.to_string())
                .env("WORLD_SIZE", "2")
                .env("LOCAL_RANK", rank.to_string())
                .env("XLOG_NCCL_ID_FILE", &id_file)
                .env("NCCL_NVLS_ENABLE", "0")
                .spawn()
                .unwrap()
        })
        .collect();
    let start = std::time::Instant::now();
    for (rank, mut c) in children.into_iter().enumerate() {
        let status = c.wait().unwrap();
        assert!(status.success(), "rank {rank} failed: {status}");
    }
    assert!(start.elapsed() < Duration::from_secs(120), "the ranks hung");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// One rank of `two_processes_…` (run only as its child): an all-reduce with the
/// other rank, then rank 1 exits and rank 0's next all-reduce must end in an error
/// within the timeout.
#[test]
#[ignore = "run by two_processes_all_reduce_and_a_rank_that_exits_is_an_error"]
fn two_process_rank() {
    let env = ProcessEnv::from_env().unwrap();
    let (rt, comm) = env.communicator(Duration::from_secs(60)).unwrap();
    let s = rt.new_stream().unwrap();
    let mut buf = rt.upload_on(&s, &vec![env.rank + 1; 1 << 16]).unwrap();
    comm.all_reduce_in_place(&s, &mut buf, ReduceOp::Sum)
        .unwrap();
    comm.wait(&s, TIMEOUT).unwrap();
    assert_eq!(buf.download(&s).unwrap(), vec![3; 1 << 16]);
    // Digests of what each rank is about to do: equal, then not (on every rank).
    comm.check_agreement(&rt, 0xfeed, TIMEOUT).unwrap();
    let e = comm
        .check_agreement(&rt, u64::from(env.rank), TIMEOUT)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("rank 0: 0x0000000000000000, rank 1: 0x0000000000000001"),
        "{e}"
    );
    if env.rank == 1 {
        // Exit without a word: no destroy, no abort.
        std::process::exit(0);
    }
    std::thread::sleep(Duration::from_millis(500));
    let start = std::time::Instant::now();
    let r = comm
        .all_reduce_in_place(&s, &mut buf, ReduceOp::Sum)
        .and_then(|()| comm.wait(&s, Duration::from_secs(10)));
    let e = r.expect_err("the peer exited: the all-reduce must fail");
    println!("rank 0 after its peer exited ({:?}): {e}", start.elapsed());
    assert!(start.elapsed() < Duration::from_secs(60));
    assert!(comm.failure().is_some());
}

/// Rank 0 of two, whose peer never starts: `init_rank_within` ends in
/// `CommInitTimeout` at its timeout, the initialisation aborted (`init_rank`
/// would wait for the peer forever, and so would this test's receive without the
/// timeout: it fails after 30 s).
#[test]
fn a_rank_whose_peer_never_joins_times_out_at_init() {
    let _g = serial();
    let rts = runtimes();
    if sim() {
        let e = UniqueId::new().unwrap_err();
        assert!(matches!(e, Error::Unsupported { .. }), "{e}");
        let id = UniqueId::from_bytes([0; UniqueId::BYTES]);
        let e = Communicator::init_rank_within(&rts[0], &id, 0, 2, Duration::from_millis(100))
            .unwrap_err();
        assert!(matches!(e, Error::Unsupported { .. }), "{e}");
        return;
    }
    let id = UniqueId::new().unwrap();
    let rt = rts[0].clone();
    let timeout = Duration::from_millis(1500);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let start = std::time::Instant::now();
        let r = Communicator::init_rank_within(&rt, &id, 0, 2, timeout).map(|_| ());
        let _ = tx.send((r, start.elapsed()));
    });
    let (r, took) = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("init_rank_within did not return within 30 s");
    let e = r.expect_err("a communicator of two ranks was made with one");
    println!("init_rank_within, peer missing: {e} after {took:?}");
    assert!(matches!(e, Error::CommInitTimeout { .. }), "{e:?}");
    assert!(
        took >= timeout,
        "returned after {took:?}, before the timeout"
    );
    // The device still works after the aborted initialisation.
    let s = rts[0].new_stream().unwrap();
    let b = rts[0].upload_on(&s, &[1u32, 2, 3]).unwrap();
    assert_eq!(b.download(&s).unwrap(), vec![1, 2, 3]);
}
