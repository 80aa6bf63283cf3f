//! [`ModuleImage`]: a compiled device module embedded in a host binary, and the
//! [`kernel_module!`](crate::kernel_module) macro that defines one.

/// A compiled device module, embedded in the host binary.
///
/// A kernel crate gets one from [`kernel_module!`](crate::kernel_module) as
/// `crate::MODULE`; the runtime loads it (`Runtime::load_module(&MODULE)`),
/// preferring a cubin for the device's arch and falling back to JIT-compiling the PTX.
#[derive(Debug, Clone, Copy)]
pub struct ModuleImage {
    /// The kernel crate's package name, for messages.
    pub name: &'static str,
    /// The PTX text.
    pub ptx: &'static str,
    /// Cubins compiled ahead of time by ptxas: `(arch, bytes)`, e.g. `("sm_90", ..)`.
    pub cubins: &'static [(&'static str, &'static [u8])],
    /// The kernel entry points (`.entry` names) in the PTX.
    pub kernels: &'static [&'static str],
}

impl ModuleImage {
    /// A module from PTX text alone (hand-written PTX or a library's), without a
    /// kernel table: `kernels` is left empty.
    pub const fn from_ptx(name: &'static str, ptx: &'static str) -> Self {
        ModuleImage {
            name,
            ptx,
            cubins: &[],
            kernels: &[],
        }
    }

    /// The cubin for `arch` (`"sm_90"`), when one was compiled.
    pub fn cubin(&self, arch: &str) -> Option<&'static [u8]> {
        self.cubins
            .iter()
            .find(|(a, _)| *a == arch)
            .map(|(_, b)| *b)
    }

    /// Whether the PTX defines the kernel `name` (only meaningful when the kernel
    /// table was generated, i.e. `kernels` is not empty).
    pub fn has_kernel(&self, name: &str) -> bool {
        self.kernels.contains(&name)
    }
}

/// Declares the kernel crate's device module. Call it once, at the crate root.
///
/// - On the host it defines `pub static MODULE: ModuleImage`, with the PTX, cubins
///   and kernel table that the crate's `build.rs` (`xlog_build::Builder`) wrote to
///   `OUT_DIR`. Generated launchers refer to it as `crate::MODULE`.
/// - On the device it links `xlog-device` (and with it the panic handler).
///
/// ```ignore
/// // src/lib.rs of a kernel crate
/// xlog_device::kernel_module!();
/// ```
#[macro_export]
macro_rules! kernel_module {
    () => {
        /// The device code of this crate, compiled by its `build.rs` (xlog-build).
        #[cfg(not(target_arch = "nvptx64"))]
        pub static MODULE: $crate::ModuleImage = $crate::ModuleImage {
            name: ::core::env!("CARGO_PKG_NAME"),
            ptx: ::core::include_str!(::core::concat!(::core::env!("OUT_DIR"), "/xlog-module.ptx")),
            cubins: ::core::include!(::core::concat!(
                ::core::env!("OUT_DIR"),
                "/xlog-module-cubins.rs"
            )),
            kernels: ::core::include!(::core::concat!(
                ::core::env!("OUT_DIR"),
                "/xlog-module-kernels.rs"
            )),
        };

        // Links xlog-device into the device artifact: its panic handler and the
        // dynamic shared memory symbol live there.
        #[cfg(target_arch = "nvptx64")]
        #[doc(hidden)]
        pub use $crate as __xlog_device;
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    static IMAGE: ModuleImage = ModuleImage {
        name: "k",
        ptx: ".version 7.0",
        cubins: &[("sm_90", &[1, 2, 3])],
        kernels: &["saxpy"],
    };

    #[test]
    fn lookups() {
        assert_eq!(IMAGE.cubin("sm_90"), Some(&[1u8, 2, 3][..]));
        assert_eq!(IMAGE.cubin("sm_80"), None);
        assert!(IMAGE.has_kernel("saxpy"));
        assert!(!IMAGE.has_kernel("other"));
        let plain = ModuleImage::from_ptx("m", "ptx");
        assert!(plain.cubins.is_empty() && plain.kernels.is_empty());
    }
}
