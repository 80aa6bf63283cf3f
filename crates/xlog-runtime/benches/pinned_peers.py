"""PyTorch's side of the pinned_copy bench: median milliseconds of a non-blocking
copy of N bytes from pinned host memory to the GPU (tensor.to) and back into
pinned memory (copy_), each followed by a synchronisation, as xlog's side is.
Prints `case<TAB>ms` lines."""
import sys
import time

import torch

n = int(sys.argv[1])
src = torch.ones(n, dtype=torch.uint8).pin_memory()
dev = torch.ones(n, dtype=torch.uint8, device="cuda")
out = torch.empty(n, dtype=torch.uint8).pin_memory()


def timed(f, reps=20):
    for _ in range(3):
        f()
        torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        f()
        torch.cuda.synchronize()
        ts.append(time.perf_counter() - t)
    ts.sort()
    return ts[len(ts) // 2] * 1e3


print("host to device\t%f" % timed(lambda: src.to("cuda", non_blocking=True)))
print("device to host\t%f" % timed(lambda: out.copy_(dev, non_blocking=True)))
