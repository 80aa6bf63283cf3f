//! Modules and functions: loaded once per runtime and cached.
//!
//! An embedded image with cubins for the device's arch has one cubin per kernel
//! (`xlog-build` compiles each kernel alone): its [`Module`] loads nothing up
//! front, and each kernel's driver module at the kernel's first lookup, so the
//! first call of a library costs the code it runs, not the whole library (a driver
//! loads a cubin in time about proportional to its size). The kernels' driver
//! modules share one panic record. PTX (no cubin for the arch, hand-written PTX,
//! the simulator) is loaded whole.

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use xlog_device::abi::{self, AbiDifference};
use xlog_device::panic::PANIC_SINK_SYMBOL;
use xlog_device::ModuleImage;

use crate::device::Device;
use crate::driver::{self, RawFunction, RawModule};
use crate::error::{Error, Result};
use crate::launch::LaunchLimits;
use crate::panics::{self, PanicBoard, RecordSlot};
use crate::sim::SimEntry;
use crate::sync::Unpoisoned;

struct LoadedModule {
    raw: RawModule,
    device: Device,
    /// The record the module's panic handler writes into, when it has a sink.
    panic_record: Option<Arc<RecordSlot>>,
}

// SAFETY: module handles are plain driver handles, usable from any thread with the
// context bound.
unsafe impl Send for LoadedModule {}
// SAFETY: as above; the driver synchronises concurrent use.
unsafe impl Sync for LoadedModule {}

impl Drop for LoadedModule {
    fn drop(&mut self) {
        let unloaded = self.device.bind().and_then(|()| {
            // SAFETY: the last function referring to this module is gone (each
            // holds an Arc). A kernel of it may still run (its stream and buffers
            // can be dropped while it does): `cuModuleUnload` waits for it (an
            // assumption the GPU test `unloading_a_module_waits_for_its_running_kernel`
            // checks).
            unsafe { driver::module_unload(self.raw) }
        });
        if let Err(e) = unloaded {
            tracing::error!(target: "xlog::module", "unloading a module failed: {e}");
            // Its kernels may still run and write the record: keep it allocated.
            std::mem::forget(self.panic_record.take());
        }
    }
}

/// A module loaded on one device.
pub struct Module {
    device: Device,
    name: String,
    code: Code,
    functions: Mutex<HashMap<String, Function>>,
}

/// How a module's code is loaded.
enum Code {
    /// One driver module holds every kernel.
    Whole(Arc<LoadedModule>),
    /// One driver module per kernel of an image's table, each loaded at its
    /// kernel's first lookup (under the lock of `Module::functions`).
    PerKernel {
        image: &'static ModuleImage,
        /// The device's arch's cubins, one per kernel of the table.
        cubins: &'static [&'static [u8]],
        loaded: Box<[OnceLock<Arc<LoadedModule>>]>,
        /// The panic record every kernel's driver module writes, made at the first
        /// one with a sink and pinned on `board`.
        record: OnceLock<Arc<RecordSlot>>,
        board: Arc<PanicBoard>,
    },
}

impl fmt::Debug for Module {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Module").field("name", &self.name).finish()
    }
}

impl Module {
    /// Load PTX text or a cubin image, pinning its panic record (if it has a
    /// panic sink) on `board`.
    pub(crate) fn load(
        device: &Device,
        name: &str,
        image: &[u8],
        board: &PanicBoard,
    ) -> Result<Module> {
        let raw = load_raw(device, name, image)?;
        let mut loaded = LoadedModule {
            raw,
            device: device.clone(),
            panic_record: None,
        };
        if names_the_sink(image) {
            loaded.panic_record = RecordSlot::install(device, loaded.raw)?;
            if let Some(slot) = &loaded.panic_record {
                board.pin(slot.clone());
            }
        }
        Ok(Module {
            device: device.clone(),
            name: name.to_owned(),
            code: Code::Whole(Arc::new(loaded)),
            functions: Mutex::new(HashMap::new()),
        })
    }

    /// Load a [`ModuleImage`] for `device`: with cubins for the device's arch, a
    /// module that loads each kernel's cubin at the kernel's first lookup (nothing
    /// now); without, or on the simulator (which reads the entry points from the
    /// PTX), its PTX, whole.
    pub(crate) fn load_image(
        device: &Device,
        image: &'static ModuleImage,
        board: &Arc<PanicBoard>,
    ) -> Result<Module> {
        let (major, minor) = device.info().compute_capability;
        let arch = format!("sm_{major}{minor}");
        let cubins = image
            .cubins_for(&arch)
            .filter(|c| !driver::platform().runs_host_builds() && c.len() == image.kernels().len());
        let module = match cubins {
            Some(cubins) => Module {
                device: device.clone(),
                name: image.name().to_owned(),
                code: Code::PerKernel {
                    image,
                    cubins,
                    loaded: image.kernels().iter().map(|_| OnceLock::new()).collect(),
                    record: OnceLock::new(),
                    board: board.clone(),
                },
                functions: Mutex::new(HashMap::new()),
            },
            None => Module::load(device, image.name(), image.ptx().as_bytes(), board)?,
        };
        board.note_ptx(std::borrow::Cow::Borrowed(image.ptx()));
        device.bind()?;
        if let Ok(bytes) = driver::stack_size() {
            board.note_stack(bytes);
        }
        Ok(module)
    }

    /// The module's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The kernel entry point `name`, looked up once and cached.
    pub fn function(&self, name: &str) -> Result<Function> {
        self.function_with(name, None)
    }

    /// [`function`](Self::function), with the kernel's host build for the
    /// simulator (see [`crate::sim`]); the GPU ignores it. Typed launchers pass the
    /// one `#[xlog_kernel]` generates; hand-written PTX can bring its own. The first
    /// host build given for a kernel of this module stays with it: a different one
    /// is refused with [`Error::InvalidArgument`].
    ///
    /// # Safety
    /// 1. `host` is the host build of kernel `name` of this module: it reads exactly
    ///    that kernel's parameter list. Every later launch of the kernel on the
    ///    simulator, typed launches included (they share the runtime's cached
    ///    module), runs it with that list.
    pub unsafe fn function_with_host(&self, name: &str, host: SimEntry) -> Result<Function> {
        self.function_with(name, Some(host))
    }

    fn function_with(&self, name: &str, sim: Option<SimEntry>) -> Result<Function> {
        let mut cache = self.functions.lock_unpoisoned();
        if let Some(f) = cache.get(name) {
            if sim.is_none() || !driver::platform().runs_host_builds() {
                return Ok(f.clone());
            }
        }
        let loaded = self.code_of(name)?;
        self.device.bind()?;
        // SAFETY: the module is loaded on this device's context, bound above.
        let raw = unsafe { driver::module_function(loaded.raw, name, sim) }?.ok_or_else(|| {
            Error::KernelNotFound {
                kernel: name.to_owned(),
                module: self.name.clone(),
            }
        })?;
        let f = Function(Arc::new(FunctionInner {
            raw,
            name: Arc::from(name),
            ordinal: self.device.ordinal(),
            limits: LaunchLimits::of(self.device.info()),
            _module: loaded,
            dynamic_shared_limit: AtomicU32::new(self.device.info().max_shared_per_block),
        }));
        cache.insert(name.to_owned(), f.clone());
        Ok(f)
    }

    /// The driver module holding kernel `kernel`: the whole module's, or the
    /// kernel's own, loaded now if this is its first lookup. Called under the lock
    /// of `functions`, so each kernel's module is loaded once.
    fn code_of(&self, kernel: &str) -> Result<Arc<LoadedModule>> {
        let (image, cubins, loaded, record, board) = match &self.code {
            Code::Whole(loaded) => return Ok(loaded.clone()),
            Code::PerKernel {
                image,
                cubins,
                loaded,
                record,
                board,
            } => (image, cubins, loaded, record, board),
        };
        let Some(i) = image.kernel_index(kernel) else {
            return Err(Error::KernelNotFound {
                kernel: kernel.to_owned(),
                module: self.name.clone(),
            });
        };
        if let Some(l) = loaded[i].get() {
            return Ok(l.clone());
        }
        let cubin = cubins[i];
        let label = format!("{}, kernel `{kernel}`", self.name);
        let raw = load_raw(&self.device, &label, cubin)?;
        let mut piece = LoadedModule {
            raw,
            device: self.device.clone(),
            panic_record: None,
        };
        if names_the_sink(cubin) {
            if let Some(sink) = panics::sink_of(piece.raw)? {
                let slot = match record.get() {
                    Some(slot) => slot.clone(),
                    None => {
                        let slot = RecordSlot::new(&self.device)?;
                        board.pin(slot.clone());
                        record.get_or_init(|| slot).clone()
                    }
                };
                // SAFETY: `sink` is the sink of the driver module just loaded on the
                // bound context (`load_raw` bound it); none of its kernels has run.
                unsafe { slot.attach(sink) }?;
                piece.panic_record = Some(slot);
            }
        }
        let piece = Arc::new(piece);
        let _ = loaded[i].set(piece.clone());
        Ok(piece)
    }

    /// The panic a kernel of this module recorded, if any: `kernel panicked at
    /// file:line:col (block .., thread ..): message`.
    pub fn recorded_panic(&self) -> Option<String> {
        match &self.code {
            Code::Whole(loaded) => loaded.panic_record.as_ref()?.read(),
            Code::PerKernel { record, .. } => record.get()?.read(),
        }
    }

    /// Address and size of the module global `name`, if defined.
    ///
    /// A module loaded one kernel at a time (an embedded image with cubins for the
    /// device) gives each kernel its own copy of the module's globals: ask for one
    /// with [`kernel_global`](Self::kernel_global); here it is refused with
    /// [`Error::InvalidArgument`].
    pub fn global(&self, name: &str) -> Result<Option<(u64, usize)>> {
        let Code::Whole(loaded) = &self.code else {
            return Err(Error::InvalidArgument {
                what: format!("global `{name}` of module `{}`", self.name),
                reason: "the module is loaded one kernel at a time, each kernel with its own \
                         copy of the module's globals: use Module::kernel_global"
                    .into(),
            });
        };
        self.device.bind()?;
        // SAFETY: the module is loaded on this device's context, bound above.
        unsafe { driver::module_global(loaded.raw, name) }
    }

    /// Address and size of the copy of module global `name` that kernel `kernel`
    /// uses (loading the kernel's code if it is not loaded yet), if defined. For a
    /// module loaded whole, the same as [`global`](Self::global) (`kernel` is not
    /// looked up).
    ///
    /// Errors: [`Error::KernelNotFound`] when a module loaded one kernel at a time
    /// has no kernel `kernel`.
    pub fn kernel_global(&self, kernel: &str, name: &str) -> Result<Option<(u64, usize)>> {
        let loaded = {
            let _functions = self.functions.lock_unpoisoned();
            self.code_of(kernel)?
        };
        self.device.bind()?;
        // SAFETY: the module is loaded on this device's context, bound above.
        unsafe { driver::module_global(loaded.raw, name) }
    }
}

/// Binds `device` and loads `image` (PTX, NUL-terminated here if it is not, or a
/// cubin) as a driver module.
fn load_raw(device: &Device, name: &str, image: &[u8]) -> Result<RawModule> {
    crate::testing::fault_point!(ModuleLoad, "cuModuleLoadData");
    device.bind()?;
    let mut owned;
    let bytes = if image.starts_with(b"\x7fELF") || image.ends_with(&[0]) {
        image
    } else {
        owned = Vec::with_capacity(image.len() + 1);
        owned.extend_from_slice(image);
        owned.push(0);
        &owned[..]
    };
    driver::module_load(bytes).map_err(|e| Error::ModuleLoad {
        module: name.to_owned(),
        device: device.ordinal(),
        message: e.to_string(),
    })
}

/// Whether `image` names the panic sink. Only then is the sink queried: a failed
/// cuModuleGetGlobal is a driver API error that compute-sanitizer reports.
fn names_the_sink(image: &[u8]) -> bool {
    image
        .windows(PANIC_SINK_SYMBOL.len())
        .any(|w| w == PANIC_SINK_SYMBOL.as_bytes())
}

struct FunctionInner {
    raw: RawFunction,
    name: Arc<str>,
    /// The device's ordinal and launch limits, copied here so a launch's checks
    /// read only the function.
    ordinal: u32,
    limits: LaunchLimits,
    /// Keeps the module loaded while the function lives.
    _module: Arc<LoadedModule>,
    dynamic_shared_limit: AtomicU32,
}

// SAFETY: function handles are plain driver handles, valid while the module (held by
// `_module`) is loaded.
unsafe impl Send for FunctionInner {}
// SAFETY: as above.
unsafe impl Sync for FunctionInner {}

/// A kernel entry point of a loaded module. Cheap to clone.
#[derive(Clone)]
pub struct Function(Arc<FunctionInner>);

impl fmt::Debug for Function {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Function")
            .field("name", &self.0.name)
            .finish()
    }
}

impl Function {
    /// The entry point's name.
    pub fn name(&self) -> &str {
        &self.0.name
    }

    pub(crate) fn name_arc(&self) -> &Arc<str> {
        &self.0.name
    }

    /// The ordinal of the device the function is loaded on.
    pub(crate) fn ordinal(&self) -> u32 {
        self.0.ordinal
    }

    /// The limits a launch configuration of this function is checked against.
    pub(crate) fn limits(&self) -> &LaunchLimits {
        &self.0.limits
    }

    pub(crate) fn raw(&self) -> RawFunction {
        self.0.raw
    }

    /// Raise the function's dynamic shared memory limit when a launch needs more
    /// than the default 48 KiB (validated against the device before this call).
    #[inline]
    pub(crate) fn ensure_dynamic_shared(&self, bytes: u32) -> Result<()> {
        if bytes <= self.0.dynamic_shared_limit.load(Ordering::Acquire) {
            return Ok(());
        }
        self.raise_dynamic_shared(bytes)
    }

    #[cold]
    #[inline(never)]
    fn raise_dynamic_shared(&self, bytes: u32) -> Result<()> {
        // SAFETY: the function is alive (its module is held) and the context is bound
        // by the caller.
        unsafe { driver::function_set_max_dynamic_shared(self.0.raw, bytes) }?;
        self.0
            .dynamic_shared_limit
            .fetch_max(bytes, Ordering::AcqRel);
        Ok(())
    }
}

/// How many runtimes a [`KernelHandle`] caches its function for.
const HANDLE_SLOTS: usize = 8;

/// A kernel of an embedded module, resolved once per runtime: what generated
/// launchers keep in a `static`.
///
/// Resolving it for a runtime the first time loads the module and checks the
/// launcher's ABI descriptor against the device build's (see
/// [`check_abi`](Self::check_abi)). The handle caches the function in one of eight
/// slots, chosen by the runtime's id (ids are handed out in order, so eight runtimes
/// created one after another, such as those of an eight-GPU machine, each get
/// their own); later launches on that runtime take
/// the cached function without repeating either. A slot is filled once and kept
/// for the process: a runtime whose slot another runtime took first (a ninth
/// runtime, or one created after a dropped one) resolves through its own module
/// map on every launch, correctly but slower, and the first runtime's module stays
/// loaded after that runtime is dropped.
pub struct KernelHandle {
    image: &'static ModuleImage,
    name: &'static str,
    abi: &'static [u64],
    params: &'static [&'static str],
    sim: Option<SimEntry>,
    slots: [OnceLock<(u64, Function)>; HANDLE_SLOTS],
}

impl KernelHandle {
    /// A handle for kernel `name` of `image`, whose launcher passes the parameters
    /// `params` described by `abi` (see `xlog_device::abi`).
    pub const fn new(
        image: &'static ModuleImage,
        name: &'static str,
        abi: &'static [u64],
        params: &'static [&'static str],
    ) -> Self {
        KernelHandle {
            image,
            name,
            abi,
            params,
            sim: None,
            slots: [const { OnceLock::new() }; HANDLE_SLOTS],
        }
    }

    /// The same handle, with the kernel's host build for the simulator (what
    /// `#[xlog_kernel]` generates next to the device entry point).
    ///
    /// # Safety
    /// 1. `entry` is the host build of this kernel: it reads the parameter list the
    ///    handle's ABI descriptor describes, in that order, and runs this kernel's
    ///    body (the simulator runs it for every launch of the kernel on a runtime,
    ///    whichever handle resolved it first).
    pub const unsafe fn simulated_by(mut self, entry: SimEntry) -> Self {
        self.sim = Some(entry);
        self
    }

    /// The kernel's name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The launcher's ABI descriptor (see `xlog_device::abi`).
    pub(crate) fn abi(&self) -> &'static [u64] {
        self.abi
    }

    /// Compares the launcher's ABI descriptor with the one the device build
    /// exported for this kernel. Needs no GPU.
    ///
    /// Errors: [`Error::KernelNotFound`] when the module's kernel table does not list
    /// the kernel (or the module has no table, as a
    /// [`ModuleImage::from_ptx`] image), [`Error::KernelAbiMismatch`] naming the
    /// first differing parameter.
    pub fn check_abi(&self) -> Result<()> {
        let Some(device) = self.image.kernel_abi(self.name) else {
            return Err(Error::KernelNotFound {
                kernel: self.name.to_owned(),
                module: self.image.name().to_owned(),
            });
        };
        let Some(diff) = abi::first_difference(self.abi, device) else {
            return Ok(());
        };
        let (parameter, host, device) = match diff {
            AbiDifference::Header { host, device } => (
                "the parameter list".to_owned(),
                abi::describe_header(host).to_string(),
                if device == 0 {
                    "no descriptor (an entry point not generated by #[xlog_kernel])".to_owned()
                } else {
                    abi::describe_header(device).to_string()
                },
            ),
            AbiDifference::Param {
                index,
                host,
                device,
            } => (
                match self.params.get(index) {
                    Some(name) => format!("parameter `{name}` (#{})", index + 1),
                    None => format!("parameter #{}", index + 1),
                },
                host.to_string(),
                device.to_string(),
            ),
        };
        Err(Error::KernelAbiMismatch {
            kernel: self.name.to_owned(),
            module: self.image.name().to_owned(),
            parameter,
            host,
            device,
        })
    }

    /// The function for runtime `runtime_id`: the cached one, or the one `load`
    /// gives for this kernel's image after the ABI check (then cached).
    /// `KernelHandle::function`, beside the runtime, supplies `load`.
    #[inline]
    pub(crate) fn resolve(
        &self,
        runtime_id: u64,
        load: impl FnOnce(&'static ModuleImage) -> Result<Arc<Module>>,
    ) -> Result<std::borrow::Cow<'_, Function>> {
        if let Some((id, f)) = self.slot(runtime_id).get() {
            if *id == runtime_id {
                return Ok(std::borrow::Cow::Borrowed(f));
            }
        }
        self.load(runtime_id, load)
    }

    fn slot(&self, runtime_id: u64) -> &OnceLock<(u64, Function)> {
        &self.slots[(runtime_id % self.slots.len() as u64) as usize]
    }

    /// [`resolve`](Self::resolve) when the runtime's function is not cached:
    /// out of line, so launches carry only the cache lookup.
    #[cold]
    #[inline(never)]
    fn load(
        &self,
        runtime_id: u64,
        load_module: impl FnOnce(&'static ModuleImage) -> Result<Arc<Module>>,
    ) -> Result<std::borrow::Cow<'_, Function>> {
        let slot = self.slot(runtime_id);
        self.check_abi()?;
        let f = load_module(self.image)?.function_with(self.name, self.sim)?;
        let _ = slot.set((runtime_id, f.clone()));
        Ok(std::borrow::Cow::Owned(f))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use xlog_device::abi::{header, shape, ParamKind};
    use xlog_device::DeviceCopy;

    const HOST: &[u64] = &[
        header(false, 2, 0, 0),
        shape::<f32>(ParamKind::Scalar),
        <f32 as DeviceCopy>::__LAYOUT,
        shape::<f32>(ParamKind::Write),
        <f32 as DeviceCopy>::__LAYOUT,
    ];
    const WIDE: &[u64] = &[
        header(false, 2, 0, 0),
        shape::<f32>(ParamKind::Scalar),
        <f32 as DeviceCopy>::__LAYOUT,
        shape::<f64>(ParamKind::Write),
        <f64 as DeviceCopy>::__LAYOUT,
    ];
    // SAFETY: never loaded or launched.
    static IMAGE: ModuleImage = unsafe {
        ModuleImage::new(
            "k",
            "/k",
            "",
            &[],
            &[("same", HOST), ("wide", WIDE), ("bare", &[])],
        )
    };

    #[test]
    fn matching_descriptors_pass() {
        KernelHandle::new(&IMAGE, "same", HOST, &["a", "out"])
            .check_abi()
            .unwrap();
    }

    #[test]
    fn a_different_element_type_names_the_parameter() {
        let e = KernelHandle::new(&IMAGE, "wide", HOST, &["a", "out"])
            .check_abi()
            .unwrap_err();
        let msg = e.to_string();
        assert!(matches!(e, Error::KernelAbiMismatch { .. }), "{msg}");
        assert!(msg.contains("parameter `out` (#2)"), "{msg}");
        assert!(msg.contains("elements of 4 bytes"), "{msg}");
        assert!(msg.contains("elements of 8 bytes"), "{msg}");
    }

    #[test]
    fn a_launcher_without_the_kernels_block_size_is_refused() {
        const BLOCK_256: &[u64] = &[header(false, 2, 256, 0), HOST[1], HOST[2], HOST[3], HOST[4]];
        // SAFETY: never loaded or launched.
        static TILED: ModuleImage =
            unsafe { ModuleImage::new("k", "/k#k", "", &[], &[("tiled", BLOCK_256)]) };
        let e = KernelHandle::new(&TILED, "tiled", HOST, &["a", "out"])
            .check_abi()
            .unwrap_err();
        assert!(e.to_string().contains("block = 256"), "{e}");
        KernelHandle::new(&TILED, "tiled", BLOCK_256, &["a", "out"])
            .check_abi()
            .unwrap();
    }

    #[test]
    fn missing_kernels_and_descriptors_are_refused() {
        let e = KernelHandle::new(&IMAGE, "absent", HOST, &["a", "out"])
            .check_abi()
            .unwrap_err();
        assert!(matches!(e, Error::KernelNotFound { .. }));
        let e = KernelHandle::new(&IMAGE, "bare", HOST, &["a", "out"])
            .check_abi()
            .unwrap_err();
        assert!(e.to_string().contains("no descriptor"), "{e}");
        // SAFETY: never loaded or launched.
        static PLAIN: ModuleImage = unsafe { ModuleImage::from_ptx("p", "") };
        let e = KernelHandle::new(&PLAIN, "same", HOST, &["a", "out"])
            .check_abi()
            .unwrap_err();
        assert!(matches!(e, Error::KernelNotFound { .. }));
    }
}
