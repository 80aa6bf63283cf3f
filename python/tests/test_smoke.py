"""Every xlog function and element type on small inputs, against plain Python.

Needs only the xlog wheel: no torch, cupy or numpy. CI runs it on xlog's CPU
simulator (`XLOG_BACKEND=sim`: the same kernels on the host, with the hazard
detector; not GPU coverage), the GPU machine on the GPU. Without a GPU and
without the simulator every test fails (`xlog.Stream` raises).
"""
import random
import unittest

import xlog

N = 5000  # more than one tile of every kernel, the last one partial
SORT_TYPES = ["uint32", "int32", "float32", "uint64", "int64", "float64"]
SET_TYPES = ["uint32", "int32", "uint64", "int64"]


def values(dtype, n, seed, lo=-1000, hi=1000):
    """n integer values (as floats for float types; lo clamped to 0 for unsigned)."""
    r = random.Random(seed)
    lo = max(lo, 0) if dtype.startswith("u") else lo
    v = [r.randrange(lo, hi) for _ in range(n)]
    return [float(x) for x in v] if dtype.startswith("f") else v


class Smoke(unittest.TestCase):
    def setUp(self):
        self.s = xlog.Stream(0)

    def up(self, v, dtype):
        return xlog.upload(v, self.s, dtype=dtype)

    def test_sort_and_sort_pairs(self):
        for dtype in SORT_TYPES:
            with self.subTest(dtype=dtype):
                v = values(dtype, N, 1)
                x = self.up(v, dtype)
                self.assertEqual(xlog.sort(x).tolist(), sorted(v))
                self.assertEqual(x.tolist(), v)  # inputs are never written
                self.assertEqual(xlog.sort(self.up(v, dtype), descending=True).tolist(),
                                 sorted(v, reverse=True))
                perm = list(range(N))
                k, p = xlog.sort_pairs(self.up(v, dtype), self.up(perm, "uint32"))
                want = sorted(perm, key=lambda i: v[i])  # stable
                self.assertEqual(p.tolist(), want)
                self.assertEqual(k.tolist(), [v[i] for i in want])

    def test_unique(self):
        for dtype in SORT_TYPES:
            with self.subTest(dtype=dtype):
                v = values(dtype, N, 2, 0, 50)
                u, c = xlog.unique(self.up(v, dtype), return_counts=True)
                self.assertEqual(u.tolist(), sorted(set(v)))
                self.assertEqual(c.tolist(), [v.count(x) for x in sorted(set(v))])
                runs = [v[0]] + [b for a, b in zip(v, v[1:]) if a != b]
                self.assertEqual(xlog.unique_consecutive(self.up(v, dtype)).tolist(), runs)

    def test_join(self):
        for dtype in ("uint32", "uint64"):
            with self.subTest(dtype=dtype):
                build, probe = values(dtype, 300, 3, 0, 400), values(dtype, N, 4, 0, 800)
                b, p = xlog.join(self.up(build, dtype), self.up(probe, dtype))
                got = sorted(zip(p.tolist(), b.tolist()))
                want = [(j, i) for j, y in enumerate(probe) for i, x in enumerate(build) if x == y]
                self.assertEqual(got, sorted(want))
                semi = xlog.join(self.up(build, dtype), self.up(probe, dtype), how="semi")
                anti = xlog.join(self.up(build, dtype), self.up(probe, dtype), how="anti")
                keys = set(build)
                self.assertEqual(semi.tolist(), [j for j, y in enumerate(probe) if y in keys])
                self.assertEqual(anti.tolist(), [j for j, y in enumerate(probe) if y not in keys])

    def test_gather_and_scatter(self):
        for dtype in SORT_TYPES:
            for idtype in ("uint32", "uint64"):
                with self.subTest(dtype=dtype, idx=idtype):
                    x = values(dtype, N, 5)
                    idx = [random.Random(6).randrange(N) for _ in range(N)]
                    got = xlog.gather(self.up(x, dtype), self.up(idx, idtype))
                    self.assertEqual(got.tolist(), [x[i] for i in idx])
                    perm = list(range(N))
                    random.Random(7).shuffle(perm)
                    into = values(dtype, N, 8)
                    got = xlog.scatter(self.up(x[:100], dtype), self.up(perm[:100], idtype),
                                       self.up(into, dtype))
                    for i, j in enumerate(perm[:100]):
                        into[j] = x[i]
                    self.assertEqual(got.tolist(), into)

    def test_reduce_and_scan(self):
        for dtype in SORT_TYPES:
            with self.subTest(dtype=dtype):
                x = values(dtype, N, 9)
                b = self.up(x, dtype)
                self.assertEqual(xlog.reduce(b).item(), sum(x))
                self.assertEqual(xlog.reduce(b, "min").item(), min(x))
                self.assertEqual(xlog.reduce(b, "max").item(), max(x))
                run, acc = [], 0
                for v in x:
                    acc += v
                    run.append(acc)
                self.assertEqual(xlog.scan(b).tolist(), run)
                self.assertEqual(xlog.scan(b, exclusive=True).tolist(), [0] + run[:-1])

    def test_histogram_and_bincount(self):
        for dtype, lo, hi in (("float32", 0.0, 64.0), ("uint32", 0, 256), ("int32", -128, 128)):
            with self.subTest(dtype=dtype):
                x = values(dtype, N, 10, -200, 200)
                got = xlog.histogram(self.up(x, dtype), 64, lo, hi).tolist()
                width = (hi - lo) / 64
                want = [0] * 64
                for v in x:
                    if lo <= v < hi:
                        want[int((v - lo) // width)] += 1
                self.assertEqual(got, want)
        for dtype in ("uint8", "uint32", "int32"):
            with self.subTest(dtype=dtype):
                keys = values(dtype, N, 11, -20, 250)
                got = xlog.bincount(self.up(keys, dtype), 200).tolist()
                self.assertEqual(got, [keys.count(k) for k in range(200)])

    def test_select(self):
        flags = [random.Random(12).randrange(3) for _ in range(N)]
        for dtype in SORT_TYPES:
            with self.subTest(dtype=dtype):
                x = values(dtype, N, 13)
                got = xlog.select(self.up(x, dtype), self.up(flags, "uint8"))
                self.assertEqual(got.tolist(), [v for v, f in zip(x, flags) if f])

    def test_set_operations(self):
        for dtype in SET_TYPES:
            with self.subTest(dtype=dtype):
                a, b = sorted(values(dtype, N, 14, 0, 3000)), sorted(values(dtype, N, 15, 0, 3000))
                A, B = self.up(a, dtype), self.up(b, dtype)
                self.assertEqual(xlog.merge(A, B).tolist(), sorted(a + b))
                self.assertEqual(xlog.difference(A, B).tolist(), sorted(set(a) - set(b)))
                self.assertEqual(xlog.intersection(A, B).tolist(), sorted(set(a) & set(b)))

    def test_refusals(self):
        u8 = self.up([1, 2], "uint8")
        with self.assertRaisesRegex(TypeError, "xlog.sort: x is uint8.*uint32, int32"):
            xlog.sort(u8)
        with self.assertRaisesRegex(TypeError, "idx is int64.*uint32, uint64"):
            xlog.gather(self.up([1], "int64"), self.up([0], "int64"))
        with self.assertRaisesRegex(ValueError, "index 5 at position 0 is out of range"):
            xlog.gather(self.up([1], "int64"), self.up([5], "uint32"))

    def test_every_type_round_trips(self):
        for dtype in xlog.dtypes:
            with self.subTest(dtype=dtype):
                v = values(dtype, 100, 16, 0, 200)
                b = self.up(v, dtype)
                self.assertEqual((len(b), b.dtype), (100, dtype))
                self.assertEqual(b.tolist(), v)


if __name__ == "__main__":
    unittest.main(verbosity=2)
