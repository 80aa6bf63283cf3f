// Floor of a hash probe: random 4-byte gathers and random 32/64-byte bucket reads
// over tables of several sizes, 2^27 lookups each.
#include <cstdio>
#include <cstdint>
#include <vector>
#include <algorithm>
__device__ __forceinline__ uint32_t mix(uint32_t h){h^=h>>16;h*=0x85ebca6bu;h^=h>>13;h*=0xc2b2ae35u;h^=h>>16;return h;}
__global__ void gather(const float* __restrict__ src, const uint32_t* __restrict__ idx, float* out, size_t n){
  size_t i=blockIdx.x*(size_t)blockDim.x+threadIdx.x; if(i<n) out[i]=src[idx[i]];}
// one bucket of W uint4 per key, hashed; writes one u32 per key
template<int M> __device__ __forceinline__ uint4 ld(const uint4* p){
  if(M==0) return *p; if(M==1) return __ldcg(p); if(M==2) return __ldg(p); if(M==3) return __ldcs(p);
  uint4 v; asm volatile("ld.global.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];":"=r"(v.x),"=r"(v.y),"=r"(v.z),"=r"(v.w):"l"(p)); return v;}
__device__ __forceinline__ uint4 ld_generic(const uint4* p){ uint4 v;
  asm volatile("ld.v4.u32 {%0,%1,%2,%3}, [%4];":"=r"(v.x),"=r"(v.y),"=r"(v.z),"=r"(v.w):"l"(p)); return v;}
__device__ __forceinline__ uint4 ld_xlog(const uint4* p){ uint4 v;
  asm volatile("{ .reg .pred %g; .reg .b64 %q; isspacep.global %g, %4; cvta.to.global.u64 %q, %4;\n"
    "@%g ld.global.v4.b32 {%0,%1,%2,%3}, [%q];\n@!%g ld.v4.b32 {%0,%1,%2,%3}, [%4]; }":"=r"(v.x),"=r"(v.y),"=r"(v.z),"=r"(v.w):"l"(p)); return v;}
template<int W,int R,int M=0>
__global__ void probe(const uint4* __restrict__ t, const uint32_t* __restrict__ keys, uint32_t* out, size_t n, uint32_t mask){
  size_t i0=(blockIdx.x*(size_t)blockDim.x+threadIdx.x)*R; if(i0>=n) return;
  uint32_t k[R]; uint4 b[R][W];
  #pragma unroll
  for(int r=0;r<R;r++) k[r]=keys[i0+r];
  #pragma unroll
  for(int r=0;r<R;r++){ size_t h=mix(k[r])&mask;
    #pragma unroll
    for(int w=0;w<W;w++) b[r][w]=ld<M>(t+h*W+w); }
  #pragma unroll
  for(int r=0;r<R;r++){ uint32_t v=0;
    #pragma unroll
    for(int w=0;w<W;w++) v+= (b[r][w].x==~k[r])+(b[r][w].y==~k[r])+(b[r][w].z==~k[r])+(b[r][w].w==~k[r]);
    out[i0+r]=v; }
}
// like probe<2,R> (32-byte buckets, plain loads) but a row whose hash has its low
// byte below `over` reads the next bucket after the first arrives (a dependent read)
template<int R>
__global__ void probe_over(const uint4* __restrict__ t, const uint32_t* __restrict__ keys, uint32_t* out, size_t n, uint32_t mask, uint32_t over){
  size_t i0=(blockIdx.x*(size_t)blockDim.x+threadIdx.x)*R; if(i0>=n) return;
  uint32_t k[R]; uint4 b[R][2]; uint32_t h[R];
  #pragma unroll
  for(int r=0;r<R;r++) k[r]=keys[i0+r];
  #pragma unroll
  for(int r=0;r<R;r++){ h[r]=mix(k[r]); size_t x=h[r]&mask; b[r][0]=t[x*2]; b[r][1]=t[x*2+1]; }
  #pragma unroll
  for(int r=0;r<R;r++){ uint32_t v=(b[r][0].x==~k[r])+(b[r][0].y==~k[r])+(b[r][1].z==~k[r])+(b[r][1].w==~k[r]);
    if((h[r]>>24)<over && b[r][0].x!=12345u){ size_t x=(h[r]+1)&mask; uint4 c=t[x*2], d=t[x*2+1]; v+=(c.x==~k[r])+(d.w==~k[r]); }
    out[i0+r]=v; }
}
// probe<2,R> plus a per-block total: a block reduction behind a barrier (B=1) or a
// warp reduction and one atomic per warp (B=0)
template<int R,int B,int L=0>
__global__ void probe_tot(const uint4* __restrict__ t, const uint32_t* __restrict__ keys, uint32_t* out, unsigned long long* tot, size_t n, uint32_t mask){
  size_t i0=(blockIdx.x*(size_t)blockDim.x+threadIdx.x)*R;
  uint32_t k[R]; uint4 b[R][2]; uint32_t sum=0;
  #pragma unroll
  for(int r=0;r<R;r++) k[r]=i0+r<n?keys[i0+r]:0;
  #pragma unroll
  for(int r=0;r<R;r++){ size_t x=mix(k[r])&mask; if(L==0){b[r][0]=t[x*2]; b[r][1]=t[x*2+1];} else if(L==1){b[r][0]=ld_generic(t+x*2); b[r][1]=ld_generic(t+x*2+1);} else {b[r][0]=ld_xlog(t+x*2); b[r][1]=ld_xlog(t+x*2+1);} }
  #pragma unroll
  for(int r=0;r<R;r++){ uint32_t v=0;
    v+=(b[r][0].x==~k[r])+(b[r][0].y==~k[r])+(b[r][0].z==~k[r])+(b[r][0].w==~k[r]);
    v+=(b[r][1].x==~k[r])+(b[r][1].y==~k[r])+(b[r][1].z==~k[r])+(b[r][1].w==~k[r]);
    if(i0+r<n) out[i0+r]=v; sum+=v; }
  for(int o=16;o;o>>=1) sum+=__shfl_xor_sync(~0u,sum,o);
  if(B){ __shared__ uint32_t w[8]; if((threadIdx.x&31)==0) w[threadIdx.x>>5]=sum; __syncthreads();
    if(threadIdx.x==0){ uint32_t s=0; for(int i=0;i<8;i++) s+=w[i]; tot[blockIdx.x]=s; } }
  else if((threadIdx.x&31)==0) atomicAdd(tot+blockIdx.x,(unsigned long long)sum);
}
// probe_tot<4,1> with D dependent ALU steps per row between its key and its loads
template<int R,int D>
__global__ void probe_alu(const uint4* __restrict__ t, const uint32_t* __restrict__ keys, uint32_t* out, unsigned long long* tot, size_t n, uint32_t mask){
  size_t i0=(blockIdx.x*(size_t)blockDim.x+threadIdx.x)*R;
  uint32_t k[R]; uint4 b[R][2]; uint32_t sum=0;
  #pragma unroll
  for(int r=0;r<R;r++) k[r]=i0+r<n?keys[i0+r]:0;
  #pragma unroll
  for(int r=0;r<R;r++){ uint32_t h=mix(k[r]);
    #pragma unroll
    for(int d=0;d<D;d++){ asm volatile("add.u32 %0, %0, %1;":"+r"(h):"r"(d)); }
    size_t x=(h-(D*(D-1)/2))&mask; b[r][0]=t[x*2]; b[r][1]=t[x*2+1]; }
  #pragma unroll
  for(int r=0;r<R;r++){ uint32_t v=0;
    v+=(b[r][0].x==~k[r])+(b[r][0].y==~k[r])+(b[r][0].z==~k[r])+(b[r][0].w==~k[r]);
    v+=(b[r][1].x==~k[r])+(b[r][1].y==~k[r])+(b[r][1].z==~k[r])+(b[r][1].w==~k[r]);
    if(i0+r<n) out[i0+r]=v; sum+=v; }
  for(int o=16;o;o>>=1) sum+=__shfl_xor_sync(~0u,sum,o);
  __shared__ uint32_t w[8]; if((threadIdx.x&31)==0) w[threadIdx.x>>5]=sum; __syncthreads();
  if(threadIdx.x==0){ uint32_t s=0; for(int i=0;i<8;i++) s+=w[i]; tot[blockIdx.x]=s; }
}
template<class F> float timeit(F f){cudaEvent_t a,b;cudaEventCreate(&a);cudaEventCreate(&b);std::vector<float> v;
  for(int i=0;i<13;i++){cudaEventRecord(a);f();cudaEventRecord(b);cudaEventSynchronize(b);float ms;cudaEventElapsedTime(&ms,a,b);if(i>=3)v.push_back(ms);}
  std::sort(v.begin(),v.end());return v[v.size()/2];}
int main(){
  const size_t n=1ull<<27; uint32_t *idx,*keys,*out; char* big;
  cudaMalloc(&idx,n*4);cudaMalloc(&keys,n*4);cudaMalloc(&out,n*4);cudaMalloc(&big,4ull<<30);
  cudaMemset(big,1,4ull<<30);
  std::vector<uint32_t> h(n); uint64_t s=2026; for(size_t i=0;i<n;i++){s=s*6364136223846793005ull+1442695040888963407ull;h[i]=s>>33;}
  cudaMemcpy(keys,h.data(),n*4,cudaMemcpyHostToDevice);
  for(int lg=27;lg<=30;lg++){ // gather source of 2^lg floats
    for(size_t i=0;i<n;i++) h[i]=(uint32_t)(((uint64_t)h[i]*2654435761ull+i)&((1ull<<lg)-1));
    cudaMemcpy(idx,h.data(),n*4,cudaMemcpyHostToDevice);
    float ms=timeit([&]{gather<<<n/256,256>>>((float*)big,idx,(float*)out,n);});
    printf("gather f32, source %5llu MiB: %.3f ms (%.1f Gelem/s)\n",(4ull<<lg)>>20,ms,n/ms/1e6);}
  for(int mib=512;mib<=4096;mib*=2){
    uint32_t m32=(uint32_t)(((size_t)mib<<20)/32-1), m64=(uint32_t)(((size_t)mib<<20)/64-1);
    float a=timeit([&]{probe<2,4><<<n/4/256,256>>>((uint4*)big,keys,out,n,m32);});
    float b=timeit([&]{probe<4,4><<<n/4/256,256>>>((uint4*)big,keys,out,n,m64);});
    float c=timeit([&]{probe<2,1><<<n/256,256>>>((uint4*)big,keys,out,n,m32);});
    float d=timeit([&]{probe<4,2><<<n/2/256,256>>>((uint4*)big,keys,out,n,m64);});
    float e=timeit([&]{probe<1,4><<<n/4/256,256>>>((uint4*)big,keys,out,n,(uint32_t)(((size_t)mib<<20)/16-1));});
    printf("table %4d MiB: 32B x4/thr %.3f ms | 64B x4 %.3f | 32B x1 %.3f | 64B x2 %.3f | 16B x4 %.3f\n",mib,a,b,c,d,e);}
  for(int mib=512;mib<=2048;mib*=2){
    uint32_t m32=(uint32_t)(((size_t)mib<<20)/32-1), m64=(uint32_t)(((size_t)mib<<20)/64-1);
    printf("table %4d MiB, 32B x4 by load kind: plain %.3f cg %.3f nc %.3f cs %.3f L1::no_allocate %.3f | 64B x2: cg %.3f nc %.3f | 32B x2 plain %.3f cg %.3f\n",mib,
      timeit([&]{probe<2,4,0><<<n/4/256,256>>>((uint4*)big,keys,out,n,m32);}),
      timeit([&]{probe<2,4,1><<<n/4/256,256>>>((uint4*)big,keys,out,n,m32);}),
      timeit([&]{probe<2,4,2><<<n/4/256,256>>>((uint4*)big,keys,out,n,m32);}),
      timeit([&]{probe<2,4,3><<<n/4/256,256>>>((uint4*)big,keys,out,n,m32);}),
      timeit([&]{probe<2,4,4><<<n/4/256,256>>>((uint4*)big,keys,out,n,m32);}),
      timeit([&]{probe<4,2,1><<<n/2/256,256>>>((uint4*)big,keys,out,n,m64);}),
      timeit([&]{probe<4,2,2><<<n/2/256,256>>>((uint4*)big,keys,out,n,m64);}),
      timeit([&]{probe<2,2,0><<<n/2/256,256>>>((uint4*)big,keys,out,n,m32);}),
      timeit([&]{probe<2,2,1><<<n/2/256,256>>>((uint4*)big,keys,out,n,m32);}));}
  { uint32_t m32=(uint32_t)((1024ull<<20)/32-1); unsigned long long* tot; cudaMalloc(&tot, n);
    printf("1 GiB 32B, block totals: x4 barrier %.3f atomic %.3f | x2 barrier %.3f atomic %.3f | x4 none %.3f\n",
      timeit([&]{probe_tot<4,1><<<n/4/256,256>>>((uint4*)big,keys,out,tot,n,m32);}),
      timeit([&]{probe_tot<4,0><<<n/4/256,256>>>((uint4*)big,keys,out,tot,n,m32);}),
      timeit([&]{probe_tot<2,1><<<n/2/256,256>>>((uint4*)big,keys,out,tot,n,m32);}),
      timeit([&]{probe_tot<2,0><<<n/2/256,256>>>((uint4*)big,keys,out,tot,n,m32);}),
      timeit([&]{probe<2,4><<<n/4/256,256>>>((uint4*)big,keys,out,n,m32);}));
    printf("1 GiB 32B x4 barrier, loads: plain %.3f generic %.3f isspacep-pair %.3f\n",
      timeit([&]{probe_tot<4,1,0><<<n/4/256,256>>>((uint4*)big,keys,out,tot,n,m32);}),
      timeit([&]{probe_tot<4,1,1><<<n/4/256,256>>>((uint4*)big,keys,out,tot,n,m32);}),
      timeit([&]{probe_tot<4,1,2><<<n/4/256,256>>>((uint4*)big,keys,out,tot,n,m32);})); }
  { uint32_t m32=(uint32_t)((1024ull<<20)/32-1); unsigned long long* tot; cudaMalloc(&tot, n);
    printf("1 GiB 32B x4, ALU steps per row before its loads: 0 %.3f | 25 %.3f | 50 %.3f | 100 %.3f | 200 %.3f\n",
      timeit([&]{probe_alu<4,0><<<n/4/256,256>>>((uint4*)big,keys,out,tot,n,m32);}),
      timeit([&]{probe_alu<4,25><<<n/4/256,256>>>((uint4*)big,keys,out,tot,n,m32);}),
      timeit([&]{probe_alu<4,50><<<n/4/256,256>>>((uint4*)big,keys,out,tot,n,m32);}),
      timeit([&]{probe_alu<4,100><<<n/4/256,256>>>((uint4*)big,keys,out,tot,n,m32);}),
      timeit([&]{probe_alu<4,200><<<n/4/256,256>>>((uint4*)big,keys,out,tot,n,m32);})); }
  cudaFuncSetAttribute(probe_over<4>, cudaFuncAttributeMaxDynamicSharedMemorySize, 60000);
  cudaFuncSetAttribute(probe_over<2>, cudaFuncAttributeMaxDynamicSharedMemorySize, 60000);
  cudaFuncSetAttribute(probe_over<1>, cudaFuncAttributeMaxDynamicSharedMemorySize, 60000);
  { uint32_t m32=(uint32_t)((1024ull<<20)/32-1);
    for(uint32_t over: {0u, 35u}) for(int sm: {0, 50000}) {
      printf("1 GiB, second read for %2u/256 rows, smem %5d: x4 %.3f x2 %.3f x1 %.3f\n", over, sm,
        timeit([&]{probe_over<4><<<n/4/256,256,sm>>>((uint4*)big,keys,out,n,m32,over);}),
        timeit([&]{probe_over<2><<<n/2/256,256,sm>>>((uint4*)big,keys,out,n,m32,over);}),
        timeit([&]{probe_over<1><<<n/256,256,sm>>>((uint4*)big,keys,out,n,m32,over);}));}}
  printf("%s\n", cudaGetErrorString(cudaDeviceSynchronize()));
}
