//! Names itself `xlog` (and `core`), so that `::xlog::..` and `::core::..` paths in
//! generated code would reach its own look-alikes: a `DeviceCopy` every type has,
//! a layout digest that says nothing, an `assert!` that checks nothing. The kernel
//! takes a device reference where the launcher passes a number.
extern crate self as xlog;
extern crate self as core;

/// The real facade, reached past the crate's own `xlog`.
mod real {
    pub extern crate xlog as x;
}

real::x::kernel_module!();

pub mod __private {
    #[cfg(not(target_arch = "nvptx64"))]
    pub use crate::real::x::__private::rt;
    pub use crate::real::x::__private::MAX_ELEMENT_ALIGN;
    pub mod device {
        pub use crate::real::x::__private::device::*;
        pub trait DeviceCopy {
            const __LAYOUT: u64;
        }
        impl<T: ?Sized> DeviceCopy for T {
            const __LAYOUT: u64 = 0x1234;
        }
    }
}

#[macro_export]
macro_rules! assert {
    ($($t:tt)*) => {};
}

#[cfg(target_arch = "nvptx64")]
pub type Addr = &'static mut u32;
#[cfg(not(target_arch = "nvptx64"))]
pub type Addr = u64;

#[real::x::xlog_kernel]
pub fn poke(p: Addr) {
    #[cfg(target_arch = "nvptx64")]
    {
        *p = 1;
    }
    let _ = p;
}
