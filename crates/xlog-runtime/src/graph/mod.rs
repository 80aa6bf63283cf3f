//! Graphs: typed launches, copies and fills recorded once and replayed as one
//! operation.
//!
//! # The protocol
//!
//! - **record**: a [`GraphRecorder`] collects nodes without running them: kernels
//!   through their generated `record` functions (the launcher's parameters, with
//!   every buffer borrowed for the graph's lifetime `'g`), device copies and fills,
//!   and, through `unsafe` calls that name what they touch, kernels given raw
//!   parameters and foreign work. Each node keeps its buffers with their
//!   [`Access`]es, merged per buffer.
//! - **edges**: each node depends on the earlier nodes its accesses conflict with,
//!   by the rule of [`Access`] applied to nodes instead of streams: a read after
//!   the buffer's last write (read after write), a write after the reads since the
//!   last write (write after read) or, when there were none, after the last write
//!   (write after write; a write after reads needs no edge to the write before
//!   them, which each read already follows). Two reads get no edge, so
//!   independent launches become parallel branches without any stream named.
//! - **instantiate**: the nodes become a CUDA graph (explicit `cuGraphAdd*Node`
//!   calls with those edges) and an executable graph, a [`Graph`].
//! - **launch**: [`Graph::launch`] is fenced as one operation against work outside
//!   the graph, by the protocol of a launch: every buffer the graph touches is
//!   preflighted with the union of its nodes' accesses (its use state locked, in
//!   address order, and the conflicting points of other streams waited for), the
//!   graph is launched on the stream, and the use is committed at one new point of
//!   that stream, which stands for every node (the stream runs nothing after a
//!   graph launch before all its nodes finish).
//! - **update**: a node's scalars and launch shape change in place
//!   (`cuGraphExecKernelNodeSetParams`) through the kernel's generated `update`
//!   function, given the same buffers with the same accesses; other buffers take a
//!   new recording, which [`Graph::update`] applies to the executable graph
//!   (`cuGraphExecUpdate`, or a fresh instantiation when the topology changed),
//!   its edges and fencing computed from the new buffers.
//!
//! # Buffers stay borrowed
//!
//! A recorder and its graph borrow every buffer they touch, shared, for `'g`:
//! while the graph lives, no buffer it touches can be dropped, moved (exported to
//! DLPack, say) or borrowed mutably, so eager work can read them (fenced against
//! replays like any launch) but not write them. Within one node the borrow
//! checker cannot see a written argument overlapping another argument (both are
//! shared borrows), so recording checks it instead and refuses such a node.
//!
//! ```no_run
//! # use xlog_runtime::*;
//! # fn main() -> Result<()> {
//! let rt = Runtime::get(0)?;
//! let s = rt.stream()?;
//! let mut y = rt.alloc_zeroed::<u32>(4)?;
//! {
//!     let mut rec = GraphRecorder::new(&s);
//!     rec.fill(&y, 1u32)?;
//!     let graph = rec.instantiate()?;
//!     graph.launch(&s)?;
//!     assert_eq!(y.download(&s)?, vec![1; 4]); // a read, fenced against the replay
//! }
//! y.fill(&s, 2)?; // the graph is gone: the buffer is writable again
//! # Ok(()) }
//! ```
//!
//! While the graph lives, a buffer it touches cannot be written eagerly:
//!
//! ```compile_fail,E0502
//! # use xlog_runtime::*;
//! # fn main() -> Result<()> {
//! # let rt = Runtime::get(0)?;
//! # let s = rt.stream()?;
//! let mut y = rt.alloc_zeroed::<u32>(4)?;
//! let mut rec = GraphRecorder::new(&s);
//! rec.fill(&y, 1u32)?;
//! let graph = rec.instantiate()?;
//! y.fill(&s, 2)?; // `y` is borrowed by the graph
//! graph.launch(&s)?;
//! # Ok(()) }
//! ```
//!
//! nor dropped (freed):
//!
//! ```compile_fail,E0505
//! # use xlog_runtime::*;
//! # fn main() -> Result<()> {
//! # let rt = Runtime::get(0)?;
//! # let s = rt.stream()?;
//! let y = rt.alloc_zeroed::<u32>(4)?;
//! let mut rec = GraphRecorder::new(&s);
//! rec.fill(&y, 1u32)?;
//! let graph = rec.instantiate()?;
//! drop(y); // `y` is borrowed by the graph
//! graph.launch(&s)?;
//! # Ok(()) }
//! ```
//!
//! # On the simulator
//!
//! The simulator has no graph objects. A simulated graph keeps its nodes and runs
//! each replay on streams of its own: a node continues the lane of the
//! predecessor it follows directly, or starts a new lane (up to 16; past them, new
//! chains share lanes, which orders them and hides a missing edge between nodes of
//! one lane from the detector), and waits for its other predecessors through
//! events; the lanes wait for the launch stream's point and
//! the launch stream waits for every lane at the end. Independent nodes thus run
//! concurrently, and the hazard detector sees exactly the graph's edges: a node
//! whose kernel touches more than its access list says (only possible through
//! `unsafe`) is reported against the nodes it was not ordered with. Kernels are
//! checked against what their signature touches (their ABI descriptor), not
//! against the list the caller gave.

mod arena;
mod record;
mod replay;

pub use arena::GraphArena;
pub use record::{GraphRecorder, NodeId};
pub use replay::Graph;

use crate::buffer::BufferCore;
use crate::track::Access;

/// One buffer of a node or graph, with its merged access.
#[derive(Clone, Copy)]
pub(crate) struct Use<'g> {
    pub(crate) core: &'g BufferCore,
    pub(crate) access: Access,
}

impl Use<'_> {
    fn key(&self) -> usize {
        self.core as *const BufferCore as usize
    }
}

/// Merges `uses` into one per buffer, keeping the first-seen order.
pub(crate) fn merge_uses<'g>(uses: impl IntoIterator<Item = Use<'g>>) -> Vec<Use<'g>> {
    let mut merged: Vec<Use<'g>> = Vec::new();
    for u in uses {
        match merged.iter_mut().find(|m| m.key() == u.key()) {
            Some(m) => m.access = m.access.merge(u.access),
            None => merged.push(u),
        }
    }
    merged
}
