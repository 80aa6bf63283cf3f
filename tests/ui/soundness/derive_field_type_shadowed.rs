//! A field type that names the derive's own helper module: were that module declared
//! inside the impl's block, the field's `DeviceCopy` check would resolve the path to
//! another type (a real `u64`) than the field has (a reference).
#![allow(dead_code)]
use xlog::prelude::*;

mod __xlog_derive_Evil {
    pub mod xlog {
        pub mod __private {
            pub mod core {
                pub mod primitive {
                    pub type u64 = &'static u8;
                }
            }
        }
    }
}

#[derive(Clone, Copy, DeviceCopy)]
#[repr(C)]
pub struct Evil {
    pub r: __xlog_derive_Evil::xlog::__private::core::primitive::u64,
}

fn main() {}
