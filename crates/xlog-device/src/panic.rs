//! Device panics: what the panic handler records for the host, and where.
//!
//! A panic in a kernel (an out-of-bounds index, an `unwrap` on `None`, an explicit
//! `panic!`) runs this crate's `#[panic_handler]` (feature `panic-handler`, on by
//! default). It cannot unwind; it reports and then executes PTX `trap`, so the launch
//! fails (the driver reports `CUDA_ERROR_LAUNCH_FAILED`) instead of hanging or
//! returning garbage.
//!
//! # The record and how the host reads it
//!
//! A `trap` leaves the CUDA context unusable: after it, no device memory can be
//! read. So the report goes to **host** memory. Each module that links this crate
//! defines the device global
//!
//! ```text
//! .visible .global .align 8 .u64 __xlog_panic_sink;   // PANIC_SINK_SYMBOL, initially 0
//! ```
//!
//! The runtime allocates a [`PanicRecord`] in page-locked, device-mapped host memory
//! (a zeroed page registered with `cuMemHostRegister(CU_MEMHOSTREGISTER_DEVICEMAP)`,
//! or `cuMemHostAlloc(CU_MEMHOSTALLOC_DEVICEMAP)` where the driver refuses to
//! register it), and stores its device
//! address into `__xlog_panic_sink` (`cuModuleGetGlobal` + a copy) after loading the
//! module. When a launch fails, it reads the record from the host side, which works
//! whatever state the context is in. When the sink is 0 the handler only traps.
//! xlog-build never internalizes the symbol, so `cuModuleGetGlobal` finds it in every
//! module that links xlog-device.
//!
//! The first panicking thread claims the record, fills it, issues `membar.sys`,
//! stores `state = 2` into it, issues `membar.sys` again, and traps. The claim is
//! not made on the record: an atomic on page-locked host memory is a system-scope
//! atomic over the bus, which the CUDA programming guide allows only where the
//! device reports `CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED` (PCIe GPUs,
//! the H200 among them, do not; compute-sanitizer's memcheck reports each one).
//! Each module instead has a claim word in its own device memory (a private
//! global, zero at load), on which every access is a GPU-scope atomic (`atom.cas`,
//! `ld`, `st` with `.relaxed.gpu` / `.release.gpu`): 0 → 1 claims it, and the
//! writer sets it to 2 once the record is complete. The record itself only takes
//! plain (volatile) stores from the one writer, which the programming guide allows
//! on mapped memory everywhere, and the host reads it after `state == 2`. Other
//! panicking threads (they see the claim word non-zero before trying the claim,
//! or lose it) wait, polling the claim word about a microsecond apart for at most
//! [`RECORD_WAIT_NS`], until the record is complete, then trap: a
//! `trap` ends the whole launch at once, so a thread that trapped while the first
//! was still writing would leave the record incomplete, and a kernel whose threads
//! all fail the same check would report no message. The wait relies on sm_70's
//! independent thread scheduling (the writer may share the waiters' warp), which
//! is why xlog-build refuses older architectures. The host should trust the fields
//! only when `state == 2`.
//!
//! What is recorded: the source location (always) and the message when it is a
//! static string (`panic!("literal")`, `expect("literal")`). Formatted messages
//! (index-out-of-bounds details, `panic!("{x}")`) keep their location and get the
//! message `<formatted message omitted>`: formatting would pull `core::fmt` into
//! every kernel that can panic, costing registers and code size.

/// The name of the device global holding the address of the host's [`PanicRecord`].
pub const PANIC_SINK_SYMBOL: &str = "__xlog_panic_sink";

/// Bytes of the source file path kept in a [`PanicRecord`] (longer paths keep their
/// tail, the part that names the file).
pub const FILE_CAPACITY: usize = 208;
/// Bytes of the message kept in a [`PanicRecord`].
pub const MESSAGE_CAPACITY: usize = 256;

/// [`PanicRecord::state`]: nothing recorded.
pub const STATE_EMPTY: u32 = 0;
/// [`PanicRecord::state`]: a thread is writing the record.
pub const STATE_WRITING: u32 = 1;
/// [`PanicRecord::state`]: the record is complete.
pub const STATE_COMPLETE: u32 = 2;

/// What the device panic handler writes for the host; 512 bytes, `#[repr(C)]`.
///
/// Zero-initialise it before the launch (all-zero is [`STATE_EMPTY`]).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct PanicRecord {
    /// [`STATE_EMPTY`], [`STATE_WRITING`] or [`STATE_COMPLETE`].
    pub state: u32,
    /// Source line of the panic.
    pub line: u32,
    /// Source column of the panic.
    pub column: u32,
    /// Valid bytes in [`file`](Self::file).
    pub file_len: u32,
    /// Valid bytes in [`message`](Self::message).
    pub message_len: u32,
    /// 1 when the file path was cut to its last [`FILE_CAPACITY`] bytes, or the
    /// message to its first [`MESSAGE_CAPACITY`] bytes (bit 0: file, bit 1: message).
    pub truncated: u32,
    /// `threadIdx` (x, y, z) of the panicking thread.
    pub thread: [u32; 3],
    /// `blockIdx` (x, y, z) of the panicking thread.
    pub block: [u32; 3],
    /// UTF-8 bytes of the source path.
    pub file: [u8; FILE_CAPACITY],
    /// UTF-8 bytes of the message.
    pub message: [u8; MESSAGE_CAPACITY],
}

const _: () = assert!(core::mem::size_of::<PanicRecord>() == 512);

impl PanicRecord {
    /// An empty record.
    pub const fn new() -> Self {
        PanicRecord {
            state: STATE_EMPTY,
            line: 0,
            column: 0,
            file_len: 0,
            message_len: 0,
            truncated: 0,
            thread: [0; 3],
            block: [0; 3],
            file: [0; FILE_CAPACITY],
            message: [0; MESSAGE_CAPACITY],
        }
    }

    /// Whether a panic was fully recorded.
    pub fn is_complete(&self) -> bool {
        self.state == STATE_COMPLETE
    }

    /// The recorded file path (lossy: a cut may split a UTF-8 sequence).
    pub fn file(&self) -> &str {
        utf8_prefix(&self.file[..(self.file_len as usize).min(FILE_CAPACITY)])
    }

    /// The recorded message.
    pub fn message(&self) -> &str {
        utf8_prefix(&self.message[..(self.message_len as usize).min(MESSAGE_CAPACITY)])
    }
}

impl Default for PanicRecord {
    fn default() -> Self {
        Self::new()
    }
}

impl core::fmt::Debug for PanicRecord {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("PanicRecord")
            .field("state", &self.state)
            .field("file", &self.file())
            .field("line", &self.line)
            .field("column", &self.column)
            .field("message", &self.message())
            .field("thread", &self.thread)
            .field("block", &self.block)
            .finish()
    }
}

impl core::fmt::Display for PanicRecord {
    /// `kernel panicked at src/lib.rs:10:5 (block (0, 0, 0), thread (3, 0, 0)): message`
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "kernel panicked at {}:{}:{} (block ({}, {}, {}), thread ({}, {}, {})): {}",
            self.file(),
            self.line,
            self.column,
            self.block[0],
            self.block[1],
            self.block[2],
            self.thread[0],
            self.thread[1],
            self.thread[2],
            self.message()
        )
    }
}

/// The longest valid UTF-8 prefix of `bytes` (a cut may split a sequence; a
/// leading partial sequence from a tail-cut path is skipped as well).
fn utf8_prefix(bytes: &[u8]) -> &str {
    let start = bytes
        .iter()
        .position(|b| (*b & 0xC0) != 0x80)
        .unwrap_or(bytes.len());
    let bytes = &bytes[start..];
    match core::str::from_utf8(bytes) {
        Ok(s) => s,
        Err(e) => {
            let valid = &bytes[..e.valid_up_to()];
            // SAFETY: `valid_up_to` bytes were just validated as UTF-8.
            unsafe { core::str::from_utf8_unchecked(valid) }
        }
    }
}

/// How long, in nanoseconds of `%globaltimer`, a panicking thread that found the
/// record claimed waits for its writer to complete it before trapping anyway: a
/// bound, so that a writer that never gets to run again cannot hang the launch.
/// Writing the record takes microseconds.
pub const RECORD_WAIT_NS: u64 = 50_000_000;

/// The message recorded for formatted panics.
pub const FORMATTED_MESSAGE: &str = "<formatted message omitted>";

#[cfg(all(target_arch = "nvptx64", feature = "panic-handler"))]
mod handler {
    use super::*;
    use core::arch::asm;
    use core::panic::PanicInfo;
    use core::ptr::{addr_of_mut, write_volatile};

    /// Address of the host's [`PanicRecord`], or 0. Written by the host only.
    #[no_mangle]
    #[used]
    static mut __xlog_panic_sink: u64 = 0;

    /// The module's claim on its record, in device memory (module docs): 0 free,
    /// [`STATE_WRITING`] claimed, [`STATE_COMPLETE`] written. Accessed only through
    /// the GPU-scope atomics below. A module whose kernel panicked never runs
    /// again (the trap ends its context), so the word is never reset.
    static mut CLAIM: u32 = 0;

    /// `atom.relaxed.gpu.cas.b32` on the claim word: its previous value.
    #[inline(always)]
    fn claim_cas(expected: u32, new: u32) -> u32 {
        let old: u32;
        // SAFETY: `CLAIM` is an aligned u32 of this module's device memory, and every
        // access to it is a GPU-scope atomic, so none races with another. No
        // `nomem`: the asm orders the memory accesses around it.
        unsafe {
            asm!(
                "atom.relaxed.gpu.cas.b32 {o}, [{p}], {e}, {n};",
                o = out(reg32) old,
                p = in(reg64) addr_of_mut!(CLAIM),
                e = in(reg32) expected,
                n = in(reg32) new,
                options(nostack)
            )
        };
        old
    }

    /// `ld.relaxed.gpu.u32` of the claim word.
    #[inline(always)]
    fn claim_load() -> u32 {
        let v: u32;
        // SAFETY: as `claim_cas`.
        unsafe {
            asm!(
                "ld.relaxed.gpu.u32 {v}, [{p}];",
                v = out(reg32) v,
                p = in(reg64) addr_of_mut!(CLAIM),
                options(nostack)
            )
        };
        v
    }

    /// `st.release.gpu.u32` of the claim word.
    #[inline(always)]
    fn claim_store(v: u32) {
        // SAFETY: as `claim_cas`.
        unsafe {
            asm!(
                "st.release.gpu.u32 [{p}], {v};",
                p = in(reg64) addr_of_mut!(CLAIM),
                v = in(reg32) v,
                options(nostack)
            )
        };
    }

    /// The GPU's nanosecond clock (`%globaltimer`).
    #[inline(always)]
    fn global_timer() -> u64 {
        let t: u64;
        // SAFETY: reads a special register; touches no memory.
        unsafe { asm!("mov.u64 {t}, %globaltimer;", t = out(reg64) t, options(nomem, nostack)) };
        t
    }

    #[panic_handler]
    fn panic(info: &PanicInfo<'_>) -> ! {
        // SAFETY: a plain read of a device global that only the host writes, between
        // launches; volatile so the load is never assumed.
        let sink = unsafe { core::ptr::read_volatile(core::ptr::addr_of!(__xlog_panic_sink)) };
        if sink != 0 {
            // SAFETY: a non-zero sink is the device address of a zeroed, live
            // PanicRecord the runtime mapped for this purpose (module docs).
            unsafe { record(sink as *mut PanicRecord, info) };
        }
        // SAFETY: `trap` aborts the kernel; nothing after it runs.
        unsafe { asm!("trap;", options(noreturn, nostack)) }
    }

    /// Fills the record if this thread is the first to panic; otherwise waits until
    /// the first has completed it (module docs).
    ///
    /// # Safety
    ///
    /// 1. `rec` points to a live, suitably aligned `PanicRecord` in memory the device
    ///    can write (mapped host memory), initialised to zero by the host.
    #[inline(never)]
    #[cold]
    unsafe fn record(rec: *mut PanicRecord, info: &PanicInfo<'_>) {
        // Reading first spares a compare-and-swap from every thread that panics
        // after the record was claimed.
        let claimed =
            claim_load() != STATE_EMPTY || claim_cas(STATE_EMPTY, STATE_WRITING) != STATE_EMPTY;
        if claimed {
            // Another thread is writing the record; trapping now would end the
            // launch before it is complete (module docs).
            let start = global_timer();
            while claim_load() != STATE_COMPLETE
                && global_timer().wrapping_sub(start) < RECORD_WAIT_NS
            {
                crate::thread::sleep_ns(1000);
            }
            return;
        }
        let (t, b) = (crate::thread::thread_idx(), crate::thread::block_idx());
        let (file, line, column) = match info.location() {
            Some(l) => (l.file(), l.line(), l.column()),
            None => ("<unknown>", 0, 0),
        };
        let message = info.message().as_str().unwrap_or(FORMATTED_MESSAGE);
        let file_bytes = file.as_bytes();
        let file_cut = file_bytes.len().saturating_sub(FILE_CAPACITY);
        let file_bytes = &file_bytes[file_cut..];
        let msg_bytes = &message.as_bytes()[..message.len().min(MESSAGE_CAPACITY)];
        let truncated =
            u32::from(file_cut > 0) | (u32::from(message.len() > MESSAGE_CAPACITY) << 1);
        // SAFETY: this thread won the claim, so it alone writes the record's other
        // fields (obligation 1 makes them valid to write); the copies stay within
        // the arrays' capacities.
        unsafe {
            write_volatile(addr_of_mut!((*rec).line), line);
            write_volatile(addr_of_mut!((*rec).column), column);
            write_volatile(addr_of_mut!((*rec).thread), [t.x, t.y, t.z]);
            write_volatile(addr_of_mut!((*rec).block), [b.x, b.y, b.z]);
            write_volatile(addr_of_mut!((*rec).truncated), truncated);
            let file_dst = addr_of_mut!((*rec).file) as *mut u8;
            for (k, byte) in file_bytes.iter().enumerate() {
                write_volatile(file_dst.add(k), *byte);
            }
            write_volatile(addr_of_mut!((*rec).file_len), file_bytes.len() as u32);
            let msg_dst = addr_of_mut!((*rec).message) as *mut u8;
            for (k, byte) in msg_bytes.iter().enumerate() {
                write_volatile(msg_dst.add(k), *byte);
            }
            write_volatile(addr_of_mut!((*rec).message_len), msg_bytes.len() as u32);
            asm!("membar.sys;", options(nostack));
            // The host reads the other fields only once it sees this store.
            write_volatile(addr_of_mut!((*rec).state), STATE_COMPLETE);
            asm!("membar.sys;", options(nostack));
        }
        claim_store(STATE_COMPLETE);
    }
}

/// The device library's failed checks, out of line: index bounds, look-back tickets
/// and statuses, transposed witnesses. Each is `#[cold]`, never inlined and
/// `#[track_caller]`, so a kernel's fast path carries one call and the message
/// formatting (with whatever registers it spills) stays here; keeping them in this
/// module names them as panic-path code, which xlog-build's spill check ignores.
pub(crate) mod cold {
    /// An index `index` at or past `len` (`what` names the indexed thing, with a
    /// trailing space, or is empty).
    #[cold]
    #[inline(never)]
    #[track_caller]
    pub(crate) fn out_of_bounds(what: &'static str, len: usize, index: usize) -> ! {
        panic!(
            "{}index out of bounds: the len is {} but the index is {}",
            what, len, index
        )
    }

    /// A look-back status word `i` at or past `len`.
    #[cold]
    #[inline(never)]
    #[track_caller]
    pub(crate) fn status_out_of_bounds(len: usize, i: usize) -> ! {
        panic!(
            "look-back status index out of bounds: the len is {} but the index is {}",
            len, i
        )
    }

    /// Look-back ticket `k` used by a block other than its owner (`owner` is the
    /// owning block's index plus one).
    #[cold]
    #[inline(never)]
    #[track_caller]
    pub(crate) fn foreign_ticket(k: u64, owner: u64) -> ! {
        panic!(
            "look-back ticket {} belongs to block {}, not to this one: call next_tile from every thread of the block",
            k,
            owner.wrapping_sub(1) as i64
        )
    }

    /// A transposed witness `at` outside the `cols × rows` output.
    #[cold]
    #[inline(never)]
    #[track_caller]
    pub(crate) fn transposed_outside(rows: usize, cols: usize, at: (usize, usize)) -> ! {
        panic!(
            "transposed index ({}, {}) outside the {} × {} output",
            at.0, at.1, cols, rows
        )
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::string::ToString;

    #[test]
    fn record_reads_back() {
        let mut r = PanicRecord::new();
        assert!(!r.is_complete());
        r.state = STATE_COMPLETE;
        r.file[..10].copy_from_slice(b"src/lib.rs");
        r.file_len = 10;
        r.message[..4].copy_from_slice(b"boom");
        r.message_len = 4;
        r.line = 7;
        r.column = 9;
        r.thread = [3, 0, 0];
        assert!(r.is_complete());
        assert_eq!(
            r.to_string(),
            "kernel panicked at src/lib.rs:7:9 (block (0, 0, 0), thread (3, 0, 0)): boom"
        );
    }

    #[test]
    fn cut_utf8_is_tolerated() {
        let bytes = "é/x.rs".as_bytes();
        assert_eq!(utf8_prefix(&bytes[1..]), "/x.rs");
        assert_eq!(utf8_prefix(&bytes[..1]), "");
        let mut r = PanicRecord::new();
        r.file_len = 9999;
        assert_eq!(r.file().len(), FILE_CAPACITY);
    }
}
