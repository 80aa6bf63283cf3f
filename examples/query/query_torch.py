"""The query example's PyTorch side: the same query on the same relations, on the
same GPU, timed the same way (wall clock around the whole query, result on the host).

Run by `src/main.rs` (usage: python3 query_torch.py DIR ORDERS CUSTOMERS GROUPS
MIN_AMOUNT ROUNDS), which writes the four columns to DIR as little-endian u32 files.
Prints `torch<TAB>version`, `ms<TAB>median milliseconds` and
`ranked<TAB>group:total,...` (ORDER BY total DESC, group). Exits 3 without PyTorch
or a GPU.
"""

import os
import sys
import time

try:
    import torch
except ImportError as e:
    print("PyTorch is not installed: %s" % e, file=sys.stderr)
    sys.exit(3)


def column(d, name, n, dev):
    t = torch.from_file(os.path.join(d, name), shared=False, size=n, dtype=torch.int32)
    return (t.to(dev).to(torch.int64)) & 0xFFFFFFFF


def main():
    d = sys.argv[1]
    orders, customers, groups, min_amount, rounds = map(int, sys.argv[2:7])
    if not torch.cuda.is_available():
        print("PyTorch sees no GPU", file=sys.stderr)
        sys.exit(3)
    dev = torch.device("cuda")
    o_customer = column(d, "o_customer", orders, dev)
    o_amount = column(d, "o_amount", orders, dev)
    c_key = column(d, "c_key", customers, dev)
    c_group = column(d, "c_group", customers, dev)

    def query():
        keep = o_amount >= min_amount
        key, amount = o_customer[keep], o_amount[keep]
        # PyTorch has no hash join: sort the build side, binary-search the probe.
        sorted_key, perm = torch.sort(c_key)
        pos = torch.searchsorted(sorted_key, key).clamp_(max=customers - 1)
        hit = sorted_key[pos] == key
        group = c_group[perm[pos[hit]]]
        sums = torch.zeros(groups, dtype=torch.int64, device=dev)
        sums.index_add_(0, group, amount[hit])
        order = torch.argsort(sums, descending=True, stable=True)
        return order.cpu(), sums[order].cpu()

    query()
    torch.cuda.synchronize()
    times = []
    for _ in range(rounds):
        t = time.perf_counter()
        order, sums = query()
        times.append((time.perf_counter() - t) * 1e3)
    times.sort()
    print("torch\t%s" % torch.__version__)
    print("ms\t%.4f" % times[len(times) // 2])
    print("ranked\t" + ",".join("%d:%d" % (g, s) for g, s in zip(order.tolist(), sums.tolist())))


if __name__ == "__main__":
    main()
