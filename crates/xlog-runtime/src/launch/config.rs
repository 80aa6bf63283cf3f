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

    /// What a generated `config(len)` returns: `for_len` with the kernel's declared
    /// block size and dynamic shared memory.
    #[doc(hidden)]
    pub fn __for_kernel(len: usize, block: Option<u32>, shared: Option<u32>) -> Self {
        Self::for_len_with_block(len, block.unwrap_or(Self::DEFAULT_BLOCK))
            .with_shared_bytes(shared.unwrap_or(0))
    }

    /// Apply a kernel's declared settings to a caller's configuration: a declared
    /// block size must match; declared shared memory fills in a zero and must not
    /// exceed what the caller gave otherwise.
    #[doc(hidden)]
    pub fn __with_kernel_settings(
        mut self,
        kernel: &str,
        block: Option<u32>,
        shared: Option<u32>,
    ) -> Result<Self> {
        if let Some(b) = block {
            if self.block != [b, 1, 1] {
                return Err(Error::InvalidLaunch {
                    kernel: kernel.to_owned(),
                    reason: format!(
                        "the kernel is declared with `block = {b}` but the configuration has block {:?}; use `{kernel}::config(len)` or a block of [{b}, 1, 1]",
                        self.block
                    ),
                });
            }
        }
        if let Some(need) = shared {
            if self.shared_bytes == 0 {
                self.shared_bytes = need;
            } else if self.shared_bytes < need {
                return Err(Error::InvalidLaunch {
                    kernel: kernel.to_owned(),
                    reason: format!(
                        "the kernel is declared with `shared = {need}` but the configuration gives {} bytes of dynamic shared memory",
                        self.shared_bytes
                    ),
                });
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
    pub(crate) fn require_one_dimensional(&self, kernel: &str) -> Result<()> {
        if self.is_one_dimensional() {
            return Ok(());
        }
        Err(Error::InvalidLaunch {
            kernel: kernel.to_owned(),
            reason: format!(
                "typed launchers take one-dimensional configurations (grid and block y = z = 1) so each \
                 thread's ThreadIndex is unique, got grid {:?} block {:?}; use LaunchConfig::for_len or \
                 LaunchConfig::new([blocks, 1, 1], [threads, 1, 1])",
                self.grid, self.block
            ),
        })
    }

    /// Check the configuration against the device's limits.
    pub(crate) fn validate(&self, info: &DeviceInfo, kernel: &str) -> Result<()> {
        let fail = |reason: String| {
            Err(Error::InvalidLaunch {
                kernel: kernel.to_owned(),
                reason,
            })
        };
        const AXES: [&str; 3] = ["x", "y", "z"];
        for (i, axis) in AXES.iter().enumerate() {
            if self.grid[i] == 0 {
                return fail(format!(
                    "grid dimension {} is 0; a launch needs at least one block (skip the launch for empty inputs)",
                    axis
                ));
            }
            if self.block[i] == 0 {
                return fail(format!(
                    "block dimension {} is 0; a block needs at least one thread",
                    axis
                ));
            }
            if self.grid[i] > info.max_grid_dim[i] {
                return fail(format!(
                    "grid dimension {} is {} but the device allows at most {}",
                    axis, self.grid[i], info.max_grid_dim[i]
                ));
            }
            if self.block[i] > info.max_block_dim[i] {
                return fail(format!(
                    "block dimension {} is {} but the device allows at most {}",
                    axis, self.block[i], info.max_block_dim[i]
                ));
            }
        }
        let per_block: u64 = self.block.iter().map(|&d| d as u64).product();
        if per_block > info.max_threads_per_block as u64 {
            return fail(format!(
                "a block of {per_block} threads exceeds the device limit of {} threads per block",
                info.max_threads_per_block
            ));
        }
        if self.shared_bytes > info.max_shared_per_block_optin {
            return fail(format!(
                "{} bytes of dynamic shared memory exceed the device limit of {} bytes per block",
                self.shared_bytes, info.max_shared_per_block_optin
            ));
        }
        Ok(())
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
        let c = LaunchConfig::__for_kernel(1000, Some(128), Some(512));
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
            LaunchConfig::__for_kernel(10, None, None),
            LaunchConfig::for_len(10)
        );
    }

    #[test]
    fn invalid_configurations_are_refused_with_reasons() {
        let d = h100();
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
