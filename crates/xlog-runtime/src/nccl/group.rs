//! [`Group`]: collectives and transfers of one or more ranks, checked, fenced and
//! queued together.

use std::sync::MutexGuard;
use std::time::Duration;

use xlog_device::DeviceCopy;

use super::agree::{self, Ledger};
use super::comm::{Backend, Communicator, Inner, State};
use super::ffi::{self, DataType, Op};
use super::poll::{self, Waited};
use super::{reduce_as, ReduceOp, Reducible};
use crate::buffer::{ArgRef, ReadBuffer, WriteBuffer};
use crate::error::{Error, Result};
use crate::launch::{Preflighted, WorkRecorder};
use crate::sim::{Collective, Kind, Reducer, SimOp};
use crate::stream::Stream;
use crate::track::Access;

/// One rank's part: its communicator, stream, buffers and operations.
struct Part<'a> {
    comm: &'a Communicator,
    stream: &'a Stream,
    uses: Vec<(ArgRef<'a>, Access)>,
    ops: Vec<Op>,
    sim: Vec<SimOp>,
}

/// Collectives and transfers queued together, between one `ncclGroupStart` and
/// `ncclGroupEnd` (NCCL's group semantics: one thread may drive several ranks, and
/// a rank's sends and receives in one group do not wait on each other).
///
/// Each call records one rank's part; the first invalid argument (a length that
/// does not fit, a root or peer out of range) is kept and returned by
/// [`launch`](Self::launch) before anything is queued. `launch` then checks every
/// part (the stream is on the rank's device, every buffer is of the stream's
/// runtime, the communicator has not failed, and each operation agrees with what
/// the other ranks of an `init_all` communicator issued at its position, in this
/// group or another thread's), plans each part's cross-stream waits, and only
/// then queues: the waits, the NCCL calls, and the commit of every
/// part's buffer uses.
///
/// ```no_run
/// # use xlog_runtime::{nccl::{Communicator, Group}, Runtime, DeviceBuffer, Stream};
/// # fn f(comms: &[Communicator], s: &[Stream], a: &[DeviceBuffer<u32>], b: &mut [DeviceBuffer<u32>]) -> xlog_runtime::Result<()> {
/// let [b0, b1] = b else { unreachable!() };
/// Group::new()
///     .all_to_all(&comms[0], &s[0], &a[0], b0)
///     .all_to_all(&comms[1], &s[1], &a[1], b1)
///     .launch()?;
/// # Ok(()) }
/// ```
#[must_use = "a group does nothing until it is launched"]
#[derive(Default)]
pub struct Group<'a> {
    parts: Vec<Part<'a>>,
    error: Option<Error>,
}

fn too_short(what: &str, reason: String) -> Error {
    Error::InvalidArgument {
        what: what.to_owned(),
        reason,
    }
}

fn bytes<T>(len: usize) -> usize {
    len * std::mem::size_of::<T>()
}

impl<'a> Group<'a> {
    /// An empty group.
    pub fn new() -> Self {
        Group::default()
    }

    fn push(
        mut self,
        comm: &'a Communicator,
        stream: &'a Stream,
        uses: Vec<(ArgRef<'a>, Access)>,
        ops: Vec<(Op, SimOp)>,
    ) -> Self {
        let (ops, sim) = ops.into_iter().unzip();
        self.parts.push(Part {
            comm,
            stream,
            uses,
            ops,
            sim,
        });
        self
    }

    fn refuse(mut self, e: Error) -> Self {
        self.error.get_or_insert(e);
        self
    }

    fn check_rank(mut self, comm: &Communicator, what: &str, role: &str, r: u32) -> Self {
        if r >= comm.ranks() {
            let why = format!(
                "{role} {r} is not a rank of a communicator of {} ranks",
                comm.ranks()
            );
            self.error.get_or_insert(too_short(what, why));
        }
        self
    }

    fn reduction<T: Reducible>(
        kind: Kind,
        send: u64,
        recv: u64,
        count: usize,
        op: ReduceOp,
    ) -> (Op, SimOp) {
        let (dtype, raw) = (T::__DTYPE, op.raw());
        let nccl = match kind {
            Kind::AllReduce => Op::AllReduce {
                send,
                recv,
                count,
                dtype,
                op: raw,
            },
            Kind::Reduce { root } => Op::Reduce {
                send,
                recv,
                count,
                dtype,
                op: raw,
                root,
            },
            _ => Op::ReduceScatter {
                send,
                recv,
                recv_count: count,
                dtype,
                op: raw,
            },
        };
        let reduce: Reducer = reduce_as::<T>;
        let sim = SimOp::Collective(Collective {
            kind,
            send,
            recv,
            count,
            elem: std::mem::size_of::<T>(),
            op: raw,
            reduce: Some(reduce),
        });
        (nccl, sim)
    }

    /// `recv = op` over every rank's `send`; `send` and `recv` have one length.
    pub fn all_reduce<T: Reducible>(
        self,
        comm: &'a Communicator,
        stream: &'a Stream,
        send: &'a (impl ReadBuffer<T> + ?Sized),
        recv: &'a mut (impl WriteBuffer<T> + ?Sized),
        op: ReduceOp,
    ) -> Self {
        let (s, r) = (send.arg(), recv.arg_mut());
        if s.len != r.len {
            let why = format!("send has {} elements but recv has {}", s.len, r.len);
            return self.refuse(too_short("all_reduce", why));
        }
        let ops = nonempty(s.len, || {
            Self::reduction::<T>(Kind::AllReduce, s.ptr, r.ptr, s.len, op)
        });
        self.push(
            comm,
            stream,
            vec![(s, Access::Read), (r, Access::Write)],
            ops,
        )
    }

    /// `buf = op` over every rank's `buf`.
    pub fn all_reduce_in_place<T: Reducible>(
        self,
        comm: &'a Communicator,
        stream: &'a Stream,
        buf: &'a mut (impl WriteBuffer<T> + ?Sized),
        op: ReduceOp,
    ) -> Self {
        let b = buf.arg_mut();
        let ops = nonempty(b.len, || {
            Self::reduction::<T>(Kind::AllReduce, b.ptr, b.ptr, b.len, op)
        });
        self.push(comm, stream, vec![(b, Access::ReadWrite)], ops)
    }

    /// Rank `root`'s `recv = op` over every rank's `send` (every rank passes a
    /// `recv` of `send`'s length; only the root's is written, but each is recorded
    /// as written).
    pub fn reduce<T: Reducible>(
        self,
        comm: &'a Communicator,
        stream: &'a Stream,
        send: &'a (impl ReadBuffer<T> + ?Sized),
        recv: &'a mut (impl WriteBuffer<T> + ?Sized),
        op: ReduceOp,
        root: u32,
    ) -> Self {
        let this = self.check_rank(comm, "reduce", "root", root);
        let (s, r) = (send.arg(), recv.arg_mut());
        if s.len != r.len {
            let why = format!("send has {} elements but recv has {}", s.len, r.len);
            return this.refuse(too_short("reduce", why));
        }
        let ops = nonempty(s.len, || {
            Self::reduction::<T>(Kind::Reduce { root }, s.ptr, r.ptr, s.len, op)
        });
        this.push(
            comm,
            stream,
            vec![(s, Access::Read), (r, Access::Write)],
            ops,
        )
    }

    /// Every rank's `buf` becomes rank `root`'s (in place: the root's is read,
    /// every other rank's written).
    pub fn broadcast<T: DeviceCopy>(
        self,
        comm: &'a Communicator,
        stream: &'a Stream,
        buf: &'a mut (impl WriteBuffer<T> + ?Sized),
        root: u32,
    ) -> Self {
        let this = self.check_rank(comm, "broadcast", "root", root);
        let b = buf.arg_mut();
        let n = bytes::<T>(b.len);
        let ops = nonempty(n, || {
            let nccl = Op::Broadcast {
                send: b.ptr,
                recv: b.ptr,
                count: n,
                dtype: DataType::U8,
                root,
            };
            (nccl, moving(Kind::Broadcast { root }, b.ptr, b.ptr, n))
        });
        let access = if comm.rank() == root {
            Access::Read
        } else {
            Access::Write
        };
        this.push(comm, stream, vec![(b, access)], ops)
    }

    /// `recv` is every rank's `send`, in rank order: `recv` holds `ranks` times
    /// `send`'s length.
    pub fn all_gather<T: DeviceCopy>(
        self,
        comm: &'a Communicator,
        stream: &'a Stream,
        send: &'a (impl ReadBuffer<T> + ?Sized),
        recv: &'a mut (impl WriteBuffer<T> + ?Sized),
    ) -> Self {
        let (s, r) = (send.arg(), recv.arg_mut());
        let want = s.len.checked_mul(comm.ranks() as usize);
        if want != Some(r.len) {
            let why = format!(
                "recv has {} elements but must hold {} ranks × {} sent",
                r.len,
                comm.ranks(),
                s.len
            );
            return self.refuse(too_short("all_gather", why));
        }
        let n = bytes::<T>(s.len);
        let ops = nonempty(n, || {
            let nccl = Op::AllGather {
                send: s.ptr,
                recv: r.ptr,
                send_count: n,
                dtype: DataType::U8,
            };
            (nccl, moving(Kind::AllGather, s.ptr, r.ptr, n))
        });
        self.push(
            comm,
            stream,
            vec![(s, Access::Read), (r, Access::Write)],
            ops,
        )
    }

    /// `recv` is this rank's block of `op` over every rank's `send`: `send` holds
    /// `ranks` times `recv`'s length, block `i` going to rank `i`.
    pub fn reduce_scatter<T: Reducible>(
        self,
        comm: &'a Communicator,
        stream: &'a Stream,
        send: &'a (impl ReadBuffer<T> + ?Sized),
        recv: &'a mut (impl WriteBuffer<T> + ?Sized),
        op: ReduceOp,
    ) -> Self {
        let (s, r) = (send.arg(), recv.arg_mut());
        if r.len.checked_mul(comm.ranks() as usize) != Some(s.len) {
            let why = format!(
                "send has {} elements but must hold {} ranks × {} received",
                s.len,
                comm.ranks(),
                r.len
            );
            return self.refuse(too_short("reduce_scatter", why));
        }
        let ops = nonempty(r.len, || {
            Self::reduction::<T>(Kind::ReduceScatter, s.ptr, r.ptr, r.len, op)
        });
        self.push(
            comm,
            stream,
            vec![(s, Access::Read), (r, Access::Write)],
            ops,
        )
    }

    /// Block `i` of `send` goes to rank `i`, and block `j` of `recv` comes from
    /// rank `j`: both have one length, a multiple of the number of ranks (a send
    /// and a receive per peer, in this rank's part of the group).
    pub fn all_to_all<T: DeviceCopy>(
        self,
        comm: &'a Communicator,
        stream: &'a Stream,
        send: &'a (impl ReadBuffer<T> + ?Sized),
        recv: &'a mut (impl WriteBuffer<T> + ?Sized),
    ) -> Self {
        let (s, r) = (send.arg(), recv.arg_mut());
        let ranks = comm.ranks() as usize;
        if s.len != r.len || s.len % ranks != 0 {
            let why = format!(
                "send has {} elements and recv {}; both must have one length, a multiple of \
                 the {ranks} ranks",
                s.len, r.len
            );
            return self.refuse(too_short("all_to_all", why));
        }
        let block = bytes::<T>(s.len / ranks);
        let mut ops = Vec::new();
        if block > 0 {
            for peer in 0..ranks as u32 {
                let off = peer as u64 * block as u64;
                ops.push(send_op(s.ptr + off, block, peer));
                ops.push(recv_op(r.ptr + off, block, peer));
            }
        }
        self.push(
            comm,
            stream,
            vec![(s, Access::Read), (r, Access::Write)],
            ops,
        )
    }

    /// Send `buf` to rank `peer`, which receives it with [`recv`](Self::recv) of
    /// the same length.
    pub fn send<T: DeviceCopy>(
        self,
        comm: &'a Communicator,
        stream: &'a Stream,
        buf: &'a (impl ReadBuffer<T> + ?Sized),
        peer: u32,
    ) -> Self {
        let this = self.check_rank(comm, "send", "peer", peer);
        let b = buf.arg();
        let n = bytes::<T>(b.len);
        let ops = nonempty(n, || send_op(b.ptr, n, peer));
        this.push(comm, stream, vec![(b, Access::Read)], ops)
    }

    /// Receive `buf` from rank `peer`, which sends one of the same length.
    pub fn recv<T: DeviceCopy>(
        self,
        comm: &'a Communicator,
        stream: &'a Stream,
        buf: &'a mut (impl WriteBuffer<T> + ?Sized),
        peer: u32,
    ) -> Self {
        let this = self.check_rank(comm, "recv", "peer", peer);
        let b = buf.arg_mut();
        let n = bytes::<T>(b.len);
        let ops = nonempty(n, || recv_op(b.ptr, n, peer));
        this.push(comm, stream, vec![(b, Access::Write)], ops)
    }

    /// Check every part, then queue and commit them all (see [`Group`]). A
    /// refusal leaves nothing queued and no buffer's state changed.
    pub fn launch(self) -> Result<()> {
        if let Some(e) = self.error {
            return Err(e);
        }
        // Check and plan every part before anything is queued.
        let mut planned: Vec<(Part<'a>, WorkRecorder<'a, Preflighted>)> = Vec::new();
        for part in self.parts {
            let what = "a collective";
            part.comm.inner.check_stream(part.stream, what)?;
            let mut rec = WorkRecorder::new(part.stream);
            for &(arg, access) in &part.uses {
                rec = rec.__record(arg, access);
            }
            let pre = rec.preflight()?;
            planned.push((part, pre));
        }
        // Lock each communicator once, in address order (two groups sharing
        // communicators never wait on each other in a cycle).
        let mut comms: Vec<&Inner> = planned.iter().map(|(p, _)| &*p.comm.inner).collect();
        comms.sort_by_key(|c| *c as *const Inner as usize);
        comms.dedup_by_key(|c| *c as *const Inner as usize);
        let mut guards: Vec<MutexGuard<'_, State>> = Vec::with_capacity(comms.len());
        for c in &comms {
            guards.push(c.usable()?);
        }
        // With every communicator locked, the ledgers see each rank's operations
        // in the order they are queued.
        let mut ledgers: Vec<(&Ledger, Vec<(u32, agree::Entry)>)> = Vec::new();
        for (part, _) in &planned {
            let Some(ledger) = part.comm.inner.ledger.as_deref() else {
                continue;
            };
            let at = match ledgers.iter().position(|(l, _)| std::ptr::eq(*l, ledger)) {
                Some(at) => at,
                None => {
                    ledgers.push((ledger, Vec::new()));
                    ledgers.len() - 1
                }
            };
            let rank = part.comm.rank();
            ledgers[at]
                .1
                .extend(part.ops.iter().map(|op| (rank, agree::entry(op))));
        }
        agree::record(ledgers)?;
        let queued = planned
            .iter()
            .try_for_each(|(_, pre)| pre.queue_waits())
            .and_then(|()| {
                if !crate::driver::platform().nccl() {
                    queue_simulated(&planned)
                } else {
                    queue_nccl(&planned)
                }
            });
        if let Err(e) = &queued {
            // A nonblocking communicator may still be queueing what NCCL accepted
            // after the commit below records its fence, and one whose queueing
            // timed out is stuck: both are aborted, which ends their work, so
            // nothing of it outlives what the commit recorded.
            let timed_out = matches!(e, Error::CommTimeout { .. });
            for (comm, state) in comms.iter().zip(&mut guards) {
                let why = format!("a group failed partway: {e}");
                if timed_out || comm.queue_timeout.is_some() {
                    comm.abort_locked(state, why);
                } else {
                    Inner::fail_locked(state, why);
                }
            }
        }
        // Commit every part, also after a failure partway (part of the group may
        // be queued): frees and other streams then still wait for it.
        for (_, pre) in planned {
            let _ = pre.commit_queued();
        }
        drop(guards);
        queued
    }
}

/// The operations of a part with `n` elements or bytes: none when `n` is zero
/// (NCCL may refuse the null address of an empty buffer; every rank passes the
/// same length, so every rank skips it).
fn nonempty(n: usize, op: impl FnOnce() -> (Op, SimOp)) -> Vec<(Op, SimOp)> {
    if n == 0 {
        Vec::new()
    } else {
        vec![op()]
    }
}

fn moving(kind: Kind, send: u64, recv: u64, bytes: usize) -> SimOp {
    SimOp::Collective(Collective {
        kind,
        send,
        recv,
        count: bytes,
        elem: 1,
        op: 0,
        reduce: None,
    })
}

fn send_op(ptr: u64, bytes: usize, peer: u32) -> (Op, SimOp) {
    let nccl = Op::Send {
        send: ptr,
        count: bytes,
        dtype: DataType::U8,
        peer,
    };
    (nccl, SimOp::Send { ptr, bytes, peer })
}

fn recv_op(ptr: u64, bytes: usize, peer: u32) -> (Op, SimOp) {
    let nccl = Op::Recv {
        recv: ptr,
        count: bytes,
        dtype: DataType::U8,
        peer,
    };
    (nccl, SimOp::Recv { ptr, bytes, peer })
}

/// Queue every part's NCCL calls in one NCCL group.
fn queue_nccl(planned: &[(Part<'_>, WorkRecorder<'_, Preflighted>)]) -> Result<()> {
    ffi::group_start()?;
    let mut first: Option<Error> = None;
    'parts: for (part, _) in planned {
        let Backend::Nccl(raw) = part.comm.inner.backend else {
            continue;
        };
        if let Err(e) = part.stream.bind() {
            first = Some(e);
            break;
        }
        let (stream, site) = (part.stream.raw().cast(), part.comm.inner.site());
        for op in &part.ops {
            // SAFETY: the communicator is live and locked (not failed: checked
            // under the lock); the stream is of its device, bound; every address
            // is of a buffer recorded with this access by the part's recorder,
            // fenced on the stream by `queue_waits`, and stays allocated until
            // the stream has run the group (the commit that follows records the
            // use, so frees wait for it).
            if let Err(e) = unsafe { ffi::enqueue(raw, op, stream, site) } {
                first = Some(e);
                break 'parts;
            }
        }
    }
    let site = planned
        .first()
        .map(|(p, _)| p.comm.inner.site())
        .unwrap_or(ffi::Site {
            rank: 0,
            ranks: 0,
            device: 0,
        });
    let ended = ffi::group_end(site);
    match first {
        Some(e) => Err(e),
        None => ended.and_then(|()| queued_by_nccl(planned)),
    }
}

/// Waits until NCCL has queued the group's work on every nonblocking
/// communicator of it (`ncclGroupEnd` may return `ncclInProgress` there, with
/// the work still being set up), so the commit that follows records work that
/// is on its streams; up to the communicator's timeout, past which the launch
/// aborts it ([`Error::CommTimeout`]).
fn queued_by_nccl(planned: &[(Part<'_>, WorkRecorder<'_, Preflighted>)]) -> Result<()> {
    for (i, (part, _)) in planned.iter().enumerate() {
        let inner = &*part.comm.inner;
        let seen = planned[..i]
            .iter()
            .any(|(p, _)| std::ptr::eq(&*p.comm.inner, inner));
        let Backend::Nccl(raw) = inner.backend else {
            continue;
        };
        let Some(timeout) = inner.queue_timeout else {
            continue;
        };
        if seen {
            continue;
        }
        // SAFETY: the communicator is live and locked by the caller.
        let queued = poll::until(timeout, 1_000, Duration::from_micros(100), || unsafe {
            ffi::comm_ready(raw, inner.site())
        })?;
        if queued == Waited::TimedOut {
            return Err(inner.timed_out(timeout));
        }
    }
    Ok(())
}

/// Queue every rank's part on its stream as one simulated operation per stream
/// and communicator (so a rank's sends and receives in the group run together).
fn queue_simulated(planned: &[(Part<'_>, WorkRecorder<'_, Preflighted>)]) -> Result<()> {
    let mut done = vec![false; planned.len()];
    for i in 0..planned.len() {
        if done[i] {
            continue;
        }
        let (part, _) = &planned[i];
        let Backend::Sim(rank) = &part.comm.inner.backend else {
            continue;
        };
        let mut ops = Vec::new();
        let mut touches = Vec::new();
        for (j, (other, pre)) in planned.iter().enumerate().skip(i) {
            if other.stream == part.stream && std::ptr::eq(&*other.comm.inner, &*part.comm.inner) {
                done[j] = true;
                ops.extend(other.sim.iter().copied());
                touches.extend_from_slice(pre.touches());
            }
        }
        if ops.is_empty() {
            continue;
        }
        // SAFETY: as in `queue_nccl`: every address is of a buffer recorded by the
        // part's recorder (its ranges are `touches`), fenced on the stream.
        unsafe { rank.enqueue(ops, part.stream.raw(), &touches) }?;
        crate::testing::fault_point!(SimCommQueue, "queueing a group's part (simulated)");
    }
    Ok(())
}
