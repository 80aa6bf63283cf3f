//! The only module that calls NCCL: finding and loading the library, and one
//! thin wrapper per entry point that turns `ncclResult_t` into [`Error::Nccl`].
//!
//! NCCL is loaded at run time, as the CUDA driver is, so builds need no NCCL and a
//! process that never makes a communicator never loads it. The search
//! ([`library`]), first match wins:
//!
//! 1. `XLOG_NCCL`: a path to the library, or to a directory holding `libnccl.so.2`
//!    (or `libnccl.so`); when it is set nothing else is tried;
//! 2. `libnccl.so.2`, then `libnccl.so`, through the dynamic loader's own search
//!    (`LD_LIBRARY_PATH`, the system library path);
//! 3. the `nvidia-nccl` Python wheel of `python3` (`$XLOG_PYTHON` if set): the
//!    `nvidia/nccl/lib/libnccl.so.2` of the `nvidia` namespace package.
//!
//! The symbols are resolved here rather than through cudarc's `nccl` module:
//! cudarc's dynamic loader tries only names like `libnccl.so` and `libnccl.so.12`,
//! never the `libnccl.so.2` that NCCL packages and the Python wheel install, and it
//! panics when none is found where xlog must return an error saying what to
//! install.
//!
//! See the [NCCL API](https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/api.html).

use std::ffi::{c_char, c_int, c_void, CStr};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::error::{Error, Result};

/// Environment variable naming the NCCL library (or its directory).
pub const NCCL_ENV: &str = "XLOG_NCCL";

/// `ncclComm_t`.
pub(crate) type RawComm = *mut c_void;

/// `ncclUniqueId`: 128 opaque bytes, passed by value.
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct RawUniqueId {
    pub(crate) internal: [c_char; 128],
}

/// `ncclResult_t` values xlog names.
pub(crate) const SUCCESS: c_int = 0;
const IN_PROGRESS: c_int = 7;

/// `NCCL_CONFIG_UNDEF_INT`: a field left to NCCL's default.
const UNDEF_INT: c_int = c_int::MIN;

/// `ncclConfig_t` as NCCL 2.18 lays it out. NCCL reads `size` bytes of it over
/// its own defaults and ignores the fields a newer `version` added, so this
/// prefix is valid for every later NCCL.
#[repr(C)]
struct RawConfig {
    size: usize,
    magic: u32,
    version: u32,
    blocking: c_int,
    cga_cluster_size: c_int,
    min_ctas: c_int,
    max_ctas: c_int,
    net_name: *const c_char,
    split_share: c_int,
}

impl RawConfig {
    /// NCCL's defaults, except `blocking`.
    fn new(blocking: bool) -> RawConfig {
        RawConfig {
            size: std::mem::size_of::<RawConfig>(),
            magic: 0xcafe_beef,
            // NCCL_VERSION(2, 18, 0).
            version: 21_800,
            blocking: blocking as c_int,
            cga_cluster_size: UNDEF_INT,
            min_ctas: UNDEF_INT,
            max_ctas: UNDEF_INT,
            net_name: std::ptr::null(),
            split_share: UNDEF_INT,
        }
    }
}

type Res = c_int;
type Stream = *mut c_void;

/// The entry points xlog calls, resolved once.
struct Api {
    get_version: unsafe extern "C" fn(*mut c_int) -> Res,
    get_unique_id: unsafe extern "C" fn(*mut RawUniqueId) -> Res,
    comm_init_rank: unsafe extern "C" fn(*mut RawComm, c_int, RawUniqueId, c_int) -> Res,
    comm_init_rank_config:
        unsafe extern "C" fn(*mut RawComm, c_int, RawUniqueId, c_int, *mut RawConfig) -> Res,
    comm_init_all: unsafe extern "C" fn(*mut RawComm, c_int, *const c_int) -> Res,
    comm_destroy: unsafe extern "C" fn(RawComm) -> Res,
    comm_abort: unsafe extern "C" fn(RawComm) -> Res,
    comm_get_async_error: unsafe extern "C" fn(RawComm, *mut Res) -> Res,
    get_error_string: unsafe extern "C" fn(Res) -> *const c_char,
    get_last_error: Option<unsafe extern "C" fn(RawComm) -> *const c_char>,
    all_reduce: unsafe extern "C" fn(
        *const c_void,
        *mut c_void,
        usize,
        c_int,
        c_int,
        RawComm,
        Stream,
    ) -> Res,
    reduce: unsafe extern "C" fn(
        *const c_void,
        *mut c_void,
        usize,
        c_int,
        c_int,
        c_int,
        RawComm,
        Stream,
    ) -> Res,
    broadcast: unsafe extern "C" fn(
        *const c_void,
        *mut c_void,
        usize,
        c_int,
        c_int,
        RawComm,
        Stream,
    ) -> Res,
    all_gather:
        unsafe extern "C" fn(*const c_void, *mut c_void, usize, c_int, RawComm, Stream) -> Res,
    reduce_scatter: unsafe extern "C" fn(
        *const c_void,
        *mut c_void,
        usize,
        c_int,
        c_int,
        RawComm,
        Stream,
    ) -> Res,
    send: unsafe extern "C" fn(*const c_void, usize, c_int, c_int, RawComm, Stream) -> Res,
    recv: unsafe extern "C" fn(*mut c_void, usize, c_int, c_int, RawComm, Stream) -> Res,
    group_start: unsafe extern "C" fn() -> Res,
    group_end: unsafe extern "C" fn() -> Res,
    /// Keeps the library loaded (the pointers above point into it).
    _lib: libloading::Library,
    /// Where it was loaded from.
    path: String,
    version: c_int,
}

/// The library's file names, newest ABI first.
const NAMES: [&str; 2] = ["libnccl.so.2", "libnccl.so"];

/// Load NCCL (once per process; a failure is remembered and returned again).
fn api() -> Result<&'static Api> {
    static API: OnceLock<std::result::Result<Api, String>> = OnceLock::new();
    API.get_or_init(load)
        .as_ref()
        .map_err(|searched| Error::NcclNotFound {
            searched: searched.clone(),
        })
}

/// The loaded library's path and version (`ncclGetVersion`, e.g. 22803 for 2.28.3).
pub(crate) fn library() -> Result<(&'static str, u32)> {
    let api = api()?;
    Ok((&api.path, api.version as u32))
}

fn load() -> std::result::Result<Api, String> {
    let set = std::env::var_os(NCCL_ENV);
    load_from(&candidates(set.as_deref().map(Path::new)), set.is_some())
}

/// Where to look: the `XLOG_NCCL` setting alone when there is one.
fn candidates(setting: Option<&Path>) -> Vec<PathBuf> {
    match setting {
        Some(p) if p.is_dir() => NAMES.iter().map(|n| p.join(n)).collect(),
        Some(p) => vec![p.to_path_buf()],
        None => {
            let mut c: Vec<PathBuf> = NAMES.iter().map(PathBuf::from).collect();
            c.extend(python_wheel());
            c
        }
    }
}

/// The first of `candidates` that loads and has every entry point, or what each
/// failure was.
fn load_from(candidates: &[PathBuf], set: bool) -> std::result::Result<Api, String> {
    let mut tried: Vec<String> = Vec::new();
    for path in candidates {
        // SAFETY: loading NCCL runs its initialisers, which only set up the
        // library's own state.
        match unsafe { libloading::Library::new(path) } {
            Ok(lib) => match resolve(lib, path) {
                Ok(api) => return Ok(api),
                Err(e) => tried.push(format!("{}: {e}", path.display())),
            },
            Err(e) => tried.push(format!("{}: {e}", path.display())),
        }
    }
    if !set {
        tried.push("no `nvidia-nccl` Python wheel found by python3".to_owned());
    }
    Err(tried.join("; "))
}

/// The `nvidia-nccl` wheel's library, found through `python3`'s `nvidia` package.
fn python_wheel() -> Option<PathBuf> {
    const SCRIPT: &str = "import nvidia\nfor p in nvidia.__path__: print(p)";
    let python = std::env::var_os("XLOG_PYTHON").unwrap_or_else(|| "python3".into());
    let out = std::process::Command::new(python)
        .args(["-c", SCRIPT])
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|dir| Path::new(dir.trim()).join("nccl/lib/libnccl.so.2"))
        .find(|p| p.is_file())
}

fn resolve(lib: libloading::Library, path: &Path) -> std::result::Result<Api, String> {
    macro_rules! sym {
        ($name:literal) => {
            // SAFETY: the symbol is NCCL's entry point of that name, whose C
            // signature the field's type spells out (nccl.h).
            *unsafe { lib.get(concat!($name, "\0").as_bytes()) }
                .map_err(|e| format!("no symbol {}: {e}", $name))?
        };
    }
    let get_last_error = {
        // SAFETY: as `sym!`; `ncclGetLastError` exists from NCCL 2.13 on.
        unsafe { lib.get::<unsafe extern "C" fn(RawComm) -> *const c_char>(b"ncclGetLastError\0") }
            .ok()
            .map(|s| *s)
    };
    let mut api = Api {
        get_version: sym!("ncclGetVersion"),
        get_unique_id: sym!("ncclGetUniqueId"),
        comm_init_rank: sym!("ncclCommInitRank"),
        comm_init_rank_config: sym!("ncclCommInitRankConfig"),
        comm_init_all: sym!("ncclCommInitAll"),
        comm_destroy: sym!("ncclCommDestroy"),
        comm_abort: sym!("ncclCommAbort"),
        comm_get_async_error: sym!("ncclCommGetAsyncError"),
        get_error_string: sym!("ncclGetErrorString"),
        get_last_error,
        all_reduce: sym!("ncclAllReduce"),
        reduce: sym!("ncclReduce"),
        broadcast: sym!("ncclBroadcast"),
        all_gather: sym!("ncclAllGather"),
        reduce_scatter: sym!("ncclReduceScatter"),
        send: sym!("ncclSend"),
        recv: sym!("ncclRecv"),
        group_start: sym!("ncclGroupStart"),
        group_end: sym!("ncclGroupEnd"),
        _lib: lib,
        path: path.display().to_string(),
        version: 0,
    };
    let mut version: c_int = 0;
    // SAFETY: writes one int.
    let r = unsafe { (api.get_version)(&mut version) };
    if r != SUCCESS {
        return Err(format!("ncclGetVersion returned {r}"));
    }
    if version < 21_800 {
        return Err(format!(
            "NCCL {version} is too old; xlog needs NCCL 2.18 or newer"
        ));
    }
    api.version = version;
    Ok(api)
}

/// Where a failed call happened, for its error.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Site {
    pub(crate) rank: u32,
    pub(crate) ranks: u32,
    pub(crate) device: u32,
}

/// NCCL's text for `code`, with the communicator's last error where NCCL has one.
fn message(api: &Api, code: Res, comm: RawComm) -> String {
    // SAFETY: NCCL returns a static string for every code.
    let text = unsafe { (api.get_error_string)(code) };
    let mut m = if text.is_null() {
        format!("ncclResult_t {code}")
    } else {
        // SAFETY: a NUL-terminated static string.
        unsafe { CStr::from_ptr(text) }
            .to_string_lossy()
            .into_owned()
    };
    if let Some(last) = api.get_last_error {
        // SAFETY: `comm` is null or live; NCCL returns a thread-local string.
        let text = unsafe { last(comm) };
        if !text.is_null() {
            // SAFETY: a NUL-terminated string NCCL owns.
            let last = unsafe { CStr::from_ptr(text) }.to_string_lossy();
            if !last.is_empty() {
                m = format!("{m}: {last}");
            }
        }
    }
    m
}

fn check(api: &Api, call: &'static str, code: Res, comm: RawComm, site: Site) -> Result<()> {
    if code == SUCCESS || code == IN_PROGRESS {
        return Ok(());
    }
    Err(Error::Nccl {
        call,
        code: code as u32,
        message: message(api, code, comm),
        rank: site.rank,
        ranks: site.ranks,
        device: site.device,
    })
}

/// `ncclGetUniqueId`.
pub(crate) fn unique_id() -> Result<RawUniqueId> {
    let api = api()?;
    let mut id = RawUniqueId { internal: [0; 128] };
    // SAFETY: writes one id.
    let r = unsafe { (api.get_unique_id)(&mut id) };
    let site = Site {
        rank: 0,
        ranks: 0,
        device: 0,
    };
    check(api, "ncclGetUniqueId", r, std::ptr::null_mut(), site)?;
    Ok(id)
}

/// `ncclCommInitAll`: one communicator per device of `devices`, rank `i` on
/// `devices[i]`. Blocks until every one is ready.
pub(crate) fn comm_init_all(devices: &[c_int]) -> Result<Vec<RawComm>> {
    let api = api()?;
    let mut comms = vec![std::ptr::null_mut(); devices.len()];
    // SAFETY: `comms` has one slot per device.
    let r = unsafe {
        (api.comm_init_all)(comms.as_mut_ptr(), devices.len() as c_int, devices.as_ptr())
    };
    let site = Site {
        rank: 0,
        ranks: devices.len() as u32,
        device: devices.first().copied().unwrap_or(0) as u32,
    };
    check(api, "ncclCommInitAll", r, std::ptr::null_mut(), site)?;
    Ok(comms)
}

/// `ncclCommInitRank` on the current device. Blocks until every rank has joined.
///
/// # Safety
/// 1. The CUDA context of the device the communicator is for is current.
pub(crate) unsafe fn comm_init_rank(id: &RawUniqueId, site: Site) -> Result<RawComm> {
    let api = api()?;
    let mut comm = std::ptr::null_mut();
    // SAFETY: writes one handle; obligation 1 picks the device.
    let r =
        unsafe { (api.comm_init_rank)(&mut comm, site.ranks as c_int, *id, site.rank as c_int) };
    check(api, "ncclCommInitRank", r, std::ptr::null_mut(), site)?;
    Ok(comm)
}

/// `ncclCommInitRankConfig` with `blocking = 0` on the current device: returns
/// the handle at once, while the ranks join in the background; [`comm_ready`]
/// says when it is ready. Every call on the communicator may then return before
/// its work is queued (`ncclInProgress`): [`comm_ready`] says when it is.
///
/// # Safety
/// 1. The CUDA context of the device the communicator is for is current.
pub(crate) unsafe fn comm_init_rank_nonblocking(id: &RawUniqueId, site: Site) -> Result<RawComm> {
    let api = api()?;
    let mut comm = std::ptr::null_mut();
    let mut config = RawConfig::new(false);
    // SAFETY: writes one handle and reads `config`, which lives through the call
    // (NCCL copies it); obligation 1 picks the device.
    let r = unsafe {
        (api.comm_init_rank_config)(
            &mut comm,
            site.ranks as c_int,
            *id,
            site.rank as c_int,
            &mut config,
        )
    };
    if let Err(e) = check(api, "ncclCommInitRankConfig", r, std::ptr::null_mut(), site) {
        if !comm.is_null() {
            // SAFETY: the handle NCCL wrote, never used after this.
            let _ = unsafe { (api.comm_abort)(comm) };
        }
        return Err(e);
    }
    Ok(comm)
}

/// Whether a nonblocking communicator has finished what it was doing (its
/// initialisation, or queueing a group's work): `Ok(false)` while NCCL says
/// `ncclInProgress`, an error when it failed.
///
/// # Safety
/// 1. `comm` is live.
pub(crate) unsafe fn comm_ready(comm: RawComm, site: Site) -> Result<bool> {
    let api = api()?;
    let mut state: Res = SUCCESS;
    // SAFETY: obligation 1; writes one result.
    let r = unsafe { (api.comm_get_async_error)(comm, &mut state) };
    check(api, "ncclCommGetAsyncError", r, comm, site)?;
    if state == IN_PROGRESS {
        return Ok(false);
    }
    check(
        api,
        "ncclCommGetAsyncError (the communicator failed)",
        state,
        comm,
        site,
    )?;
    Ok(true)
}

/// `ncclCommDestroy`: waits for the communicator's queued work, then frees it.
///
/// # Safety
/// 1. `comm` is live and not used after this call.
pub(crate) unsafe fn comm_destroy(comm: RawComm, site: Site) -> Result<()> {
    let api = api()?;
    // SAFETY: obligation 1.
    let r = unsafe { (api.comm_destroy)(comm) };
    check(api, "ncclCommDestroy", r, std::ptr::null_mut(), site)
}

/// `ncclCommAbort`: stops the communicator's kernels and frees it.
///
/// # Safety
/// 1. `comm` is live and not used after this call.
pub(crate) unsafe fn comm_abort(comm: RawComm, site: Site) -> Result<()> {
    let api = api()?;
    // SAFETY: obligation 1.
    let r = unsafe { (api.comm_abort)(comm) };
    check(api, "ncclCommAbort", r, std::ptr::null_mut(), site)
}

/// `ncclCommGetAsyncError`: `Err` carrying NCCL's message when the communicator
/// has failed (a peer died, a network error).
///
/// # Safety
/// 1. `comm` is live.
pub(crate) unsafe fn comm_async_error(comm: RawComm, site: Site) -> Result<()> {
    let api = api()?;
    let mut state: Res = SUCCESS;
    // SAFETY: obligation 1; writes one result.
    let r = unsafe { (api.comm_get_async_error)(comm, &mut state) };
    check(api, "ncclCommGetAsyncError", r, comm, site)?;
    check(
        api,
        "ncclCommGetAsyncError (the communicator failed)",
        state,
        comm,
        site,
    )
}

/// The NCCL data type of an element (`ncclDataType_t`).
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(i32)]
pub enum DataType {
    I8 = 0,
    U8 = 1,
    I32 = 2,
    U32 = 3,
    I64 = 4,
    U64 = 5,
    F16 = 6,
    F32 = 7,
    F64 = 8,
    BF16 = 9,
}

/// One queued operation, as NCCL takes it (counts in elements of `dtype`).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Op {
    AllReduce {
        send: u64,
        recv: u64,
        count: usize,
        dtype: DataType,
        op: c_int,
    },
    Reduce {
        send: u64,
        recv: u64,
        count: usize,
        dtype: DataType,
        op: c_int,
        root: u32,
    },
    Broadcast {
        send: u64,
        recv: u64,
        count: usize,
        dtype: DataType,
        root: u32,
    },
    AllGather {
        send: u64,
        recv: u64,
        send_count: usize,
        dtype: DataType,
    },
    ReduceScatter {
        send: u64,
        recv: u64,
        recv_count: usize,
        dtype: DataType,
        op: c_int,
    },
    Send {
        send: u64,
        count: usize,
        dtype: DataType,
        peer: u32,
    },
    Recv {
        recv: u64,
        count: usize,
        dtype: DataType,
        peer: u32,
    },
}

/// Queue `op` on `stream` (inside or outside a group).
///
/// # Safety
/// 1. `comm` is live, its device's context is current, and `stream` is a live
///    stream of that context.
/// 2. Every address is device memory of that device, valid for what the operation
///    reads or writes (its count of elements), fenced on `stream`, and stays
///    allocated until `stream` has run the operation.
pub(crate) unsafe fn enqueue(comm: RawComm, op: &Op, stream: Stream, site: Site) -> Result<()> {
    let api = api()?;
    let (p, m) = (|a: u64| a as *const c_void, |a: u64| a as *mut c_void);
    // SAFETY: obligations 1 and 2.
    let (call, r) = unsafe {
        match *op {
            Op::AllReduce {
                send,
                recv,
                count,
                dtype,
                op,
            } => (
                "ncclAllReduce",
                (api.all_reduce)(p(send), m(recv), count, dtype as c_int, op, comm, stream),
            ),
            Op::Reduce {
                send,
                recv,
                count,
                dtype,
                op,
                root,
            } => (
                "ncclReduce",
                (api.reduce)(
                    p(send),
                    m(recv),
                    count,
                    dtype as c_int,
                    op,
                    root as c_int,
                    comm,
                    stream,
                ),
            ),
            Op::Broadcast {
                send,
                recv,
                count,
                dtype,
                root,
            } => (
                "ncclBroadcast",
                (api.broadcast)(
                    p(send),
                    m(recv),
                    count,
                    dtype as c_int,
                    root as c_int,
                    comm,
                    stream,
                ),
            ),
            Op::AllGather {
                send,
                recv,
                send_count,
                dtype,
            } => (
                "ncclAllGather",
                (api.all_gather)(p(send), m(recv), send_count, dtype as c_int, comm, stream),
            ),
            Op::ReduceScatter {
                send,
                recv,
                recv_count,
                dtype,
                op,
            } => (
                "ncclReduceScatter",
                (api.reduce_scatter)(
                    p(send),
                    m(recv),
                    recv_count,
                    dtype as c_int,
                    op,
                    comm,
                    stream,
                ),
            ),
            Op::Send {
                send,
                count,
                dtype,
                peer,
            } => (
                "ncclSend",
                (api.send)(p(send), count, dtype as c_int, peer as c_int, comm, stream),
            ),
            Op::Recv {
                recv,
                count,
                dtype,
                peer,
            } => (
                "ncclRecv",
                (api.recv)(m(recv), count, dtype as c_int, peer as c_int, comm, stream),
            ),
        }
    };
    check(api, call, r, comm, site)
}

/// `ncclGroupStart`.
pub(crate) fn group_start() -> Result<()> {
    let api = api()?;
    // SAFETY: no arguments; opens this thread's group.
    let r = unsafe { (api.group_start)() };
    check(api, "ncclGroupStart", r, std::ptr::null_mut(), no_site())
}

/// `ncclGroupEnd`: queues everything since the matching [`group_start`].
pub(crate) fn group_end(site: Site) -> Result<()> {
    let api = api()?;
    // SAFETY: no arguments; closes this thread's group.
    let r = unsafe { (api.group_end)() };
    check(api, "ncclGroupEnd", r, std::ptr::null_mut(), site)
}

fn no_site() -> Site {
    Site {
        rank: 0,
        ranks: 0,
        device: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_library_is_an_error_that_says_where_and_what_to_install() {
        let dir = std::env::temp_dir().join(format!("xlog-no-nccl-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        // XLOG_NCCL naming a directory: both file names in it, nothing else.
        let looked = candidates(Some(&dir));
        assert_eq!(
            looked,
            vec![dir.join("libnccl.so.2"), dir.join("libnccl.so")]
        );
        let searched = match load_from(&looked, true) {
            Err(searched) => searched,
            Ok(_) => panic!("a directory without NCCL loaded one"),
        };
        assert!(
            searched.contains(&*dir.join("libnccl.so.2").to_string_lossy()),
            "{searched}"
        );
        assert!(!searched.contains("Python wheel"), "{searched}");
        let e = Error::NcclNotFound { searched }.to_string();
        for hint in ["pip install nvidia-nccl-cu12", "XLOG_NCCL", "libnccl2"] {
            assert!(e.contains(hint), "`{e}` does not say `{hint}`");
        }
        // A file path is taken as it is.
        let file = dir.join("libnccl-custom.so");
        assert_eq!(candidates(Some(&file)), vec![file]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_library_without_nccls_entry_points_is_refused_with_the_missing_symbol() {
        // The C library loads but has no NCCL symbols.
        let searched = match load_from(&[PathBuf::from("libc.so.6")], true) {
            Err(searched) => searched,
            Ok(_) => panic!("libc passed for NCCL"),
        };
        assert!(searched.contains("no symbol ncclGetVersion"), "{searched}");
    }
}
