//! Copies between devices, fenced on both devices' streams, and peer access.
//!
//! A peer copy runs on the destination's stream and reads the source on another
//! device. Its source is recorded as read on a stream of the source's device and
//! its destination as written on the destination's stream, joined by two event
//! waits:
//!
//! 1. the source stream queues the waits the read needs (writers of the source on
//!    other streams), and the destination stream waits for the source stream's
//!    point after them (so also for the source's writers on the source stream);
//! 2. the destination stream queues the waits the write needs, then the copy;
//! 3. the source stream waits for the destination stream's point after the copy,
//!    and the read is committed there: later writers of the source, and its free,
//!    wait for the copy through the source stream.

use std::collections::HashSet;
use std::sync::{Mutex, OnceLock};

use xlog_device::DeviceCopy;

use crate::buffer::{ReadBuffer, WriteBuffer};
use crate::copy::check_len;
use crate::driver;
use crate::error::{Error, Result};
use crate::launch::{Committed, WorkRecorder};
use crate::runtime::Runtime;
use crate::stream::Stream;
use crate::sync::Unpoisoned;
use crate::track::UsePoint;

impl Runtime {
    /// Let this runtime's device reach `peer`'s memory directly
    /// (`cuCtxEnablePeerAccess`) where the topology allows it
    /// (`cuDeviceCanAccessPeer`); `Ok(false)` where it does not (copies between
    /// the two then go through host memory). Asked once per ordered pair of
    /// devices; [`copy_peer`] asks for both directions itself.
    pub fn enable_peer_access(&self, peer: &Runtime) -> Result<bool> {
        static DONE: OnceLock<Mutex<HashSet<(u32, u32, bool)>>> = OnceLock::new();
        let (a, b) = (self.device().ordinal(), peer.device().ordinal());
        if a == b {
            return Ok(true);
        }
        let done = DONE.get_or_init(Default::default);
        let mut done = done.lock_unpoisoned();
        for can in [true, false] {
            if done.contains(&(a, b, can)) {
                return Ok(can);
            }
        }
        self.device().bind()?;
        // SAFETY: this runtime's context is bound; the peer's is retained by its
        // runtime, alive for the call.
        let can = unsafe { driver::enable_peer_access(&self.device().ctx, &peer.device().ctx) }?;
        done.insert((a, b, can));
        Ok(can)
    }
}

/// Copy `src` (a buffer of `src_stream`'s device) into `dst` (of `dst_stream`'s
/// device), fenced on both streams; the copy runs on `dst_stream`
/// (`cuMemcpyPeerAsync`).
///
/// The source is recorded as read on `src_stream`, the destination as written on
/// `dst_stream`: `dst_stream` waits for the source's writers (through
/// `src_stream`'s point after the waits they need) and for the destination's
/// earlier users, and `src_stream` waits for the copy, so the source's later
/// writers and its free come after it. Peer access is enabled both ways first where the topology allows
/// it. On one device it is an ordinary [`copy_device`](crate::copy_device) on
/// `dst_stream` after `src_stream`'s point.
pub fn copy_peer<T: DeviceCopy>(
    dst_stream: &Stream,
    dst: &mut (impl WriteBuffer<T> + ?Sized),
    src_stream: &Stream,
    src: &(impl ReadBuffer<T> + ?Sized),
) -> Result<Committed> {
    let (d, s) = (dst.arg_mut(), src.arg());
    check_len("copy_peer", d.len, s.len)?;
    let (dp, sp, bytes) = (d.ptr, s.ptr, d.bytes);
    let (Some(dst_ctx), Some(src_ctx)) = (dst_stream.context(), src_stream.context()) else {
        return Err(Error::InvalidArgument {
            what: "copy_peer".to_owned(),
            reason: "a stream of a placeholder runtime has no device".to_owned(),
        });
    };
    if dst_stream.device_ordinal() != src_stream.device_ordinal() {
        let (dst_rt, src_rt) = (dst_stream.runtime()?, src_stream.runtime()?);
        dst_rt.enable_peer_access(&src_rt)?;
        src_rt.enable_peer_access(&dst_rt)?;
    }
    let read = WorkRecorder::new(src_stream)
        .__record(s, crate::track::Access::Read)
        .preflight()?;
    let write = WorkRecorder::new(dst_stream)
        .__record(d, crate::track::Access::Write)
        .preflight()?;
    if bytes == 0 {
        return Ok(Committed {
            epoch: dst_stream.publish_epoch(),
        });
    }
    read.queue_waits()?;
    let ready = src_stream.publish();
    write.queue_waits()?;
    dst_stream.wait_for(&ready)?;
    // SAFETY: `src..+bytes` is memory of the source stream's device and
    // `dst..+bytes` of the destination's (each recorder refused a buffer of another
    // runtime); the destination stream (bound by `queue_waits` and `wait_for`) waits
    // for the source's writers (through the source stream's point) and the
    // destination's; both stay allocated until the copy has run, since the
    // commits below record it for both buffers.
    unsafe { driver::memcpy_peer_async(dp, dst_ctx, sp, src_ctx, bytes, dst_stream.raw()) }
        .map_err(|e| dst_stream.explain_fault(e))?;
    let done = write.commit_queued();
    let after = UsePoint {
        stream: dst_stream.clone(),
        epoch: done.epoch,
    };
    if src_stream.wait_for(&after).is_err() {
        // The source's later users must not overtake the copy: wait for it here.
        dst_stream.synchronize()?;
    }
    let _ = read.commit_queued();
    Ok(done)
}
