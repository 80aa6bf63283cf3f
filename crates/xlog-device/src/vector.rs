//! Vector memory access: `K` consecutive elements moved by one 64- or 128-bit load
//! or store (PTX `ld.v2` / `ld.v4`, `st.v2` / `st.v4`).
//!
//! A memory-bound kernel reaches the memory roofline only when each thread moves
//! 16 bytes per instruction: scalar 4-byte accesses leave a few percent of the
//! bandwidth unused. Safe kernels get vector accesses through chunk ownership
//! (`write(y per chunk(4))`, [`view::Chunks`](crate::view::Chunks)) for their writes and
//! [`view::read_chunk`](crate::view::read_chunk) for their reads.
//!
//! The vector types are the arrays [`Vector`] is implemented for: `[T; 4]` and
//! `[T; 2]` of 32-bit `T`, `[T; 2]` of 64-bit `T`. Bytes are read as words
//! through [`view::as_words`](crate::view::as_words). A vector access needs an address
//! aligned to the vector's size; views of a buffer at an element offset may not be,
//! so every access checks the address and falls back to element accesses (a
//! launch-uniform branch for a view's chunk-aligned addresses);
//! [`view::read_chunks`](crate::view::read_chunks) checks a slice's start once for
//! all the chunks it reads.

mod sealed {
    pub trait Sealed {}
}

/// An array moved by one vector instruction when aligned.
///
/// # Soundness
///
/// Sealed; the implementations only ever read or write the `size_of::<Self>()` bytes
/// at the pointer they are given, with the alignment they checked.
pub trait Vector: Copy + sealed::Sealed {
    #[doc(hidden)]
    /// # Safety
    ///
    /// `p` is valid for reads of `Self` (aligned for the element type) and no other
    /// thread writes those bytes concurrently.
    unsafe fn __load(p: *const Self) -> Self;
    #[doc(hidden)]
    /// # Safety
    ///
    /// As [`__load`](Vector::__load), and `p` is aligned to `size_of::<Self>()`.
    unsafe fn __load_aligned(p: *const Self) -> Self;
    #[doc(hidden)]
    /// # Safety
    ///
    /// `p` is valid for writes of `Self` (aligned for the element type) and no other
    /// thread accesses those bytes concurrently.
    unsafe fn __store(p: *mut Self, v: Self);
}

macro_rules! vector {
    ($($t:ty, $k:tt, $align:literal, $reg:ident, $bits:ty, |$v:ident| $to:expr, |$b:ident| $from:expr;)*) => {$(
        impl sealed::Sealed for [$t; $k] {}
        impl Vector for [$t; $k] {
            #[inline(always)]
            unsafe fn __load(p: *const Self) -> Self {
                if (p as usize) % $align == 0 {
                    // SAFETY: the caller's obligations, and the address is aligned for
                    // the vector (checked).
                    return unsafe { Self::__load_aligned(p) };
                }
                // SAFETY: the caller's obligations (aligned for the element type).
                unsafe { p.read() }
            }
            #[inline(always)]
            unsafe fn __load_aligned(p: *const Self) -> Self {
                #[cfg(target_arch = "nvptx64")]
                {
                    let mut r = [0 as $bits; $k];
                    // SAFETY: the caller's obligations, the address aligned for the
                    // vector among them. `ld.global` when the generic address is in
                    // the global window (every kernel buffer), generic `ld` otherwise.
                    unsafe { vector!(@load $k, $reg, p, r) };
                    r.map(|$b| $from)
                }
                // SAFETY: the caller's obligations.
                #[cfg(not(target_arch = "nvptx64"))]
                unsafe { p.read() }
            }
            #[inline(always)]
            unsafe fn __store(p: *mut Self, v: Self) {
                #[cfg(target_arch = "nvptx64")]
                if (p as usize) % $align == 0 {
                    let w: [$bits; $k] = v.map(|$v| $to);
                    // SAFETY: as in `__load`.
                    unsafe { vector!(@store $k, $reg, p, w) };
                    return;
                }
                // SAFETY: the caller's obligations (aligned for the element type).
                unsafe { p.write(v) }
            }
        }
    )*};
    (@load 4, $reg:ident, $p:ident, $r:ident) => {
        core::arch::asm!(
            "{{ .reg .pred %g; .reg .b64 %q; isspacep.global %g, {p}; cvta.to.global.u64 %q, {p};",
            "@%g ld.global.v4.b32 {{{a}, {b}, {c}, {d}}}, [%q];",
            "@!%g ld.v4.b32 {{{a}, {b}, {c}, {d}}}, [{p}]; }}",
            p = in(reg64) $p, a = out($reg) $r[0], b = out($reg) $r[1], c = out($reg) $r[2], d = out($reg) $r[3],
            options(readonly, nostack, preserves_flags)
        )
    };
    (@load 2, $reg:ident, $p:ident, $r:ident) => {
        core::arch::asm!(
            concat!("{{ .reg .pred %g; .reg .b64 %q; isspacep.global %g, {p}; cvta.to.global.u64 %q, {p};",
            "@%g ld.global.v2.", vector!(@w $reg), " {{{a}, {b}}}, [%q];",
            "@!%g ld.v2.", vector!(@w $reg), " {{{a}, {b}}}, [{p}]; }}"),
            p = in(reg64) $p, a = out($reg) $r[0], b = out($reg) $r[1],
            options(readonly, nostack, preserves_flags)
        )
    };
    (@store 4, $reg:ident, $p:ident, $w:ident) => {
        core::arch::asm!(
            "{{ .reg .pred %g; .reg .b64 %q; isspacep.global %g, {p}; cvta.to.global.u64 %q, {p};",
            "@%g st.global.v4.b32 [%q], {{{a}, {b}, {c}, {d}}};",
            "@!%g st.v4.b32 [{p}], {{{a}, {b}, {c}, {d}}}; }}",
            p = in(reg64) $p, a = in($reg) $w[0], b = in($reg) $w[1], c = in($reg) $w[2], d = in($reg) $w[3],
            options(nostack, preserves_flags)
        )
    };
    (@store 2, $reg:ident, $p:ident, $w:ident) => {
        core::arch::asm!(
            concat!("{{ .reg .pred %g; .reg .b64 %q; isspacep.global %g, {p}; cvta.to.global.u64 %q, {p};",
            "@%g st.global.v2.", vector!(@w $reg), " [%q], {{{a}, {b}}};",
            "@!%g st.v2.", vector!(@w $reg), " [{p}], {{{a}, {b}}}; }}"),
            p = in(reg64) $p, a = in($reg) $w[0], b = in($reg) $w[1],
            options(nostack, preserves_flags)
        )
    };
    (@w reg32) => { "b32" };
    (@w reg64) => { "b64" };
}

vector! {
    f32, 4, 16, reg32, u32, |v| v.to_bits(), |b| f32::from_bits(b);
    u32, 4, 16, reg32, u32, |v| v, |b| b;
    i32, 4, 16, reg32, u32, |v| v as u32, |b| b as i32;
    f32, 2, 8, reg32, u32, |v| v.to_bits(), |b| f32::from_bits(b);
    u32, 2, 8, reg32, u32, |v| v, |b| b;
    i32, 2, 8, reg32, u32, |v| v as u32, |b| b as i32;
    f64, 2, 16, reg64, u64, |v| v.to_bits(), |b| f64::from_bits(b);
    u64, 2, 16, reg64, u64, |v| v, |b| b;
    i64, 2, 16, reg64, u64, |v| v as u64, |b| b as i64;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligned_and_unaligned_round_trips() {
        #[repr(C, align(16))]
        struct Align16<A>(A);
        let mut buf = Align16([0.0f32; 9]);
        let v = [1.0f32, 2.0, 3.0, 4.0];
        let base = buf.0.as_mut_ptr();
        // SAFETY: in bounds of `buf`, single-threaded.
        unsafe {
            <[f32; 4]>::__store(base.cast(), v);
            <[f32; 4]>::__store(base.add(5).cast(), v);
            assert_eq!(<[f32; 4]>::__load(base.cast()), v);
            assert_eq!(<[f32; 4]>::__load(base.add(5).cast()), v);
        }
        assert_eq!(buf.0, [1.0, 2.0, 3.0, 4.0, 0.0, 1.0, 2.0, 3.0, 4.0]);
    }
}
