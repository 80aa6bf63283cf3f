//! Stand-ins until xlog-device lands its definitions.

/// Plain device data.
///
/// # Safety
/// 1. No references, pointers or padding-dependent invariants.
pub unsafe trait DeviceCopy: Copy + 'static {}
macro_rules! imp { ($($t:ty),*) => { $(
    // SAFETY: primitive plain data.
    unsafe impl DeviceCopy for $t {}
)* } }
imp!(u8, i8, u16, i16, u32, i32, u64, i64, usize, isize, f32, f64, bool);

/// An embedded module.
#[derive(Debug)]
pub struct ModuleImage {
    /// Name.
    pub name: &'static str,
    /// PTX.
    pub ptx: &'static str,
    /// Cubins per arch.
    pub cubins: &'static [(&'static str, &'static [u8])],
}
