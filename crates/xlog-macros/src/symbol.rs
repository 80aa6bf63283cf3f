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
pub const MIN_BLOCKS: &str = "min_blocks";

/// The accepted syntax, quoted in diagnostics.
pub const SYNTAX: &str = "#[xlog_kernel(read(a, ..), write(b, ..), read_write(c, ..), atomic(d, ..), lookback(status), block = 256, shared = 4096, min_blocks = 2, suffix = f32, for T in [f32, u32])], \
     where a written parameter may name its ownership: `b per block`, `b per warp`, `b per chunk(4)`, \
     `b per tile(4)` (the tiles of the `lookback` parameter) or `b per transposed(32, rows)` (write only)";

/// The accepted ownership clauses of written parameters, quoted in diagnostics.
pub const OWNERSHIP_SYNTAX: &str = "`write(p)` (one element per thread), `write(p per block)`, `write(p per warp)`, \
     `write(p per chunk(4))`, `write(p per tile(4))` (the tiles of a `lookback(status)` parameter) or \
     `write(p per transposed(32, rows))` (a tiled transpose; `rows` is the `usize` parameter holding the input's row count)";

/// The access modes, quoted in diagnostics.
pub const MODES: &str = "`read`, `write`, `read_write`, `atomic` or `lookback`";
