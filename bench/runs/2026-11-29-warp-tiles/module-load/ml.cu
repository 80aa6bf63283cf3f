// Module-load cost microbench (driver API): what one cuModuleLoadData costs, by content.
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <chrono>
#include <vector>
#include <string>
static double now_us(){return std::chrono::duration<double,std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();}
#define CK(x) do{CUresult r=(x); if(r){const char*s;cuGetErrorName(r,&s);printf("%s failed: %s\n",#x,s);exit(1);}}while(0)
static std::vector<char> rd(const char*p){FILE*f=fopen(p,"rb");if(!f){printf("no %s\n",p);exit(1);}fseek(f,0,2);long n=ftell(f);fseek(f,0,0);std::vector<char> v(n+1,0);fread(v.data(),1,n,f);fclose(f);return v;}
int main(int argc,char**argv){
  double t=now_us(); CK(cuInit(0)); CUdevice d; CK(cuDeviceGet(&d,0)); CUcontext c; CK(cuDevicePrimaryCtxRetain(&c,d)); CK(cuCtxSetCurrent(c));
  printf("init+ctx %.0f us\n",now_us()-t);
  CUstream s; CK(cuStreamCreate(&s,CU_STREAM_NON_BLOCKING));
  CUdeviceptr p; t=now_us(); CK(cuMemAllocAsync(&p,16384,s)); CK(cuStreamSynchronize(s)); printf("first allocasync %.0f us\n",now_us()-t);
  for(int i=1;i<argc;i++){
    std::string a=argv[i];
    if(a=="hostalloc"){void*h; t=now_us(); CK(cuMemHostAlloc(&h,4096,CU_MEMHOSTALLOC_DEVICEMAP)); printf("hostalloc mapped 4096: %.0f us\n",now_us()-t); continue;}
    if(a=="hostalloc0"){void*h; t=now_us(); CK(cuMemHostAlloc(&h,4096,0)); printf("hostalloc plain 4096: %.0f us\n",now_us()-t); continue;}
    if(a=="register"){void*h=aligned_alloc(4096,4096); t=now_us(); CK(cuMemHostRegister(h,4096,CU_MEMHOSTREGISTER_DEVICEMAP)); printf("hostregister 4096: %.0f us\n",now_us()-t); continue;}
    if(a=="managed"){CUdeviceptr m; t=now_us(); CK(cuMemAllocManaged(&m,4096,CU_MEM_ATTACH_GLOBAL)); printf("managed 4096: %.0f us\n",now_us()-t); continue;}
    bool lib = a.rfind("lib:",0)==0; std::string path = lib? a.substr(4):a;
    auto img=rd(path.c_str());
    t=now_us();
    if(lib){CUlibrary l; CK(cuLibraryLoadData(&l,img.data(),0,0,0,0,0,0)); double t1=now_us(); unsigned n=0; CK(cuLibraryGetKernelCount(&n,l)); std::vector<CUkernel> ks(n); CK(cuLibraryEnumerateKernels(ks.data(),n,l)); CUfunction f; CK(cuKernelGetFunction(&f,ks[0])); printf("%-40s libload %.0f us, getfunction %.0f us\n",path.c_str(),t1-t,now_us()-t1);}
    else {CUmodule m; CK(cuModuleLoadData(&m,img.data())); double t1=now_us(); unsigned n=0; CK(cuModuleGetFunctionCount(&n,m)); std::vector<CUfunction> fs(n); CK(cuModuleEnumerateFunctions(fs.data(),n,m)); CK(cuFuncLoad(fs[0])); printf("%-40s load %.0f us, first function loaded %.0f us (%u fns)\n",path.c_str(),t1-t,now_us()-t1,n);}
  }
  return 0;
}
