//! [`WorkRecorder`]: record → preflight → enqueue + commit, as types.
//!
//! ```no_run
//! # use xlog_runtime::*;
//! # fn main() -> Result<()> {
//! # let rt = Runtime::get(0)?;
//! # let module = rt.load_ptx("m", "")?;
//! let f = module.function("scale")?;
//! let s = rt.stream()?;
//! let x = rt.upload(&[1.0f32; 1024])?;
//! let mut y = rt.alloc_zeroed::<f32>(1024)?;
//! let (xp, yp, n) = (x.device_ptr(), y.device_ptr(), 1024u64);
//! let pre = WorkRecorder::new(&s).read(&x).write(&mut y).preflight()?;
//! let mut params = [&xp as *const u64 as *mut _, &yp as *const u64 as *mut _, &n as *const u64 as *mut _];
//! // SAFETY: `scale(const float*, float*, u64)` takes exactly these three values.
//! unsafe { pre.launch(&f, LaunchConfig::for_len(1024), &mut params)? };
//! # Ok(()) }
//! ```
//!
//! Recording after preflight, or launching without preflight, does not compile:
//!
//! ```compile_fail
//! # use xlog_runtime::*;
//! # fn f(s: &Stream, x: &DeviceBuffer<f32>) -> Result<()> {
//! let pre = WorkRecorder::new(s).preflight()?;
//! pre.read(x); // no `read` on a preflighted recorder
//! # Ok(()) }
//! ```
//!
//! ```compile_fail
//! # use xlog_runtime::*;
//! # fn f(s: &Stream, func: &Function) -> Result<()> {
//! let rec = WorkRecorder::new(s);
//! // SAFETY: none needed, this does not compile.
//! unsafe { rec.launch(func, LaunchConfig::for_len(1), &mut [])? };
//! # Ok(()) }
//! ```

use std::ffi::c_void;
use std::marker::PhantomData;
use std::panic::{self, AssertUnwindSafe};
use std::sync::MutexGuard;

use xlog_device::DeviceCopy;

use crate::buffer::{ArgRef, BufferCore, ForeignBuffer, ReadBuffer, WriteBuffer};
use crate::driver::{self, RawStream};
use crate::error::{Error, Result};
use crate::launch::{Function, LaunchConfig};
use crate::sim::Touch;
use crate::stream::Stream;
use crate::sync::Unpoisoned;
use crate::track::{dedup_by_key, keep_newest, Access, UsePoint, UseState};

/// Typestate: buffers are being recorded.
#[derive(Debug)]
pub struct Recording;

/// Typestate: checked, waits planned, nothing queued yet (after
/// [`WorkRecorder::preflight`]).
#[derive(Debug)]
pub struct Preflighted;

/// Proof that work was enqueued and committed.
#[derive(Debug, Clone, Copy)]
#[must_use]
pub struct Committed {
    /// The epoch the work published on its stream.
    pub epoch: u64,
}

/// One buffer of the work: its core (views of one buffer share it, so the core's
/// address is the buffer's identity), the merged access, and the use-state version
/// preflight saw. Generated launchers build an array of them on the stack for
/// [`launch_typed`].
#[doc(hidden)]
#[derive(Clone, Copy)]
pub struct BufferUse<'a> {
    core: &'a BufferCore,
    access: Access,
    planned: u64,
    /// The recorded range (a view may cover part of the buffer).
    ptr: u64,
    bytes: usize,
}

impl<'a> BufferUse<'a> {
    /// A use of the buffer behind `arg` with `access`.
    #[inline(always)]
    pub fn new(arg: ArgRef<'a>, access: Access) -> Self {
        BufferUse {
            core: arg.core,
            access,
            planned: 0,
            ptr: arg.ptr,
            bytes: arg.bytes,
        }
    }

    /// The recorded range and the access this use declares for it.
    #[inline(always)]
    pub(crate) fn range(&self) -> (u64, usize, Access) {
        (self.ptr, self.bytes, self.access)
    }
}

/// How many buffers a recording holds without allocating.
const INLINE: usize = 4;

/// The buffers of one piece of work: inline up to [`INLINE`], so recording an
/// ordinary kernel allocates nothing; more spill to the heap. It has no `Drop`
/// impl, so a recorder's borrows end at its last use, as with a `Vec`.
enum Entries<'a> {
    Empty,
    Inline([BufferUse<'a>; INLINE], usize),
    Heap(Vec<BufferUse<'a>>),
}

impl<'a> Entries<'a> {
    #[inline(always)]
    fn push(&mut self, entry: BufferUse<'a>) {
        match self {
            Entries::Empty => *self = Entries::Inline([entry; INLINE], 1),
            Entries::Inline(inline, len) if *len < INLINE => {
                inline[*len] = entry;
                *len += 1;
            }
            Entries::Inline(inline, _) => {
                let mut heap = inline.to_vec();
                heap.push(entry);
                *self = Entries::Heap(heap);
            }
            Entries::Heap(heap) => heap.push(entry),
        }
    }

    fn as_slice(&self) -> &[BufferUse<'a>] {
        match self {
            Entries::Empty => &[],
            Entries::Inline(inline, len) => &inline[..*len],
            Entries::Heap(heap) => heap,
        }
    }

    fn as_mut_slice(&mut self) -> &mut [BufferUse<'a>] {
        match self {
            Entries::Empty => &mut [],
            Entries::Inline(inline, len) => &mut inline[..*len],
            Entries::Heap(heap) => heap,
        }
    }

    fn truncate(&mut self, n: usize) {
        match self {
            Entries::Empty => {}
            Entries::Inline(_, len) => *len = (*len).min(n),
            Entries::Heap(heap) => heap.truncate(n),
        }
    }
}

/// Records the buffers one piece of stream work touches (a kernel launch, a copy,
/// a fill: every tracked operation goes through it), then fences and commits it.
///
/// Strict: untracked memory, buffers of another runtime and resource stacks that
/// cannot order frees are refused at [`preflight`](WorkRecorder::preflight),
/// before anything is queued.
#[must_use = "a recorder does nothing until it is preflighted and launched"]
pub struct WorkRecorder<'a, S = Recording> {
    stream: &'a Stream,
    entries: Entries<'a>,
    waits: Vec<UsePoint<crate::stream::Stream>>,
    /// The recorded ranges the platform asked for at preflight
    /// ([`Platform::record_accesses`](crate::driver::Platform::record_accesses)):
    /// the simulator's hazard detector checks them when the work is queued.
    touches: Vec<Touch>,
    /// The first refusal while recording (boxed: the recorder moves at every step).
    error: Option<Box<Error>>,
    skip_untracked: bool,
    _state: PhantomData<S>,
}

impl<'a> WorkRecorder<'a, Recording> {
    /// Start recording work to run on `stream`.
    #[inline(always)]
    pub fn new(stream: &'a Stream) -> Self {
        WorkRecorder {
            stream,
            entries: Entries::Empty,
            waits: Vec::new(),
            touches: Vec::new(),
            error: None,
            skip_untracked: false,
            _state: PhantomData,
        }
    }

    // Inlined so the recorder is built in place: moved by value through each call,
    // its inline entries would be copied at every step.
    #[inline(always)]
    fn push(mut self, arg: ArgRef<'a>, access: Access) -> Self {
        self.entries.push(BufferUse::new(arg, access));
        self
    }

    /// Record a read of `buf`.
    #[inline(always)]
    pub fn read<T: DeviceCopy>(self, buf: &'a (impl ReadBuffer<T> + ?Sized)) -> Self {
        self.push(buf.arg(), Access::Read)
    }

    /// Record an overwrite of `buf`.
    #[inline(always)]
    pub fn write<T: DeviceCopy>(self, buf: &'a mut (impl WriteBuffer<T> + ?Sized)) -> Self {
        let arg = buf.arg_mut();
        self.push(arg, Access::Write)
    }

    /// Record a read-modify-write of `buf`.
    #[inline(always)]
    pub fn read_write<T: DeviceCopy>(self, buf: &'a mut (impl WriteBuffer<T> + ?Sized)) -> Self {
        let arg = buf.arg_mut();
        self.push(arg, Access::ReadWrite)
    }

    /// Record an already-taken argument with an access (what generated launchers use).
    #[doc(hidden)]
    #[inline(always)]
    pub fn __record(self, arg: ArgRef<'a>, access: Access) -> Self {
        self.push(arg, access)
    }

    /// Record foreign memory. Refused at preflight unless
    /// [`skip_untracked`](Self::skip_untracked) was called.
    pub fn foreign<T: DeviceCopy>(mut self, buf: &ForeignBuffer<T>) -> Self {
        if self.error.is_some() {
            return self;
        }
        if buf.device() != self.stream.device_ordinal() {
            self.error = Some(Box::new(Error::InvalidArgument {
                what: format!("foreign buffer at {:#x}", buf.device_ptr()),
                reason: format!(
                    "it is on device {} but the work runs on device {}",
                    buf.device(),
                    self.stream.device_ordinal()
                ),
            }));
        } else if !self.skip_untracked {
            self.error = Some(Box::new(Error::Untracked {
                what: format!(
                    "foreign buffer at {:#x} ({} elements)",
                    buf.device_ptr(),
                    buf.len()
                ),
            }));
        } else {
            self.waits.push(buf.ready().clone());
        }
        self
    }

    /// Accept foreign memory without tracking it.
    ///
    /// # Safety
    /// 1. Every foreign buffer recorded is ordered before this work on the launch
    ///    stream by the caller (an event wait or a synchronisation), and nothing
    ///    else (another stream, the host, another device) touches it while the
    ///    work runs.
    pub unsafe fn skip_untracked(mut self) -> Self {
        self.skip_untracked = true;
        if matches!(self.error.as_deref(), Some(Error::Untracked { .. })) {
            self.error = None;
        }
        self
    }

    /// Check everything that can fail and plan the cross-stream waits. Nothing is
    /// queued: a refusal leaves no state behind.
    pub fn preflight(mut self) -> Result<WorkRecorder<'a, Preflighted>> {
        let mut waits = self.check_buffers()?;
        for entry in self.entries.as_mut_slice() {
            let state = entry.core.track.lock_unpoisoned();
            entry.planned = state.version();
            plan_waits(&mut waits, &state, entry.access, self.stream);
        }
        Ok(WorkRecorder {
            stream: self.stream,
            entries: self.entries,
            waits,
            touches: self.touches,
            error: None,
            skip_untracked: self.skip_untracked,
            _state: PhantomData,
        })
    }

    /// The checks of [`preflight`](Self::preflight) that need no buffer's state:
    /// the first recording error, then [`check_uses`]. Returns the waits foreign
    /// buffers need.
    fn check_buffers(&mut self) -> Result<Vec<UsePoint<Stream>>> {
        if let Some(e) = self.error.take() {
            return Err(*e);
        }
        let distinct = check_uses(self.stream, self.entries.as_mut_slice(), &mut self.touches)?;
        self.entries.truncate(distinct);
        let mut waits: Vec<UsePoint<Stream>> = Vec::new();
        // The ready points of foreign buffers accepted with `skip_untracked`.
        if crate::testing::fencing_enabled() {
            for p in self.waits.drain(..) {
                if p.stream != *self.stream {
                    keep_newest(&mut waits, &p.stream, p.epoch);
                }
            }
        }
        Ok(waits)
    }
}

/// The checks every tracked launch makes before it reads any buffer's state: each
/// buffer belongs to `stream`'s runtime and to a resource that tracks streams.
/// Collapses `uses` to one per buffer with the merged access, at the front (returns
/// how many), after handing them, as listed, to the platform
/// ([`Platform::record_accesses`](crate::driver::Platform::record_accesses)), which
/// fills `touches` for the work's enqueue (the simulator's hazard detector; the GPU
/// leaves it empty).
fn check_uses(
    stream: &Stream,
    uses: &mut [BufferUse<'_>],
    touches: &mut Vec<Touch>,
) -> Result<usize> {
    driver::platform().record_accesses(uses, touches);
    let distinct = dedup_by_key(uses, |e| e.core as *const BufferCore, |e| &mut e.access);
    let rt = stream.runtime_id();
    for u in &uses[..distinct] {
        let core = u.core;
        if core.runtime_id() != rt {
            return Err(wrong_runtime(stream, core));
        }
        core.allocator.require_stream_tracking()?;
    }
    Ok(distinct)
}

#[cold]
#[inline(never)]
fn wrong_runtime(stream: &Stream, core: &BufferCore) -> Error {
    Error::WrongRuntime {
        what: "buffer",
        found: core.runtime_id(),
        found_device: core.id().device,
        expected: stream.runtime_id(),
        expected_device: stream.device_ordinal(),
    }
}

/// Refuses a `zero` range that does not lie inside the recorded range of a use
/// whose own access writes. Checked on the uses as the launcher listed them,
/// before uses of one buffer merge into their strongest access.
fn check_zeroed(func: &Function, zero: &[(u64, usize)], uses: &[BufferUse<'_>]) -> Result<()> {
    for &(ptr, bytes) in zero.iter().filter(|r| r.1 > 0) {
        let end = ptr.checked_add(bytes as u64);
        let inside = uses.iter().any(|u| {
            u.access.writes()
                && ptr >= u.ptr
                && end.is_some_and(|end| end <= u.ptr.saturating_add(u.bytes as u64))
        });
        if !inside {
            return Err(zero_outside_writes(func, ptr, bytes));
        }
    }
    Ok(())
}

#[cold]
#[inline(never)]
fn zero_outside_writes(func: &Function, ptr: u64, bytes: usize) -> Error {
    Error::InvalidArgument {
        what: format!("the range {ptr:#x}..+{bytes} bytes zeroed before `{}`", func.name()),
        reason: "it is not inside an argument the launch itself writes; zero only a buffer or mutable view passed with a writing access".to_owned(),
    }
}

/// What generated launchers call: check, plan, launch `func` on `stream` and commit
/// in one call, holding each buffer's use state from the plan to the commit (one
/// lock per buffer, where a preflighted [`WorkRecorder`] takes one at preflight and
/// one at commit). `uses` are the kernel's buffers with their declared accesses, in
/// an array on the launcher's stack.
///
/// One-dimensional configurations only: the shape in which the device's
/// `ThreadIndex` witness (`blockIdx.x * blockDim.x + threadIdx.x`) is unique per
/// thread. Each `(address, bytes)` range of `zero` is zeroed on the stream right
/// before the kernel, in the same recorded use.
///
/// The states are locked in address order, so two launches sharing buffers never
/// wait on each other in a cycle; no other code holds a use state while locking
/// another.
///
/// Each range of `zero` must lie inside the range of one use whose own access
/// writes, judged before uses of one buffer merge (a read view of a buffer never
/// lends it the write access of another view): otherwise the launch is refused
/// with `InvalidArgument` before anything is queued.
///
/// # Safety
/// As [`WorkRecorder::launch`] (with `uses` as the recorded buffers, each range
/// touched only with the access its own use declares); `#[xlog_kernel]` upholds it
/// by generating the parameter list from the same signature as the entry point and
/// passing the address and byte length of each `lookback` parameter, used
/// read-write.
#[doc(hidden)]
pub unsafe fn launch_typed<const N: usize>(
    stream: &Stream,
    func: &Function,
    config: LaunchConfig,
    params: &mut [*mut c_void],
    zero: &[(u64, usize)],
    uses: &mut [BufferUse<'_>; N],
) -> Result<Committed> {
    config.require_one_dimensional(func.name())?;
    check_launch(stream, func, &config)?;
    check_zeroed(func, zero, uses)?;
    let mut touches = Vec::new();
    let distinct = check_uses(stream, uses, &mut touches)?;
    let uses = &mut uses[..distinct];
    // Address order, by insertion: a kernel has a handful of buffers.
    let at = |u: &BufferUse<'_>| u.core as *const BufferCore as usize;
    for i in 1..uses.len() {
        let mut j = i;
        while j > 0 && at(&uses[j - 1]) > at(&uses[j]) {
            uses.swap(j - 1, j);
            j -= 1;
        }
    }
    // One guard per distinct buffer, in an array sized by the launcher.
    // `states[i]` is the guard of `uses[i]` for every distinct use and `None` after
    // them, so the zips below pair each use with its own state.
    let mut states: [Option<MutexGuard<'_, UseState<Stream>>>; N] =
        std::array::from_fn(|i| uses.get(i).map(|u| u.core.track.lock_unpoisoned()));
    debug_assert!(states[..uses.len()].iter().all(Option::is_some));
    let mut waits: smallvec::SmallVec<[UsePoint<Stream>; INLINE]> = smallvec::SmallVec::new();
    for (u, state) in uses.iter().zip(states.iter().flatten()) {
        plan_waits(&mut waits, state, u.access, stream);
    }
    // The closure owns the locks: they are released as soon as the use is
    // committed (or, when nothing is, when `enqueue_launch` returns), never held
    // while the `tracing` event after the launch runs a subscriber's code, which
    // could launch on the same buffers. (On the simulator a hazard report is an
    // event emitted during the launch itself, with the locks held: a subscriber
    // that launched on these buffers from there would block.)
    let commit = move || {
        let epoch = stream.publish_epoch();
        for (u, state) in uses.iter().zip(states.iter_mut().flatten()) {
            let planned = state.version();
            state.commit(u.access, stream, epoch, planned);
        }
        drop(states);
        Committed { epoch }
    };
    // SAFETY: the caller's obligations; the configuration was checked above and
    // `waits` holds every cross-stream point the accesses conflict with.
    unsafe {
        enqueue_launch(
            stream, func, &config, params, zero, &waits, &touches, commit,
        )
    }
}

/// Adds to `waits` the points of `state` that work with `access` on `stream` must
/// wait for (none while a test has switched fencing off).
pub(crate) fn plan_waits<W>(
    waits: &mut W,
    state: &UseState<Stream>,
    access: Access,
    stream: &Stream,
) where
    W: AsMut<[UsePoint<Stream>]> + Extend<UsePoint<Stream>>,
{
    if crate::testing::fencing_enabled() {
        for p in state.waits(access, stream) {
            keep_newest(waits, &p.stream, p.epoch);
        }
    }
}

/// The checks of a kernel launch on `stream` that come before anything is queued:
/// the function's device, the configuration against the device's limits, the
/// context, the dynamic shared memory the configuration asks for.
pub(crate) fn check_launch(stream: &Stream, func: &Function, config: &LaunchConfig) -> Result<()> {
    if func.ordinal() != stream.device_ordinal() {
        return Err(Error::invalid_launch(
            func.name(),
            format_args!(
                "the function is loaded on device {} but the stream is on device {}",
                func.ordinal(),
                stream.device_ordinal()
            ),
        ));
    }
    config.validate(func.limits(), func.name())?;
    stream.bind()?;
    func.ensure_dynamic_shared(config.shared_bytes)?;
    crate::testing::fault_point!(Launch, "cuLaunchKernel");
    Ok(())
}

/// Queues `waits`, zeroes the `zero` ranges, launches `func` and runs `commit`:
/// after the launch, or after a failure once a range is being zeroed (the memsets
/// are in flight and must stay recorded). A failure before that commits nothing;
/// the waits already queued only delay the stream.
///
/// # Safety
/// As [`WorkRecorder::launch`]; every range in `zero` lies inside a buffer recorded
/// with a writing access; `config` passed [`check_launch`] for `stream` and `func`;
/// `waits` holds every point the recorded accesses must wait for.
#[allow(clippy::too_many_arguments)]
unsafe fn enqueue_launch(
    stream: &Stream,
    func: &Function,
    config: &LaunchConfig,
    params: &mut [*mut c_void],
    zero: &[(u64, usize)],
    waits: &[UsePoint<Stream>],
    touches: &[Touch],
    commit: impl FnOnce() -> Committed,
) -> Result<Committed> {
    for w in waits {
        stream.wait_for(w)?;
    }
    let mut queued = false;
    for &(ptr, bytes) in zero.iter().filter(|r| r.1 > 0) {
        // SAFETY: the range lies inside a buffer recorded with a writing access
        // (the caller's obligation), fenced above; it is ordered on this stream.
        let zeroed = unsafe { driver::memset_d8_async(ptr, 0, bytes, stream.raw()) };
        if let Err(e) = zeroed {
            if queued {
                // Earlier ranges are being zeroed: record the use.
                let _ = commit();
            }
            let e = stream.explain_fault(e);
            return Err(e.while_(|| format!("zeroing a buffer of `{}`", func.name())));
        }
        queued = true;
    }
    // SAFETY: the caller's obligations; the configuration was validated and every
    // cross-stream hazard was fenced just above.
    let launched = unsafe {
        driver::launch_kernel(
            func.raw(),
            config.grid,
            config.block,
            config.shared_bytes,
            stream.raw(),
            params,
            touches,
        )
    };
    if let Err(e) = launched {
        if queued {
            let _ = commit();
        }
        let e = stream.explain_fault(e);
        return Err(e.while_(|| format!("launching `{}`", func.name())));
    }
    // Commit first: what follows runs user code (tracing subscribers) and could
    // panic, and a kernel in flight must never be left unrecorded.
    let committed = commit();
    stream.note_kernel(func.name_arc());
    if tracing::level_enabled!(tracing::Level::TRACE) {
        trace_launch(func, stream, waits.len());
    }
    Ok(committed)
}

/// The `xlog::launch` trace event of a launch, out of line: without a subscriber
/// that wants it, a launch pays only the level check.
#[cold]
#[inline(never)]
fn trace_launch(func: &Function, stream: &Stream, waits: usize) {
    tracing::trace!(target: "xlog::launch", kernel = func.name(), stream = stream.id().0, waits);
}

impl<'a> WorkRecorder<'a, Preflighted> {
    /// Number of distinct streams this work waits on.
    pub fn wait_count(&self) -> usize {
        self.waits.len()
    }

    /// Queue the planned waits, run `work` to enqueue on the raw stream, and commit.
    ///
    /// If `work` fails, nothing is committed and the error is returned; the waits
    /// already queued only delay the stream. If `work` panics, the use is committed
    /// (it may have enqueued something) before the panic continues.
    ///
    /// # Safety
    /// 1. `work` only touches the recorded buffers, with the recorded accesses, and
    ///    only on the raw stream it is given.
    pub unsafe fn enqueue(self, work: impl FnOnce(RawStream) -> Result<()>) -> Result<Committed> {
        self.stream.bind()?;
        for w in &self.waits {
            self.stream.wait_for(w)?;
        }
        let raw = self.stream.raw();
        match panic::catch_unwind(AssertUnwindSafe(|| work(raw))) {
            Ok(Ok(())) => Ok(self.commit()),
            Ok(Err(e)) => Err(self.stream.explain_fault(e)),
            Err(payload) => {
                // `work` may have enqueued before it panicked: record the use as if it
                // had, so frees and other streams still wait for it.
                let _ = self.commit();
                panic::resume_unwind(payload)
            }
        }
    }

    /// Validate `config`, queue the waits, launch `func` and commit.
    ///
    /// # Safety
    ///
    /// Kernels generated by `#[xlog_kernel]` rely on a one-dimensional launch for
    /// their witnesses (`ThreadIndex`, `BlockIndex`, `TransposedIndex`, and look-back
    /// `TileChunk`s, whose tile is `blockIdx.x` with a block per tile): launch them
    /// through their typed launchers, or with `config.is_one_dimensional()`.
    ///
    /// 1. `params` holds one pointer per parameter of `func`, each to a value of
    ///    exactly that parameter's type, alive for the call.
    /// 2. The kernel only touches the recorded buffers, with the recorded accesses,
    ///    plus memory it owns.
    pub unsafe fn launch(
        self,
        func: &Function,
        config: LaunchConfig,
        params: &mut [*mut c_void],
    ) -> Result<Committed> {
        check_launch(self.stream, func, &config)?;
        let (stream, waits, touches) = (self.stream, &self.waits, &self.touches);
        let entries = &self.entries;
        let commit = || commit_planned(stream, entries.as_slice());
        // SAFETY: the caller's obligations; `config` passed `check_launch` and
        // `waits` is this recorder's preflight plan; nothing is zeroed.
        unsafe { enqueue_launch(stream, func, &config, params, &[], waits, touches, commit) }
    }

    fn commit(self) -> Committed {
        commit_planned(self.stream, self.entries.as_slice())
    }

    /// Queue the planned waits on the (bound) stream: the first half of
    /// [`enqueue`](Self::enqueue), for work several recorders queue together (a
    /// group of collectives over several devices), each then committed with
    /// [`commit_queued`](Self::commit_queued).
    pub(crate) fn queue_waits(&self) -> Result<()> {
        self.stream.bind()?;
        for w in &self.waits {
            self.stream.wait_for(w)?;
        }
        Ok(())
    }

    /// Commit work the caller queued on the recorder's stream after
    /// [`queue_waits`](Self::queue_waits) (or may have queued: a failure partway
    /// through commits too, so frees and other streams still wait for it).
    pub(crate) fn commit_queued(self) -> Committed {
        self.commit()
    }

    /// The recorded ranges the platform asked for, for the simulator's hazard
    /// detector (empty on the GPU).
    pub(crate) fn touches(&self) -> &[Touch] {
        &self.touches
    }
}

/// Publishes a new point on `stream` and folds it into each entry's use state,
/// against the version its preflight planned with.
fn commit_planned(stream: &Stream, entries: &[BufferUse<'_>]) -> Committed {
    let epoch = stream.publish_epoch();
    for e in entries {
        e.core
            .track
            .lock_unpoisoned()
            .commit(e.access, stream, epoch, e.planned);
    }
    Committed { epoch }
}
