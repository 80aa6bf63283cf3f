//! A field type written through a path shaped like generated code's (`__xlog::xlog::
//! __private::core::primitive::u64`) that is really a reference: the derive checks
//! the field's real type, so it is refused as not device data.
#![allow(dead_code)]
use xlog::prelude::*;

mod __xlog {
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
    pub r: __xlog::xlog::__private::core::primitive::u64,
}

fn main() {}
