__device__ unsigned long long sink;
extern "C" __global__ void a(int*x){x[threadIdx.x]+=1; if(x[0]==7) sink=1;}
