//! [`LaunchConfig`]: grid, block and dynamic shared memory, validated against the
//! device before anything is enqueued.

use crate::driver::DeviceInfo;
use crate::error::{Error, Result};

/// How many blocks of how many threads a launch runs, and its dynamic shared memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchConfig {
    /// Blocks in x, y, z.
    pub grid: [u32; 3],
    /// Threads per block in x, y, z.
    pub block: [u32; 3],
    /// Dynamic shared memory per block, in bytes.
    pub shared_bytes: u32,
}

impl LaunchConfig {
    /// Threads per block used by [`LaunchConfig::for_len`].
    pub const DEFAULT_BLOCK: u32 = 256;

    /// One thread per element for `n` elements, 256 threads a block.
    ///
    /// `for_len(0)` has a zero-block grid, which launching refuses: skip the launch
    /// for empty inputs.
    pub fn for_len(n: usize) -> Self {
        Self::for_len_with_block(n, Self::DEFAULT_BLOCK)
    }

    /// One thread per element for `n` elements with `block` threads a block.
    pub fn for_len_with_block(n: usize, block: u32) -> Self {
        let blocks = if block == 0 {
            0
        } else {
            n.div_ceil(block as usize)
        };
        LaunchConfig {
            grid: [u32::try_from(blocks).unwrap_or(u32::MAX), 1, 1],
            block: [block, 1, 1],
            shared_bytes: 0,
        }
    }

    /// An explicit grid and block.
    pub fn new(grid: [u32; 3], block: [u32; 3]) -> Self {
        LaunchConfig {
            grid,
            block,
            shared_bytes: 0,
        }
    }

    /// The same configuration with `bytes` of dynamic shared memory per block.
    pub fn with_shared_bytes(mut self, bytes: u32) -> Self {
        self.shared_bytes = bytes;
        self
    }

    /// Whether grid and block are one-dimensional (extent 1 in y and z), the shape
    /// typed launchers require so each thread's `ThreadIndex` is unique.
    pub fn is_one_dimensional(&self) -> bool {
        self.grid[1] == 1 && self.grid[2] == 1 && self.block[1] == 1 && self.block[2] == 1
    }

    /// What a generated `config(len)` returns: one thread per element with the
    /// kernel's block size (the declared one, else [`DEFAULT_BLOCK`](Self::DEFAULT_BLOCK))
    /// and dynamic shared memory (0 when it declares none), both resolved by the macro.
    #[doc(hidden)]
    pub fn __for_kernel(len: usize, block: u32, shared_bytes: u32) -> Self {
        Self::for_len_with_block(len, block).with_shared_bytes(shared_bytes)
    }

    /// Apply a kernel's declared settings to a caller's configuration: a declared
    /// block size must match; declared shared memory fills in a zero and must not
    /// exceed what the caller gave otherwise.
    #[doc(hidden)]
    #[inline]
    pub fn __with_kernel_settings(
        mut self,
        kernel: &str,
        block: Option<u32>,
        shared: Option<u32>,
    ) -> Result<Self> {
        if let Some(b) = block {
            if self.block != [b, 1, 1] {
                return Err(Error::invalid_launch(kernel, format_args!(
                    "the kernel is declared with `block = {b}` but the configuration has block {:?}; use `{kernel}::config(len)` or a block of [{b}, 1, 1]",
                    self.block
                )));
            }
        }
        if let Some(need) = shared {
            if self.shared_bytes == 0 {
                self.shared_bytes = need;
            } else if self.shared_bytes < need {
                return Err(Error::invalid_launch(kernel, format_args!(
                    "the kernel is declared with `shared = {need}` but the configuration gives {} bytes of dynamic shared memory",
                    self.shared_bytes
                )));
            }
        }
        Ok(self)
    }

    /// Total threads in the launch.
    pub fn threads(&self) -> u64 {
        self.grid
            .iter()
            .chain(self.block.iter())
            .map(|&d| d as u64)
            .product()
    }

    /// Refuses a configuration that is not [one-dimensional](Self::is_one_dimensional):
    /// what typed launchers require.
    #[inline]
    pub(crate) fn require_one_dimensional(&self, kernel: &str) -> Result<()> {
        if self.is_one_dimensional() {
            return Ok(());
        }
        Err(Error::invalid_launch(kernel, format_args!(
            "typed launchers take one-dimensional configurations (grid and block y = z = 1) so each \
             thread's ThreadIndex is unique, got grid {:?} block {:?}; use LaunchConfig::for_len or \
             LaunchConfig::new([blocks, 1, 1], [threads, 1, 1])",
            self.grid, self.block
        )))
    }

    /// Check the configuration against the device's limits.
    #[inline]
    pub(crate) fn validate(&self, limits: &LaunchLimits, kernel: &str) -> Result<()> {
        match self.refusal(limits) {
            None => Ok(()),
            Some(refusal) => Err(refusal.explain(kernel)),
        }
    }

    /// The first of `limits` the configuration breaks, if any: comparisons only,
    /// so the launch path carries no message formatting.
    #[inline]
    fn refusal(&self, limits: &LaunchLimits) -> Option<Refusal> {
        for axis in 0..3 {
            let (grid, block) = (self.grid[axis], self.block[axis]);
            if grid == 0 {
                return Some(Refusal::ZeroGrid { axis });
            }
            if block == 0 {
                return Some(Refusal::ZeroBlock { axis });
            }
            if grid > limits.max_grid[axis] {
                return Some(Refusal::Grid {
                    axis,
                    grid,
                    max: limits.max_grid[axis],
                });
            }
            if block > limits.max_block[axis] {
                return Some(Refusal::Block {
                    axis,
                    block,
                    max: limits.max_block[axis],
                });
            }
        }
        let threads: u64 = self.block.iter().map(|&d| d as u64).product();
        if threads > limits.max_threads as u64 {
            return Some(Refusal::Threads {
                threads,
                max: limits.max_threads,
            });
        }
        if self.shared_bytes > limits.max_shared_optin {
            return Some(Refusal::Shared {
                bytes: self.shared_bytes,
                max: limits.max_shared_optin,
            });
        }
        None
    }
}

/// The limits of a device that [`LaunchConfig::validate`] checks, copied out of
/// its [`DeviceInfo`] into every function, beside the function's handle.
#[derive(Clone, Copy, Debug)]
pub(crate) struct LaunchLimits {
    max_grid: [u32; 3],
    max_block: [u32; 3],
    max_threads: u32,
    max_shared_optin: u32,
}

impl LaunchLimits {
    pub(crate) fn of(info: &DeviceInfo) -> Self {
        LaunchLimits {
            max_grid: info.max_grid_dim,
            max_block: info.max_block_dim,
            max_threads: info.max_threads_per_block,
            max_shared_optin: info.max_shared_per_block_optin,
        }
    }
}

/// The device limit a configuration breaks (see [`LaunchConfig::validate`]).
#[derive(Clone, Copy, Debug)]
enum Refusal {
    ZeroGrid { axis: usize },
    ZeroBlock { axis: usize },
    Grid { axis: usize, grid: u32, max: u32 },
    Block { axis: usize, block: u32, max: u32 },
    Threads { threads: u64, max: u32 },
    Shared { bytes: u32, max: u32 },
}

impl Refusal {
    #[cold]
    #[inline(never)]
    fn explain(self, kernel: &str) -> Error {
        const AXES: [&str; 3] = ["x", "y", "z"];
        let refuse = |reason: std::fmt::Arguments<'_>| Error::invalid_launch(kernel, reason);
        match self {
            Refusal::ZeroGrid { axis } => refuse(format_args!(
                "grid dimension {} is 0; a launch needs at least one block (skip the launch for empty inputs)",
                AXES[axis]
            )),
            Refusal::ZeroBlock { axis } => refuse(format_args!(
                "block dimension {} is 0; a block needs at least one thread",
                AXES[axis]
            )),
            Refusal::Grid { axis, grid, max } => refuse(format_args!(
                "grid dimension {} is {grid} but the device allows at most {max}",
                AXES[axis]
            )),
            Refusal::Block { axis, block, max } => refuse(format_args!(
                "block dimension {} is {block} but the device allows at most {max}",
                AXES[axis]
            )),
            Refusal::Threads { threads, max } => refuse(format_args!(
                "a block of {threads} threads exceeds the device limit of {max} threads per block"
            )),
            Refusal::Shared { bytes, max } => refuse(format_args!(
                "{bytes} bytes of dynamic shared memory exceed the device limit of {max} bytes per block"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An H100's limits, which the simulated device copies.
    fn h100() -> DeviceInfo {
        crate::sim::device_info(0)
    }

    #[test]
    fn for_len_covers_every_element() {
        assert_eq!(LaunchConfig::for_len(1).grid, [1, 1, 1]);
        assert_eq!(LaunchConfig::for_len(256).grid, [1, 1, 1]);
        assert_eq!(LaunchConfig::for_len(257).grid, [2, 1, 1]);
        assert!(LaunchConfig::for_len(1_000_000).threads() >= 1_000_000);
    }

    #[test]
    fn kernel_settings_fix_the_block_and_fill_in_shared_memory() {
        let c = LaunchConfig::__for_kernel(1000, 128, 512);
        assert_eq!(
            (c.grid, c.block, c.shared_bytes),
            ([8, 1, 1], [128, 1, 1], 512)
        );
        let c = LaunchConfig::for_len_with_block(1000, 128);
        assert_eq!(
            c.__with_kernel_settings("k", Some(128), Some(512))
                .unwrap()
                .shared_bytes,
            512
        );
        let e = LaunchConfig::for_len(1000)
            .__with_kernel_settings("k", Some(128), None)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("block = 128") && e.contains("k::config(len)"),
            "{e}"
        );
        let e = c
            .with_shared_bytes(100)
            .__with_kernel_settings("k", None, Some(512))
            .unwrap_err()
            .to_string();
        assert!(e.contains("shared = 512") && e.contains("100 bytes"), "{e}");
        assert_eq!(
            LaunchConfig::__for_kernel(10, LaunchConfig::DEFAULT_BLOCK, 0),
            LaunchConfig::for_len(10)
        );
    }

    #[test]
    fn invalid_configurations_are_refused_with_reasons() {
        let d = LaunchLimits::of(&h100());
        let cases = [
            (LaunchConfig::for_len(0), "grid dimension x is 0"),
            (
                LaunchConfig::new([1, 1, 1], [0, 1, 1]),
                "block dimension x is 0",
            ),
            (LaunchConfig::new([1, 1, 1], [2048, 1, 1]), "at most 1024"),
            (
                LaunchConfig::new([1, 1, 1], [64, 32, 1]),
                "2048 threads exceeds",
            ),
            (
                LaunchConfig::new([1, 70_000, 1], [32, 1, 1]),
                "grid dimension y is 70000",
            ),
            (
                LaunchConfig::for_len(10).with_shared_bytes(300_000),
                "300000 bytes of dynamic shared memory",
            ),
        ];
        for (cfg, want) in cases {
            let e = cfg.validate(&d, "k").unwrap_err().to_string();
            assert!(e.contains(want), "{cfg:?}: {e}");
            assert!(e.contains("`k`"), "{e}");
        }
        LaunchConfig::for_len(1 << 30).validate(&d, "k").unwrap();
        LaunchConfig::new([4, 4, 4], [8, 8, 16])
            .with_shared_bytes(100_000)
            .validate(&d, "k")
            .unwrap();
    }
}
