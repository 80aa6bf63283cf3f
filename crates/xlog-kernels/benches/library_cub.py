"""The CUB side of the `library` bench: the operations of xlog's query-engine library
in PyTorch and CuPy (both call CUB), on the same data shapes, timed with CUDA events.

Run by `benches/library.rs` (usage: python3 library_cub.py N) and, for the sort
cases, by `benches/sort.rs` (python3 library_cub.py N sort). Prints one line per
case, `case<TAB>median milliseconds`, in the bench's case names; progress and the
versions go to stderr. With `XLOG_BENCH_RESULTS` set it also appends each figure to
that file as a JSON line in the format of `xlog_test_support::bench::Measurement`
(when the Rust bench runs this script it records the figures itself and unsets it).
"""

import json
import os
import sys

os.environ.setdefault("CUPY_ACCELERATORS", "cub")

import cupy as cp  # noqa: E402
import torch  # noqa: E402

WARMUP, ROUNDS = 3, 30

PEERS = {
    "sum f32": "CuPy sum (CUB)",
    "inclusive scan i32": "torch.cumsum (CUB)",
    "histogram 256 bins u8": "torch.bincount",
    "random gather f32": "torch indexing",
    "scatter f32": "torch index_copy_",
    "even histogram 256 bins f32": "torch.histc",
    "select 50% f32": "torch.masked_select",
    "unique counts sorted i32": "torch.unique_consecutive",
    "segmented sum f32 (1000 per segment)": "torch.segment_reduce",
}

SORT_PEERS = {
    "sort u32 keys": "cupy.sort (CUB)",
    "sort i32 keys + u32 indices": "torch.sort (CUB)",
    "sort i32 keys + u64 indices": "torch.sort (CUB)",
    "sort i64 keys": "cupy.sort (CUB)",
}


def sort_cases(n, dev):
    """The radix-sort cases on uniformly random keys over the full range."""
    results = {}
    g = torch.Generator(device=dev)
    g.manual_seed(12345)
    u = torch.randint(-(2**63), 2**63 - 1, (n,), device=dev, generator=g, dtype=torch.int64)
    xc = cp.asarray(u.to(torch.int32)).view(cp.uint32)
    results["sort u32 keys"] = cupy_ms(lambda: cp.sort(xc))
    del xc
    xi = u.to(torch.int32)
    ms = torch_ms(lambda: torch.sort(xi))
    # torch returns int64 indices; both of xlog's index widths are compared with it.
    results["sort i32 keys + u32 indices"] = ms
    results["sort i32 keys + u64 indices"] = ms
    del xi
    xl = cp.asarray(u)
    results["sort i64 keys"] = cupy_ms(lambda: cp.sort(xl))
    return results


def compaction_and_segments(n, i, x, results):
    """The even histogram, compaction, run-length and segmented cases."""
    results["even histogram 256 bins f32"] = torch_ms(lambda: torch.histc(x, bins=256, min=0.0, max=1.0))
    flags = ((i * 2654435761) >> 13) & 1
    mask = flags.to(torch.bool)
    results["select 50% f32"] = torch_ms(lambda: torch.masked_select(x, mask))
    del flags, mask
    keys = (i // 10).to(torch.int32)
    results["unique counts sorted i32"] = torch_ms(
        lambda: torch.unique_consecutive(keys, return_counts=True)
    )
    del keys
    lengths = torch.full(((n + 999) // 1000,), 1000, device=x.device, dtype=torch.int64)
    lengths[-1] = n - 1000 * (lengths.numel() - 1)
    results["segmented sum f32 (1000 per segment)"] = torch_ms(
        lambda: torch.segment_reduce(x, "sum", lengths=lengths)
    )


def median(v):
    v = sorted(v)
    return v[len(v) // 2]


def torch_ms(f):
    for _ in range(WARMUP):
        f()
    times = []
    for _ in range(ROUNDS):
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        f()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return median(times)


def cupy_ms(f):
    for _ in range(WARMUP):
        f()
    times = []
    for _ in range(ROUNDS):
        a, b = cp.cuda.Event(), cp.cuda.Event()
        a.record()
        f()
        b.record()
        b.synchronize()
        times.append(cp.cuda.get_elapsed_time(a, b))
    return median(times)


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000_000
    print(
        "torch %s, cupy %s, %s" % (torch.__version__, cp.__version__, torch.cuda.get_device_name()),
        file=sys.stderr,
    )
    dev = torch.device("cuda")
    if len(sys.argv) > 2 and sys.argv[2] == "sort":
        report(n, sort_cases(n, dev), SORT_PEERS, "sort")
        return
    results = {}
    i = torch.arange(n, device=dev)

    x = (i % 1000).to(torch.float32) * 0.001
    xc = cp.asarray(x)
    results["sum f32"] = cupy_ms(lambda: cp.sum(xc))
    del xc

    xi = (i % 7).to(torch.int32) - 3
    results["inclusive scan i32"] = torch_ms(lambda: torch.cumsum(xi, 0, dtype=torch.int32))
    del xi

    bytes_ = ((i * 2654435761) >> 7).to(torch.uint8)
    results["histogram 256 bins u8"] = torch_ms(lambda: torch.bincount(bytes_, minlength=256))
    del bytes_

    g = torch.Generator(device=dev)
    g.manual_seed(12345)
    idx = torch.randint(0, n, (n,), device=dev, generator=g, dtype=torch.int64)
    results["random gather f32"] = torch_ms(lambda: x[idx])
    perm = torch.randperm(n, device=dev, generator=g)
    out = torch.zeros(n, device=dev, dtype=torch.float32)
    results["scatter f32"] = torch_ms(lambda: out.index_copy_(0, perm, x))

    compaction_and_segments(n, i, x, results)
    report(n, results, PEERS)


def report(n, results, peers, bench="library"):
    path = os.environ.get("XLOG_BENCH_RESULTS")
    for case, ms in results.items():
        print("%s\t%.6f" % (case, ms))
        if path:
            with open(path, "a") as f:
                f.write(
                    json.dumps(
                        {
                            "bench": bench,
                            "case": case,
                            "size": n,
                            "contender": peers[case],
                            "value": n / ms / 1e6,
                            "unit": "Gelem/s",
                        }
                    )
                    + "\n"
                )


if __name__ == "__main__":
    main()
