//! Device panic records, and the board a runtime's streams read them from.
//!
//! A module built with a panic sink (see `xlog_device::panic`) has its kernels
//! write their first panic into mapped host memory before they trap. Loading such a
//! module allocates that record and pins it on the runtime's [`PanicBoard`]; a
//! stream whose synchronisation fails reads the board to name the panic. The board
//! sits below streams and modules, so neither needs to know the runtime.
//!
//! The board also keeps the PTX of every module loaded: when a kernel faults
//! without a panic, the stream asks it whether that kernel recurses
//! (`xlog_device::callgraph`), the one way safe code overflows a GPU stack. The
//! PTX is read only then, off the launch path.

use std::borrow::Cow;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use xlog_device::callgraph::{recursive_kernels, Recursion};

use xlog_device::panic::{PanicRecord, PANIC_SINK_SYMBOL, STATE_COMPLETE};

use crate::device::Device;
use crate::driver::{self, RawModule};
use crate::error::Result;
use crate::sync::Unpoisoned;

/// One module's panic record: mapped host memory its kernels write into. A module
/// loaded one kernel at a time points the sink of each kernel's driver module at
/// the same record.
pub(crate) struct RecordSlot {
    host: *mut u8,
    /// The device address of the same bytes.
    dev: u64,
    /// How the page was made: registered with the driver, or its allocation.
    registered: bool,
    device: Device,
}

// SAFETY: `host` is page-locked memory owned by the slot; the host only reads it
// (volatile) and frees it once, on drop.
unsafe impl Send for RecordSlot {}
// SAFETY: as above; concurrent volatile reads of device-written memory are fine.
unsafe impl Sync for RecordSlot {}

impl RecordSlot {
    /// Point the sink of `module` (loaded on `device`, bound) at a fresh record,
    /// when the module has one.
    pub(crate) fn install(device: &Device, module: RawModule) -> Result<Option<Arc<RecordSlot>>> {
        let Some(sink) = sink_of(module)? else {
            return Ok(None);
        };
        let slot = RecordSlot::new(device)?;
        // SAFETY: the sink of `module`, which `install`'s one caller (`Module::load`)
        // has just loaded: none of its kernels has run.
        unsafe { slot.attach(sink) }?;
        Ok(Some(slot))
    }

    /// A fresh, empty record on `device` (bound).
    pub(crate) fn new(device: &Device) -> Result<Arc<RecordSlot>> {
        const { assert!(std::mem::size_of::<PanicRecord>() <= crate::pinned::PAGE) };
        let page = driver::host_page_mapped()?;
        Ok(Arc::new(RecordSlot {
            host: page.host,
            dev: page.dev,
            registered: page.registered,
            device: device.clone(),
        }))
    }

    /// Point the panic sink at address `sink` at this record.
    ///
    /// # Safety
    /// 1. `sink` is what [`sink_of`] gave for a module loaded on the bound context,
    ///    none of whose kernels has run yet.
    pub(crate) unsafe fn attach(&self, sink: u64) -> Result<()> {
        // SAFETY: by obligation 1, `sink` is the module's 8-byte global, which no
        // kernel reads or writes yet.
        unsafe { driver::memcpy_htod_sync(sink, &self.dev.to_ne_bytes()) }
    }

    /// The recorded panic, if a kernel wrote one: `kernel panicked at
    /// file:line:col (block .., thread ..): message`.
    pub(crate) fn read(&self) -> Option<String> {
        // SAFETY: the record is mapped host memory of the right size and alignment,
        // alive while `self` is; its state, the first field, is only accessed
        // atomically by host code (the simulator's writer included).
        let state = unsafe { AtomicU32::from_ptr(self.host.cast::<u32>()) };
        if state.load(Ordering::Acquire) != STATE_COMPLETE {
            // Empty, or being written: the rest is not looked at.
            return None;
        }
        // SAFETY: as above; a complete record is never written again (the first
        // writer claimed it), so this read races no writer.
        let rec = unsafe { std::ptr::read_volatile(self.host.cast::<PanicRecord>()) };
        Some(rec.to_string())
    }
}

impl Drop for RecordSlot {
    fn drop(&mut self) {
        if self.device.bind().is_err() {
            return;
        }
        // The page `new` got, as `host_page_mapped` made it.
        let page = driver::HostPage {
            host: self.host,
            dev: self.dev,
            registered: self.registered,
        };
        // SAFETY: allocated in `new`, freed only here; the last holder is going
        // away, and the module that could write it is unloaded (modules hold their
        // slot until then, and unloading waits for their running kernels) or never
        // ran a kernel since.
        if let Err(e) = unsafe { driver::host_page_free(page) } {
            tracing::error!(target: "xlog::module", "freeing a panic record failed: {e}");
        }
    }
}

/// The address of the panic sink of `module` (loaded on the bound context), when it
/// has one.
pub(crate) fn sink_of(module: RawModule) -> Result<Option<u64>> {
    // SAFETY: the module is loaded on the bound context.
    let global = unsafe { driver::module_global(module, PANIC_SINK_SYMBOL) }?;
    Ok(global.filter(|&(_, size)| size == 8).map(|(sink, _)| sink))
}

/// The panic records of every module one runtime loaded.
#[derive(Default)]
pub(crate) struct PanicBoard {
    slots: Mutex<Vec<Arc<RecordSlot>>>,
    /// The PTX of every module loaded, read when a kernel faults.
    ptx: Mutex<Vec<Cow<'static, str>>>,
    /// The context's stack per thread when a module was last loaded or the stack
    /// last set (0: unknown): a faulted context answers no query.
    stack_bytes: AtomicUsize,
}

impl PanicBoard {
    /// Keep `slot` readable for as long as the board lives.
    pub(crate) fn pin(&self, slot: Arc<RecordSlot>) {
        self.slots.lock_unpoisoned().push(slot);
    }

    /// The first panic recorded by any pinned module.
    pub(crate) fn first(&self) -> Option<String> {
        self.slots.lock_unpoisoned().iter().find_map(|s| s.read())
    }

    /// Keep the PTX of a loaded module, for [`recursion`](Self::recursion).
    pub(crate) fn note_ptx(&self, ptx: Cow<'static, str>) {
        self.ptx.lock_unpoisoned().push(ptx);
    }

    /// Remember the context's stack per thread, for reports after a fault.
    pub(crate) fn note_stack(&self, bytes: usize) {
        self.stack_bytes.store(bytes, Ordering::Relaxed);
    }

    /// The stack per thread last noted, if any.
    pub(crate) fn stack(&self) -> Option<usize> {
        Some(self.stack_bytes.load(Ordering::Relaxed)).filter(|&b| b != 0)
    }

    /// A cycle of calls that kernel `kernel` of a loaded module reaches, if any.
    #[cold]
    pub(crate) fn recursion(&self, kernel: &str) -> Option<Recursion> {
        let modules = self.ptx.lock_unpoisoned();
        modules
            .iter()
            .filter(|ptx| ptx.contains(kernel))
            .flat_map(|ptx| recursive_kernels(ptx))
            .find(|r| r.kernel == kernel)
    }
}
