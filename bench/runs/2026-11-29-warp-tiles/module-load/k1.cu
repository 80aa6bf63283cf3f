extern "C" __global__ void a(int*x){x[threadIdx.x]+=1;}
