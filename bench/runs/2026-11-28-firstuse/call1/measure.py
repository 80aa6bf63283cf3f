import ctypes as C, os, sys, time, json, subprocess
HERE=os.path.dirname(os.path.abspath(__file__))
def child(image, loader, second):
    cu=C.CDLL('libcuda.so.1')
    def ck(r,what):
        if r!=0: raise SystemExit(f'{what} failed {r}')
    T={}
    t=time.perf_counter()
    ck(cu.cuInit(0),'init'); dev=C.c_int(); ck(cu.cuDeviceGet(C.byref(dev),0),'dev')
    ctx=C.c_void_p(); ck(cu.cuDevicePrimaryCtxRetain(C.byref(ctx),dev),'retain'); ck(cu.cuCtxSetCurrent(ctx),'set')
    p=C.c_uint64(); ck(cu.cuMemAlloc_v2(C.byref(p),1<<20),'alloc'); ck(cu.cuCtxSynchronize(),'sync')
    T['ctx']=time.perf_counter()-t
    data=open(os.path.join(HERE,image+'.cubin'),'rb').read(); buf=C.create_string_buffer(data,len(data))
    mode=C.c_int(-1)
    if hasattr(cu,'cuModuleGetLoadingMode'): cu.cuModuleGetLoadingMode(C.byref(mode))
    T['mode']=mode.value  # 1 eager 2 lazy
    names=[b'sort_histogram__u32',b'sort_offsets',b'sort_onesweep__u32']
    t=time.perf_counter()
    if loader=='module':
        m=C.c_void_p(); ck(cu.cuModuleLoadData(C.byref(m),buf),'load')
    else:
        lib=C.c_void_p(); ck(cu.cuLibraryLoadData(C.byref(lib),buf,None,None,0,None,None,0),'libload')
    T['load']=time.perf_counter()-t
    fs=[]
    t=time.perf_counter()
    for n in names:
        f=C.c_void_p()
        if loader=='module': ck(cu.cuModuleGetFunction(C.byref(f),m,n),'getf')
        else:
            k=C.c_void_p(); ck(cu.cuLibraryGetKernel(C.byref(k),lib,n),'getk'); ck(cu.cuKernelGetFunction(C.byref(f),k),'kgetf')
        fs.append(f)
    T['getfunc']=time.perf_counter()-t
    st=C.c_int(-1); cu.cuFuncIsLoaded(C.byref(st),fs[2]); T['loaded_after_get']=st.value
    t=time.perf_counter()
    for f in fs: ck(cu.cuFuncLoad(f),'funcload')
    T['funcload']=time.perf_counter()-t
    g=C.c_uint64(); sz=C.c_size_t()
    t=time.perf_counter()
    if loader=='module': r=cu.cuModuleGetGlobal_v2(C.byref(g),C.byref(sz),m,b'__xlog_panic_sink')
    else: r=cu.cuLibraryGetGlobal(C.byref(g),C.byref(sz),lib,b'__xlog_panic_sink')
    T['global']=time.perf_counter()-t; T['global_rc']=r
    t=time.perf_counter()
    hp=C.c_void_p(); ck(cu.cuMemHostAlloc(C.byref(hp),4096,2),'hostalloc'); dp=C.c_uint64(); ck(cu.cuMemHostGetDevicePointer_v2(C.byref(dp),hp,0),'hdp')
    T['hostalloc']=time.perf_counter()-t
    v=C.c_uint64(dp.value)
    t=time.perf_counter(); ck(cu.cuMemcpyHtoD_v2(g,C.byref(v),8),'memcpy'); T['memcpy']=time.perf_counter()-t
    lim=C.c_size_t(); t=time.perf_counter(); cu.cuCtxGetLimit(C.byref(lim),0); T['getlimit']=time.perf_counter()-t
    if second:
        d2=open(os.path.join(HERE,second+'.cubin'),'rb').read(); b2=C.create_string_buffer(d2,len(d2))
        t=time.perf_counter(); m2=C.c_void_p(); ck(cu.cuModuleLoadData(C.byref(m2),b2),'load2'); f=C.c_void_p(); ck(cu.cuModuleGetFunction(C.byref(f),m2,b'reduce_sum_u32'),'getf2'); ck(cu.cuFuncLoad(f),'fl2')
        T['second_module']=time.perf_counter()-t
        t=time.perf_counter(); hp2=C.c_void_p(); ck(cu.cuMemHostAlloc(C.byref(hp2),4096,2),'hostalloc2'); T['hostalloc2']=time.perf_counter()-t
    print(json.dumps({k:(v*1e3 if isinstance(v,float) else v) for k,v in T.items()}))
if len(sys.argv)>1 and sys.argv[1]=='child':
    child(sys.argv[2],sys.argv[3],sys.argv[4] if len(sys.argv)>4 else None); sys.exit()
out=open(sys.argv[1],'a')
images=[i for i in ['full','sortfam','sortu32','onesweep'] if os.path.exists(os.path.join(HERE,i+'.cubin'))]
for mode in ['LAZY','EAGER']:
  for image in images:
    for loader in ['module','library']:
      for rep in range(3):
        env=dict(os.environ,CUDA_MODULE_LOADING=mode)
        r=subprocess.run([sys.executable,__file__,'child',image,loader,'sum'],env=env,capture_output=True,text=True,timeout=60)
        rec={'mode_env':mode,'image':image,'loader':loader,'rep':rep,'rc':r.returncode}
        try: rec.update(json.loads(r.stdout.strip().splitlines()[-1]))
        except Exception: rec['err']=(r.stdout+r.stderr)[-400:]
        out.write(json.dumps(rec)+'\n'); out.flush(); print(json.dumps(rec))
