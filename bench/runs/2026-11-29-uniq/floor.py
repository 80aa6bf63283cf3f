# The floor of unique counts on the bench's data (keys i/10, n = 1e8): the same bytes
# moved by the simplest kernel that knows where each run goes (run r of key r):
# read every key once, write each run's value (4 B), start and length (8 B each).
import sys, cupy as cp
n = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000_000
src = r'''
extern "C" __global__ void floor_runs(const int* x, long long n, int* values, unsigned long long* starts, unsigned long long* counts) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  long long stride = (long long)gridDim.x * blockDim.x;
  for (; i < n; i += stride) {
    int v = x[i];
    if (i == 0 || x[i - 1] != v) { values[v] = v; starts[v] = i; counts[v] = (i + 10 <= n ? 10 : n - i); }
  }
}
'''
k = cp.RawKernel(src, "floor_runs")
x = (cp.arange(n, dtype=cp.int64) // 10).astype(cp.int32)
m = (n + 9) // 10
vals = cp.empty(m, cp.int32); st = cp.empty(m, cp.uint64); ct = cp.empty(m, cp.uint64)
blocks = min((n + 255) // 256, 132 * 16)
f = lambda: k((blocks,), (256,), (x, cp.int64(n), vals, st, ct))
for _ in range(3): f()
ts = []
for _ in range(30):
    a, b = cp.cuda.Event(), cp.cuda.Event()
    a.record(); f(); b.record(); b.synchronize(); ts.append(cp.cuda.get_elapsed_time(a, b))
ts.sort(); ms = ts[len(ts)//2]
assert int(vals[m-1]) == m - 1 and int(ct[0]) == 10
print("floor unique counts i32 (read 4 B/elem, write 20 B/run)\t%.4f ms\t%.1f Gelem/s" % (ms, n / ms / 1e6))
