# The driver's part of a first sort, kernel by kernel, with the per-kernel cubins:
# each piece loaded as a module of its own, as the runtime now does.
import ctypes as C, os, sys, time, json, subprocess
HERE=os.path.dirname(os.path.abspath(__file__))
SORT=['sort_histogram__u32','sort_offsets','sort_onesweep__u32']
def child(kind):
    cu=C.CDLL('libcuda.so.1')
    def ck(r,what):
        if r!=0: raise SystemExit(f'{what} failed {r}')
    T={}
    t=time.perf_counter()
    ck(cu.cuInit(0),'init'); dev=C.c_int(); ck(cu.cuDeviceGet(C.byref(dev),0),'dev')
    ctx=C.c_void_p(); ck(cu.cuDevicePrimaryCtxRetain(C.byref(ctx),dev),'retain'); ck(cu.cuCtxSetCurrent(ctx),'set')
    p=C.c_uint64(); ck(cu.cuMemAlloc_v2(C.byref(p),1<<20),'alloc'); ck(cu.cuCtxSynchronize(),'sync')
    T['ctx']=time.perf_counter()-t
    def load(path):
        d=open(path,'rb').read(); b=C.create_string_buffer(d,len(d)); m=C.c_void_p()
        t=time.perf_counter(); ck(cu.cuModuleLoadData(C.byref(m),b),'load'); return m,time.perf_counter()-t,len(d)
    def getf(m,n):
        f=C.c_void_p(); t=time.perf_counter(); ck(cu.cuModuleGetFunction(C.byref(f),m,n.encode()),'getf'); return time.perf_counter()-t
    def sink(m):
        g=C.c_uint64(); sz=C.c_size_t(); t=time.perf_counter(); ck(cu.cuModuleGetGlobal_v2(C.byref(g),C.byref(sz),m,b'__xlog_panic_sink'),'glob'); return g,time.perf_counter()-t
    mods=[]
    if kind=='pieces':
        for n in SORT:
            m,tl,size=load(os.path.join(HERE,'pieces',n+'.cubin'))
            tf=getf(m,n); T['load '+n]=tl; T['getfunc '+n]=tf; T['bytes '+n]=size; mods.append(m)
    else:
        m,tl,size=load(os.path.join(HERE,'full.cubin')); T['load whole']=tl; T['bytes whole']=size
        for n in SORT: T['getfunc '+n]=getf(m,n)
        mods.append(m)
    t=time.perf_counter()
    hp=C.c_void_p(); ck(cu.cuMemHostAlloc(C.byref(hp),4096,2),'hostalloc'); dp=C.c_uint64(); ck(cu.cuMemHostGetDevicePointer_v2(C.byref(dp),hp,0),'hdp')
    T['record (cuMemHostAlloc, mapped)']=time.perf_counter()-t
    v=C.c_uint64(dp.value)
    for i,m in enumerate(mods):
        g,tg=sink(m); t=time.perf_counter(); ck(cu.cuMemcpyHtoD_v2(g,C.byref(v),8),'memcpy'); T[f'sink {i} (get global + copy)']=tg+time.perf_counter()-t
    if kind=='pieces':
        m,tl,_=load(os.path.join(HERE,'pieces','reduce_sum_u32.cubin')); T['second algorithm: load reduce_sum_u32']=tl+getf(m,'reduce_sum_u32')
    print(json.dumps({k:(v*1e3 if isinstance(v,float) else v) for k,v in T.items()}))
if len(sys.argv)>2 and sys.argv[1]=='child':
    child(sys.argv[2]); sys.exit()
out=open(sys.argv[1],'a')
for kind,reps in [('pieces',7),('whole',3)]:
    for rep in range(reps):
        r=subprocess.run([sys.executable,__file__,'child',kind],capture_output=True,text=True,timeout=60)
        rec={'kind':kind,'rep':rep,'rc':r.returncode}
        try: rec.update(json.loads(r.stdout.strip().splitlines()[-1]))
        except Exception: rec['err']=(r.stdout+r.stderr)[-400:]
        out.write(json.dumps(rec)+'\n'); out.flush()
