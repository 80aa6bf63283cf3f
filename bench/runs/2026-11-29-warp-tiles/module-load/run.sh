cd "$(dirname "$0")"
nvcc -O2 -o ml ml.cu -lcuda 2>&1 | tail -3
for k in k1 k3 k1g; do nvcc -cubin -arch=sm_90 -o $k.cubin $k.cu; done
ls -la *.cubin
echo "== xlog cubins then trivial"; ./ml sort_histogram__u32.cubin sort_onesweep__u32.cubin reduce_sum__u32.cubin k1.cubin k3.cubin k1g.cubin k1.cubin hostalloc hostalloc
echo "== trivial first"; ./ml k1.cubin k1.cubin k3.cubin sort_histogram__u32.cubin sort_histogram__u32.cubin reduce_sum__u32.cubin hostalloc0 hostalloc register
echo "== lazy/eager"; CUDA_MODULE_LOADING=EAGER ./ml sort_histogram__u32.cubin sort_onesweep__u32.cubin k1.cubin; CUDA_MODULE_LOADING=LAZY ./ml sort_histogram__u32.cubin sort_onesweep__u32.cubin k1.cubin
echo "== library API"; ./ml lib:sort_histogram__u32.cubin lib:sort_onesweep__u32.cubin lib:reduce_sum__u32.cubin lib:k1.cubin
echo "== managed/register first"; ./ml register hostalloc managed
echo "== text size vs relocated globals"
for k in big rel; do nvcc -cubin -arch=sm_90 -o $k.cubin $k.cu; done; ls -la big.cubin rel.cubin
./ml k1.cubin big.cubin rel.cubin k3.cubin big.cubin rel.cubin sort_histogram__u32.cubin
