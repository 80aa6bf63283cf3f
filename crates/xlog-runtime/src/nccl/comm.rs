//! [`Communicator`] and [`UniqueId`]: making, waiting on, aborting and dropping
//! communicators.

use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use xlog_device::DeviceCopy;

use super::agree::Ledger;
use super::ffi::{self, RawComm, RawUniqueId, Site};
use super::{Group, ReduceOp, Reducible};
use crate::buffer::{ReadBuffer, WriteBuffer};
use crate::driver::{self, Context};
use crate::error::{Error, Result};
use crate::runtime::Runtime;
use crate::sim::{self, SimRank};
use crate::stream::Stream;
use crate::sync::Unpoisoned;

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
                Communicator::wrap(backend, Some(ledger.clone()), rank as u32, ranks, rt)
            })
            .collect())
    }

    /// This process's rank `rank` of `ranks`, on `runtime`'s device
    /// (`ncclCommInitRank`), joined through `id`, which every rank must be given.
    /// Blocks until every rank has joined.
    pub fn init_rank(
        runtime: &Runtime,
        id: &UniqueId,
        rank: u32,
        ranks: u32,
    ) -> Result<Communicator> {
        if rank >= ranks {
            return Err(Error::InvalidArgument {
                what: format!("Communicator::init_rank(rank {rank}, ranks {ranks})"),
                reason: "the rank must be below the number of ranks".to_owned(),
            });
        }
        if !crate::driver::platform().nccl() {
            return Err(sim_one_process("Communicator::init_rank"));
        }
        let device = runtime.device().ordinal();
        runtime.device().bind()?;
        let site = Site {
            rank,
            ranks,
            device,
        };
        // SAFETY: the runtime's device context is bound just above.
        let raw = unsafe { ffi::comm_init_rank(&id.0, site) }?;
        Ok(Communicator::wrap(
            Backend::Nccl(raw),
            None,
            rank,
            ranks,
            runtime,
        ))
    }

    fn wrap(
        backend: Backend,
        ledger: Option<Arc<Ledger>>,
        rank: u32,
        ranks: u32,
        rt: &Runtime,
    ) -> Communicator {
        Communicator {
            inner: Arc::new(Inner {
                backend,
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
        let start = Instant::now();
        let mut spins = 0u32;
        loop {
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
            if done {
                return Ok(());
            }
            if start.elapsed() >= timeout {
                let e = Error::CommTimeout {
                    rank: self.inner.rank,
                    ranks: self.inner.ranks,
                    device: self.inner.device,
                    timeout,
                };
                self.inner.abort(format!("{e}"));
                return Err(e);
            }
            // Spin briefly (short collectives end in microseconds), then sleep.
            spins += 1;
            if spins < 2_000 {
                std::thread::yield_now();
            } else {
                std::thread::sleep(Duration::from_micros(200));
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

    pub(crate) fn abort(&self, why: String) {
        let mut state = self.state.lock_unpoisoned();
        self.abort_locked(&mut state, why);
    }

    fn abort_locked(&self, state: &mut State, why: String) {
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
        let Backend::Nccl(raw) = self.backend else {
            return;
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
