//! Throughput of the single-pass kernels against a device-to-device copy of the
//! same bytes (each reads and writes every element once, as a copy does): the
//! decoupled look-back scan of 2^26 `u32`s, and the tiled transpose of an
//! 8192 × 8192 `f32` matrix. Wall-clock per call including a stream synchronise,
//! median of 30 interleaved rounds; the copy is the roofline peer. No targets yet:
//! these are the baseline for a warp-wide look-back window and a leaner transpose
//! (H200: scan 0.05×, transpose 0.29× the copy).

use std::time::Instant;

use xlog::device::lookback::status_words;
use xlog::LaunchConfig;
use xlog_test_support::bench;

fn main() {
    let rt = bench::runtime_or_exit();
    let info = rt.device().info();
    println!("## single-pass kernels vs device-to-device copy (median of 30 interleaved rounds, wall-clock incl. synchronise)\n");
    println!(
        "device: {} (sm_{}{})\n",
        info.name, info.compute_capability.0, info.compute_capability.1
    );
    println!("| kernel | xlog | copy of the same bytes | ratio (copy time / kernel time) |");
    println!("| --- | --- | --- | --- |");
    let s = rt.new_stream().unwrap();
    let n: usize = 1 << 26;
    let x = rt.upload_on(&s, &vec![3u32; n]).unwrap();
    let mut out = rt.alloc_zeroed_on::<u32>(&s, n).unwrap();
    let mut copy = rt.alloc_zeroed_on::<u32>(&s, n).unwrap();
    let tiles = n.div_ceil(1024);
    let mut status = rt.alloc_zeroed_on::<u64>(&s, status_words(tiles)).unwrap();
    let cfg = LaunchConfig::new([tiles as u32, 1, 1], [256, 1, 1]);
    let timed = |f: &mut dyn FnMut()| {
        s.synchronize().unwrap();
        let t = Instant::now();
        f();
        s.synchronize().unwrap();
        t.elapsed().as_secs_f64() * 1e6
    };
    let [scan_us, copy_us] = bench::interleaved(
        3,
        30,
        [
            &mut || {
                timed(&mut || {
                    xlog_kernels::single_pass::inclusive_scan_u32::launch(
                        &s,
                        cfg,
                        &x,
                        &mut out,
                        &mut status,
                    )
                    .unwrap()
                })
            },
            &mut || timed(&mut || xlog::copy_device(&s, &mut copy, &x).unwrap()),
        ],
        || {},
    );
    let got = out.download(&s).unwrap();
    assert_eq!(
        got[n - 1],
        3u32.wrapping_mul(n as u32),
        "the timed scan is wrong"
    );
    let gbs = |us: f64| 2.0 * (n * 4) as f64 / us / 1e3;
    println!(
        "| inclusive_scan_u32, 2^26 | {scan_us:.0} µs ({:.0} GB/s) | {copy_us:.0} µs ({:.0} GB/s) | {:.3} |",
        gbs(scan_us),
        gbs(copy_us),
        copy_us / scan_us
    );

    let side = 8192usize;
    let m = rt.upload_on(&s, &vec![1.0f32; side * side]).unwrap();
    let mut t = rt.alloc_zeroed_on::<f32>(&s, side * side).unwrap();
    let mut c = rt.alloc_zeroed_on::<f32>(&s, side * side).unwrap();
    let tcfg = LaunchConfig::new([(side / 32 * (side / 32)) as u32, 1, 1], [256, 1, 1]);
    let [t_us, c_us] = bench::interleaved(
        3,
        30,
        [
            &mut || {
                timed(&mut || {
                    xlog_kernels::single_pass::transpose_f32::launch(&s, tcfg, &m, &mut t, side)
                        .unwrap()
                })
            },
            &mut || timed(&mut || xlog::copy_device(&s, &mut c, &m).unwrap()),
        ],
        || {},
    );
    let gbs = |us: f64| 2.0 * (side * side * 4) as f64 / us / 1e3;
    println!(
        "| transpose_f32, 8192 × 8192 | {t_us:.0} µs ({:.0} GB/s) | {c_us:.0} µs ({:.0} GB/s) | {:.3} |",
        gbs(t_us),
        gbs(c_us),
        c_us / t_us
    );
}
