//! [`DeviceCopy`]: the values that may cross between host and device memory.

/// Plain device data: a value that can be copied bit-for-bit between host and
/// device memory and means the same on both sides.
///
/// Kernel parameters (scalars and buffer elements) must implement it. It is
/// implemented for the primitive integers, floats, `bool`, `()` and arrays of
/// `DeviceCopy`; user structs opt in with `#[derive(DeviceCopy)]` (xlog-macros),
/// which checks the conditions below. Tuples are deliberately excluded: their layout
/// is unspecified and the host (stable) and device (nightly) compilers may choose
/// differently.
///
/// # Safety
///
/// Implementing it promises that:
///
/// 1. the type holds no references, raw pointers, function pointers or other
///    host addresses (a host address means nothing on the device, and vice versa);
/// 2. its layout is fixed independently of the compiler (`#[repr(C)]`,
///    `#[repr(transparent)]` or a primitive), so host and device agree on size,
///    alignment and field offsets;
/// 3. it has no drop glue and every bit pattern the host or a kernel writes is a
///    valid value for the reader (for `bool`, only 0 and 1 are ever written);
/// 4. the all-zero bit pattern is a valid value (the runtime zero-fills buffers).
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not plain device data (`DeviceCopy`)",
    label = "kernel parameters and buffer elements must be `DeviceCopy`",
    note = "use a primitive, an array, or a `#[repr(C)]` struct with `#[derive(DeviceCopy)]`; pointers, references and host-owning types (String, Vec, Box) cannot cross to the device"
)]
pub unsafe trait DeviceCopy: Copy + 'static {}

macro_rules! impl_device_copy {
    ($($t:ty),* $(,)?) => {
        $(
            // SAFETY: a primitive with a fixed layout and no pointers.
            unsafe impl DeviceCopy for $t {}
        )*
    };
}

impl_device_copy!(
    u8,
    u16,
    u32,
    u64,
    u128,
    usize,
    i8,
    i16,
    i32,
    i64,
    i128,
    isize,
    f32,
    f64,
    bool,
    ()
);

// SAFETY: an array of plain device data is plain device data: its layout is the
// element layout repeated `N` times.
unsafe impl<T: DeviceCopy, const N: usize> DeviceCopy for [T; N] {}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_device_copy<T: DeviceCopy>() {}

    #[test]
    fn primitives_and_arrays_are_device_copy() {
        assert_device_copy::<f32>();
        assert_device_copy::<u64>();
        assert_device_copy::<bool>();
        assert_device_copy::<[[f64; 3]; 4]>();
    }
}
