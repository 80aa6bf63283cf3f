//! Simulated communicators: the collectives and point-to-point transfers of a
//! clique of simulated devices, run by their streams' workers.
//!
//! A clique is the set of ranks one `Communicator::init_all` made. Each rank's
//! operations run on its own stream's worker, in the stream's order, as on a GPU:
//!
//! - a **collective** is matched with the other ranks' collective of the same
//!   sequence number (the order each rank issued them in, as NCCL matches them).
//!   Every rank waits until all have arrived, computes its result from the others'
//!   send buffers, waits until every rank has computed (so an in-place result is
//!   never read half-written), then writes its receive buffer;
//! - a **send** is posted for its peer at the start of its group and the group
//!   ends only once the peer has taken it; a **receive** takes the oldest message
//!   from its peer, so a group's sends and receives never wait on each other;
//! - ranks that disagree (another operation, count, type, operator or root) fail
//!   the clique: its communicators report the mismatch as their asynchronous
//!   error, and every rank's waiting work ends without writing;
//! - an abort ends every rank's waiting work the same way.
//!
//! The hazard detector sees each rank's group as one operation on its stream that
//! reads the rank's send buffers and writes its receive buffers: the contract the
//! typed API fences.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Condvar, Mutex};

use super::exec;
use super::hazard::Touch;
use crate::error::Result;
use crate::handle::RawStream;
use crate::sync::{wait_unpoisoned, Unpoisoned};

/// Combines `count` elements at `x` into the elements at `acc` with the operator
/// `op` (NCCL's numbering: sum 0, product 1, max 2, min 3).
pub(crate) type Reducer = unsafe fn(acc: *mut u8, x: *const u8, count: usize, op: i32);

/// What a collective does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    AllReduce,
    Reduce { root: u32 },
    Broadcast { root: u32 },
    AllGather,
    ReduceScatter,
}

/// One rank's part of a collective. `count` is in elements of `elem` bytes: the
/// send buffer's for `AllGather`, the receive buffer's for `ReduceScatter`, both
/// buffers' otherwise.
#[derive(Clone, Copy)]
pub(crate) struct Collective {
    pub(crate) kind: Kind,
    pub(crate) send: u64,
    pub(crate) recv: u64,
    pub(crate) count: usize,
    pub(crate) elem: usize,
    pub(crate) op: i32,
    pub(crate) reduce: Option<Reducer>,
}

impl Collective {
    fn agrees(&self, other: &Collective) -> bool {
        (self.kind, self.count, self.elem, self.op)
            == (other.kind, other.count, other.elem, other.op)
    }
}

/// One operation of a rank's group.
#[derive(Clone, Copy)]
pub(crate) enum SimOp {
    Collective(Collective),
    Send { ptr: u64, bytes: usize, peer: u32 },
    Recv { ptr: u64, bytes: usize, peer: u32 },
}

#[derive(Default)]
struct Round {
    posted: Vec<Option<Collective>>,
    computed: u32,
    written: u32,
}

struct Message {
    ptr: u64,
    bytes: usize,
    taken: bool,
}

#[derive(Default)]
struct State {
    rounds: HashMap<u64, Round>,
    mail: HashMap<(u32, u32), VecDeque<u64>>,
    messages: HashMap<u64, Message>,
    next_message: u64,
    /// Set when the clique failed (mismatch) or was aborted: waiting work ends.
    stopped: bool,
    /// Why the clique failed, reported as every rank's asynchronous error.
    failure: Option<String>,
}

/// The shared state of one clique of simulated ranks.
pub(crate) struct SimClique {
    ranks: u32,
    state: Mutex<State>,
    changed: Condvar,
}

/// One rank of a clique, held by its communicator.
pub(crate) struct SimRank {
    pub(crate) clique: Arc<SimClique>,
    pub(crate) rank: u32,
    next_seq: std::sync::atomic::AtomicU64,
}

/// A clique of `ranks` simulated ranks.
pub(crate) fn clique(ranks: u32) -> Vec<SimRank> {
    let clique = Arc::new(SimClique {
        ranks,
        state: Mutex::default(),
        changed: Condvar::new(),
    });
    (0..ranks)
        .map(|rank| SimRank {
            clique: clique.clone(),
            rank,
            next_seq: Default::default(),
        })
        .collect()
}

impl SimRank {
    /// The clique's failure, if any (the asynchronous error of a communicator).
    pub(crate) fn failure(&self) -> Option<String> {
        self.clique.state.lock_unpoisoned().failure.clone()
    }

    /// End every rank's waiting work (`ncclCommAbort`).
    pub(crate) fn abort(&self) {
        let mut st = self.clique.state.lock_unpoisoned();
        st.stopped = true;
        if st.failure.is_none() {
            st.failure = Some("a rank aborted the communicator".to_owned());
        }
        self.clique.changed.notify_all();
    }

    /// Queue `ops` (this rank's part of one group) on `s` as one operation that
    /// touches `touches`. Sequence numbers are drawn now, in issue order.
    ///
    /// # Safety
    /// 1. `s` is a live simulated stream; every address of `ops` is simulated
    ///    device memory valid for its bytes, fenced on `s` as `touches` says, and
    ///    allocated until `s` has run the group.
    pub(crate) unsafe fn enqueue(
        &self,
        ops: Vec<SimOp>,
        s: RawStream,
        touches: &[Touch],
    ) -> Result<()> {
        let numbered: Vec<(u64, SimOp)> = ops
            .into_iter()
            .map(|op| {
                let seq = match op {
                    SimOp::Collective(_) => self
                        .next_seq
                        .fetch_add(1, std::sync::atomic::Ordering::Relaxed),
                    _ => 0,
                };
                (seq, op)
            })
            .collect();
        let (clique, rank) = (self.clique.clone(), self.rank);
        let run = move || clique.run(rank, &numbered);
        // SAFETY: obligation 1.
        unsafe { exec::enqueue("ncclGroupEnd", s, "collective", touches, run) }
    }
}

impl SimClique {
    fn fail(&self, st: &mut State, why: String) {
        st.stopped = true;
        st.failure.get_or_insert(why);
        self.changed.notify_all();
    }

    /// Waits while `blocked` holds; `None` when the clique stopped meanwhile.
    fn wait_while<'g>(
        &self,
        mut st: std::sync::MutexGuard<'g, State>,
        mut blocked: impl FnMut(&State) -> bool,
    ) -> Option<std::sync::MutexGuard<'g, State>> {
        while !st.stopped && blocked(&st) {
            st = wait_unpoisoned(&self.changed, st);
        }
        (!st.stopped).then_some(st)
    }

    /// One rank's group, on its stream's worker.
    fn run(&self, rank: u32, ops: &[(u64, SimOp)]) {
        let mut st = self.state.lock_unpoisoned();
        let mut mine = Vec::new();
        for (_, op) in ops {
            if let SimOp::Send { ptr, bytes, peer } = *op {
                let id = st.next_message;
                st.next_message += 1;
                st.messages.insert(
                    id,
                    Message {
                        ptr,
                        bytes,
                        taken: false,
                    },
                );
                st.mail.entry((rank, peer)).or_default().push_back(id);
                mine.push(id);
            }
        }
        self.changed.notify_all();
        for &(seq, op) in ops {
            st = match op {
                SimOp::Send { .. } => st,
                SimOp::Recv { ptr, bytes, peer } => {
                    match self.receive(st, rank, peer, ptr, bytes) {
                        Some(st) => st,
                        None => return,
                    }
                }
                SimOp::Collective(c) => match self.collective(st, rank, seq, c) {
                    Some(st) => st,
                    None => return,
                },
            };
        }
        let Some(mut st) = self.wait_while(st, |st| mine.iter().any(|id| !st.messages[id].taken))
        else {
            return;
        };
        for id in mine {
            st.messages.remove(&id);
        }
    }

    fn receive<'g>(
        &self,
        st: std::sync::MutexGuard<'g, State>,
        rank: u32,
        peer: u32,
        ptr: u64,
        bytes: usize,
    ) -> Option<std::sync::MutexGuard<'g, State>> {
        let key = (peer, rank);
        let mut st = self.wait_while(st, |st| st.mail.get(&key).is_none_or(|q| q.is_empty()))?;
        let id = st.mail.get_mut(&key)?.pop_front()?;
        let msg = &st.messages[&id];
        if msg.bytes != bytes {
            let why = format!(
                "rank {rank} receives {bytes} bytes from rank {peer}, which sends {}",
                msg.bytes
            );
            self.fail(&mut st, why);
            return None;
        }
        // SAFETY: the sender's buffer is valid for `bytes` and unchanged until the
        // message is taken (its group waits for that); the receive buffer is valid
        // and fenced on this stream (`SimRank::enqueue`'s obligation); they are
        // distinct allocations or the same bytes (a send to oneself).
        unsafe { std::ptr::copy(msg.ptr as *const u8, ptr as *mut u8, bytes) };
        if let Some(m) = st.messages.get_mut(&id) {
            m.taken = true;
        }
        self.changed.notify_all();
        Some(st)
    }

    fn collective<'g>(
        &self,
        mut st: std::sync::MutexGuard<'g, State>,
        rank: u32,
        seq: u64,
        c: Collective,
    ) -> Option<std::sync::MutexGuard<'g, State>> {
        let ranks = self.ranks;
        {
            let round = st.rounds.entry(seq).or_default();
            if round.posted.is_empty() {
                round.posted = vec![None; ranks as usize];
            }
            round.posted[rank as usize] = Some(c);
        }
        self.changed.notify_all();
        let mut st =
            self.wait_while(st, |st| st.rounds[&seq].posted.iter().any(Option::is_none))?;
        let posted: Vec<Collective> = st.rounds[&seq].posted.iter().flatten().copied().collect();
        if let Some(other) = posted.iter().position(|p| !p.agrees(&c)) {
            let why = format!(
                "collective #{seq}: rank {rank} issued {:?} of {} elements, rank {other} {:?} of {}",
                c.kind, c.count, posted[other].kind, posted[other].count
            );
            self.fail(&mut st, why);
            return None;
        }
        // SAFETY: every rank's buffers are valid for their counts and unchanged
        // until every rank has computed (the wait below); see `compute`.
        let out = unsafe { compute(&posted, rank as usize, &c) };
        let round = st.rounds.get_mut(&seq)?;
        round.computed += 1;
        self.changed.notify_all();
        let mut st = self.wait_while(st, |st| st.rounds[&seq].computed < ranks)?;
        if let Some(out) = out {
            // SAFETY: the receive buffer is valid for `out.len()` bytes and fenced
            // on this stream; every rank has read what it needs.
            unsafe { std::ptr::copy_nonoverlapping(out.as_ptr(), c.recv as *mut u8, out.len()) };
        }
        let round = st.rounds.get_mut(&seq)?;
        round.written += 1;
        if round.written == ranks {
            st.rounds.remove(&seq);
        }
        Some(st)
    }
}

/// Rank `me`'s result of the collective every rank posted in `all` (`None`: it
/// writes nothing).
///
/// # Safety
/// Every posted send buffer is valid for reading its bytes.
unsafe fn compute(all: &[Collective], me: usize, c: &Collective) -> Option<Vec<u8>> {
    let bytes = c.count * c.elem;
    // SAFETY: the caller's obligation.
    let read = |p: &Collective, len: usize| unsafe {
        std::slice::from_raw_parts(p.send as *const u8, len).to_vec()
    };
    let reduce_all = |len: usize| {
        let mut acc = read(&all[0], len);
        for p in &all[1..] {
            let x = read(p, len);
            if let Some(f) = c.reduce {
                // SAFETY: both buffers hold `len / elem` elements of the type
                // `reduce` was made for.
                unsafe { f(acc.as_mut_ptr(), x.as_ptr(), len / c.elem.max(1), c.op) };
            }
        }
        acc
    };
    match c.kind {
        Kind::AllReduce => Some(reduce_all(bytes)),
        Kind::Reduce { root } => (root as usize == me).then(|| reduce_all(bytes)),
        Kind::Broadcast { root } => Some(read(&all[root as usize], bytes)),
        Kind::AllGather => Some(all.iter().flat_map(|p| read(p, bytes)).collect()),
        Kind::ReduceScatter => {
            let full = reduce_all(bytes * all.len());
            Some(full[me * bytes..(me + 1) * bytes].to_vec())
        }
    }
}
