//! [`Graph`]: an instantiated recording, launched as one fenced operation.

use std::ffi::c_void;
use std::sync::{Mutex, MutexGuard};

use super::record::{kernel_update, Node, Work};
use super::{merge_uses, GraphRecorder, NodeId, Use};
use crate::buffer::{ArgRef, BufferCore};
use crate::driver::{
    self, GraphWork, MemsetWord, RawEvent, RawGraph, RawGraphExec, RawGraphNode, RawStream,
};
use crate::error::{Error, Result};
use crate::launch::{plan_waits, KernelHandle, LaunchConfig};
use crate::stream::Stream;
use crate::sync::Unpoisoned;
use crate::track::{Access, UsePoint, UseState};

/// An instantiated graph (see the [module docs](crate::graph)): launch it on any
/// stream of its runtime with [`launch`](Self::launch), as often as needed.
///
/// It borrows every buffer it touches for `'g`; dropping it releases them (the
/// executable graph itself is freed by the driver once launches in flight finish,
/// and each buffer's free waits for the replays recorded in its use state).
pub struct Graph<'g> {
    id: u64,
    stream: Stream,
    nodes: Vec<Node<'g>>,
    /// Every buffer any node touches, with the union of the nodes' accesses, in
    /// address order (the order their states are locked in).
    union: Vec<Use<'g>>,
    backend: Backend,
}

impl std::fmt::Debug for Graph<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Graph")
            .field("nodes", &self.nodes.len())
            .field("buffers", &self.union.len())
            .finish()
    }
}

// SAFETY: the driver handles a graph holds are usable from any thread (each call
// binds the stream's context first); the simulated lanes are behind a mutex; the
// borrowed buffer cores are `Sync`; updates take `&mut self`.
unsafe impl Send for Graph<'_> {}
// SAFETY: as above: `launch` (`&self`) only reads the nodes, and launches the
// executable graph or queues the simulated lanes under a lock of the graph's.
unsafe impl Sync for Graph<'_> {}

enum Backend {
    Gpu(GpuGraph),
    Sim(Mutex<SimGraph>),
}

/// The CUDA objects: the graph the executable one was instantiated from (its node
/// handles name nodes for `cuGraphExecKernelNodeSetParams`), and the executable.
struct GpuGraph {
    graph: RawGraph,
    exec: RawGraphExec,
    handles: Vec<RawGraphNode>,
    /// Held around `cuGraphLaunch`: the driver's graph objects are not internally
    /// synchronised (no two threads may call it on one executable graph at once),
    /// and `launch` takes `&self`. The buffers' use-state locks serialise the
    /// launches of a graph that touches a buffer, but not of one that touches none.
    launching: Mutex<()>,
}

impl Drop for GpuGraph {
    fn drop(&mut self) {
        // SAFETY: both are this graph's own; launches in flight keep running (the
        // driver frees the executable graph when they finish).
        unsafe {
            let _ = driver::graph_exec_destroy(self.exec);
            let _ = driver::graph_destroy(self.graph);
        }
    }
}

/// Builds the CUDA graph of `nodes` with their edges. A failure destroys it.
fn build_graph(nodes: &[Node<'_>]) -> Result<(RawGraph, Vec<RawGraphNode>)> {
    let graph = driver::graph_create()?;
    let mut handles: Vec<RawGraphNode> = Vec::with_capacity(nodes.len());
    for n in nodes {
        let deps: Vec<RawGraphNode> = n.deps.iter().map(|&d| handles[d]).collect();
        let mut ptrs: Vec<*mut c_void>;
        let work = match &n.work {
            Work::Kernel {
                func,
                config,
                params,
                ..
            } => {
                ptrs = params.pointers();
                GraphWork::Kernel {
                    func: func.raw(),
                    grid: config.grid,
                    block: config.block,
                    shared_bytes: config.shared_bytes,
                    params: &mut ptrs,
                }
            }
            Work::Memset { count: 0, .. } | Work::Copy { bytes: 0, .. } => GraphWork::Empty,
            &Work::Memset {
                dst,
                value,
                elem_bytes,
                count,
            } => GraphWork::Memset {
                dst,
                value,
                elem_bytes,
                count,
            },
            &Work::Copy { dst, src, bytes } => GraphWork::Copy { dst, src, bytes },
            Work::Foreign(g) => GraphWork::Child(g.0),
        };
        // SAFETY: `graph` is live and `deps` are its nodes; the caller bound the
        // context of the recording's stream, which the functions and buffers
        // belong to (checked at recording); parameters come from the kernel's
        // descriptor; the buffers are borrowed for as long as the graph lives.
        match unsafe { driver::graph_add(graph, &deps, work) } {
            Ok(h) => handles.push(h),
            Err(e) => {
                // SAFETY: ours, used by nothing else.
                let _ = unsafe { driver::graph_destroy(graph) };
                return Err(e);
            }
        }
    }
    Ok((graph, handles))
}

/// The most streams a simulated graph runs on (each is a worker thread).
const MAX_LANES: usize = 16;

/// A simulated replay's streams and events (see the module docs).
struct SimGraph {
    lanes: Vec<RawStream>,
    lane_of: Vec<usize>,
    /// Recorded after a node whose successor runs on another lane.
    events: Vec<Option<RawEvent>>,
    fork: RawEvent,
    joins: Vec<RawEvent>,
}

// SAFETY: simulated handles are pointers to the simulator's thread-safe objects.
unsafe impl Send for SimGraph {}

impl SimGraph {
    fn new(nodes: &[Node<'_>]) -> Result<SimGraph> {
        let mut lane_of = Vec::with_capacity(nodes.len());
        let mut tails: Vec<usize> = Vec::new();
        let mut needs_event = vec![false; nodes.len()];
        for (i, n) in nodes.iter().enumerate() {
            let lane = match n.deps.iter().find(|&&d| tails[lane_of[d]] == d) {
                Some(&d) => lane_of[d],
                None if tails.len() < MAX_LANES => {
                    tails.push(i);
                    tails.len() - 1
                }
                // Past the cap, new chains share lanes: still a correct order (a
                // lane only adds order), but the detector cannot report a missing
                // edge between two nodes of one lane.
                None => i % MAX_LANES,
            };
            tails[lane] = i;
            lane_of.push(lane);
            for &d in &n.deps {
                if lane_of[d] != lane {
                    needs_event[d] = true;
                }
            }
        }
        let mut sim = SimGraph {
            lanes: Vec::new(),
            lane_of,
            events: Vec::new(),
            fork: driver::event_create_untimed()?,
            joins: Vec::new(),
        };
        // On an error `sim` drops, destroying what was made.
        for _ in 0..tails.len() {
            sim.lanes.push(driver::stream_create()?);
            sim.joins.push(driver::event_create_untimed()?);
        }
        for needs in needs_event {
            sim.events.push(if needs {
                Some(driver::event_create_untimed()?)
            } else {
                None
            });
        }
        Ok(sim)
    }

    /// Queues one replay after the work queued on `s`, and makes `s` wait for it.
    /// On a failure, `queued` tells whether anything was queued before it (the
    /// lanes are then joined into `s` anyway, as far as the driver lets them).
    fn launch(&self, s: RawStream, nodes: &[Node<'_>], queued: &mut bool) -> Result<()> {
        // Every unsafe call below: the lanes and events are this graph's live
        // simulated handles, `s` is the launch stream; each node touches only
        // buffers the graph borrows, fenced against other streams on `s`, which
        // every lane waits for first.
        // SAFETY: as above.
        unsafe { driver::event_record(self.fork, s) }?;
        *queued = true;
        let body = || -> Result<()> {
            for &lane in &self.lanes {
                // SAFETY: as above.
                unsafe { driver::stream_wait_event(lane, self.fork) }?;
            }
            for (i, n) in nodes.iter().enumerate() {
                let lane = self.lanes[self.lane_of[i]];
                for &d in &n.deps {
                    if self.lane_of[d] != self.lane_of[i] {
                        let ev = self.events[d].expect("an event after every node waited for");
                        // SAFETY: as above.
                        unsafe { driver::stream_wait_event(lane, ev) }?;
                    }
                }
                // SAFETY: as above.
                unsafe { run_node(n, lane) }?;
                if let Some(ev) = self.events[i] {
                    // SAFETY: as above.
                    unsafe { driver::event_record(ev, lane) }?;
                }
            }
            Ok(())
        };
        let ran = body();
        let mut joined = Ok(());
        for (&lane, &join) in self.lanes.iter().zip(&self.joins) {
            // SAFETY: as above.
            let j = unsafe { driver::event_record(join, lane) }
                .and_then(|()| unsafe { driver::stream_wait_event(s, join) });
            if joined.is_ok() {
                joined = j;
            }
        }
        ran.and(joined)
    }
}

impl Drop for SimGraph {
    fn drop(&mut self) {
        // SAFETY: the handles are this graph's own; destroying a lane runs what was
        // queued on it first.
        unsafe {
            for &l in &self.lanes {
                let _ = driver::stream_destroy(l);
            }
            for &e in self.joins.iter().chain(self.events.iter().flatten()) {
                let _ = driver::event_destroy(e);
            }
            let _ = driver::event_destroy(self.fork);
        }
    }
}

/// Queues node `n`'s work on simulated stream `lane`.
///
/// # Safety
/// 1. `lane` is a live simulated stream; the node's buffers are live and fenced.
unsafe fn run_node(n: &Node<'_>, lane: RawStream) -> Result<()> {
    match &n.work {
        Work::Kernel {
            func,
            config,
            params,
            ..
        } => {
            let mut ptrs = params.pointers();
            // SAFETY: obligation 1; the parameters match the kernel's descriptor and
            // `touches` is what its signature touches.
            unsafe {
                driver::launch_kernel(
                    func.raw(),
                    config.grid,
                    config.block,
                    config.shared_bytes,
                    lane,
                    &mut ptrs,
                    &n.touches,
                )
            }
        }
        Work::Memset { count: 0, .. } | Work::Copy { bytes: 0, .. } => Ok(()),
        &Work::Memset {
            dst,
            value,
            elem_bytes,
            count,
        } => {
            // SAFETY: obligation 1; the range was recorded from a live buffer.
            unsafe {
                match elem_bytes {
                    1 => driver::memset_d8_async(dst, value as u8, count, lane),
                    2 => {
                        driver::memset_words_async(dst, MemsetWord::W16(value as u16), count, lane)
                    }
                    _ => driver::memset_words_async(dst, MemsetWord::W32(value), count, lane),
                }
            }
        }
        // SAFETY: obligation 1; both ranges were recorded from live buffers and do
        // not overlap (checked at recording).
        &Work::Copy { dst, src, bytes } => unsafe {
            driver::memcpy_dtod_async(dst, src, bytes, lane)
        },
        Work::Foreign(_) => unreachable!("refused at recording on the simulator"),
    }
}

impl<'g> Graph<'g> {
    pub(crate) fn instantiate(id: u64, stream: Stream, nodes: Vec<Node<'g>>) -> Result<Graph<'g>> {
        let backend = make_backend(&stream, &nodes)?;
        Ok(Graph {
            id,
            union: union_of(&nodes),
            stream,
            nodes,
            backend,
        })
    }

    /// Number of nodes.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether the graph has no nodes.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// Number of distinct buffers the graph touches (what each launch fences).
    pub fn buffer_count(&self) -> usize {
        self.union.len()
    }

    /// The nodes `node` waits for (its edges), in recording order.
    pub fn dependencies(&self, node: NodeId) -> &[usize] {
        match self.nodes.get(node.index) {
            Some(n) if node.graph == self.id => &n.deps,
            _ => &[],
        }
    }

    /// Launch the graph on `stream`, fenced as one operation: every buffer it
    /// touches is preflighted with the union of the nodes' accesses (the stream
    /// waits for the conflicting work of other streams), the graph is launched,
    /// and the use is committed at one new point of `stream`, which later work on
    /// other streams waits for.
    ///
    /// Errors before anything is queued: a stream of another runtime or device.
    pub fn launch(&self, stream: &Stream) -> Result<()> {
        if stream.runtime_id() != self.stream.runtime_id() {
            return Err(Error::WrongRuntime {
                what: "graph",
                found: self.stream.runtime_id(),
                found_device: self.stream.device_ordinal(),
                expected: stream.runtime_id(),
                expected_device: stream.device_ordinal(),
            });
        }
        stream.bind()?;
        crate::testing::fault_point!(Launch, "cuGraphLaunch");
        let mut states: Vec<MutexGuard<'_, UseState<Stream>>> = self
            .union
            .iter()
            .map(|u| u.core.track.lock_unpoisoned())
            .collect();
        let mut waits: smallvec::SmallVec<[UsePoint<Stream>; 4]> = smallvec::SmallVec::new();
        for (u, state) in self.union.iter().zip(&states) {
            plan_waits(&mut waits, state, u.access, stream);
        }
        for w in &waits {
            stream.wait_for(w)?;
        }
        let commit = |states: &mut [MutexGuard<'_, UseState<Stream>>]| {
            let epoch = stream.publish_epoch();
            for (u, state) in self.union.iter().zip(states.iter_mut()) {
                let planned = state.version();
                state.commit(u.access, stream, epoch, planned);
            }
        };
        let mut queued = false;
        let launched = match &self.backend {
            Backend::Gpu(g) => {
                let _one_at_a_time = g.launching.lock_unpoisoned();
                // SAFETY: the executable graph is live, of the stream's context (same
                // runtime, bound above), and no other thread is launching it (the
                // lock); every buffer it touches was fenced on `stream` just above
                // and is borrowed for as long as the graph lives.
                unsafe { driver::graph_launch(g.exec, stream.raw()) }
            }
            Backend::Sim(sim) => {
                sim.lock_unpoisoned()
                    .launch(stream.raw(), &self.nodes, &mut queued)
            }
        };
        match launched {
            Ok(()) => {
                commit(&mut states);
                Ok(())
            }
            Err(e) => {
                if queued {
                    // Part of the replay is in flight: record the use.
                    commit(&mut states);
                }
                drop(states);
                Err(stream
                    .explain_fault(e)
                    .while_(|| "launching a graph".into()))
            }
        }
    }

    /// What generated `update` functions call: new parameters (scalars, launch
    /// shape, views of the same buffers) for kernel node `node`, which must run the
    /// same kernel with the same buffers and accesses.
    ///
    /// # Safety
    /// As [`GraphRecorder::launch_unchecked`]; `#[xlog_kernel]` upholds it.
    #[doc(hidden)]
    pub unsafe fn __update_typed(
        &mut self,
        node: NodeId,
        kernel: &'static KernelHandle,
        config: LaunchConfig,
        params: &[*mut c_void],
        zero: &[(u64, usize)],
        uses: &[(ArgRef<'g>, Access)],
    ) -> Result<()> {
        let refused = |reason: String| Error::InvalidArgument {
            what: format!(
                "an update of graph node {} (kernel `{}`)",
                node.index,
                kernel.name()
            ),
            reason,
        };
        let Some(n) = self.nodes.get(node.index).filter(|_| node.graph == self.id) else {
            return Err(refused("the node is not one of this graph's".into()));
        };
        // SAFETY: the caller's obligations.
        let (update, merged) =
            unsafe { kernel_update(&self.stream, kernel, config, params, zero, uses) }?;
        let Work::Kernel {
            func, zero: zeroed, ..
        } = &n.work
        else {
            return Err(refused("the node is not a kernel".into()));
        };
        if func.raw() != update.func.raw() {
            return Err(refused(format!("the node runs `{}`", func.name())));
        }
        if !n.same_uses(&merged) || zeroed.as_slice() != zero {
            return Err(refused(
                "it names other buffers or accesses than the node; record the graph again \
                 and apply it with `Graph::update`"
                    .into(),
            ));
        }
        if let Backend::Gpu(g) = &self.backend {
            let mut ptrs = update.params.pointers();
            self.stream.bind()?;
            // SAFETY: the node is a kernel node of the graph `exec` came from, running
            // the same function; the parameters match its descriptor.
            unsafe {
                driver::graph_exec_set_kernel(
                    g.exec,
                    g.handles[node.index],
                    update.func.raw(),
                    update.config.grid,
                    update.config.block,
                    update.config.shared_bytes,
                    &mut ptrs,
                )
            }?;
        }
        let n = &mut self.nodes[node.index];
        n.touches = update.touches;
        n.work = Work::Kernel {
            func: update.func,
            config: update.config,
            params: update.params,
            zero: zero.to_vec(),
        };
        Ok(())
    }

    /// Point the graph at the buffers of a new recording, applied to the
    /// executable graph in place when the topology is the same
    /// (`cuGraphExecUpdate`: node kinds, kernels and edges in the same order), or
    /// by a fresh instantiation otherwise. The new graph's edges and its fencing
    /// come from the new recording's buffers; this graph's borrows end.
    ///
    /// Node ids of the new recording name the new graph's nodes.
    pub fn update<'h>(self, recording: GraphRecorder<'h>) -> Result<Graph<'h>> {
        let (id, stream, nodes) = recording.into_parts();
        if stream.runtime_id() != self.stream.runtime_id() {
            return Graph::instantiate(id, stream, nodes);
        }
        let backend = match self.backend {
            Backend::Gpu(old) => {
                stream.bind()?;
                let (graph, handles) = build_graph(&nodes)?;
                // SAFETY: both are live graphs of the bound context.
                let updated = unsafe { driver::graph_exec_update(old.exec, graph) };
                // SAFETY: built above, used by nothing else after this.
                let destroy = |g| unsafe {
                    let _ = driver::graph_destroy(g);
                };
                match updated {
                    // The executable graph's nodes still pair with `old.graph`'s.
                    Ok(true) => {
                        destroy(graph);
                        Backend::Gpu(old)
                    }
                    Ok(false) => {
                        drop(old);
                        // SAFETY: `graph` is live, of the bound context.
                        match unsafe { driver::graph_instantiate(graph) } {
                            Ok(exec) => Backend::Gpu(GpuGraph {
                                graph,
                                exec,
                                handles,
                                launching: Mutex::new(()),
                            }),
                            Err(e) => {
                                destroy(graph);
                                return Err(e);
                            }
                        }
                    }
                    Err(e) => {
                        destroy(graph);
                        return Err(e);
                    }
                }
            }
            Backend::Sim(_) => make_backend(&stream, &nodes)?,
        };
        Ok(Graph {
            id,
            union: union_of(&nodes),
            stream,
            nodes,
            backend,
        })
    }
}

fn make_backend(stream: &Stream, nodes: &[Node<'_>]) -> Result<Backend> {
    if !driver::platform().has_graphs() {
        return Ok(Backend::Sim(Mutex::new(SimGraph::new(nodes)?)));
    }
    stream.bind()?;
    let (graph, handles) = build_graph(nodes)?;
    // SAFETY: `graph` is live, of the bound context.
    match unsafe { driver::graph_instantiate(graph) } {
        Ok(exec) => Ok(Backend::Gpu(GpuGraph {
            graph,
            exec,
            handles,
            launching: Mutex::new(()),
        })),
        Err(e) => {
            // SAFETY: ours, used by nothing else.
            let _ = unsafe { driver::graph_destroy(graph) };
            Err(e)
        }
    }
}

/// Every buffer of `nodes` with the union of their accesses, in address order.
fn union_of<'g>(nodes: &[Node<'g>]) -> Vec<Use<'g>> {
    let mut union = merge_uses(nodes.iter().flat_map(|n| n.uses.iter().copied()));
    union.sort_by_key(|u| u.core as *const BufferCore as usize);
    union
}
