//! [`DeviceCopy`]: the values that may cross between host and device memory.

/// Plain device data: a value that can be copied bit-for-bit between host and
/// device memory and means the same on both sides.
///
/// Kernel parameters (scalars and buffer elements) must implement it. It is
/// implemented for the primitive integers, floats, `bool`, `()` and arrays of
/// `DeviceCopy` (and, in host builds with the `half` feature, for `half::f16` and
/// `half::bf16`, the element types of 16-bit collectives); user structs opt in with `#[derive(DeviceCopy)]` (xlog-macros),
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
/// 4. the all-zero bit pattern is a valid value (the runtime zero-fills buffers);
/// 5. [`__LAYOUT`](Self::__LAYOUT), if overridden, changes whenever the size,
///    alignment, field offsets or field types change (the derive computes it).
///
/// Padding bytes of a `#[repr(C)]` struct are copied as they are: a value built on
/// the host carries whatever its padding bytes held to the device. Safe kernel code
/// cannot read padding, so this discloses nothing to it; avoid padding (explicit
/// `_pad` fields) in structs whose raw bytes are hashed, compared or written back.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not plain device data (`DeviceCopy`)",
    label = "kernel parameters and buffer elements must be `DeviceCopy`",
    note = "use a primitive, an array, or a `#[repr(C)]` struct with `#[derive(DeviceCopy)]`; pointers, references and host-owning types (String, Vec, Box) cannot cross to the device"
)]
pub unsafe trait DeviceCopy: Copy + 'static {
    /// A digest of the type's layout as this compiler sees it: size, alignment,
    /// and for derived structs each field's offset and layout. Host and device
    /// builds compute it independently; launchers compare the two (see
    /// [`crate::abi`]). The default covers size and alignment only.
    #[doc(hidden)]
    const __LAYOUT: u64 =
        crate::abi::opaque_layout(core::mem::size_of::<Self>(), core::mem::align_of::<Self>());
}

macro_rules! impl_device_copy {
    ($($t:ty => $tag:literal),* $(,)?) => {
        $(
            // SAFETY: a primitive with a fixed layout and no pointers.
            unsafe impl DeviceCopy for $t {
                // The tag tells same-sized primitives apart (`f32` from `u32`), so a
                // build that swaps one for the other is caught too.
                const __LAYOUT: u64 = crate::abi::primitive_layout::<$t>($tag);
            }
        )*
    };
}

impl_device_copy!(
    u8 => 1,
    u16 => 2,
    u32 => 3,
    u64 => 4,
    u128 => 5,
    usize => 6,
    i8 => 7,
    i16 => 8,
    i32 => 9,
    i64 => 10,
    i128 => 11,
    isize => 12,
    f32 => 13,
    f64 => 14,
    bool => 15,
    () => 16,
);

// Host builds only (the `half` feature): the 16-bit floats of NCCL's collectives.
#[cfg(all(feature = "half", not(target_arch = "nvptx64")))]
impl_device_copy!(
    half::f16 => 17,
    half::bf16 => 18,
);

// SAFETY: an array of plain device data is plain device data: its layout is the
// element layout repeated `N` times.
unsafe impl<T: DeviceCopy, const N: usize> DeviceCopy for [T; N] {
    const __LAYOUT: u64 = crate::abi::array_layout(T::__LAYOUT, N);
}

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
