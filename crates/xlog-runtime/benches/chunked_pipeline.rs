//! A chunked pipeline over 1 GiB of `f32`: each 64 MiB chunk is uploaded, scaled
//! in place by a kernel and downloaded. xlog's way: page-locked input and output
//! split into chunks, asynchronous copies, three streams, everything queued before
//! anything is awaited, so chunk `k + 1` goes in while chunk `k` computes and chunk
//! `k - 1` comes out. The peer: the same chunks on one stream with blocking copies
//! from and to pageable memory (bench id `chunked_pipeline`; targets in
//! `bench::TARGETS`).

use std::ffi::c_void;
use std::time::Instant;

use xlog_runtime::{
    DeviceBuffer, Function, LaunchConfig, ModuleImage, PinnedBuffer, Stream, WorkRecorder,
};
use xlog_test_support::bench::{self, peer};

// SAFETY: the hand-written PTX's entry points are launched only with the
// parameter lists documented beside each of them in kernels.ptx.
static KERNELS: ModuleImage =
    unsafe { ModuleImage::from_ptx("bench-kernels", include_str!("../tests/gpu/kernels.ptx")) };

const TOTAL: usize = 1 << 28; // f32 elements: 1 GiB
const CHUNK: usize = 1 << 24; // 64 MiB
const STREAMS: usize = 3;

fn p<T>(v: &T) -> *mut c_void {
    v as *const T as *mut c_void
}

/// `x = 2x` in place (scale_add with x and y the same buffer).
fn double(f: &Function, s: &Stream, x: &mut DeviceBuffer<f32>) {
    let (ptr, n, a) = (x.device_ptr(), x.len() as u64, 1.0f32);
    let pre = WorkRecorder::new(s).read_write(x).preflight().unwrap();
    let mut params = [p(&ptr), p(&ptr), p(&n), p(&a)];
    // SAFETY: scale_add(u64 x, u64 y, u64 n, f32 a) reads x and writes y = a*x + y
    // element by element; both are the recorded buffer.
    let _ = unsafe { pre.launch(f, LaunchConfig::for_len(n as usize), &mut params) }.unwrap();
}

fn pipelined(
    f: &Function,
    streams: &[Stream],
    devs: &mut [DeviceBuffer<f32>],
    input: &mut PinnedBuffer<f32>,
    output: &mut PinnedBuffer<f32>,
) {
    {
        let ins = input.chunks_mut(CHUNK);
        let mut outs = output.chunks_mut(CHUNK);
        for (k, (src, dst)) in ins.iter().zip(outs.iter_mut()).enumerate() {
            let (s, d) = (&streams[k % STREAMS], &mut devs[k % STREAMS]);
            drop(d.upload_from_pinned(s, src).unwrap());
            double(f, s, d);
            drop(d.download_to_pinned(s, dst).unwrap());
        }
    }
    // Reading the output waits for every chunk's download.
    assert_eq!(
        output.as_slice().unwrap()[TOTAL - 1],
        2.0 * (TOTAL - 1) as f32
    );
}

fn blocking(
    f: &Function,
    s: &Stream,
    d: &mut DeviceBuffer<f32>,
    input: &[f32],
    output: &mut [f32],
) {
    for (src, dst) in input.chunks(CHUNK).zip(output.chunks_mut(CHUNK)) {
        d.copy_from_host(s, src).unwrap();
        double(f, s, d);
        xlog_runtime::copy_to_host(s, &*d, dst).unwrap();
    }
    assert_eq!(output[TOTAL - 1], 2.0 * (TOTAL - 1) as f32);
}

fn median_ms(mut f: impl FnMut()) -> f64 {
    f();
    let mut ts: Vec<f64> = (0..5)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    ts.sort_by(f64::total_cmp);
    ts[ts.len() / 2]
}

fn main() {
    bench::header(
        "chunked pipeline, 1 GiB f32 in 64 MiB chunks: upload, kernel, download (median of 5)",
    );
    let rt = bench::runtime_or_exit();
    let f = rt
        .load_module(&KERNELS)
        .unwrap()
        .function("scale_add")
        .unwrap();
    let streams: Vec<Stream> = (0..STREAMS).map(|_| rt.new_stream().unwrap()).collect();
    let mut devs: Vec<DeviceBuffer<f32>> = streams
        .iter()
        .map(|s| rt.alloc_zeroed_on::<f32>(s, CHUNK).unwrap())
        .collect();
    let values: Vec<f32> = (0..TOTAL).map(|i| i as f32).collect();
    let mut input = rt.alloc_pinned::<f32>(TOTAL).unwrap();
    input.as_mut_slice().unwrap().copy_from_slice(&values);
    let mut output = rt.alloc_pinned::<f32>(TOTAL).unwrap();
    let mut host_out = vec![0f32; TOTAL];

    let ours = median_ms(|| pipelined(&f, &streams, &mut devs, &mut input, &mut output));
    let theirs = median_ms(|| blocking(&f, &streams[0], &mut devs[0], &values, &mut host_out));
    let gbps = |ms: f64| (TOTAL * 4) as f64 / ms / 1e6;
    bench::Case {
        bench: "chunked_pipeline",
        case: "upload + kernel + download, 1 GiB in 64 MiB chunks",
        size: Some((TOTAL * 4) as u64),
        unit: "GB/s",
    }
    .row(gbps(ours), gbps(theirs), peer::BLOCKING_COPIES);
    println!("<!-- pipelined {ours:.1} ms, blocking {theirs:.1} ms -->");
}
