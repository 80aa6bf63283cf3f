"""PyTorch's side of the nccl bench, timed as xlog's side is: median seconds per
call over 15 batches after a warm-up batch. `torch.cuda.nccl.all_reduce` (in
place, float32, sum) over GPUs 0 and 1 (NCCL communicators made with
ncclCommInitAll, as xlog's Communicator::init_all), each 4 KiB call followed by a
synchronisation of both GPUs, the large ones synchronised per batch; and
`dst.copy_(src)` from GPU 0 to GPU 1. Prints `case<TAB>milliseconds` lines."""
import os
import time

os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
import torch
import torch.cuda.nccl as nccl

ROUNDS = 15
devs = [torch.device("cuda", 0), torch.device("cuda", 1)]


def sync():
    for d in devs:
        torch.cuda.synchronize(d)


def per_call(batch, f, end):
    def one():
        t = time.perf_counter()
        for _ in range(batch):
            f()
        end()
        return (time.perf_counter() - t) / batch

    one()
    ts = sorted(one() for _ in range(ROUNDS))
    return ts[len(ts) // 2]


for n_bytes in [4 << 10, 256 << 20, 1 << 30]:
    ts = [torch.ones(n_bytes // 4, dtype=torch.float32, device=d) for d in devs]
    sync()
    if n_bytes <= 1 << 20:
        def call():
            nccl.all_reduce(ts)
            sync()
        s = per_call(200, call, lambda: None)
    else:
        s = per_call(5 if n_bytes >= 1 << 30 else 10, lambda: nccl.all_reduce(ts), sync)
    print("all_reduce %d\t%f" % (n_bytes, s * 1e3), flush=True)
    del ts
    torch.cuda.empty_cache()

for n_bytes in [256 << 20, 1 << 30]:
    src = torch.full((n_bytes,), 7, dtype=torch.uint8, device=devs[0])
    dst = torch.zeros(n_bytes, dtype=torch.uint8, device=devs[1])
    sync()
    s = per_call(10, lambda: dst.copy_(src), sync)
    assert bool((dst == 7).all())
    print("peer_copy %d\t%f" % (n_bytes, s * 1e3), flush=True)
    del src, dst
    torch.cuda.empty_cache()
