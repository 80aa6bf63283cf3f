//! The one error type of the runtime.
//!
//! Every variant carries the facts a user needs to act: which buffer, kernel,
//! stream or device, how many bytes were asked for and how many remained. Messages
//! are lowercase, say what failed, and end with what to do about it.

/// Result alias used throughout xlog.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in the runtime.
///
/// `Debug` prints the same actionable message as `Display` (after the variant's
/// name), so `fn main() -> xlog::Result<()>` reports what to do, not `NoDriver`.
#[derive(thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The CUDA driver library (`libcuda.so`) could not be loaded.
    #[error(
        "no CUDA driver found (libcuda.so could not be loaded): install the NVIDIA driver \
         or run on a machine with a GPU, or set XLOG_BACKEND=sim to run on xlog's CPU simulator"
    )]
    NoDriver,

    /// The driver loaded but sees no GPU (`cuInit` answered `CUDA_ERROR_NO_DEVICE`):
    /// a container or VM without one passed through, or `CUDA_VISIBLE_DEVICES`
    /// hiding every device.
    #[error(
        "the CUDA driver is installed but sees no GPU: check `nvidia-smi` and \
         CUDA_VISIBLE_DEVICES, or set XLOG_BACKEND=sim to run on xlog's CPU simulator"
    )]
    NoDevice,

    /// The driver loaded, but the requested ordinal does not name a device.
    #[error("device ordinal {ordinal} is out of range: this machine has {count} CUDA device(s)")]
    DeviceOutOfRange {
        /// The ordinal asked for.
        ordinal: u32,
        /// How many devices the driver reports.
        count: u32,
    },

    /// A driver call failed.
    #[error("CUDA driver call {call} failed: {message}{}", context_suffix(context))]
    Driver {
        /// The driver entry point, e.g. `cuMemAllocAsync`.
        call: &'static str,
        /// The driver's name and description of the error code.
        message: String,
        /// The raw `CUresult` value.
        code: u32,
        /// What xlog was doing (a kernel, a buffer), when known.
        context: Option<String>,
    },

    /// An allocation would take the runtime past its byte budget.
    #[error(
        "allocation of {requested} bytes refused by the budget: {remaining} of {limit} bytes \
         remain{}; free buffers, call `reap` to retire pending frees, or raise the budget \
         (XLOG_BUDGET_BYTES or RuntimeBuilder::budget)",
        cached_note(*.cached)
    )]
    BudgetExceeded {
        /// Bytes the allocation asked for (through a caching pool: the block the
        /// pool asked upstream for, a size class or a segment).
        requested: usize,
        /// Bytes still available under the budget at the time of the refusal.
        remaining: usize,
        /// The budget's limit in bytes.
        limit: usize,
        /// Bytes of the used budget that a caching pool holds free but could not
        /// give back when refused: the free rest of segments that still have a
        /// piece in use (upstream blocks go back whole). 0 without a pool.
        cached: usize,
    },

    /// An element count times the element size does not fit in `usize`.
    #[error("a buffer of {len} elements of {elem_size} bytes overflows the address space")]
    SizeOverflow {
        /// Requested element count.
        len: usize,
        /// Size of one element in bytes.
        elem_size: usize,
    },

    /// A block id whose memory was freed (and perhaps reused) was presented.
    #[error(
        "stale block handle {ptr:#x} (generation {generation}) refused: its memory was \
         already freed; the handle must not be used again"
    )]
    StaleBlock {
        /// Device address of the stale handle.
        ptr: u64,
        /// Generation the handle carried (`Generation.0`).
        generation: u64,
    },

    /// The host allocator refused the memory of a [`crate::resource::HostResource`] block.
    #[error("the host allocator refused {bytes} bytes: free host memory or allocate less")]
    HostOutOfMemory {
        /// Bytes asked for.
        bytes: usize,
    },

    /// A buffer or stream of one runtime was used with another.
    #[error(
        "{what} belongs to runtime {found} (device {found_device}) but was used with runtime \
         {expected} (device {expected_device}); allocate it from the runtime that launches"
    )]
    WrongRuntime {
        /// What was mixed up ("buffer", "stream", ...).
        what: &'static str,
        /// Id of the runtime that owns the object.
        found: u64,
        /// Device of the runtime that owns the object.
        found_device: u32,
        /// Id of the runtime in use.
        expected: u64,
        /// Device of the runtime in use.
        expected_device: u32,
    },

    /// The manual recorder was given memory xlog does not track.
    #[error(
        "launch refused: {what} is not tracked by xlog, so its cross-stream hazards cannot be \
         fenced; allocate it with the runtime, or call `skip_untracked()` on the recorder after \
         ordering it yourself"
    )]
    Untracked {
        /// Description of the offending argument.
        what: String,
    },

    /// The resource stack cannot order frees after stream work, so fencing is impossible.
    #[error(
        "launch refused: the resource stack `{resource}` does not order frees after stream work \
         (it cannot track streams); build the runtime on the async or direct device backend"
    )]
    UntrackableResource {
        /// The resource's description.
        resource: String,
    },

    /// A launch configuration is invalid.
    #[error("invalid launch configuration for `{kernel}`: {reason}")]
    InvalidLaunch {
        /// Kernel name.
        kernel: String,
        /// What is wrong and what the limit is.
        reason: String,
    },

    /// An argument the call cannot accept, when no more specific variant fits: a
    /// short or mismatched buffer, a malformed environment setting, a stream of a
    /// placeholder or dropped runtime, a resource on another device.
    #[error("{what}: {reason}")]
    InvalidArgument {
        /// The call and argument.
        what: String,
        /// What is wrong.
        reason: String,
    },

    /// A module does not contain the requested kernel.
    #[error(
        "kernel `{kernel}` not found in module `{module}`: check the kernel name and that the \
         kernel crate was rebuilt for the device"
    )]
    KernelNotFound {
        /// The requested entry point.
        kernel: String,
        /// The module's name.
        module: String,
    },

    /// A typed launcher and its module's device build disagree on the kernel's
    /// parameter list: launching would pass the wrong bytes.
    #[error(
        "kernel `{kernel}` of module `{module}`: the launcher and the device build disagree on          {parameter}: the launcher passes {host}, the device code expects {device}; rebuild the          kernel crate, and make sure nothing (a feature, a cfg, a type alias, a re-exported          module) makes its host and device builds see different types"
    )]
    KernelAbiMismatch {
        /// The kernel's entry point.
        kernel: String,
        /// The module's name.
        module: String,
        /// The first differing parameter (`parameter `x` (#2)`), or the parameter list.
        parameter: String,
        /// What the host launcher passes.
        host: String,
        /// What the device entry point takes.
        device: String,
    },

    /// A module image could not be loaded.
    #[error("module `{module}` failed to load on device {device}: {message}")]
    ModuleLoad {
        /// The module's name.
        module: String,
        /// Device ordinal.
        device: u32,
        /// The driver's message.
        message: String,
    },

    /// A kernel panicked on the device.
    #[error("kernel `{kernel}` panicked on the device: {message}")]
    KernelPanic {
        /// The kernel that was last launched on the stream.
        kernel: String,
        /// The panic message and location, when the device reported them.
        message: String,
    },

    /// A recursive kernel faulted without a panic: a recursion deeper than the GPU
    /// stack ran off it (the one fault safe code can cause), which ends the context
    /// as a panic does.
    #[error(
        "kernel `{kernel}` most likely overflowed its GPU stack: it recurses ({recursion}), \
         and a recursion deeper than the stack of {stack} per thread runs off it; bound the \
         recursion, or raise the stack with `Runtime::set_stack_size` on a new runtime \
         (the device reported: {cause})",
        stack = match stack_bytes { Some(b) => format!("{b} bytes"), None => "unknown size".into() }
    )]
    StackOverflow {
        /// The kernel that was last launched on the stream.
        kernel: String,
        /// The cycle of calls it reaches, `f → g → f`.
        recursion: String,
        /// The context's stack per thread, as read when a module was last loaded or
        /// the stack last set (a faulted context answers no query).
        stack_bytes: Option<usize>,
        /// The driver error the fault surfaced as.
        cause: String,
    },

    /// Something the selected backend cannot do: a PTX kernel loaded at run time on
    /// the simulator, the simulator in a process that already uses the GPU.
    #[error("{what} is not supported: {reason}")]
    Unsupported {
        /// What was asked for.
        what: String,
        /// Why not, and what to do instead.
        reason: String,
    },

    /// No NCCL library could be loaded (communicators need it; everything else
    /// runs without it).
    #[error(
        "NCCL not found ({searched}): install it with `pip install nvidia-nccl-cu12` (or \
         `nvidia-nccl-cu13`), or your distribution's libnccl2 package, or point XLOG_NCCL at \
         libnccl.so.2 or the directory that holds it"
    )]
    NcclNotFound {
        /// Where xlog looked, and why each place failed.
        searched: String,
    },

    /// NCCL refused a call or a communicator failed. `code` is NCCL's
    /// `ncclResult_t`; `message` is NCCL's own text (`ncclGetErrorString`, and
    /// `ncclGetLastError` where it says more).
    #[error("{call} failed on rank {rank} of {ranks} (device {device}): {message}")]
    Nccl {
        /// The NCCL call.
        call: &'static str,
        /// NCCL's result code.
        code: u32,
        /// NCCL's message.
        message: String,
        /// The rank of the communicator (0 before one exists).
        rank: u32,
        /// The communicator's number of ranks (0 before one exists).
        ranks: u32,
        /// The device the communicator uses.
        device: u32,
    },

    /// A communicator's work did not finish within the caller's timeout (a peer
    /// that stopped or never issued the matching call); the communicator was
    /// aborted and refuses further work.
    #[error(
        "rank {rank} of {ranks} (device {device}): communicator work did not finish within \
         {timeout:?}; it was aborted (a peer stopped, or issued different collectives)"
    )]
    CommTimeout {
        /// The rank of the communicator.
        rank: u32,
        /// The communicator's number of ranks.
        ranks: u32,
        /// The device the communicator uses.
        device: u32,
        /// The timeout the caller set.
        timeout: std::time::Duration,
    },

    /// A communicator's ranks did not all join within the caller's timeout
    /// (`Communicator::init_rank_within`); its initialisation was aborted.
    #[error(
        "rank {rank} of {ranks} (device {device}): the communicator's ranks did not all join \
         within {timeout:?}; its initialisation was aborted (a rank never started, or was given \
         another unique id or number of ranks)"
    )]
    CommInitTimeout {
        /// The rank this process asked for.
        rank: u32,
        /// The number of ranks.
        ranks: u32,
        /// The device of this rank.
        device: u32,
        /// The timeout the caller set.
        timeout: std::time::Duration,
    },

    /// A fault injected by a test through the runtime's fault hooks.
    #[error("injected fault at {site}")]
    InjectedFault {
        /// Where the fault was injected.
        site: &'static str,
    },
}

impl std::fmt::Debug for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let variant = match self {
            Error::NoDriver => "NoDriver",
            Error::NoDevice => "NoDevice",
            Error::DeviceOutOfRange { .. } => "DeviceOutOfRange",
            Error::Driver { .. } => "Driver",
            Error::Unsupported { .. } => "Unsupported",
            Error::BudgetExceeded { .. } => "BudgetExceeded",
            Error::SizeOverflow { .. } => "SizeOverflow",
            Error::StaleBlock { .. } => "StaleBlock",
            Error::WrongRuntime { .. } => "WrongRuntime",
            Error::HostOutOfMemory { .. } => "HostOutOfMemory",
            Error::Untracked { .. } => "Untracked",
            Error::UntrackableResource { .. } => "UntrackableResource",
            Error::InvalidLaunch { .. } => "InvalidLaunch",
            Error::InvalidArgument { .. } => "InvalidArgument",
            Error::KernelNotFound { .. } => "KernelNotFound",
            Error::KernelAbiMismatch { .. } => "KernelAbiMismatch",
            Error::ModuleLoad { .. } => "ModuleLoad",
            Error::KernelPanic { .. } => "KernelPanic",
            Error::StackOverflow { .. } => "StackOverflow",
            Error::NcclNotFound { .. } => "NcclNotFound",
            Error::Nccl { .. } => "Nccl",
            Error::CommTimeout { .. } => "CommTimeout",
            Error::CommInitTimeout { .. } => "CommInitTimeout",
            Error::InjectedFault { .. } => "InjectedFault",
        };
        write!(f, "{variant}: {self}")
    }
}

fn cached_note(cached: usize) -> String {
    match cached {
        0 => String::new(),
        n => format!(
            " ({n} of the used bytes are a caching pool's free memory, the rest of \
             segments still partly in use, which it gives back only once they are free)"
        ),
    }
}

fn context_suffix(context: &Option<String>) -> String {
    match context {
        Some(c) => format!(" (while {c})"),
        None => String::new(),
    }
}

impl Error {
    /// Whether the failure is that this machine has no usable GPU: no driver
    /// ([`Error::NoDriver`]), a driver that sees none ([`Error::NoDevice`]), or no
    /// device at all ([`Error::DeviceOutOfRange`] with a count of zero). A program
    /// that can run without a GPU (on the simulator, or by saying so and exiting)
    /// tests this rather than matching the variants.
    ///
    /// ```
    /// # use xlog_runtime::{Error, Runtime};
    /// match Runtime::get(0) {
    ///     Err(e) if e.is_no_gpu() => eprintln!("no GPU here: {e}"),
    ///     Err(e) => eprintln!("error: {e}"),
    ///     Ok(rt) => println!("{}", rt.device().info().name),
    /// }
    /// ```
    pub fn is_no_gpu(&self) -> bool {
        matches!(
            self,
            Error::NoDriver | Error::NoDevice | Error::DeviceOutOfRange { count: 0, .. }
        )
    }

    /// Build a [`Error::Driver`] from a cudarc driver error.
    ///
    /// Cold, as every constructor of an error on a hot path: the code that builds
    /// the message stays out of the launch path's instruction stream.
    #[cold]
    #[inline(never)]
    pub(crate) fn driver(call: &'static str, err: cudarc::driver::DriverError) -> Self {
        let name = err
            .error_name()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|_| format!("CUresult {}", err.0 as u32));
        let text = err
            .error_string()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        Error::Driver {
            call,
            message: if text.is_empty() {
                name
            } else {
                format!("{name}: {text}")
            },
            code: err.0 as u32,
            context: None,
        }
    }

    /// An [`Error::InvalidLaunch`] of `kernel` for `reason`.
    #[cold]
    #[inline(never)]
    pub(crate) fn invalid_launch(kernel: &str, reason: std::fmt::Arguments<'_>) -> Self {
        Error::InvalidLaunch {
            kernel: kernel.to_owned(),
            reason: reason.to_string(),
        }
    }

    /// Whether this is a driver error that a kernel's fault leaves on its context
    /// for every later call (`CUDA_ERROR_LAUNCH_FAILED`, `ILLEGAL_ADDRESS`, a
    /// trap's `ILLEGAL_INSTRUCTION`, a stack overflow's `HARDWARE_STACK_ERROR`,
    /// ...): the first call on the context after the fault reports it, whatever
    /// that call is (a download, a copy, a free, an event wait).
    pub fn is_kernel_fault(&self) -> bool {
        // CUresult codes: 700 ILLEGAL_ADDRESS, 702 LAUNCH_TIMEOUT, 710 ASSERT,
        // 714 HARDWARE_STACK_ERROR, 715 ILLEGAL_INSTRUCTION, 716 MISALIGNED_ADDRESS,
        // 717 INVALID_ADDRESS_SPACE, 718 INVALID_PC, 719 LAUNCH_FAILED.
        matches!(
            self,
            Error::Driver {
                code: 700 | 702 | 710 | 714..=719,
                ..
            }
        )
    }

    /// Attach what xlog was doing to a driver error; other variants pass through.
    #[cold]
    #[inline(never)]
    pub(crate) fn while_(self, doing: impl FnOnce() -> String) -> Self {
        match self {
            Error::Driver {
                call,
                message,
                code,
                context: None,
            } => Error::Driver {
                call,
                message,
                code,
                context: Some(doing()),
            },
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_says_what_to_do() {
        // What `fn main() -> xlog::Result<()>` prints when it returns this error.
        let shown = format!("{:?}", Error::NoDriver);
        assert!(
            shown.starts_with("NoDriver: no CUDA driver found"),
            "{shown}"
        );
        assert!(shown.contains("install the NVIDIA driver"), "{shown}");
    }

    #[test]
    fn no_gpu_covers_exactly_the_machines_without_one() {
        let none = |count| Error::DeviceOutOfRange { ordinal: 0, count };
        assert!(Error::NoDriver.is_no_gpu());
        assert!(Error::NoDevice.is_no_gpu());
        assert!(none(0).is_no_gpu());
        // Asking for a second GPU on a machine with one is a mistake, not a
        // machine without a GPU.
        assert!(!none(1).is_no_gpu());
        let shown = format!("{:?}", Error::NoDevice);
        assert!(shown.starts_with("NoDevice: the CUDA driver is installed but sees no GPU"));
        assert!(shown.contains("CUDA_VISIBLE_DEVICES") && shown.contains("XLOG_BACKEND=sim"));
    }

    #[test]
    fn budget_message_carries_the_numbers_and_a_fix() {
        let e = Error::BudgetExceeded {
            requested: 300,
            remaining: 100,
            limit: 1000,
            cached: 0,
        };
        let s = e.to_string();
        assert!(s.contains("300 bytes"), "{s}");
        assert!(s.contains("100 of 1000 bytes"), "{s}");
        assert!(s.contains("XLOG_BUDGET_BYTES"), "{s}");
        assert!(s.starts_with(char::is_lowercase), "{s}");
        assert!(!s.ends_with('.'), "{s}");
    }

    #[test]
    fn driver_context_is_appended_once() {
        let e = Error::Driver {
            call: "cuLaunchKernel",
            message: "CUDA_ERROR_INVALID_VALUE".into(),
            code: 1,
            context: None,
        }
        .while_(|| "launching `saxpy`".into())
        .while_(|| "ignored".into());
        let s = e.to_string();
        assert!(s.contains("cuLaunchKernel"), "{s}");
        assert!(s.ends_with("(while launching `saxpy`)"), "{s}");
    }

    #[test]
    fn stale_block_names_the_address() {
        let s = Error::StaleBlock {
            ptr: 0x1000,
            generation: 7,
        }
        .to_string();
        assert!(s.contains("0x1000") && s.contains("generation 7"), "{s}");
    }
}
