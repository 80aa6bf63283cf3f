//! The hash join's probe against a random gather on the same GPU, in one run (bench
//! id `join`): a table over 2^26 unique `u32` build keys, probed by 2^27 keys of
//! which half match (an inner join, one pair per matching row, and a semi join),
//! each host call timed with CUDA events (median of 20 rounds after 3 warm-ups,
//! interleaved with the gathers). The peer is xlog's own random gather of `f32`
//! (`gather::gather`, the library bench's case) over 2^27 elements by 2^27 random
//! indices, `u64` as in the library bench and `u32`: a probe is at heart a random
//! read, so a random gather is the speed it is held to (target in `bench::TARGETS`).
//! Figures are rates, 10^9 probe keys or gathered elements per second.
//!
//! `XLOG_JOIN_LOG2` (default 26) sets the build side to `2^k` keys, the probe side
//! and the gathers to `2^(k+1)`.

use xlog_kernels::join::JoinTable;
use xlog_test_support::bench::{self, peer, Case};
use xlog_test_support::Rng;

/// Key `i` of a bijection of `u32`: distinct `i` give distinct keys.
fn key(i: u32) -> u32 {
    i.wrapping_mul(0x9E37_79B1) ^ 0x5bd1_e995
}

fn main() {
    let rt = bench::runtime_or_exit();
    let info = rt.device().info();
    let log2: u32 = std::env::var("XLOG_JOIN_LOG2")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(26);
    let (nb, np) = (1usize << log2, 1usize << (log2 + 1));
    println!(
        "## hash join probe vs random gather (2^{log2} unique build keys, 2^{} probe keys, half matching; CUDA events, median of 20)\n",
        log2 + 1
    );
    println!(
        "device: {} (sm_{}{})\n",
        info.name, info.compute_capability.0, info.compute_capability.1
    );
    let s = rt.new_stream().unwrap();

    let mut r = Rng::new(2026);
    let build: Vec<u32> = (0..nb as u32).map(key).collect();
    // Even probe rows hit a random build key, odd ones a key outside the build side.
    let probe: Vec<u32> = (0..np)
        .map(|j| {
            if j % 2 == 0 {
                key(r.below(nb) as u32)
            } else {
                key(nb as u32 + (r.next_u32() % (u32::MAX - nb as u32)))
            }
        })
        .collect();
    let bb = rt.upload_on(&s, &build).unwrap();
    let pb = rt.upload_on(&s, &probe).unwrap();
    drop((build, probe));

    let mut build_ms = Vec::new();
    for _ in 0..3 {
        build_ms.push(bench::event_ms(&s, &mut || {
            let _ = JoinTable::build(&s, &bb).unwrap();
        }));
    }
    build_ms.sort_by(f64::total_cmp);
    let table = JoinTable::build(&s, &bb).unwrap();
    let pairs = table.inner_join(&s, &pb).unwrap();
    assert_eq!(pairs.len(), np / 2, "the timed inner join is wrong");
    let probe_rows = pairs.probe_rows.download(&s).unwrap();
    assert!(
        probe_rows
            .iter()
            .enumerate()
            .all(|(k, &p)| p == 2 * k as u32),
        "the timed inner join's probe rows are wrong"
    );
    drop((pairs, probe_rows));
    assert_eq!(table.semi_join(&s, &pb).unwrap().len(), np / 2);

    // The peers: random gathers of f32 by u64 and u32 indices, the same length.
    let x: Vec<f32> = (0..np).map(|i| (i % 1000) as f32).collect();
    let idx64: Vec<u64> = (0..np).map(|_| r.below(np) as u64).collect();
    let idx32: Vec<u32> = idx64.iter().map(|&i| i as u32).collect();
    let xb = rt.upload_on(&s, &x).unwrap();
    let i64b = rt.upload_on(&s, &idx64).unwrap();
    let i32b = rt.upload_on(&s, &idx32).unwrap();
    let got = xlog_kernels::gather::gather(&s, &xb, &i64b)
        .unwrap()
        .download(&s)
        .unwrap();
    assert_eq!(
        got[np / 3],
        x[idx64[np / 3] as usize],
        "the timed gather is wrong"
    );
    drop((got, x, idx64, idx32));

    let [inner, semi, g64, g32] = bench::interleaved(
        3,
        20,
        [
            &mut || {
                bench::event_ms(&s, &mut || {
                    let _ = table.inner_join(&s, &pb).unwrap();
                })
            },
            &mut || {
                bench::event_ms(&s, &mut || {
                    let _ = table.semi_join(&s, &pb).unwrap();
                })
            },
            &mut || {
                bench::event_ms(&s, &mut || {
                    let _ = xlog_kernels::gather::gather(&s, &xb, &i64b).unwrap();
                })
            },
            &mut || {
                bench::event_ms(&s, &mut || {
                    let _ = xlog_kernels::gather::gather(&s, &xb, &i32b).unwrap();
                })
            },
        ],
        || {},
    );

    let rate = |ms: f64| np as f64 / ms / 1e6;
    println!("| scenario | xlog | peer | peer name | ratio (xlog/peer) | target |");
    println!("| --- | --- | --- | --- | --- | --- |");
    let case = |name| Case {
        bench: "join",
        case: name,
        size: Some(np as u64),
        unit: "Gelem/s",
    };
    let (g64_name, g32_name) = (peer::GATHER_U64, peer::GATHER_U32);
    case("inner join probe u32").row(rate(inner), rate(g64), g64_name);
    case("inner join probe u32").row_against(rate(inner), rate(g32), g32_name);
    case("semi join probe u32").row(rate(semi), rate(g64), g64_name);
    case("semi join probe u32").row_against(rate(semi), rate(g32), g32_name);
    println!();
    println!(
        "build of 2^{log2} keys: {:.3} ms ({:.2} Gkeys/s, median of 3); table {} MiB",
        build_ms[1],
        nb as f64 / build_ms[1] / 1e6,
        table.bytes() >> 20
    );
    println!(
        "inner probe {inner:.3} ms, semi probe {semi:.3} ms, gather u64 {g64:.3} ms, gather u32 {g32:.3} ms"
    );
}
