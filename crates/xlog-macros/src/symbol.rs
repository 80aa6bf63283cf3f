//! Attribute keywords, in one place.

pub const READ: &str = "read";
pub const WRITE: &str = "write";
pub const READ_WRITE: &str = "read_write";
pub const ATOMIC: &str = "atomic";
pub const LOOKBACK: &str = "lookback";
pub const TILE: &str = "tile";
pub const TRANSPOSED: &str = "transposed";
pub const PER: &str = "per";
pub const THREAD: &str = "thread";
pub const WARP: &str = "warp";
pub const CHUNK: &str = "chunk";
pub const CRATE: &str = "crate";
pub const SUFFIX: &str = "suffix";
pub const BLOCK: &str = "block";
pub const SHARED: &str = "shared";

/// The accepted syntax, quoted in diagnostics.
pub const SYNTAX: &str =
    "#[xlog_kernel(read(a, ..), write(b, ..), read_write(c, ..), atomic(d, ..), block = 256, shared = 4096, suffix = f32)]";

/// The accepted ownership clauses of written parameters, quoted in diagnostics.
pub const OWNERSHIP_SYNTAX: &str =
    "`write(p)` (one element per thread), `write(p per block)`, `write(p per warp)` or `write(p per chunk(4))`";
