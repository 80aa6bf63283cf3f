"""torch.distributed's side of `ranks`: one process per GPU under torchrun, NCCL
backend, in-place float32 all-reduces timed as `ranks` times them (median of 15
batches after one; 4 KiB calls each synchronised). Rank 0 prints
`case<TAB>milliseconds` lines."""
import os
import time

os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
import torch
import torch.distributed as dist

rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
dev = torch.device("cuda", int(os.environ["LOCAL_RANK"]))
torch.cuda.set_device(dev)
dist.init_process_group("nccl", device_id=dev)
for n_bytes, batch in [(4 << 10, 200), (256 << 20, 10), (1 << 30, 5)]:
    t = torch.ones(n_bytes // 4, dtype=torch.float32, device=dev)

    def one():
        start = time.perf_counter()
        for _ in range(batch):
            dist.all_reduce(t)
            if n_bytes <= 1 << 20:
                torch.cuda.synchronize(dev)
        torch.cuda.synchronize(dev)
        return (time.perf_counter() - start) / batch

    one()
    ts = sorted(one() for _ in range(15))
    if rank == 0:
        print("all_reduce %d\t%f" % (n_bytes, ts[len(ts) // 2] * 1e3), flush=True)
    del t
dist.destroy_process_group()
