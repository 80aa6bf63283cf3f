"""xlog <-> PyTorch / CuPy through DLPack, on a CUDA device.

Needs torch and cupy with CUDA, and the built module on sys.path (python/build.sh
puts `xlog.abi3.so` in python/build/). Nothing here synchronises by hand: every
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
        # Zero-copy import: torch makes s wait for ts.
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
        del xb, yb, out, t_out, c
        with torch.cuda.stream(ts):
            self.assertTrue(torch.equal(y, torch.arange(N, device="cuda") * 3.0 + 1.0))

    def test_upload_and_tolist(self):
        s = xlog.Stream(0)
        b = xlog.upload([1.0, 2.0, 3.0], s)
        self.assertEqual(b.scale(2.0).tolist(), [2.0, 4.0, 6.0])


class Refusals(unittest.TestCase):
    def setUp(self):
        self.s = xlog.Stream(0)

    def test_wrong_dtype(self):
        with self.assertRaisesRegex(RuntimeError, "holds int64"):
            xlog.from_dlpack(torch.arange(8, device="cuda"), self.s)

    def test_non_contiguous(self):
        x = torch.zeros(8, 8, device="cuda").t()
        with self.assertRaisesRegex(RuntimeError, "not contiguous"):
            xlog.from_dlpack(x, self.s)

    def test_host_tensor(self):
        with self.assertRaises(Exception):
            xlog.from_dlpack(torch.zeros(8), self.s)


if __name__ == "__main__":
    unittest.main(verbosity=2)
