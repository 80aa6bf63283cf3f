// ~100 KB of text, no initialized globals
extern "C" __global__ void a(float*x){ float v=x[threadIdx.x];
#pragma unroll
for(int i=0;i<6000;i++){ v = v*1.0001f + (float)i; }
x[threadIdx.x]=v;}
