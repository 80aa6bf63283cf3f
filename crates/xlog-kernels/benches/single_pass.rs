//! Throughput of the single-pass kernels against a device-to-device copy of the
//! same bytes (bench id `single_pass`; each kernel reads and writes every element
//! once, as a copy does): the decoupled look-back scan of 2^26 `u32`s, and the tiled
//! transpose of an 8192 × 8192 `f32` matrix. Each call is timed with CUDA events
//! ([`bench::event_ms`]), median of 30 rounds after 3 warm-ups, interleaved with the
//! copy, which is the roofline peer. Figures are GB/s (bytes read and written over
//! time), so a ratio is the kernel's speed over the copy's. No targets yet: these
//! are the baseline for a warp-wide look-back window and a leaner transpose.

use xlog::device::lookback::status_words;
use xlog::LaunchConfig;
use xlog_test_support::bench::{self, peer, Case};

fn main() {
    let rt = bench::runtime_or_exit();
    let info = rt.device().info();
    println!("## single-pass kernels vs device-to-device copy (CUDA events, median of 30 interleaved rounds)\n");
    println!(
        "device: {} (sm_{}{})\n",
        info.name, info.compute_capability.0, info.compute_capability.1
    );
    println!("| scenario | xlog | peer | peer name | ratio (xlog/peer) | target |");
    println!("| --- | --- | --- | --- | --- | --- |");
    let s = rt.new_stream().unwrap();
    // Bytes read and written per call over milliseconds: GB/s.
    let gbs = |bytes: usize, ms: f64| 2.0 * bytes as f64 / ms / 1e6;
    let case = |name, size: usize| Case {
        bench: "single_pass",
        case: name,
        size: Some(size as u64),
        unit: "GB/s",
    };

    let n: usize = 1 << 26;
    let x = rt.upload_on(&s, &vec![3u32; n]).unwrap();
    let mut out = rt.alloc_zeroed_on::<u32>(&s, n).unwrap();
    let mut copy = rt.alloc_zeroed_on::<u32>(&s, n).unwrap();
    let tiles = n.div_ceil(1024);
    let mut status = rt.alloc_zeroed_on::<u64>(&s, status_words(tiles)).unwrap();
    let cfg = LaunchConfig::new([tiles as u32, 1, 1], [256, 1, 1]);
    let [scan_ms, copy_ms] = bench::interleaved(
        3,
        30,
        [
            &mut || {
                bench::event_ms(&s, &mut || {
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
            &mut || bench::event_ms(&s, &mut || xlog::copy_device(&s, &mut copy, &x).unwrap()),
        ],
        || {},
    );
    let got = out.download(&s).unwrap();
    assert_eq!(
        got[n - 1],
        3u32.wrapping_mul(n as u32),
        "the timed scan is wrong"
    );
    case("inclusive_scan_u32, elements", n).row(
        gbs(n * 4, scan_ms),
        gbs(n * 4, copy_ms),
        peer::D2D,
    );
    drop((x, out, copy, status, got));

    let side = 8192usize;
    let m = rt.upload_on(&s, &vec![1.0f32; side * side]).unwrap();
    let mut t = rt.alloc_zeroed_on::<f32>(&s, side * side).unwrap();
    let mut c = rt.alloc_zeroed_on::<f32>(&s, side * side).unwrap();
    let tcfg = LaunchConfig::new([(side / 32 * (side / 32)) as u32, 1, 1], [256, 1, 1]);
    let [t_ms, c_ms] = bench::interleaved(
        3,
        30,
        [
            &mut || {
                bench::event_ms(&s, &mut || {
                    xlog_kernels::single_pass::transpose_f32::launch(&s, tcfg, &m, &mut t, side)
                        .unwrap()
                })
            },
            &mut || bench::event_ms(&s, &mut || xlog::copy_device(&s, &mut c, &m).unwrap()),
        ],
        || {},
    );
    case("transpose_f32 8192 × 8192, elements", side * side).row(
        gbs(side * side * 4, t_ms),
        gbs(side * side * 4, c_ms),
        peer::D2D,
    );
    println!();
    println!(
        "inclusive_scan_u32 {scan_ms:.3} ms, copy {copy_ms:.3} ms; transpose_f32 {t_ms:.3} ms, copy {c_ms:.3} ms"
    );
}
