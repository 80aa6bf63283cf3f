//! [`Communicator`] and [`UniqueId`]: making, waiting on, aborting and dropping
//! communicators.

use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use xlog_device::DeviceCopy;

use super::agree::Ledger;
use super::ffi::{self, RawComm, RawUniqueId, Site};
use super::poll::{self, Waited};
use super::{Group, ReduceOp, Reducible};
use crate::buffer::{ReadBuffer, WriteBuffer};
use crate::driver::{self, Context};
use crate::error::{Error, Result};
use crate::runtime::Runtime;
use crate::sim::{self, SimRank};
use crate::stream::Stream;
use crate::sync::Unpoisoned;

/// How long [`Communicator::init_rank`] waits for its ranks' descriptor exchange,
/// which starts once every rank has joined: a rank that has not answered by then
/// stopped in between.
pub const EXCHANGE_TIMEOUT: Duration = Duration::from_secs(60);

/// The identifier every rank of a communicator is made with
/// ([`Communicator::init_rank`]): made once ([`UniqueId::new`], by one process,
/// usually rank 0) and handed to the others by the application (a file, an
/// environment variable, its own launcher: see [`ProcessEnv`](super::ProcessEnv)).
#[derive(Clone, Copy)]
pub struct UniqueId(pub(crate) RawUniqueId);

impl UniqueId {
    /// How many bytes an id has.
    pub const BYTES: usize = 128;

    /// A fresh id (`ncclGetUniqueId`); NCCL starts listening for the ranks on this
    /// host's network interface. Fails on the simulator, whose communicators are
    /// made with [`Communicator::init_all`] only.
    pub fn new() -> Result<UniqueId> {
        if !crate::driver::platform().nccl() {
            return Err(sim_one_process("UniqueId::new"));
        }
        ffi::unique_id().map(UniqueId)
    }

    /// The id's bytes.
    pub fn to_bytes(&self) -> [u8; Self::BYTES] {
        self.0.internal.map(|c| c as u8)
    }

    /// The id with these bytes (as [`to_bytes`](Self::to_bytes) gave them).
    pub fn from_bytes(bytes: [u8; Self::BYTES]) -> UniqueId {
        UniqueId(RawUniqueId {
            internal: bytes.map(|b| b as std::ffi::c_char),
        })
    }

    /// The id as 256 lowercase hexadecimal digits (for a file or an environment
    /// variable).
    pub fn to_hex(&self) -> String {
        self.to_bytes().iter().map(|b| format!("{b:02x}")).collect()
    }

    /// The id from [`to_hex`](Self::to_hex)'s text (surrounding whitespace
    /// ignored).
    pub fn from_hex(text: &str) -> Result<UniqueId> {
        let text = text.trim();
        let bad = |reason: String| Error::InvalidArgument {
            what: "a NCCL unique id".to_owned(),
            reason,
        };
        if text.len() != 2 * Self::BYTES {
            return Err(bad(format!(
                "expected {} hexadecimal digits, found {} characters",
                2 * Self::BYTES,
                text.len()
            )));
        }
        let mut bytes = [0u8; Self::BYTES];
        for (i, b) in bytes.iter_mut().enumerate() {
            let pair = text.get(2 * i..2 * i + 2).unwrap_or("");
            *b = u8::from_str_radix(pair, 16)
                .map_err(|_| bad(format!("`{pair}` at offset {} is not hexadecimal", 2 * i)))?;
        }
        Ok(UniqueId::from_bytes(bytes))
    }
}

impl fmt::Debug for UniqueId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "UniqueId({}…)", &self.to_hex()[..16])
    }
}

fn sim_one_process(what: &str) -> Error {
    Error::Unsupported {
        what: format!("{what} on the simulator"),
        reason: "simulated communicators live in one process: make them with \
                 Communicator::init_all over XLOG_SIM_DEVICES simulated devices"
            .to_owned(),
    }
}

pub(crate) enum Backend {
    Nccl(RawComm),
    Sim(SimRank),
}

pub(crate) struct State {
    /// Why the communicator refuses work: it failed or was aborted.
    pub(crate) failed: Option<String>,
    /// The NCCL handle was aborted (and must not be destroyed).
    aborted: bool,
}

pub(crate) struct Inner {
    pub(crate) backend: Backend,
    /// Set when made nonblocking ([`Communicator::init_rank_within`], with its
    /// timeout): NCCL calls on it may return before their work is queued, so a
    /// group waits for [`ffi::comm_ready`] before it commits, up to this long.
    pub(crate) queue_timeout: Option<Duration>,
    /// The ledger the communicators made together (one `init_all`) share, where
    /// every group records its operations before queueing them.
    pub(crate) ledger: Option<Arc<Ledger>>,
    pub(crate) rank: u32,
    pub(crate) ranks: u32,
    pub(crate) device: u32,
    ctx: Arc<Context>,
    /// Serialises every call on the communicator (NCCL's are not thread-safe).
    pub(crate) state: Mutex<State>,
}

// SAFETY: the NCCL handle is used only under `state`'s lock (or by `Drop`, which
// has the only reference), with the communicator's context bound first.
unsafe impl Send for Inner {}
// SAFETY: as for Send.
unsafe impl Sync for Inner {}

/// One rank of a NCCL communicator, on one device.
///
/// Made for every device of one process with [`init_all`](Self::init_all), or one
/// per process with [`init_rank`](Self::init_rank). Work goes through a
/// [`Group`] (every part checked and fenced; see the [module docs](super)) or the
/// one-operation shorthands below, which are a group of one: a process that drives
/// several ranks from one thread must put every rank's part of a collective in one
/// group, as NCCL requires.
pub struct Communicator {
    pub(crate) inner: Arc<Inner>,
}

impl fmt::Debug for Communicator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Communicator")
            .field("rank", &self.inner.rank)
            .field("ranks", &self.inner.ranks)
            .field("device", &self.inner.device)
            .finish()
    }
}

impl Communicator {
    /// One communicator per runtime's device, rank `i` on `runtimes[i]`
    /// (`ncclCommInitAll`). The devices must be distinct. On the simulator, a
    /// simulated clique over simulated devices (`XLOG_SIM_DEVICES`).
    pub fn init_all(runtimes: &[Runtime]) -> Result<Vec<Communicator>> {
        if runtimes.is_empty() {
            return Err(Error::InvalidArgument {
                what: "Communicator::init_all".to_owned(),
                reason: "no runtimes given; pass one runtime per device".to_owned(),
            });
        }
        let devices: Vec<u32> = runtimes.iter().map(|rt| rt.device().ordinal()).collect();
        for (i, d) in devices.iter().enumerate() {
            if devices[..i].contains(d) {
                return Err(Error::InvalidArgument {
                    what: "Communicator::init_all".to_owned(),
                    reason: format!(
                        "device {d} is given twice; a communicator has one rank per device"
                    ),
                });
            }
        }
        let ranks = runtimes.len() as u32;
        let backends: Vec<Backend> = if !crate::driver::platform().nccl() {
            sim::clique(ranks).into_iter().map(Backend::Sim).collect()
        } else {
            let list: Vec<i32> = devices.iter().map(|&d| d as i32).collect();
            ffi::comm_init_all(&list)?
                .into_iter()
                .map(Backend::Nccl)
                .collect()
        };
        let ledger = Arc::new(Ledger::new(ranks));
        Ok(backends
            .into_iter()
            .zip(runtimes)
            .enumerate()
            .map(|(rank, (backend, rt))| {
                Communicator::wrap(backend, Some(ledger.clone()), rank as u32, ranks, rt, None)
            })
            .collect())
    }

    /// This process's rank `rank` of `ranks`, on `runtime`'s device
    /// (`ncclCommInitRank`), joined through `id`, which every rank must be given.
    /// Blocks until every rank has joined, however long that takes: prefer
    /// [`init_rank_within`](Self::init_rank_within) where a rank may never start.
    /// Then the ranks check that they agree (see `init_rank_within`): every rank
    /// has joined by then, and the exchange's result is waited for up to
    /// [`EXCHANGE_TIMEOUT`] ([`Error::CommTimeout`], the communicator aborted);
    /// NCCL's own calls on a blocking communicator are not bounded (see the
    /// [module docs](super#failures)).
    pub fn init_rank(
        runtime: &Runtime,
        id: &UniqueId,
        rank: u32,
        ranks: u32,
    ) -> Result<Communicator> {
        let site = Self::rank_site(runtime, rank, ranks, "Communicator::init_rank")?;
        runtime.device().bind()?;
        // SAFETY: the runtime's device context is bound just above.
        let raw = unsafe { ffi::comm_init_rank(&id.0, site) }?;
        let comm = Communicator::wrap(Backend::Nccl(raw), None, rank, ranks, runtime, None);
        comm.check_peers(runtime, EXCHANGE_TIMEOUT)?;
        Ok(comm)
    }

    /// As [`init_rank`](Self::init_rank), but an error instead of a wait without
    /// end: when the other ranks have not all joined within `timeout` (one never
    /// started, or was given another id or number of ranks), the initialisation
    /// is aborted and [`Error::CommInitTimeout`] returned. NCCL's nonblocking
    /// initialisation (`ncclCommInitRankConfig` with `blocking = 0`), polled with
    /// `ncclCommGetAsyncError`; the communicator stays nonblocking, and each
    /// [`Group::launch`] on it returns once NCCL has queued its work, waiting up
    /// to `timeout` for that too: past it the communicator is aborted and the
    /// launch returns [`Error::CommTimeout`].
    ///
    /// Once joined, the ranks exchange a descriptor (an all-gather, waited for up
    /// to `timeout` again) and refuse to go on, on every rank, unless each runs
    /// the same xlog and NCCL versions, all count the same number of ranks and
    /// each holds the rank it joined as. What they issue afterwards is not
    /// checked across processes: see [`check_agreement`](Self::check_agreement).
    pub fn init_rank_within(
        runtime: &Runtime,
        id: &UniqueId,
        rank: u32,
        ranks: u32,
        timeout: Duration,
    ) -> Result<Communicator> {
        let site = Self::rank_site(runtime, rank, ranks, "Communicator::init_rank_within")?;
        runtime.device().bind()?;
        // SAFETY: the runtime's device context is bound just above.
        let raw = unsafe { ffi::comm_init_rank_nonblocking(&id.0, site) }?;
        let give_up = |e: Error| {
            // SAFETY: the handle is live and never used after this; NCCL's abort
            // ends a background initialisation too.
            if let Err(a) = unsafe { ffi::comm_abort(raw, site) } {
                tracing::error!(target: "xlog::nccl", "aborting an initialisation: {a}");
            }
            e
        };
        let joined = poll::until(timeout, 0, Duration::from_millis(1), || {
            runtime.device().bind()?;
            // SAFETY: the handle is live (neither aborted nor destroyed).
            unsafe { ffi::comm_ready(raw, site) }
        })
        .map_err(give_up)?;
        if joined == Waited::TimedOut {
            return Err(give_up(Error::CommInitTimeout {
                rank,
                ranks,
                device: site.device,
                timeout,
            }));
        }
        let comm = Communicator::wrap(
            Backend::Nccl(raw),
            None,
            rank,
            ranks,
            runtime,
            Some(timeout),
        );
        comm.check_peers(runtime, timeout)?;
        Ok(comm)
    }

    /// Checks `init_rank`'s arguments; the rank's site.
    fn rank_site(runtime: &Runtime, rank: u32, ranks: u32, what: &str) -> Result<Site> {
        if rank >= ranks {
            return Err(Error::InvalidArgument {
                what: format!("{what}(rank {rank}, ranks {ranks})"),
                reason: "the rank must be below the number of ranks".to_owned(),
            });
        }
        if !crate::driver::platform().nccl() {
            return Err(sim_one_process(what));
        }
        Ok(Site {
            rank,
            ranks,
            device: runtime.device().ordinal(),
        })
    }

    /// Every rank's descriptor, all-gathered on a stream of `runtime`: refused
    /// (and the communicator aborted) unless the ranks run one xlog and NCCL and
    /// agree on the number of ranks and who is which.
    fn check_peers(&self, runtime: &Runtime, timeout: Duration) -> Result<()> {
        let mine = descriptor(self.inner.rank, self.inner.ranks)?;
        let all = self.all_gather_words(runtime, &mine, timeout)?;
        let n = self.inner.ranks as usize;
        let mut problems = Vec::new();
        for (r, theirs) in all.chunks(DESCRIPTOR_WORDS).enumerate().take(n) {
            problems.extend(disagreement(r as u32, self.inner.ranks, &mine, theirs));
        }
        if problems.is_empty() {
            return Ok(());
        }
        let e = Error::InvalidArgument {
            what: format!(
                "the communicator of rank {} of {} (device {})",
                self.inner.rank, self.inner.ranks, self.inner.device
            ),
            reason: format!(
                "its ranks disagree: {}; start every process with the same build and \
                 NCCL, the same number of ranks and a distinct rank each",
                problems.join("; ")
            ),
        };
        self.inner.abort(e.to_string());
        Err(e)
    }

    /// `words` of every rank, in rank order (an all-gather on a new stream of
    /// `runtime`, waited for up to `timeout`).
    fn all_gather_words(
        &self,
        runtime: &Runtime,
        words: &[u64],
        timeout: Duration,
    ) -> Result<Vec<u64>> {
        let s = runtime.new_stream()?;
        let send = runtime.upload_on(&s, words)?;
        let mut all =
            runtime.alloc_zeroed_on::<u64>(&s, words.len() * self.inner.ranks as usize)?;
        Group::new()
            .all_gather(self, &s, &send, &mut all)
            .launch()?;
        self.wait(&s, timeout)?;
        all.download(&s)
    }

    /// Checks that every rank passed the same `digest` (an all-gather on a new
    /// stream of `runtime`, waited for up to `timeout`): for ranks in different
    /// processes, whose collectives xlog cannot compare, a digest of what each
    /// is about to issue (kinds, counts, element types, roots) turns a
    /// disagreement into an error on every rank instead of a hang or a transfer
    /// by the other side's count. Every rank must call it, as any collective,
    /// each from its own process or thread (it waits for its all-gather, which
    /// needs the others' parts). A disagreement leaves the communicator usable.
    pub fn check_agreement(&self, runtime: &Runtime, digest: u64, timeout: Duration) -> Result<()> {
        let all = self.all_gather_words(runtime, &[digest], timeout)?;
        if all.iter().all(|&d| d == digest) {
            return Ok(());
        }
        let listed: Vec<String> = all
            .iter()
            .enumerate()
            .map(|(r, d)| format!("rank {r}: {d:#018x}"))
            .collect();
        Err(Error::InvalidArgument {
            what: format!(
                "Communicator::check_agreement on rank {} of {}",
                self.inner.rank, self.inner.ranks
            ),
            reason: format!(
                "the ranks passed different digests ({}): they are about to issue \
                 different work",
                listed.join(", ")
            ),
        })
    }

    fn wrap(
        backend: Backend,
        ledger: Option<Arc<Ledger>>,
        rank: u32,
        ranks: u32,
        rt: &Runtime,
        queue_timeout: Option<Duration>,
    ) -> Communicator {
        Communicator {
            inner: Arc::new(Inner {
                backend,
                queue_timeout,
                ledger,
                rank,
                ranks,
                device: rt.device().ordinal(),
                ctx: rt.device().ctx.clone(),
                state: Mutex::new(State {
                    failed: None,
                    aborted: false,
                }),
            }),
        }
    }

    /// This communicator's rank.
    pub fn rank(&self) -> u32 {
        self.inner.rank
    }

    /// How many ranks the communicator has.
    pub fn ranks(&self) -> u32 {
        self.inner.ranks
    }

    /// The device ordinal of this rank.
    pub fn device(&self) -> u32 {
        self.inner.device
    }

    /// Why the communicator refuses work, once it failed or was aborted.
    pub fn failure(&self) -> Option<String> {
        self.inner.state.lock_unpoisoned().failed.clone()
    }

    /// Wait until `stream` has run everything queued on it, polling this
    /// communicator's asynchronous error meanwhile. On an error (a peer died, a
    /// network failure: NCCL's message in [`Error::Nccl`]) or once `timeout` has
    /// passed ([`Error::CommTimeout`]), the communicator is aborted, which ends its
    /// queued work, and the error is returned: never a hang.
    pub fn wait(&self, stream: &Stream, timeout: Duration) -> Result<()> {
        self.inner.check_stream(stream, "Communicator::wait")?;
        let waited = poll::until(timeout, 2_000, Duration::from_micros(200), || {
            stream.bind()?;
            // SAFETY: the stream is live and its context is bound.
            let done = unsafe { driver::stream_query(stream.raw()) }
                .map_err(|e| stream.explain_fault(e))?;
            // Checked also once the stream is done: work of a failed communicator
            // ends without its results.
            if let Err(e) = self.inner.async_error() {
                self.inner.abort(format!("{e}"));
                return Err(e);
            }
            Ok(done)
        })?;
        match waited {
            Waited::Ready => Ok(()),
            Waited::TimedOut => {
                let e = self.inner.timed_out(timeout);
                self.inner.abort(format!("{e}"));
                Err(e)
            }
        }
    }

    /// Abort the communicator now (`ncclCommAbort`): its queued work ends without
    /// finishing, and it refuses further work.
    pub fn abort(&self) {
        self.inner.abort("aborted by the application".to_owned());
    }

    /// `recv = op` over every rank's `send` (a group of one).
    pub fn all_reduce<T: Reducible>(
        &self,
        stream: &Stream,
        send: &(impl ReadBuffer<T> + ?Sized),
        recv: &mut (impl WriteBuffer<T> + ?Sized),
        op: ReduceOp,
    ) -> Result<()> {
        Group::new()
            .all_reduce(self, stream, send, recv, op)
            .launch()
    }

    /// `buf = op` over every rank's `buf` (a group of one).
    pub fn all_reduce_in_place<T: Reducible>(
        &self,
        stream: &Stream,
        buf: &mut (impl WriteBuffer<T> + ?Sized),
        op: ReduceOp,
    ) -> Result<()> {
        Group::new()
            .all_reduce_in_place(self, stream, buf, op)
            .launch()
    }

    /// Every rank's `buf` becomes rank `root`'s (a group of one).
    pub fn broadcast<T: DeviceCopy>(
        &self,
        stream: &Stream,
        buf: &mut (impl WriteBuffer<T> + ?Sized),
        root: u32,
    ) -> Result<()> {
        Group::new().broadcast(self, stream, buf, root).launch()
    }

    /// Send `buf` to rank `peer` (a group of one; the peer receives in its own).
    pub fn send<T: DeviceCopy>(
        &self,
        stream: &Stream,
        buf: &(impl ReadBuffer<T> + ?Sized),
        peer: u32,
    ) -> Result<()> {
        Group::new().send(self, stream, buf, peer).launch()
    }

    /// Receive `buf` from rank `peer` (a group of one).
    pub fn recv<T: DeviceCopy>(
        &self,
        stream: &Stream,
        buf: &mut (impl WriteBuffer<T> + ?Sized),
        peer: u32,
    ) -> Result<()> {
        Group::new().recv(self, stream, buf, peer).launch()
    }
}

/// Words of a rank's descriptor: a tag, xlog's version, NCCL's version, and
/// `ranks << 32 | rank`.
const DESCRIPTOR_WORDS: usize = 4;
/// "xlog rnk" as ASCII: marks a descriptor.
const DESCRIPTOR_TAG: u64 = 0x786c_6f67_2072_6e6b;

/// xlog's version as `major << 40 | minor << 20 | patch`.
fn xlog_version() -> u64 {
    let part = |v: &str| v.parse::<u64>().unwrap_or(0);
    part(env!("CARGO_PKG_VERSION_MAJOR")) << 40
        | part(env!("CARGO_PKG_VERSION_MINOR")) << 20
        | part(env!("CARGO_PKG_VERSION_PATCH"))
}

fn version_text(v: u64) -> String {
    format!("{}.{}.{}", v >> 40, (v >> 20) & 0xf_ffff, v & 0xf_ffff)
}

/// This rank's descriptor.
fn descriptor(rank: u32, ranks: u32) -> Result<[u64; DESCRIPTOR_WORDS]> {
    let nccl = u64::from(ffi::library()?.1);
    Ok([
        DESCRIPTOR_TAG,
        xlog_version(),
        nccl,
        u64::from(ranks) << 32 | u64::from(rank),
    ])
}

/// How rank `r`'s descriptor `theirs` disagrees with this rank's `mine`, in
/// words (nothing when they agree).
fn disagreement(r: u32, ranks: u32, mine: &[u64], theirs: &[u64]) -> Vec<String> {
    let mut out = Vec::new();
    if theirs.len() != DESCRIPTOR_WORDS || theirs[0] != DESCRIPTOR_TAG {
        out.push(format!(
            "rank {r} sent no xlog descriptor (another program or protocol)"
        ));
        return out;
    }
    if theirs[1] != mine[1] {
        out.push(format!(
            "rank {r} runs xlog {}, this rank {}",
            version_text(theirs[1]),
            version_text(mine[1])
        ));
    }
    if theirs[2] != mine[2] {
        out.push(format!(
            "rank {r} runs NCCL {}, this rank {}",
            theirs[2], mine[2]
        ));
    }
    let (their_ranks, their_rank) = ((theirs[3] >> 32) as u32, theirs[3] as u32);
    if their_ranks != ranks {
        out.push(format!(
            "rank {r} counts {their_ranks} ranks, this rank {ranks}"
        ));
    }
    if their_rank != r {
        out.push(format!("the rank at position {r} holds rank {their_rank}"));
    }
    out
}

impl Inner {
    pub(crate) fn site(&self) -> Site {
        Site {
            rank: self.rank,
            ranks: self.ranks,
            device: self.device,
        }
    }

    /// Refuses a stream of another device.
    pub(crate) fn check_stream(&self, stream: &Stream, what: &str) -> Result<()> {
        if stream.device_ordinal() != self.device {
            return Err(Error::InvalidArgument {
                what: format!("{what} on rank {} of {}", self.rank, self.ranks),
                reason: format!(
                    "the stream is on device {} but the communicator's rank is on device {}; \
                     use a stream of the rank's device",
                    stream.device_ordinal(),
                    self.device
                ),
            });
        }
        Ok(())
    }

    /// The communicator's asynchronous error, if it has one.
    fn async_error(&self) -> Result<()> {
        let state = self.state.lock_unpoisoned();
        if let Some(why) = &state.failed {
            return Err(self.failed_error(why));
        }
        match &self.backend {
            Backend::Sim(rank) => match rank.failure() {
                None => Ok(()),
                Some(why) => Err(Error::Nccl {
                    call: "ncclCommGetAsyncError (simulated)",
                    code: 6,
                    message: why,
                    rank: self.rank,
                    ranks: self.ranks,
                    device: self.device,
                }),
            },
            Backend::Nccl(raw) => {
                self.ctx.bind()?;
                // SAFETY: the handle is live (not aborted: `failed` is unset) and
                // used under the lock.
                unsafe { ffi::comm_async_error(*raw, self.site()) }
            }
        }
    }

    pub(crate) fn failed_error(&self, why: &str) -> Error {
        Error::Unsupported {
            what: format!(
                "work on rank {} of {} (device {})",
                self.rank, self.ranks, self.device
            ),
            reason: format!("the communicator failed earlier ({why}); make a new one"),
        }
    }

    /// Mark a communicator whose group failed partway as failed: what was queued
    /// of the group is unknown, so its ranks no longer agree on what comes next.
    pub(crate) fn fail_locked(state: &mut State, why: String) {
        state.failed.get_or_insert(why);
    }

    /// The state, locked, refusing a failed communicator.
    pub(crate) fn usable(&self) -> Result<MutexGuard<'_, State>> {
        let state = self.state.lock_unpoisoned();
        match &state.failed {
            Some(why) => Err(self.failed_error(why)),
            None => Ok(state),
        }
    }

    /// The error of a wait on this communicator that ran past `timeout`.
    pub(crate) fn timed_out(&self, timeout: Duration) -> Error {
        Error::CommTimeout {
            rank: self.rank,
            ranks: self.ranks,
            device: self.device,
            timeout,
        }
    }

    pub(crate) fn abort(&self, why: String) {
        let mut state = self.state.lock_unpoisoned();
        self.abort_locked(&mut state, why);
    }

    /// [`abort`](Self::abort) with the state already locked.
    pub(crate) fn abort_locked(&self, state: &mut State, why: String) {
        state.failed.get_or_insert(why);
        if state.aborted {
            return;
        }
        state.aborted = true;
        match &self.backend {
            Backend::Sim(rank) => rank.abort(),
            Backend::Nccl(raw) => {
                let _ = self.ctx.bind();
                // SAFETY: the handle is live and, `aborted` now being set, never
                // used again.
                if let Err(e) = unsafe { ffi::comm_abort(*raw, self.site()) } {
                    tracing::error!(target: "xlog::nccl", "{e}");
                }
            }
        }
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        let state = self.state.get_mut().unwrap_or_else(|p| p.into_inner());
        if state.aborted {
            return;
        }
        let raw = match &self.backend {
            Backend::Nccl(raw) => *raw,
            // A failed simulated rank ends its clique's waiting work, as
            // `ncclCommAbort` does: its peers' queued parts would wait for it.
            Backend::Sim(rank) => {
                if state.failed.is_some() {
                    rank.abort();
                }
                return;
            }
        };
        let _ = self.ctx.bind();
        // A failed communicator (or one whose peer died) is aborted: destroying it
        // would wait for work that never ends.
        let failed = state.failed.is_some()
            // SAFETY: the handle is live; `Drop` has the only reference.
            || unsafe { ffi::comm_async_error(raw, self.site()) }.is_err();
        // SAFETY: the handle is live and never used after this.
        let r = unsafe {
            if failed {
                ffi::comm_abort(raw, self.site())
            } else {
                ffi::comm_destroy(raw, self.site())
            }
        };
        if let Err(e) = r {
            tracing::error!(target: "xlog::nccl", "dropping a communicator: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn desc(rank: u32, ranks: u32, xlog: u64, nccl: u64) -> Vec<u64> {
        vec![
            DESCRIPTOR_TAG,
            xlog,
            nccl,
            u64::from(ranks) << 32 | u64::from(rank),
        ]
    }

    #[test]
    fn descriptors_that_disagree_name_each_difference() {
        let v = xlog_version();
        let mine = desc(0, 2, v, 22803);
        assert!(disagreement(1, 2, &mine, &desc(1, 2, v, 22803)).is_empty());
        let other = (1 << 40) | (2 << 20) | 3;
        let d = disagreement(1, 2, &mine, &desc(0, 3, other, 22809)).join("; ");
        for part in [
            "rank 1 runs xlog 1.2.3",
            "rank 1 runs NCCL 22809, this rank 22803",
            "rank 1 counts 3 ranks, this rank 2",
            "the rank at position 1 holds rank 0",
        ] {
            assert!(d.contains(part), "`{d}` does not say `{part}`");
        }
        let junk = disagreement(1, 2, &mine, &[0, 0, 0, 0]).join("; ");
        assert!(junk.contains("no xlog descriptor"), "{junk}");
    }
}
