"""xlog from Python: sort, join, scan and reduce, results checked against plain Python.

    pip install ./python                     # the wheel (see docs/python.md)
    python3 python/example.py                # on the GPU
    XLOG_BACKEND=sim python3 python/example.py   # without one: xlog's CPU simulator

With PyTorch on a CUDA device it also runs on torch tensors, zero-copy.
"""
import random

import xlog

s = xlog.Stream(0)
r = random.Random(1)
orders = [r.randrange(1000) for _ in range(10_000)]      # customer id of each order
customers = list(range(0, 1000, 3))                      # customers still active

o = xlog.upload(orders, s, dtype="uint32")
c = xlog.upload(customers, s, dtype="uint32")
assert xlog.sort(o).tolist() == sorted(orders)
ids, counts = xlog.unique(o, return_counts=True)          # orders per customer
assert ids.tolist() == sorted(set(orders))
cust_rows, order_rows = xlog.join(c, o)                   # active customers' orders
assert len(order_rows) == sum(1 for x in orders if x % 3 == 0)
assert xlog.reduce(counts).item() == len(orders)
assert xlog.scan(counts).tolist()[-1] == len(orders)
print(f"on {s.device_name}: {len(orders)} orders, {len(ids)} customers, {len(order_rows)} orders of active customers")

try:
    import torch
except ImportError:
    torch = None
if torch is not None and torch.cuda.is_available() and "simulator" not in s.device_name:
    t = torch.tensor(orders, device="cuda", dtype=torch.int64)
    b = xlog.from_dlpack(t, s)                            # zero-copy: b.device_ptr == t.data_ptr()
    out = torch.from_dlpack(xlog.sort(b))                 # lent back to torch, ordered
    assert torch.equal(out, torch.sort(t).values)
    print("torch tensors: sorted by xlog, zero-copy both ways")
print("ok")
