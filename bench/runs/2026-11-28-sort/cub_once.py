"""One warm-up and one profiled call of each CUB sort the bench compares with."""
import os
os.environ.setdefault("CUPY_ACCELERATORS", "cub")
import cupy as cp
import torch
n = 100_000_000
g = torch.Generator(device="cuda"); g.manual_seed(12345)
u = torch.randint(-(2**63), 2**63 - 1, (n,), device="cuda", generator=g, dtype=torch.int64)
xc = cp.asarray(u.to(torch.int32)).view(cp.uint32)
for _ in range(2): cp.sort(xc)
cp.cuda.Device().synchronize()
xi = u.to(torch.int32)
for _ in range(2): torch.sort(xi)
torch.cuda.synchronize()
xl = cp.asarray(u)
for _ in range(2): cp.sort(xl)
cp.cuda.Device().synchronize()
