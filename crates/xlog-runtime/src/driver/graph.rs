//! CUDA graphs (`crate::graph`): thin wrappers over the driver's graph API.
//!
//! Only a platform with graphs ([`Platform::has_graphs`](super::Platform::has_graphs):
//! the GPU) builds them; the simulator replays a recording on its own streams and
//! events instead, so these functions are called only on the GPU.
//!
//! See the [CUDA graph API](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__GRAPH.html).

use std::ffi::c_void;

use cudarc::driver::sys;

use super::{stream_create, stream_destroy, RawFunction, RawStream};
use crate::error::{Error, Result};

/// A graph under construction (`CUgraph`).
pub(crate) type RawGraph = sys::CUgraph;
/// An instantiated graph (`CUgraphExec`).
pub(crate) type RawGraphExec = sys::CUgraphExec;
/// One node of a [`RawGraph`].
pub(crate) type RawGraphNode = sys::CUgraphNode;

/// The node's work, as the graph APIs take it.
pub(crate) enum GraphWork<'a> {
    /// A kernel: function, grid, block, dynamic shared bytes, one pointer per parameter.
    Kernel {
        func: RawFunction,
        grid: [u32; 3],
        block: [u32; 3],
        shared_bytes: u32,
        params: &'a mut [*mut c_void],
    },
    /// `count` elements of `elem_bytes` (1, 2 or 4) set to `value` at `dst`.
    Memset {
        dst: u64,
        value: u32,
        elem_bytes: u32,
        count: usize,
    },
    /// `bytes` copied from `src` to `dst` (device memory, not overlapping).
    Copy { dst: u64, src: u64, bytes: usize },
    /// A captured graph, added as a child (cloned by the driver).
    Child(RawGraph),
    /// Nothing (a copy or fill of zero bytes): a node that only orders.
    Empty,
}

fn kernel_node_params(
    func: RawFunction,
    grid: [u32; 3],
    block: [u32; 3],
    shared_bytes: u32,
    params: &mut [*mut c_void],
) -> sys::CUDA_KERNEL_NODE_PARAMS {
    sys::CUDA_KERNEL_NODE_PARAMS {
        func,
        gridDimX: grid[0],
        gridDimY: grid[1],
        gridDimZ: grid[2],
        blockDimX: block[0],
        blockDimY: block[1],
        blockDimZ: block[2],
        sharedMemBytes: shared_bytes,
        kernelParams: params.as_mut_ptr(),
        extra: std::ptr::null_mut(),
        kern: std::ptr::null_mut(),
        ctx: std::ptr::null_mut(),
    }
}

/// Create an empty graph ([`cuGraphCreate`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__GRAPH.html)).
pub(crate) fn graph_create() -> Result<RawGraph> {
    let mut g = std::ptr::null_mut();
    // SAFETY: writes one handle into `g`.
    unsafe { sys::cuGraphCreate(&mut g, 0) }
        .result()
        .map_err(|e| Error::driver("cuGraphCreate", e))?;
    Ok(g)
}

/// Add a node doing `work` to `graph`, after `deps`.
///
/// # Safety
/// 1. `graph` is live, every handle in `deps` is a node of it, and the bound
///    context is the one `work`'s function and memory belong to.
/// 2. A kernel's `params` hold one pointer per parameter, each to a value of
///    exactly that parameter's type (the driver copies them in this call); every
///    device range the work touches stays valid while an instantiation of the
///    graph can run.
pub(crate) unsafe fn graph_add(
    graph: RawGraph,
    deps: &[RawGraphNode],
    work: GraphWork<'_>,
) -> Result<RawGraphNode> {
    let mut node = std::ptr::null_mut();
    let (d, n) = (deps.as_ptr(), deps.len());
    // SAFETY: obligations 1 and 2; each parameter struct lives for its call.
    let (r, call) = unsafe {
        match work {
            GraphWork::Kernel {
                func,
                grid,
                block,
                shared_bytes,
                params,
            } => {
                let p = kernel_node_params(func, grid, block, shared_bytes, params);
                (
                    sys::cuGraphAddKernelNode_v2(&mut node, graph, d, n, &p),
                    "cuGraphAddKernelNode",
                )
            }
            GraphWork::Memset {
                dst,
                value,
                elem_bytes,
                count,
            } => {
                let p = sys::CUDA_MEMSET_NODE_PARAMS {
                    dst,
                    pitch: 0,
                    value,
                    elementSize: elem_bytes,
                    width: count,
                    height: 1,
                };
                let mut ctx = std::ptr::null_mut();
                sys::cuCtxGetCurrent(&mut ctx);
                (
                    sys::cuGraphAddMemsetNode(&mut node, graph, d, n, &p, ctx),
                    "cuGraphAddMemsetNode",
                )
            }
            GraphWork::Copy { dst, src, bytes } => {
                // Every field spelled out: the memory-type enums have no zero value.
                let device = sys::CUmemorytype::CU_MEMORYTYPE_DEVICE;
                let p = sys::CUDA_MEMCPY3D {
                    srcXInBytes: 0,
                    srcY: 0,
                    srcZ: 0,
                    srcLOD: 0,
                    srcMemoryType: device,
                    srcHost: std::ptr::null(),
                    srcDevice: src,
                    srcArray: std::ptr::null_mut(),
                    reserved0: std::ptr::null_mut(),
                    srcPitch: bytes,
                    srcHeight: 1,
                    dstXInBytes: 0,
                    dstY: 0,
                    dstZ: 0,
                    dstLOD: 0,
                    dstMemoryType: device,
                    dstHost: std::ptr::null_mut(),
                    dstDevice: dst,
                    dstArray: std::ptr::null_mut(),
                    reserved1: std::ptr::null_mut(),
                    dstPitch: bytes,
                    dstHeight: 1,
                    WidthInBytes: bytes,
                    Height: 1,
                    Depth: 1,
                };
                let mut ctx = std::ptr::null_mut();
                sys::cuCtxGetCurrent(&mut ctx);
                (
                    sys::cuGraphAddMemcpyNode(&mut node, graph, d, n, &p, ctx),
                    "cuGraphAddMemcpyNode",
                )
            }
            GraphWork::Child(child) => (
                sys::cuGraphAddChildGraphNode(&mut node, graph, d, n, child),
                "cuGraphAddChildGraphNode",
            ),
            GraphWork::Empty => (
                sys::cuGraphAddEmptyNode(&mut node, graph, d, n),
                "cuGraphAddEmptyNode",
            ),
        }
    };
    r.result().map_err(|e| Error::driver(call, e))?;
    Ok(node)
}

/// Instantiate `graph` (`cuGraphInstantiateWithFlags`, no flags).
///
/// # Safety
/// 1. `graph` is live, of the bound context.
pub(crate) unsafe fn graph_instantiate(graph: RawGraph) -> Result<RawGraphExec> {
    let mut exec = std::ptr::null_mut();
    // SAFETY: obligation 1; writes one handle into `exec`.
    unsafe { sys::cuGraphInstantiateWithFlags(&mut exec, graph, 0) }
        .result()
        .map_err(|e| Error::driver("cuGraphInstantiateWithFlags", e))?;
    Ok(exec)
}

/// Launch `exec` on `s` (`cuGraphLaunch`): ordered after the work queued on `s`
/// before it, and the work queued after it waits for every node.
///
/// # Safety
/// 1. `exec` and `s` are live, of the bound context; every cross-stream hazard of
///    the memory the graph touches has been fenced on `s`.
pub(crate) unsafe fn graph_launch(exec: RawGraphExec, s: RawStream) -> Result<()> {
    // SAFETY: obligation 1.
    unsafe { sys::cuGraphLaunch(exec, s) }
        .result()
        .map_err(|e| Error::driver("cuGraphLaunch", e))
}

/// Give kernel node `node` of `exec` new parameters and launch shape
/// (`cuGraphExecKernelNodeSetParams`; later launches use them).
///
/// # Safety
/// 1. `exec` is live; `node` is a kernel node of the graph `exec` was instantiated
///    from, running `func`; `params` as in [`graph_add`].
pub(crate) unsafe fn graph_exec_set_kernel(
    exec: RawGraphExec,
    node: RawGraphNode,
    func: RawFunction,
    grid: [u32; 3],
    block: [u32; 3],
    shared_bytes: u32,
    params: &mut [*mut c_void],
) -> Result<()> {
    let p = kernel_node_params(func, grid, block, shared_bytes, params);
    // SAFETY: obligation 1; the driver copies the parameters in the call.
    unsafe { sys::cuGraphExecKernelNodeSetParams_v2(exec, node, &p) }
        .result()
        .map_err(|e| Error::driver("cuGraphExecKernelNodeSetParams", e))
}

/// Update `exec` in place to run `graph`, which must have its topology
/// (`cuGraphExecUpdate`). `Ok(false)`: the driver refused the update (a
/// different topology or node kind); `exec` is unchanged.
///
/// # Safety
/// 1. `exec` and `graph` are live, of the bound context.
pub(crate) unsafe fn graph_exec_update(exec: RawGraphExec, graph: RawGraph) -> Result<bool> {
    let mut info = sys::CUgraphExecUpdateResultInfo {
        result: sys::CUgraphExecUpdateResult::CU_GRAPH_EXEC_UPDATE_SUCCESS,
        errorNode: std::ptr::null_mut(),
        errorFromNode: std::ptr::null_mut(),
    };
    // SAFETY: obligation 1; writes the result record.
    let r = unsafe { sys::cuGraphExecUpdate_v2(exec, graph, &mut info) };
    match r {
        sys::CUresult::CUDA_SUCCESS => Ok(true),
        sys::CUresult::CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE => Ok(false),
        r => Err(Error::driver(
            "cuGraphExecUpdate",
            r.result().expect_err("not a success"),
        )),
    }
}

/// # Safety
/// 1. `graph` is live and not used after this call.
pub(crate) unsafe fn graph_destroy(graph: RawGraph) -> Result<()> {
    // SAFETY: obligation 1.
    unsafe { sys::cuGraphDestroy(graph) }
        .result()
        .map_err(|e| Error::driver("cuGraphDestroy", e))
}

/// Destroy `exec`; launches in flight finish first (the driver frees it when they
/// complete, `cuGraphExecDestroy`).
///
/// # Safety
/// 1. `exec` is live and not used after this call.
pub(crate) unsafe fn graph_exec_destroy(exec: RawGraphExec) -> Result<()> {
    // SAFETY: obligation 1.
    unsafe { sys::cuGraphExecDestroy(exec) }
        .result()
        .map_err(|e| Error::driver("cuGraphExecDestroy", e))
}

/// Capture what `work` queues on a fresh private stream into a new graph
/// (`cuStreamBeginCapture` in thread-local mode, `cuStreamEndCapture`). The stream
/// is destroyed before returning; a failed or panicking `work` ends the capture
/// and discards its graph.
///
/// # Safety
/// 1. `work` only queues work on the stream it is given.
pub(crate) unsafe fn capture_graph(work: impl FnOnce(RawStream) -> Result<()>) -> Result<RawGraph> {
    let s = stream_create()?;
    struct Destroy(RawStream);
    impl Drop for Destroy {
        fn drop(&mut self) {
            // SAFETY: the stream was created above and is used by nothing after this.
            let _ = unsafe { stream_destroy(self.0) };
        }
    }
    let _destroy = Destroy(s);
    let mode = sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL;
    // SAFETY: `s` is a live stream of the bound context.
    unsafe { sys::cuStreamBeginCapture_v2(s, mode) }
        .result()
        .map_err(|e| Error::driver("cuStreamBeginCapture", e))?;
    let worked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work(s)));
    let mut graph = std::ptr::null_mut();
    // SAFETY: `s` is capturing; ending the capture writes the graph (or null).
    let ended = unsafe { sys::cuStreamEndCapture(s, &mut graph) };
    let discard = |g: RawGraph| {
        if !g.is_null() {
            // SAFETY: the captured graph is ours and used by nothing else.
            let _ = unsafe { graph_destroy(g) };
        }
    };
    match worked {
        Err(payload) => {
            discard(graph);
            std::panic::resume_unwind(payload)
        }
        Ok(Err(e)) => {
            discard(graph);
            Err(e)
        }
        Ok(Ok(())) => {
            if let Err(e) = ended.result() {
                discard(graph);
                return Err(Error::driver("cuStreamEndCapture", e));
            }
            Ok(graph)
        }
    }
}
