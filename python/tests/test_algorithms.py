"""xlog's algorithms against PyTorch, every function and element type, on a CUDA device.

Needs torch and cupy with CUDA, and the xlog wheel installed (or the module on
sys.path). Inputs go in through DLPack from torch where torch has the element
type natively, from CuPy otherwise (uint16, uint32, uint64), and results come
back the same way; references are computed by torch on the GPU (unsigned
inputs as int64, values kept below 2^62 so the order is the same).
"""
import unittest

import cupy
import numpy
import torch

import xlog

N = 100_003  # several tiles of every kernel, the last one partial
SORT_TYPES = ["uint32", "int32", "float32", "uint64", "int64", "float64"]
SET_TYPES = ["uint32", "int32", "uint64", "int64"]
TORCH_NATIVE = {"uint8", "int32", "int64", "float32", "float64"}


def rng(seed):
    return numpy.random.default_rng(seed)


def to_xlog(a, s):
    """A numpy array as an xlog buffer, through torch or CuPy (zero-copy import)."""
    if a.dtype.name in TORCH_NATIVE:
        t = torch.from_numpy(a).cuda()
    else:
        t = cupy.asarray(a)
    b = xlog.from_dlpack(t, s)
    assert b.dtype == a.dtype.name and len(b) == a.size
    return b


def to_numpy(b):
    """An xlog buffer's values, read through torch or CuPy (a DLPack loan)."""
    if b.dtype in TORCH_NATIVE:
        return torch.from_dlpack(b).cpu().numpy()
    return cupy.asnumpy(cupy.from_dlpack(b))


def ref(a):
    """The torch tensor the reference is computed on (unsigned types as int64)."""
    if a.dtype.kind == "u" and a.dtype.name != "uint8":
        a = a.astype(numpy.int64)
    return torch.from_numpy(a).cuda()


def back(t, dtype):
    return t.cpu().numpy().astype(dtype)


def values(dtype, n, seed, lo=None, hi=None):
    """n values of dtype: a wide range by default (negatives for signed types)."""
    g = rng(seed)
    dt = numpy.dtype(dtype)
    if dt.kind == "f":
        if lo is None:
            return (g.standard_normal(n) * 1e6).astype(dt)
        return g.integers(lo, hi, n).astype(dt)
    if lo is None:
        info = numpy.iinfo(dt)
        lo, hi = max(info.min, -(1 << 62)), min(info.max, (1 << 62))
    return g.integers(lo, hi, n, dtype=numpy.int64 if dt.itemsize < 8 or dt.kind == "i" else numpy.uint64).astype(dt)


class Algorithms(unittest.TestCase):
    def setUp(self):
        self.s = xlog.Stream(0)

    def assert_equal(self, got, want):
        self.assertEqual(got.dtype, want.dtype)
        numpy.testing.assert_array_equal(got, want)

    def test_sort(self):
        for dtype in SORT_TYPES:
            a = values(dtype, N, 1)
            if a.dtype.kind == "f":
                a[:4] = [numpy.nan, -0.0, numpy.inf, -numpy.inf]
            for descending in (False, True):
                with self.subTest(dtype=dtype, descending=descending):
                    got = to_numpy(xlog.sort(to_xlog(a, self.s), descending=descending))
                    want = torch.sort(ref(a), descending=descending, stable=True).values
                    numpy.testing.assert_array_equal(got, back(want, dtype))
                    self.assertEqual(got.dtype, a.dtype)

    def test_sort_pairs(self):
        for dtype in SORT_TYPES:
            keys = values(dtype, N, 2, 0, 1000)  # many equal keys: stability shows
            for vdtype in ("uint8", "uint16", "uint32", "int32", "float32", "uint64", "int64", "float64"):
                vals = (numpy.arange(N) % 251).astype(vdtype)[::-1].copy()
                for descending in (False, True):
                    with self.subTest(dtype=dtype, values=vdtype, descending=descending):
                        k, v = xlog.sort_pairs(to_xlog(keys, self.s), to_xlog(vals, self.s),
                                               descending=descending)
                        want = torch.sort(ref(keys), descending=descending, stable=True)
                        self.assert_equal(to_numpy(k), back(want.values, dtype))
                        self.assert_equal(to_numpy(v), back(ref(vals)[want.indices], vdtype))

    def test_unique(self):
        for dtype in SORT_TYPES:
            a = values(dtype, N, 3, 0, 5000)
            with self.subTest(dtype=dtype):
                v, c = xlog.unique(to_xlog(a, self.s), return_counts=True)
                wv, wc = torch.unique(ref(a), sorted=True, return_counts=True)
                self.assert_equal(to_numpy(v), back(wv, dtype))
                self.assert_equal(to_numpy(c), back(wc, "uint64"))
                self.assert_equal(to_numpy(xlog.unique(to_xlog(a, self.s))), back(wv, dtype))

    def test_unique_consecutive(self):
        for dtype in SORT_TYPES:
            a = numpy.repeat(values(dtype, N // 3, 4, 0, 4), 3)  # runs, unsorted
            with self.subTest(dtype=dtype):
                v, c = xlog.unique_consecutive(to_xlog(a, self.s), return_counts=True)
                wv, wc = torch.unique_consecutive(ref(a), return_counts=True)
                self.assert_equal(to_numpy(v), back(wv, dtype))
                self.assert_equal(to_numpy(c), back(wc, "uint64"))

    def test_join(self):
        for dtype in ("uint32", "uint64"):
            build = values(dtype, 3000, 5, 0, 4000)
            probe = values(dtype, 20_000, 6, 0, 8000)
            eq = ref(build)[:, None] == ref(probe)[None, :]
            with self.subTest(dtype=dtype, how="inner"):
                b, p = xlog.join(to_xlog(build, self.s), to_xlog(probe, self.s))
                self.assertEqual((b.dtype, p.dtype), ("uint32", "uint32"))
                got = numpy.stack([to_numpy(p), to_numpy(b)]).astype(numpy.int64)
                self.assertTrue((numpy.diff(got[0]) >= 0).all(), "ordered by probe row")
                got = got[:, numpy.lexsort((got[1], got[0]))]
                wb, wp = eq.nonzero(as_tuple=True)
                want = torch.stack([wp, wb])
                want = want[:, torch.argsort(want[0] * len(build) + want[1])]
                numpy.testing.assert_array_equal(got, want.cpu().numpy())
            for how, mask in (("semi", eq.any(0)), ("anti", ~eq.any(0))):
                with self.subTest(dtype=dtype, how=how):
                    rows = xlog.join(to_xlog(build, self.s), to_xlog(probe, self.s), how=how)
                    self.assert_equal(to_numpy(rows), back(mask.nonzero().flatten(), "uint32"))

    def test_gather(self):
        for dtype in SORT_TYPES:
            x = values(dtype, N, 7)
            for idtype in ("uint32", "uint64"):
                idx = rng(8).integers(0, N, 2 * N).astype(idtype)
                with self.subTest(dtype=dtype, idx=idtype):
                    got = xlog.gather(to_xlog(x, self.s), to_xlog(idx, self.s))
                    self.assert_equal(to_numpy(got), back(ref(x)[ref(idx)], dtype))

    def test_scatter(self):
        for dtype in SORT_TYPES:
            into = values(dtype, N, 9)
            x = values(dtype, N // 2, 10)
            for idtype in ("uint32", "uint64"):
                idx = rng(11).permutation(N)[: N // 2].astype(idtype)  # distinct indices
                with self.subTest(dtype=dtype, idx=idtype):
                    got = xlog.scatter(to_xlog(x, self.s), to_xlog(idx, self.s), to_xlog(into, self.s))
                    want = ref(into).clone()
                    want[ref(idx)] = ref(x)
                    self.assert_equal(to_numpy(got), back(want, dtype))

    def test_reduce(self):
        for dtype in SORT_TYPES:
            # Integer values: float sums are exact in any order.
            x = values(dtype, N, 12, 0 if dtype[0] == "u" else -1000, 1000)
            for op, f in (("sum", torch.sum), ("min", torch.min), ("max", torch.max)):
                with self.subTest(dtype=dtype, op=op):
                    got = xlog.reduce(to_xlog(x, self.s), op)
                    self.assertEqual((len(got), got.dtype), (1, dtype))
                    self.assert_equal(to_numpy(got), back(f(ref(x)).reshape(1), dtype))
                    self.assertEqual(got.item(), back(f(ref(x)), dtype).item())

    def test_scan(self):
        for dtype in SORT_TYPES:
            x = values(dtype, N, 13, 0 if dtype[0] == "u" else -100, 100)
            for exclusive in (False, True):
                with self.subTest(dtype=dtype, exclusive=exclusive):
                    got = xlog.scan(to_xlog(x, self.s), exclusive=exclusive)
                    want = torch.cumsum(ref(x), 0)
                    if exclusive:
                        want = want - ref(x)
                    self.assert_equal(to_numpy(got), back(want, dtype))

    def test_histogram(self):
        # Bins of width 4 (1 for float32, samples at bin centres): no sample near an edge.
        cases = (
            ("float32", (rng(14).integers(-10, 74, N) + 0.5).astype(numpy.float32), 0.0, 64.0, 64),
            ("uint32", values("uint32", N, 15, 0, 700), 100, 612, 128),
            ("int32", values("int32", N, 16, -700, 700), -300, 212, 128),
        )
        for dtype, x, lo, hi, bins in cases:
            with self.subTest(dtype=dtype):
                got = xlog.histogram(to_xlog(x, self.s), bins, lo, hi)
                r = ref(x).double()
                r = r[(r >= lo) & (r < hi)]
                want = torch.bincount(((r - lo) * bins / (hi - lo)).floor().long(), minlength=bins)
                self.assert_equal(to_numpy(got), back(want, "uint32"))

    def test_bincount(self):
        for dtype in ("uint8", "uint32", "int32"):
            keys = values(dtype, N, 17, -40 if dtype == "int32" else 0, 250)
            with self.subTest(dtype=dtype):
                got = xlog.bincount(to_xlog(keys, self.s), 200)
                r = ref(keys).long()
                want = torch.bincount(r[(r >= 0) & (r < 200)], minlength=200)
                self.assert_equal(to_numpy(got), back(want, "uint32"))

    def test_select(self):
        flags = rng(18).integers(0, 3, N).astype(numpy.uint8)  # 2 counts as set too
        for dtype in SORT_TYPES:
            x = values(dtype, N, 19)
            with self.subTest(dtype=dtype):
                got = xlog.select(to_xlog(x, self.s), to_xlog(flags, self.s))
                want = torch.masked_select(ref(x), ref(flags) != 0)
                self.assert_equal(to_numpy(got), back(want, dtype))

    def test_set_operations(self):
        for dtype in SET_TYPES:
            a = numpy.sort(values(dtype, N, 20, 0, 50_000))
            b = numpy.sort(values(dtype, N // 2, 21, 0, 50_000))
            ra, rb = ref(a), ref(b)
            inb = torch.isin(ra, rb)
            cases = (
                ("merge", xlog.merge, torch.sort(torch.cat([ra, rb])).values),
                ("difference", xlog.difference, torch.unique(ra[~inb])),
                ("intersection", xlog.intersection, torch.unique(ra[inb])),
            )
            for name, f, want in cases:
                with self.subTest(dtype=dtype, op=name):
                    got = f(to_xlog(a, self.s), to_xlog(b, self.s))
                    self.assert_equal(to_numpy(got), back(want, dtype))

    def test_empty_inputs(self):
        e = numpy.zeros(0, dtype=numpy.int64)
        self.assertEqual(len(xlog.sort(to_xlog(e, self.s))), 0)
        self.assertEqual(xlog.reduce(to_xlog(e, self.s)).item(), 0)
        self.assertEqual(xlog.reduce(to_xlog(e, self.s), "min").item(), numpy.iinfo(numpy.int64).max)
        self.assertEqual(len(xlog.unique(to_xlog(e, self.s))), 0)


class Producers(unittest.TestCase):
    """Any DLPack producer, any shape: the buffer is the elements in row-major order."""

    def test_cupy_and_torch_inputs_give_the_same_result(self):
        s = xlog.Stream(0)
        a = values("int32", N, 30)
        from_torch = to_numpy(xlog.sort(xlog.from_dlpack(torch.from_numpy(a).cuda(), s)))
        from_cupy = to_numpy(xlog.sort(xlog.from_dlpack(cupy.asarray(a), s)))
        numpy.testing.assert_array_equal(from_torch, from_cupy)
        numpy.testing.assert_array_equal(from_torch, numpy.sort(a))

    def test_a_matrix_is_taken_row_major(self):
        s = xlog.Stream(0)
        m = torch.arange(12, device="cuda", dtype=torch.float64).reshape(3, 4)
        b = xlog.from_dlpack(m, s)
        self.assertEqual((len(b), b.dtype), (12, "float64"))
        self.assertEqual(xlog.reduce(b, "max").item(), 11.0)

    def test_results_export_to_torch_without_copying(self):
        s = xlog.Stream(0)
        out = xlog.sort(xlog.from_dlpack(torch.arange(5, 0, -1, device="cuda", dtype=torch.int64), s))
        t = torch.from_dlpack(out)
        self.assertEqual(t.data_ptr(), out.device_ptr)
        self.assertEqual(t.tolist(), [1, 2, 3, 4, 5])
        with self.assertRaises(BufferError):      # lent: xlog functions refuse it
            xlog.reduce(out)
        del t
        self.assertEqual(xlog.reduce(out).item(), 15)

    def test_every_type_round_trips(self):
        s = xlog.Stream(0)
        for dtype in xlog.dtypes:
            with self.subTest(dtype=dtype):
                a = numpy.arange(1000).astype(dtype)
                b = to_xlog(a, s)
                self.assertEqual(b.tolist(), a.tolist())
                numpy.testing.assert_array_equal(to_numpy(b), a)
                self.assertEqual(xlog.upload(a.tolist(), s, dtype=dtype).tolist(), a.tolist())


class NotAGpu:
    """A producer claiming CUDA device 1 that must never be asked for its tensor."""

    def __dlpack_device__(self):
        return (2, 1)

    def __dlpack__(self, **_):
        raise AssertionError("asked for a tensor after its device was refused")


class Refusals(unittest.TestCase):
    def setUp(self):
        self.s = xlog.Stream(0)

    def test_unsupported_element_types_on_import(self):
        for t in (torch.zeros(4, device="cuda", dtype=torch.float16),
                  torch.zeros(4, device="cuda", dtype=torch.int8),
                  torch.zeros(4, device="cuda", dtype=torch.int16)):
            with self.subTest(dtype=t.dtype):
                with self.assertRaisesRegex(TypeError, r"holds (float16|int8|int16), which xlog does not handle.*float32"):
                    xlog.from_dlpack(t, self.s)
        # A refused import leaves nothing behind: the same memory as a type xlog
        # handles imports.
        c = cupy.zeros(4, dtype=cupy.float16)
        with self.assertRaises(TypeError):
            xlog.from_dlpack(c, self.s)
        self.assertEqual(xlog.from_dlpack(c.view(cupy.uint16), self.s).tolist(), [0] * 4)

    def test_non_contiguous(self):
        with self.assertRaisesRegex(ValueError, "not contiguous"):
            xlog.from_dlpack(torch.zeros(8, 8, device="cuda", dtype=torch.int64).t(), self.s)
        with self.assertRaisesRegex(ValueError, "not contiguous"):
            xlog.from_dlpack(cupy.zeros(16, dtype=cupy.uint32)[::2], self.s)

    def test_wrong_device(self):
        with self.assertRaisesRegex(ValueError, "on the CPU"):
            xlog.from_dlpack(torch.zeros(8), self.s)
        with self.assertRaisesRegex(ValueError, "CUDA device 1 but the stream is on device 0"):
            xlog.from_dlpack(NotAGpu(), self.s)

    def test_functions_name_the_types_they_take(self):
        u8 = xlog.upload([1, 2], self.s, dtype="uint8")
        i64 = xlog.upload([1, 2], self.s, dtype="int64")
        u32 = xlog.upload([0, 1], self.s, dtype="uint32")
        u64 = xlog.upload([0, 1], self.s, dtype="uint64")
        f64 = xlog.upload([0.0, 1.0], self.s, dtype="float64")
        cases = (
            (lambda: xlog.sort(u8), "xlog.sort: x is uint8.*uint32, int32, float32, uint64, int64, float64"),
            (lambda: xlog.sort_pairs(u8, u8), "keys is uint8.*uint32, int32, float32, uint64, int64, float64"),
            (lambda: xlog.gather(i64, i64), "idx is int64.*uint32, uint64"),
            (lambda: xlog.join(i64, i64), "build is int64.*uint32, uint64"),
            (lambda: xlog.join(u32, u64), "probe is uint64 but build is uint32"),
            (lambda: xlog.scatter(i64, u32, f64), "into is float64 but x is int64"),
            (lambda: xlog.histogram(f64, 4, 0.0, 1.0), "x is float64.*float32, uint32, int32"),
            (lambda: xlog.bincount(i64, 4), "keys is int64.*uint8, uint32, int32"),
            (lambda: xlog.select(i64, i64), "flags is int64.*uint8"),
            (lambda: xlog.reduce(u8), "x is uint8"),
            (lambda: xlog.merge(f64, f64), "a is float64.*uint32, int32, uint64, int64"),
            (lambda: u8.scale(2), "Buffer.scale: the buffer is uint8"),
            (lambda: xlog.upload([1], self.s, dtype="float16"), "float16"),
        )
        for f, pattern in cases:
            with self.subTest(pattern=pattern):
                with self.assertRaisesRegex(TypeError, pattern):
                    f()

    def test_bad_arguments(self):
        x = xlog.upload([5, 6, 7], self.s, dtype="int64")
        cases = (
            (lambda: xlog.gather(x, xlog.upload([0, 3], self.s, dtype="uint32")),
             "index 3 at position 1 is out of range for 3 elements"),
            (lambda: xlog.scatter(x, xlog.upload([0, 9, 1], self.s, dtype="uint64"), x),
             "index 9 at position 1 is out of range"),
            (lambda: xlog.sort_pairs(x, xlog.upload([0], self.s, dtype="uint32")),
             "3 keys but 1 values"),
            (lambda: xlog.select(x, xlog.upload([1], self.s, dtype="uint8")), "3 elements but 1 flags"),
            (lambda: xlog.reduce(x, "prod"), "op=\"prod\""),
            (lambda: xlog.join(xlog.upload([1], self.s, dtype="uint32"),
                               xlog.upload([1], self.s, dtype="uint32"), how="outer"), "how=\"outer\""),
            (lambda: xlog.bincount(xlog.upload([1], self.s, dtype="uint32"), 0), "0 bins"),
            (lambda: xlog.histogram(xlog.upload([1.0], self.s), 4, 2.0, 1.0), "is empty"),
            (lambda: xlog.Buffer.item(x), "one element"),
        )
        for f, pattern in cases:
            with self.subTest(pattern=pattern):
                with self.assertRaisesRegex(ValueError, pattern):
                    f()
        self.assertEqual(x.tolist(), [5, 6, 7])  # inputs are never written


if __name__ == "__main__":
    unittest.main(verbosity=2)
