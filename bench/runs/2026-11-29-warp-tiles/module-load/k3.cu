extern "C" __global__ void a(int*x){x[threadIdx.x]+=1;}
extern "C" __global__ void b(int*x){x[threadIdx.x]+=2;}
extern "C" __global__ void c(int*x){x[threadIdx.x]+=3;}
