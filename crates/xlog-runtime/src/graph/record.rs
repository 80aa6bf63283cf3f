//! [`GraphRecorder`]: nodes, their accesses and the edges between them.

use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::atomic::{AtomicU64, Ordering};

use xlog_device::abi::{HeaderAbi, ParamAbi, ParamKind};
use xlog_device::DeviceCopy;

use super::{merge_uses, Graph, Use};
use crate::buffer::{ArgRef, BufferCore, ReadBuffer, WriteBuffer};
use crate::driver::{self, RawGraph, RawStream};
use crate::error::{Error, Result};
use crate::launch::{check_launch, Function, KernelHandle, LaunchConfig};
use crate::sim::Touch;
use crate::stream::Stream;
use crate::track::Access;

/// Identifies recordings, so a [`NodeId`] of one graph is refused by another.
static NEXT_GRAPH: AtomicU64 = AtomicU64::new(1);

/// A node of one recording (and of the [`Graph`] instantiated from it), as the
/// recording calls return it; [`Graph`]'s updates take it back.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct NodeId {
    pub(crate) graph: u64,
    pub(crate) index: usize,
}

impl NodeId {
    /// The node's position in recording order.
    pub fn index(&self) -> usize {
        self.index
    }
}

/// A 16-byte aligned chunk of a node's parameter copy.
#[derive(Clone, Copy)]
#[repr(C, align(16))]
struct Chunk([u8; 16]);

/// A copy of a kernel node's parameter values, each at a 16-byte aligned offset,
/// so replays and updates read values that outlive the recording call.
pub(crate) struct Params {
    chunks: Vec<Chunk>,
    offsets: Vec<usize>,
}

impl Params {
    /// One pointer per parameter, into this copy (the driver and the simulator
    /// only read through them).
    pub(crate) fn pointers(&self) -> Vec<*mut c_void> {
        let base = self.chunks.as_ptr() as *mut u8;
        self.offsets
            .iter()
            // SAFETY: each offset lies inside `chunks` (see `copy_params`).
            .map(|&o| unsafe { base.add(o) } as *mut c_void)
            .collect()
    }
}

/// What one node does.
pub(crate) enum Work {
    Kernel {
        func: Function,
        config: LaunchConfig,
        params: Params,
        /// The ranges zeroed before it (its `lookback` statuses), as memset nodes.
        zero: Vec<(u64, usize)>,
    },
    Memset {
        dst: u64,
        value: u32,
        elem_bytes: u32,
        count: usize,
    },
    Copy {
        dst: u64,
        src: u64,
        bytes: usize,
    },
    /// Foreign work captured into a graph of its own (GPU only).
    Foreign(OwnedGraph),
}

/// A captured graph, destroyed with the node (the driver clones it into the
/// graph it is added to).
pub(crate) struct OwnedGraph(pub(crate) RawGraph);

impl Drop for OwnedGraph {
    fn drop(&mut self) {
        // SAFETY: the graph was captured for this node and is used by nothing else.
        let _ = unsafe { driver::graph_destroy(self.0) };
    }
}

/// One recorded node: its work, its buffers, what the simulator's hazard detector
/// checks it against, and the earlier nodes it waits for.
pub(crate) struct Node<'g> {
    pub(crate) work: Work,
    pub(crate) uses: Vec<Use<'g>>,
    pub(crate) touches: Vec<Touch>,
    pub(crate) deps: Vec<usize>,
}

/// A buffer's accesses so far in the recording, by node.
#[derive(Default)]
struct History {
    last_write: Option<usize>,
    reads_since: Vec<usize>,
}

/// Records typed launches, copies and fills into a graph without running them
/// (see the [module docs](crate::graph)).
///
/// Kernels record through their generated `record` function, which takes the
/// launcher's arguments, each buffer borrowed for `'g`:
///
/// ```no_run
/// # use xlog_runtime::*;
/// # fn main() -> Result<()> {
/// # let rt = Runtime::get(0)?;
/// let stream = rt.stream()?;
/// let (x, y, z) = (rt.upload(&[1u32; 256])?, rt.alloc_zeroed::<u32>(256)?, rt.alloc_zeroed::<u32>(256)?);
/// let mut rec = GraphRecorder::new(&stream);
/// // A kernel: `scale::record(&mut rec, scale::config(256), &x, &y, 2)?;`
/// let fill = rec.fill(&z, 7u32)?;   // independent of the copy
/// let copy = rec.copy(&x, &y)?;
/// let read = rec.copy(&y, &z)?;     // after both: reads y, writes z
/// assert_eq!(rec.dependencies(read), &[fill.index(), copy.index()]);
/// let graph = rec.instantiate()?;
/// for _ in 0..1000 {
///     graph.launch(&stream)?;
/// }
/// # Ok(()) }
/// ```
///
/// Every refusal (an invalid configuration, a buffer of another runtime, a written
/// argument overlapping another one of the same node) leaves the recording as it
/// was.
pub struct GraphRecorder<'g> {
    id: u64,
    stream: Stream,
    nodes: Vec<Node<'g>>,
    history: HashMap<usize, History>,
}

impl std::fmt::Debug for GraphRecorder<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GraphRecorder")
            .field("nodes", &self.nodes.len())
            .finish()
    }
}

impl<'g> GraphRecorder<'g> {
    /// Start a recording for `stream`'s runtime and device. The stream resolves
    /// kernels and names the device; the graph may be launched on any stream of
    /// the same runtime.
    pub fn new(stream: &Stream) -> Self {
        GraphRecorder {
            id: NEXT_GRAPH.fetch_add(1, Ordering::Relaxed),
            stream: stream.clone(),
            nodes: Vec::new(),
            history: HashMap::new(),
        }
    }

    /// The stream the recording was started for (its runtime and device; library
    /// calls that record allocate on it).
    pub fn stream(&self) -> &Stream {
        &self.stream
    }

    /// Number of nodes recorded.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The nodes `node` waits for (its edges), in recording order.
    pub fn dependencies(&self, node: NodeId) -> &[usize] {
        match self.nodes.get(node.index) {
            Some(n) if node.graph == self.id => &n.deps,
            _ => &[],
        }
    }

    /// Record a copy of `src` into `dst` (equal lengths).
    pub fn copy<T: DeviceCopy>(
        &mut self,
        src: &'g (impl ReadBuffer<T> + ?Sized),
        dst: &'g (impl WriteBuffer<T> + ?Sized),
    ) -> Result<NodeId> {
        let (s, d) = (src.arg(), ReadBuffer::arg(dst));
        if s.len != d.len {
            return Err(Error::InvalidArgument {
                what: "a recorded device copy".into(),
                reason: format!(
                    "the source has {} elements but the destination {}",
                    s.len, d.len
                ),
            });
        }
        let uses = [(s, Access::Read), (d, Access::Write)];
        self.check_uses("a recorded device copy", &uses)?;
        let work = Work::Copy {
            dst: d.ptr,
            src: s.ptr,
            bytes: d.bytes,
        };
        Ok(self.push(work, &uses, declared_touches(&uses)))
    }

    /// Record a fill of `dst` with `value`, as a graph's memset node: for 1-, 2- and
    /// 4-byte numbers and `bool`, and 8-byte numbers whose two 32-bit halves are
    /// equal (zero, all ones). Other values are refused (record a kernel that
    /// writes them instead).
    pub fn fill<T: DeviceCopy>(
        &mut self,
        dst: &'g (impl WriteBuffer<T> + ?Sized),
        value: T,
    ) -> Result<NodeId> {
        let d = ReadBuffer::arg(dst);
        let refused = || Error::Unsupported {
            what: format!(
                "a recorded fill of `{}` elements with this value",
                std::any::type_name::<T>()
            ),
            reason: "a graph's memset node sets 1-, 2- or 4-byte numbers (and 8-byte ones \
                     whose halves are equal); record a kernel that writes the value instead"
                .into(),
        };
        let (value, elem_bytes, per_element) = fill_pattern(&value).ok_or_else(refused)?;
        if d.ptr % elem_bytes as u64 != 0 {
            return Err(refused());
        }
        let uses = [(d, Access::Write)];
        self.check_uses("a recorded fill", &uses)?;
        let work = Work::Memset {
            dst: d.ptr,
            value,
            elem_bytes,
            count: d.len * per_element,
        };
        Ok(self.push(work, &uses, declared_touches(&uses)))
    }

    /// What generated `record` functions call: a kernel node from the launcher's
    /// parameter array, with each buffer's declared access and the `lookback`
    /// ranges to zero before the kernel.
    ///
    /// # Safety
    /// As [`launch_unchecked`](Self::launch_unchecked); `#[xlog_kernel]` upholds it
    /// by generating `params` and `uses` from the same signature as the entry point.
    #[doc(hidden)]
    pub unsafe fn __record_typed(
        &mut self,
        kernel: &'static KernelHandle,
        config: LaunchConfig,
        params: &[*mut c_void],
        zero: &[(u64, usize)],
        uses: &[(ArgRef<'g>, Access)],
    ) -> Result<NodeId> {
        config.require_one_dimensional(kernel.name())?;
        // SAFETY: the caller's obligations.
        unsafe { self.kernel(kernel, config, params, zero, uses) }
    }

    /// Record a launch of `kernel` with raw parameters and an access list the
    /// caller vouches for: the graph's edges and its fencing come from `uses`.
    ///
    /// # Safety
    /// 1. `params` holds one pointer per entry-point parameter of `kernel` (a slice
    ///    is two: its address as `u64` and its length as `usize`), each to a value
    ///    of exactly that parameter's type; they are copied in this call.
    /// 2. The kernel touches only the buffers in `uses`, each with at most the
    ///    access given, whenever the graph runs. (The simulator checks the kernel's
    ///    signature against the graph's edges and reports what this list left
    ///    unordered.)
    /// 3. A kernel of `#[xlog_kernel]` runs in a one-dimensional configuration.
    pub unsafe fn launch_unchecked(
        &mut self,
        kernel: &'static KernelHandle,
        config: LaunchConfig,
        params: &[*mut c_void],
        uses: &[(ArgRef<'g>, Access)],
    ) -> Result<NodeId> {
        // SAFETY: the caller's obligations.
        unsafe { self.kernel(kernel, config, params, &[], uses) }
    }

    /// Record foreign work (a cuBLAS call, say) as a node that reads and writes
    /// what `uses` names. On a GPU, `work` runs once, now, on a private stream
    /// that is capturing a graph: what it queues there becomes the node. The
    /// simulator refuses it (foreign libraries do not run there).
    ///
    /// # Safety
    /// 1. `work` only queues work on the stream it is given (no synchronisation,
    ///    no other stream), and that work touches only the buffers in `uses`, each
    ///    with at most the access given, plus memory the foreign library owns.
    /// 2. Whatever the captured work needs when the graph runs (the library's own
    ///    memory, the modules of the kernels it launched) stays alive while the
    ///    graph lives.
    pub unsafe fn foreign(
        &mut self,
        uses: &[(ArgRef<'g>, Access)],
        work: impl FnOnce(RawStream) -> Result<()>,
    ) -> Result<NodeId> {
        if !driver::platform().interop() {
            return Err(Error::Unsupported {
                what: "foreign work in a graph on the simulator".into(),
                reason: "foreign libraries run only on a GPU".into(),
            });
        }
        self.check_uses("foreign work in a graph", uses)?;
        self.stream.bind()?;
        // SAFETY: obligation 1 is the caller's (capture_graph's only one); obligation 2
        // keeps the captured work's code and memory alive for the graph.
        let captured = OwnedGraph(unsafe { driver::capture_graph(work) }?);
        Ok(self.push(Work::Foreign(captured), uses, declared_touches(uses)))
    }

    /// Instantiate the recording: build the CUDA graph with the recorded edges and
    /// make it executable. A failure leaves nothing behind.
    pub fn instantiate(self) -> Result<Graph<'g>> {
        Graph::instantiate(self.id, self.stream, self.nodes)
    }

    pub(crate) fn into_parts(self) -> (u64, Stream, Vec<Node<'g>>) {
        (self.id, self.stream, self.nodes)
    }

    /// # Safety
    /// As [`launch_unchecked`](Self::launch_unchecked); every range of `zero` lies
    /// inside an argument of `uses` that the kernel writes.
    unsafe fn kernel(
        &mut self,
        kernel: &'static KernelHandle,
        config: LaunchConfig,
        params: &[*mut c_void],
        zero: &[(u64, usize)],
        uses: &[(ArgRef<'g>, Access)],
    ) -> Result<NodeId> {
        let func = kernel.function(&self.stream)?.into_owned();
        check_launch(&self.stream, &func, &config)?;
        check_zeroed(kernel.name(), zero, uses)?;
        self.check_uses(&format!("kernel `{}`", kernel.name()), uses)?;
        let layout = param_layout(kernel)?;
        if layout.len() != params.len() {
            return Err(Error::InvalidArgument {
                what: format!("the parameters recorded for kernel `{}`", kernel.name()),
                reason: format!(
                    "the kernel takes {} values but {} were given",
                    layout.len(),
                    params.len()
                ),
            });
        }
        // SAFETY: obligation 1: each pointer is to a value of its parameter's type,
        // whose size `layout` gives.
        let params = unsafe { copy_params(&layout, params) };
        let touches = signature_touches(&layout, &params);
        for &(ptr, bytes) in zero.iter().filter(|z| z.1 > 0) {
            let arg = uses
                .iter()
                .find(|(a, _)| ptr >= a.ptr && ptr + bytes as u64 <= a.ptr + a.bytes as u64)
                .map(|(a, _)| *a)
                .expect("checked by check_zeroed");
            let work = Work::Memset {
                dst: ptr,
                value: 0,
                elem_bytes: 1,
                count: bytes,
            };
            let zeroes = [(arg, Access::Write)];
            let touch = [Touch {
                ptr,
                bytes,
                write: true,
            }];
            self.push(work, &zeroes, touch.to_vec());
        }
        let work = Work::Kernel {
            func,
            config,
            params,
            zero: zero.to_vec(),
        };
        Ok(self.push(work, uses, touches))
    }

    /// The checks every node makes before it is added: each buffer belongs to this
    /// runtime and a resource that tracks streams, and no argument that is written
    /// overlaps another argument of the node.
    fn check_uses(&self, what: &str, uses: &[(ArgRef<'g>, Access)]) -> Result<()> {
        let rt = self.stream.runtime_id();
        for (a, _) in uses {
            if a.core.runtime_id() != rt {
                return Err(Error::WrongRuntime {
                    what: "buffer",
                    found: a.core.runtime_id(),
                    found_device: a.core.id().device,
                    expected: rt,
                    expected_device: self.stream.device_ordinal(),
                });
            }
            a.core.allocator.require_stream_tracking()?;
        }
        for (i, (a, x)) in uses.iter().enumerate() {
            for (j, (b, y)) in uses.iter().enumerate().skip(i + 1) {
                if (x.writes() || y.writes()) && overlaps(a, b) {
                    return Err(Error::InvalidArgument {
                        what: format!("the arguments of {what}"),
                        reason: format!(
                            "buffer argument {} ({:#x}, {} bytes) overlaps buffer argument {} \
                             ({:#x}, {} bytes) and one of them is written; pass disjoint \
                             views (`split_at_mut`) or separate buffers",
                            i + 1,
                            a.ptr,
                            a.bytes,
                            j + 1,
                            b.ptr,
                            b.bytes
                        ),
                    });
                }
            }
        }
        Ok(())
    }

    /// Adds a checked node and its edges; returns its id.
    fn push(&mut self, work: Work, uses: &[(ArgRef<'g>, Access)], touches: Vec<Touch>) -> NodeId {
        let me = self.nodes.len();
        let uses = merge_uses(uses.iter().map(|(a, access)| Use {
            core: a.core,
            access: *access,
        }));
        let mut deps = Vec::new();
        for u in &uses {
            let h = self.history.entry(u.key()).or_default();
            if u.access.writes() {
                if h.reads_since.is_empty() {
                    deps.extend(h.last_write);
                } else {
                    deps.extend_from_slice(&h.reads_since);
                }
                h.last_write = Some(me);
                h.reads_since.clear();
            } else {
                deps.extend(h.last_write);
                h.reads_since.push(me);
            }
        }
        deps.sort_unstable();
        deps.dedup();
        self.nodes.push(Node {
            work,
            uses,
            touches,
            deps,
        });
        NodeId {
            graph: self.id,
            index: me,
        }
    }
}

/// The memset of a fill with `value`: the word, its size in bytes and how many
/// words make one element; `None` for values a memset cannot set (only plain
/// numbers qualify: a struct's padding bytes must never be read).
fn fill_pattern<T: DeviceCopy>(value: &T) -> Option<(u32, u32, usize)> {
    use std::any::Any;
    let v: &dyn Any = value;
    let halves = |x: u64| ((x >> 32) as u32 == x as u32).then_some((x as u32, 4, 2));
    if let Some(&x) = v.downcast_ref::<u8>() {
        Some((x as u32, 1, 1))
    } else if let Some(&x) = v.downcast_ref::<i8>() {
        Some((x as u8 as u32, 1, 1))
    } else if let Some(&x) = v.downcast_ref::<bool>() {
        Some((x as u32, 1, 1))
    } else if let Some(&x) = v.downcast_ref::<u16>() {
        Some((x as u32, 2, 1))
    } else if let Some(&x) = v.downcast_ref::<i16>() {
        Some((x as u16 as u32, 2, 1))
    } else if let Some(&x) = v.downcast_ref::<u32>() {
        Some((x, 4, 1))
    } else if let Some(&x) = v.downcast_ref::<i32>() {
        Some((x as u32, 4, 1))
    } else if let Some(&x) = v.downcast_ref::<f32>() {
        Some((x.to_bits(), 4, 1))
    } else if let Some(&x) = v.downcast_ref::<u64>() {
        halves(x)
    } else if let Some(&x) = v.downcast_ref::<i64>() {
        halves(x as u64)
    } else if let Some(&x) = v.downcast_ref::<f64>() {
        halves(x.to_bits())
    } else {
        None
    }
}

fn overlaps(a: &ArgRef<'_>, b: &ArgRef<'_>) -> bool {
    a.bytes > 0 && b.bytes > 0 && a.ptr < b.ptr + b.bytes as u64 && b.ptr < a.ptr + a.bytes as u64
}

/// Refuses a `zero` range outside every argument that its own access writes.
pub(crate) fn check_zeroed(
    kernel: &str,
    zero: &[(u64, usize)],
    uses: &[(ArgRef<'_>, Access)],
) -> Result<()> {
    for &(ptr, bytes) in zero.iter().filter(|r| r.1 > 0) {
        let end = ptr.checked_add(bytes as u64);
        let inside = uses.iter().any(|(a, access)| {
            access.writes()
                && ptr >= a.ptr
                && end.is_some_and(|end| end <= a.ptr.saturating_add(a.bytes as u64))
        });
        if !inside {
            return Err(Error::InvalidArgument {
                what: format!("the range {ptr:#x}..+{bytes} bytes zeroed before `{kernel}`"),
                reason: "it is not inside an argument the kernel itself writes".into(),
            });
        }
    }
    Ok(())
}

/// What the simulator's detector checks for a copy, fill or foreign node: the
/// declared ranges.
fn declared_touches(uses: &[(ArgRef<'_>, Access)]) -> Vec<Touch> {
    uses.iter()
        .map(|(a, access)| Touch {
            ptr: a.ptr,
            bytes: a.bytes,
            write: access.writes(),
        })
        .collect()
}

/// One entry-point parameter: its size and alignment, and for a slice's address,
/// its kind and element size (the next parameter is its length).
#[derive(Clone, Copy)]
pub(crate) struct Slot {
    size: usize,
    align: usize,
    slice: Option<(ParamKind, usize)>,
}

/// The entry-point parameters `kernel`'s ABI descriptor lists.
fn param_layout(kernel: &KernelHandle) -> Result<Vec<Slot>> {
    let abi = kernel.abi();
    let bad = || Error::InvalidArgument {
        what: format!("kernel `{}`", kernel.name()),
        reason: "its launcher's ABI descriptor cannot be read".into(),
    };
    let header = HeaderAbi::decode(*abi.first().ok_or_else(bad)?);
    let mut slots = Vec::new();
    for p in 0..header.params as usize {
        let (Some(&shape), Some(&layout)) = (abi.get(1 + 2 * p), abi.get(2 + 2 * p)) else {
            return Err(bad());
        };
        let p = ParamAbi::decode(shape, layout);
        match p.kind.ok_or_else(bad)? {
            ParamKind::Scalar => slots.push(Slot {
                size: p.size as usize,
                align: p.align as usize,
                slice: None,
            }),
            kind => {
                slots.push(Slot {
                    size: 8,
                    align: 8,
                    slice: Some((kind, p.size as usize)),
                });
                slots.push(Slot {
                    size: std::mem::size_of::<usize>(),
                    align: std::mem::align_of::<usize>(),
                    slice: None,
                });
            }
        }
    }
    if slots.iter().any(|s| s.align > 16) {
        return Err(Error::Unsupported {
            what: format!("kernel `{}` in a graph", kernel.name()),
            reason: "a scalar parameter is aligned to more than 16 bytes".into(),
        });
    }
    Ok(slots)
}

/// Copies each parameter's value into a [`Params`].
///
/// # Safety
/// 1. `params[i]` points to `layout[i].size` readable bytes.
unsafe fn copy_params(layout: &[Slot], params: &[*mut c_void]) -> Params {
    let mut offsets = Vec::with_capacity(layout.len());
    let mut at = 0usize;
    for s in layout {
        offsets.push(at);
        at += s.size.div_ceil(16).max(1) * 16;
    }
    let mut chunks = vec![Chunk([0; 16]); at / 16];
    let base = chunks.as_mut_ptr() as *mut u8;
    for ((s, &o), &p) in layout.iter().zip(&offsets).zip(params) {
        // SAFETY: obligation 1 for the source; the destination `o..o+size` lies in
        // `chunks` (sized above); the two do not overlap (`chunks` is new).
        unsafe { std::ptr::copy_nonoverlapping(p as *const u8, base.add(o), s.size) };
    }
    Params { chunks, offsets }
}

/// What the kernel's signature touches with these parameter values: each slice
/// `[address, address + length · element size)`, written unless it is `read`.
fn signature_touches(layout: &[Slot], params: &Params) -> Vec<Touch> {
    let ptrs = params.pointers();
    let mut touches = Vec::new();
    for (i, s) in layout.iter().enumerate() {
        if let Some((kind, elem)) = s.slice {
            // SAFETY: slot `i` holds a u64 address and slot `i + 1` a usize length
            // (the layout of a slice), each at a 16-byte aligned offset of the copy.
            let (ptr, len) = unsafe { (*(ptrs[i] as *const u64), *(ptrs[i + 1] as *const usize)) };
            let bytes = len.saturating_mul(elem);
            let write = kind != ParamKind::Read;
            match touches
                .iter_mut()
                .find(|t: &&mut Touch| (t.ptr, t.bytes) == (ptr, bytes))
            {
                Some(t) => t.write |= write,
                None => touches.push(Touch { ptr, bytes, write }),
            }
        }
    }
    touches
}

impl Node<'_> {
    /// Whether `other`'s uses are this node's (same buffers, same accesses).
    pub(crate) fn same_uses(&self, other: &[Use<'_>]) -> bool {
        self.uses.len() == other.len()
            && self.uses.iter().all(|u| {
                other.iter().any(|o| {
                    std::ptr::eq(o.core, u.core as *const BufferCore) && o.access == u.access
                })
            })
    }
}

/// A kernel node's new parameters, checked against `node` by [`Graph`]'s update.
pub(crate) struct KernelUpdate {
    pub(crate) func: Function,
    pub(crate) config: LaunchConfig,
    pub(crate) params: Params,
    pub(crate) touches: Vec<Touch>,
}

/// Builds the update of a kernel node: the checks of a recording, without adding
/// a node.
///
/// # Safety
/// As [`GraphRecorder::launch_unchecked`].
pub(crate) unsafe fn kernel_update<'g>(
    stream: &Stream,
    kernel: &'static KernelHandle,
    config: LaunchConfig,
    params: &[*mut c_void],
    zero: &[(u64, usize)],
    uses: &[(ArgRef<'g>, Access)],
) -> Result<(KernelUpdate, Vec<Use<'g>>)> {
    config.require_one_dimensional(kernel.name())?;
    let func = kernel.function(stream)?.into_owned();
    check_launch(stream, &func, &config)?;
    check_zeroed(kernel.name(), zero, uses)?;
    let probe = GraphRecorder {
        id: 0,
        stream: stream.clone(),
        nodes: Vec::new(),
        history: HashMap::new(),
    };
    probe.check_uses(&format!("kernel `{}`", kernel.name()), uses)?;
    let layout = param_layout(kernel)?;
    if layout.len() != params.len() {
        return Err(Error::InvalidArgument {
            what: format!("the parameters given to kernel `{}`", kernel.name()),
            reason: format!(
                "the kernel takes {} values but {} were given",
                layout.len(),
                params.len()
            ),
        });
    }
    // SAFETY: the caller's obligation 1.
    let params = unsafe { copy_params(&layout, params) };
    let touches = signature_touches(&layout, &params);
    let merged = merge_uses(uses.iter().map(|(a, access)| Use {
        core: a.core,
        access: *access,
    }));
    Ok((
        KernelUpdate {
            func,
            config,
            params,
            touches,
        },
        merged,
    ))
}
