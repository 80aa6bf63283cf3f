"""The PyTorch side of the `dense_group` bench: counts, sums, minima and maxima of
N rows by key, with `torch.bincount`, `index_add_` and `scatter_reduce`, on the
data `benches/dense_group.rs` builds, timed with CUDA events (median of 30 after 3
warm-ups).

Usage: python3 dense_group_torch.py N. Prints one line per case,
`case<TAB>median milliseconds`, in the bench's case names; versions go to stderr.
`index_add_` takes the keys as int32, as xlog does; `scatter_reduce` needs int64
keys, converted once outside the timing.
"""

import statistics
import sys

import torch

WARMUP, ROUNDS = 3, 30


def event_ms(f):
    a = torch.cuda.Event(enable_timing=True)
    b = torch.cuda.Event(enable_timing=True)
    a.record()
    f()
    b.record()
    b.synchronize()
    return a.elapsed_time(b)


def median_ms(f):
    for _ in range(WARMUP):
        event_ms(f)
    return statistics.median(event_ms(f) for _ in range(ROUNDS))


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000_000
    dev = torch.device("cuda")
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}", file=sys.stderr)
    i = torch.arange(n, device=dev, dtype=torch.int64)
    x = (i % 1000).to(torch.float32) * 0.001
    xd = x.to(torch.float64)
    xl = (i % 1000) - 500
    results = {}
    for domain in (1000, 16):
        k64 = ((i * 2654435761) >> 7) % domain
        k32 = k64.to(torch.int32)
        if domain == 16:
            results["sum f32 by u32 key, 16 keys"] = median_ms(
                lambda: torch.zeros(domain, device=dev).index_add_(0, k32, x)
            )
            continue
        results["count by u32 key, 1000 keys"] = median_ms(
            lambda: torch.bincount(k32, minlength=domain)
        )
        results["sum f32 by u32 key, 1000 keys"] = median_ms(
            lambda: torch.zeros(domain, device=dev).index_add_(0, k32, x)
        )
        results["sum f64 by u32 key, 1000 keys"] = median_ms(
            lambda: torch.zeros(domain, device=dev, dtype=torch.float64).index_add_(0, k32, xd)
        )
        results["sum i64 by u32 key, 1000 keys"] = median_ms(
            lambda: torch.zeros(domain, device=dev, dtype=torch.int64).index_add_(0, k32, xl)
        )
        results["min f32 by u32 key, 1000 keys"] = median_ms(
            lambda: torch.full((domain,), float("inf"), device=dev).scatter_reduce(
                0, k64, x, "amin", include_self=True
            )
        )
        results["max f32 by u32 key, 1000 keys"] = median_ms(
            lambda: torch.full((domain,), float("-inf"), device=dev).scatter_reduce(
                0, k64, x, "amax", include_self=True
            )
        )
        del k64, k32
    for case, ms in results.items():
        print("%s\t%.6f" % (case, ms))


if __name__ == "__main__":
    main()
