"""The PyTorch side of the `graph_replay` bench: CHAIN in-place `y.add_(x, alpha)`
kernels of N float32 elements, issued directly and as a CUDA graph replay, timed
with CUDA events on the same GPU.

Usage: python3 graph_replay_torch.py N CHAIN. Prints `case<TAB>milliseconds` lines
(`direct`, `graph replay`: end to end for the whole chain, medians of 30 after 3
warm-ups; `graph replay host`: host time of one `replay()` call, median of 100);
versions go to stderr.
"""

import statistics
import sys
import time

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
    n, chain = int(sys.argv[1]), int(sys.argv[2])
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}", file=sys.stderr)
    x = torch.ones(n, device="cuda")
    y = torch.zeros(n, device="cuda")

    def direct():
        for _ in range(chain):
            y.add_(x, alpha=0.5)

    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        direct()  # warm-up before capture, as PyTorch's docs ask
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        direct()
    torch.cuda.synchronize()

    print(f"direct\t{median_ms(direct)}")
    print(f"graph replay\t{median_ms(g.replay)}")
    hosts = []
    for _ in range(WARMUP + 100):
        t = time.perf_counter()
        g.replay()
        hosts.append((time.perf_counter() - t) * 1e3)
        torch.cuda.synchronize()
    print(f"graph replay host\t{statistics.median(hosts[WARMUP:])}")


if __name__ == "__main__":
    main()
