"""xlog <-> PyTorch / CuPy through DLPack, on a CUDA device.

Needs torch and cupy with CUDA, and the xlog wheel installed (see docs/python.md). Nothing here synchronises by hand: every
hand-off is ordered by the DLPack stream handshake, and a missing fence shows as
wrong values because each producer's last write sits behind slow work.
"""
import unittest

import cupy
import numpy
import torch

import xlog

N = 1 << 22


def busy(stream, rounds=40):
    """Queue slow work on a torch stream (so a missing fence reads stale data)."""
    with torch.cuda.stream(stream):
        a = torch.randn(2048, 2048, device="cuda")
        for _ in range(rounds):
            a = (a @ a) / 2048.0
    return a


class RoundTrip(unittest.TestCase):
    def test_torch_tensor_through_an_xlog_kernel_back_to_torch_and_cupy(self):
        ts = torch.cuda.Stream()
        s = xlog.Stream(0)
        with torch.cuda.stream(ts):
            x = torch.empty(N, device="cuda", dtype=torch.float32)
            y = torch.empty(N, device="cuda", dtype=torch.float32)
            slow = busy(ts)
            # The last writes of x and y come after the slow work on ts.
            x.copy_(torch.arange(N, device="cuda", dtype=torch.float32) + slow[0, 0] * 0)
            y.fill_(1.0)
            # Zero-copy import: torch makes s wait for its current stream, ts. (Outside
            # this block torch's current stream is the default one, which a pool
            # stream such as ts does not synchronise with.)
            xb = xlog.from_dlpack(x, s)
            yb = xlog.from_dlpack(y, s)
        self.assertEqual(xb.device_ptr, x.data_ptr())
        self.assertEqual(yb.device_ptr, y.data_ptr())
        self.assertTrue(xb.imported and yb.imported)
        self.assertEqual(len(xb), N)

        # torch keeps working on its own stream while xlog runs on s.
        other = busy(ts, rounds=20)
        yb.axpy(2.0, xb)          # y = 2x + 1, in torch's memory, on s
        out = xb.scale(3.0)       # a new xlog buffer, on s

        with torch.cuda.stream(ts):
            t_out = torch.from_dlpack(out)   # ts waits for the scale
            t_y = torch.from_dlpack(yb)      # ts waits for the axpy
            self.assertEqual(t_y.data_ptr(), y.data_ptr())
            self.assertEqual(t_out.data_ptr(), out.device_ptr)
            ref = torch.arange(N, device="cuda", dtype=torch.float32)
            self.assertTrue(torch.equal(t_out, ref * 3.0))
            self.assertTrue(torch.equal(t_y, ref * 2.0 + 1.0))
            self.assertTrue(torch.isfinite(other).all().item())

        # A lent buffer is lent once: a second consumer waits for the first.
        with self.assertRaises(BufferError):
            torch.from_dlpack(out)
        del t_out
        # CuPy reads the xlog buffer on its current stream.
        c = cupy.from_dlpack(out)
        self.assertEqual(c.data.ptr, out.device_ptr)
        host = cupy.asnumpy(c)
        numpy.testing.assert_array_equal(host, numpy.arange(N, dtype=numpy.float32) * 3.0)

        # A buffer shared with a consumer cannot be written in place.
        with self.assertRaises(BufferError):
            yb.axpy(1.0, xb)
        del t_y
        # Once the consumer released it, it can.
        yb.axpy(1.0, xb)  # y = 3x + 1
        with torch.cuda.stream(ts):
            self.assertTrue(torch.equal(torch.from_dlpack(yb), ref * 3.0 + 1.0))

        # Release everything; imported memory goes back to torch after xlog's work.
        del xb, yb, out, c
        with torch.cuda.stream(ts):
            self.assertTrue(torch.equal(y, torch.arange(N, device="cuda") * 3.0 + 1.0))

    def test_upload_and_tolist(self):
        s = xlog.Stream(0)
        b = xlog.upload([1.0, 2.0, 3.0], s)
        self.assertEqual(b.scale(2.0).tolist(), [2.0, 4.0, 6.0])


class Lending(unittest.TestCase):
    """Every export is a loan to a consumer that may write (torch ignores the
    read-only flag): xlog refuses to touch the buffer until the consumer releases
    it, then sees the consumer's writes, ordered on the device."""

    def test_a_consumer_writes_and_xlog_sees_it_only_after_the_release(self):
        ts = torch.cuda.Stream()
        s = xlog.Stream(0)
        x = xlog.upload([1.0] * N, s)
        with torch.cuda.stream(ts):
            t = torch.from_dlpack(x)
            self.assertEqual(t.data_ptr(), x.device_ptr)
            slow = busy(ts)
            t.add_(100.0 + slow[0, 0] * 0)   # the write sits behind slow work on ts
        self.assertEqual(len(x), N)          # identity works while lent
        with self.assertRaises(BufferError):
            x.tolist()
        with self.assertRaises(BufferError):
            x.scale(1.0)
        del t                                # release: recorded as a write on ts
        host = numpy.array(x.tolist())       # xlog's read waits for ts
        numpy.testing.assert_array_equal(host, numpy.full(N, 101.0, dtype=numpy.float32))

    def test_stream_minus_one_is_ordered_on_the_host(self):
        s = xlog.Stream(0)
        xb = xlog.from_dlpack(torch.ones(N, device="cuda"), s)
        for _ in range(200):
            xb.scale(1.0)                    # s busy
        out = xb.scale(2.0)                  # the write of out sits behind them
        t = torch.utils.dlpack.from_dlpack(out.__dlpack__(stream=-1))
        self.assertEqual(int((t != 2.0).sum().item()), 0)
        del t
        self.assertEqual(out.scale(1.0).tolist()[:3], [2.0, 2.0, 2.0])

    def test_len_while_another_thread_writes_does_not_deadlock(self):
        import threading
        s = xlog.Stream(0)
        y = xlog.upload([0.0] * 4096, s)
        x = xlog.upload([1.0] * 4096, s)
        stop = threading.Event()
        reads = [0]

        def reader():
            while not stop.is_set():
                len(y)
                reads[0] += 1

        def writer():
            for _ in range(5000):
                y.axpy(1.0, x)
            stop.set()

        threads = [threading.Thread(target=reader), threading.Thread(target=writer)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        self.assertFalse(any(t.is_alive() for t in threads), "deadlocked")
        self.assertGreater(reads[0], 0)
        self.assertEqual(y.tolist()[:2], [5000.0, 5000.0])

    def test_axpy_of_a_buffer_with_itself_is_refused(self):
        s = xlog.Stream(0)
        y = xlog.upload([1.0, 2.0], s)
        with self.assertRaises(ValueError):
            y.axpy(1.0, y)


class Legacy:
    """A pre-1.0 DLPack producer wrapper: no max_version keyword."""
    def __init__(self, b):
        self.b = b

    def __dlpack__(self, stream=None):
        return self.b.__dlpack__(stream=stream)

    def __dlpack_device__(self):
        return self.b.__dlpack_device__()


class OneIdentity(unittest.TestCase):
    """One memory has at most one live xlog buffer."""

    def test_xlog_refuses_its_own_export_and_gets_the_buffer_back(self):
        s1, s2 = xlog.Stream(0), xlog.Stream(0)
        x = xlog.upload([1.0, 2.0, 3.0, 4.0], s1)
        with self.assertRaisesRegex(ValueError, "xlog exported"):
            xlog.from_dlpack(Legacy(x), s2)
        self.assertEqual(x.tolist(), [1.0, 2.0, 3.0, 4.0])   # given back

    def test_a_tensor_imported_twice_is_refused(self):
        s1, s2 = xlog.Stream(0), xlog.Stream(0)
        t = torch.arange(4, device="cuda", dtype=torch.float32)
        a = xlog.from_dlpack(t, s1)
        with self.assertRaisesRegex(ValueError, "already imported"):
            xlog.from_dlpack(t, s2)
        with self.assertRaisesRegex(ValueError, "already imported"):
            xlog.from_dlpack(t[1:], s2)                      # overlapping
        del a
        b = xlog.from_dlpack(t, s2)
        self.assertEqual(b.tolist(), [0.0, 1.0, 2.0, 3.0])

    def test_an_xlog_buffer_wrapped_by_its_address_is_refused(self):
        # cupy memory over an xlog buffer's address, owned by the buffer: importing
        # it would give the memory a second xlog buffer, never fenced against the
        # first (b.axpy on s1 racing b2.scale on s2).
        n = 1 << 16
        s1, s2 = xlog.Stream(0), xlog.Stream(0)
        b = xlog.upload([1.0] * n, s1)
        mem = cupy.cuda.UnownedMemory(b.device_ptr, 4 * n, owner=b)
        arr = cupy.ndarray((n,), dtype=cupy.float32,
                           memptr=cupy.cuda.MemoryPointer(mem, 0))
        with self.assertRaisesRegex(ValueError, "of a live xlog buffer"):
            xlog.from_dlpack(arr, s2)
        with self.assertRaisesRegex(ValueError, "of a live xlog buffer"):
            xlog.from_dlpack(arr[n // 2:], s2)               # overlapping
        c = b.scale(2.0)                                     # results are held too
        mem_c = cupy.cuda.UnownedMemory(c.device_ptr, 4 * n, owner=c)
        with self.assertRaisesRegex(ValueError, "of a live xlog buffer"):
            xlog.from_dlpack(cupy.ndarray((n,), dtype=cupy.float32,
                                          memptr=cupy.cuda.MemoryPointer(mem_c, 0)), s2)


class Refusals(unittest.TestCase):
    def test_a_bogus_stream_integer_is_refused(self):
        x = xlog.upload([1.0, 2.0], xlog.Stream(0))
        with self.assertRaisesRegex(RuntimeError, "not a CUDA stream handle"):
            x.__dlpack__(stream=12345)
        self.assertEqual(x.tolist(), [1.0, 2.0])             # not lent

    def setUp(self):
        self.s = xlog.Stream(0)

    def test_wrong_dtype(self):
        with self.assertRaisesRegex(TypeError, "holds float16"):
            xlog.from_dlpack(torch.arange(8, device="cuda", dtype=torch.float16), self.s)

    def test_non_contiguous(self):
        x = torch.zeros(8, 8, device="cuda").t()
        with self.assertRaisesRegex(ValueError, "not contiguous"):
            xlog.from_dlpack(x, self.s)

    def test_host_tensor(self):
        with self.assertRaisesRegex(ValueError, "on the CPU"):
            xlog.from_dlpack(torch.zeros(8), self.s)


if __name__ == "__main__":
    unittest.main(verbosity=2)
