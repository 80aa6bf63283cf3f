//! Attribute keywords, in one place.

pub const READ: &str = "read";
pub const WRITE: &str = "write";
pub const READ_WRITE: &str = "read_write";
pub const CRATE: &str = "crate";
pub const SUFFIX: &str = "suffix";
pub const BLOCK: &str = "block";
pub const SHARED: &str = "shared";

/// The accepted syntax, quoted in diagnostics.
pub const SYNTAX: &str =
    "#[xlog_kernel(read(a, ..), write(b, ..), read_write(c, ..), block = 256, shared = 4096, suffix = f32)]";
