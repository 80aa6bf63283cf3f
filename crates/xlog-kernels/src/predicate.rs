//! Comparisons and predicates that make the flags a filter keeps rows by: a column
//! against a constant ([`compare_scalar`]), two columns ([`compare`]), a closed
//! range ([`between`]), and flags combined ([`and`], [`or`], [`and_not`],
//! [`not`]). Flags are `u8`, `1` for true and `0` for false, the form
//! [`compact::select_flagged`](crate::compact::select_flagged) and
//! [`compact::partition_flagged`](crate::compact::partition_flagged) take.
//!
//! Element types `u8`, `u16`, `u32`, `i32`, `f32`, `u64`, `i64`, `f64`. Floats
//! compare as IEEE 754 does: a NaN is unequal to everything, itself included, and
//! neither less nor greater than anything, so it passes only [`Cmp::Ne`] and
//! never [`between`].
//!
//! # Algorithm and cost
//!
//! One launch, one thread per element (a grid-stride loop), each input element read
//! once and each flag written once: `O(n)`, bound by memory bandwidth. The output is
//! a new buffer that the kernel writes in full. Nothing synchronises: the result is
//! ordered after its inputs' writers and before its readers like any launch.

use xlog::prelude::*;

/// The comparison a kernel applies, as the code [`Cmp::code`] gives it.
#[inline(always)]
fn holds<T: PartialOrd>(op: u32, a: T, b: T) -> bool {
    match op {
        0 => a < b,
        1 => a <= b,
        2 => a == b,
        3 => a != b,
        4 => a > b,
        _ => a >= b,
    }
}

/// `flags[i] = (x[i] op value)`, for `op` a [`Cmp`] code. The kernel of
/// [`compare_scalar`].
#[xlog_kernel(read(x), write(flags), for T in [u8, u16, u32, i32, f32, u64, i64, f64])]
pub fn compare_scalar_flags<T: PartialOrd + Copy>(x: &[T], flags: &mut [u8], op: u32, value: T) {
    for i in thread::grid_stride(flags.len()) {
        flags[i] = match x.get(i.get()) {
            Some(&v) => holds(op, v, value) as u8,
            None => 0,
        };
    }
}

/// `flags[i] = (x[i] op y[i])`, for `op` a [`Cmp`] code. The kernel of [`compare`].
#[xlog_kernel(read(x, y), write(flags), for T in [u8, u16, u32, i32, f32, u64, i64, f64])]
pub fn compare_flags<T: PartialOrd + Copy>(x: &[T], y: &[T], flags: &mut [u8], op: u32) {
    for i in thread::grid_stride(flags.len()) {
        flags[i] = match (x.get(i.get()), y.get(i.get())) {
            (Some(&a), Some(&b)) => holds(op, a, b) as u8,
            _ => 0,
        };
    }
}

/// `flags[i] = (lo ≤ x[i] ≤ hi)`. The kernel of [`between`].
#[xlog_kernel(read(x), write(flags), for T in [u8, u16, u32, i32, f32, u64, i64, f64])]
pub fn between_flags<T: PartialOrd + Copy>(x: &[T], flags: &mut [u8], lo: T, hi: T) {
    for i in thread::grid_stride(flags.len()) {
        flags[i] = match x.get(i.get()) {
            Some(&v) => (lo <= v && v <= hi) as u8,
            None => 0,
        };
    }
}

/// `out[i] = a[i] op b[i]` over flags (`0`: and, `1`: or, `2`: and not; `3`: not
/// `a[i]`, `b` unread), each flag taken as true when non-zero. The kernel of
/// [`and`], [`or`], [`and_not`] and [`not`].
#[xlog_kernel(read(a, b), write(out))]
pub fn combine_flags(a: &[u8], b: &[u8], out: &mut [u8], op: u32) {
    for i in thread::grid_stride(out.len()) {
        let x = a.get(i.get()).is_some_and(|&v| v != 0);
        let y = b.get(i.get()).is_some_and(|&v| v != 0);
        out[i] = match op {
            0 => x && y,
            1 => x || y,
            2 => x && !y,
            _ => !x,
        } as u8;
    }
}

#[cfg(not(target_arch = "nvptx64"))]
pub use host::*;

#[cfg(not(target_arch = "nvptx64"))]
mod host {
    use xlog::{AllocTag, BufferView, DeviceBuffer, Error, ReadBuffer, Result, Stream};

    use crate::per_element as config;

    /// A comparison: `x op value` or `x[i] op y[i]`.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub enum Cmp {
        /// `<`
        Lt,
        /// `≤`
        Le,
        /// `=`
        Eq,
        /// `≠` (the only comparison a float NaN passes)
        Ne,
        /// `>`
        Gt,
        /// `≥`
        Ge,
    }

    impl Cmp {
        /// The code the kernels take.
        pub fn code(self) -> u32 {
            match self {
                Cmp::Lt => 0,
                Cmp::Le => 1,
                Cmp::Eq => 2,
                Cmp::Ne => 3,
                Cmp::Gt => 4,
                Cmp::Ge => 5,
            }
        }

        /// The comparison on the host, as the kernels apply it (for references).
        pub fn holds<T: PartialOrd>(self, a: T, b: T) -> bool {
            match self {
                Cmp::Lt => a < b,
                Cmp::Le => a <= b,
                Cmp::Eq => a == b,
                Cmp::Ne => a != b,
                Cmp::Gt => a > b,
                Cmp::Ge => a >= b,
            }
        }
    }

    /// Element types the comparisons take: `u8`, `u16`, `u32`, `i32`, `f32`,
    /// `u64`, `i64`, `f64`, the types their kernels are compiled for.
    pub trait Comparable:
        xlog::DeviceCopy
        + PartialOrd
        + super::CompareScalarFlagsType
        + super::CompareFlagsType
        + super::BetweenFlagsType
    {
    }

    impl<T> Comparable for T where
        T: xlog::DeviceCopy
            + PartialOrd
            + super::CompareScalarFlagsType
            + super::CompareFlagsType
            + super::BetweenFlagsType
    {
    }

    /// A flag buffer of `n` elements that the caller's one launch writes in full.
    fn flags(s: &Stream, n: usize, tag: &'static str) -> Result<DeviceBuffer<u8>> {
        // SAFETY: every caller launches a kernel over the whole buffer at once (one
        // grid-stride pass over `flags.len()`, each element written whatever the
        // inputs hold), recorded as a write, before anything else can read it.
        unsafe { s.runtime()?.alloc_uninit::<u8>(s, n, AllocTag(tag)) }
    }

    fn same_len(what: &str, a: usize, b: usize) -> Result<()> {
        if a == b {
            return Ok(());
        }
        Err(Error::InvalidArgument {
            what: format!("xlog_kernels::predicate::{what}"),
            reason: format!("the inputs differ in length ({a} and {b} elements)"),
        })
    }

    /// `flags[i] = (x[i] op value)`: one flag per element of `x`, `1` where the
    /// comparison holds. One launch, `O(n)` ([module docs](super)).
    ///
    /// ```no_run
    /// # fn main() -> xlog::Result<()> {
    /// use xlog_kernels::predicate::{compare_scalar, Cmp};
    /// let rt = xlog::Runtime::get(0)?;
    /// let s = rt.stream()?;
    /// let price = rt.upload_on(&s, &[5.0f32, 12.5, 9.0, 30.0])?;
    /// let cheap = compare_scalar(&s, &price, Cmp::Lt, 10.0)?;
    /// assert_eq!(cheap.download(&s)?, [1, 0, 1, 0]);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// A budget refusal (`BudgetExceeded`) or a launch error.
    pub fn compare_scalar<T: Comparable>(
        s: &Stream,
        x: &(impl ReadBuffer<T> + ?Sized),
        op: Cmp,
        value: T,
    ) -> Result<DeviceBuffer<u8>> {
        let x = x.as_view();
        let mut out = flags(s, x.len(), "predicate flags")?;
        if !x.is_empty() {
            super::compare_scalar_flags::launch(
                s,
                config(x.len()),
                &x,
                &mut out,
                op.code(),
                value,
            )?;
        }
        Ok(out)
    }

    /// `flags[i] = (x[i] op y[i])` over two columns of equal length. One launch,
    /// `O(n)` ([module docs](super)).
    ///
    /// # Errors
    ///
    /// `InvalidArgument` when `x` and `y` differ in length (nothing allocated or
    /// launched); a budget refusal or a launch error.
    pub fn compare<T: Comparable>(
        s: &Stream,
        x: &(impl ReadBuffer<T> + ?Sized),
        y: &(impl ReadBuffer<T> + ?Sized),
        op: Cmp,
    ) -> Result<DeviceBuffer<u8>> {
        let (x, y) = (x.as_view(), y.as_view());
        same_len("compare", x.len(), y.len())?;
        let mut out = flags(s, x.len(), "predicate flags")?;
        if !x.is_empty() {
            super::compare_flags::launch(s, config(x.len()), &x, &y, &mut out, op.code())?;
        }
        Ok(out)
    }

    /// `flags[i] = (lo ≤ x[i] ≤ hi)`, both bounds included (SQL's `BETWEEN`); with
    /// `lo > hi` every flag is `0`. One launch, `O(n)` ([module docs](super)).
    ///
    /// # Errors
    ///
    /// A budget refusal (`BudgetExceeded`) or a launch error.
    pub fn between<T: Comparable>(
        s: &Stream,
        x: &(impl ReadBuffer<T> + ?Sized),
        lo: T,
        hi: T,
    ) -> Result<DeviceBuffer<u8>> {
        let x = x.as_view();
        let mut out = flags(s, x.len(), "predicate flags")?;
        if !x.is_empty() {
            super::between_flags::launch(s, config(x.len()), &x, &mut out, lo, hi)?;
        }
        Ok(out)
    }

    /// Flags combined element by element (`op` a code of
    /// [`combine_flags`](super::combine_flags)).
    fn combine(
        s: &Stream,
        what: &str,
        a: BufferView<'_, u8>,
        b: BufferView<'_, u8>,
        op: u32,
    ) -> Result<DeviceBuffer<u8>> {
        same_len(what, a.len(), b.len())?;
        let mut out = flags(s, a.len(), "predicate flags")?;
        if !a.is_empty() {
            super::combine_flags::launch(s, config(a.len()), &a, &b, &mut out, op)?;
        }
        Ok(out)
    }

    /// `out[i] = a[i] ∧ b[i]` (a flag is true when non-zero; the result is `0` or
    /// `1`). One launch, `O(n)`.
    ///
    /// # Errors
    ///
    /// `InvalidArgument` when `a` and `b` differ in length (nothing allocated or
    /// launched); a budget refusal or a launch error.
    pub fn and(
        s: &Stream,
        a: &(impl ReadBuffer<u8> + ?Sized),
        b: &(impl ReadBuffer<u8> + ?Sized),
    ) -> Result<DeviceBuffer<u8>> {
        combine(s, "and", a.as_view(), b.as_view(), 0)
    }

    /// `out[i] = a[i] ∨ b[i]`. As [`and`].
    ///
    /// # Errors
    ///
    /// As [`and`].
    pub fn or(
        s: &Stream,
        a: &(impl ReadBuffer<u8> + ?Sized),
        b: &(impl ReadBuffer<u8> + ?Sized),
    ) -> Result<DeviceBuffer<u8>> {
        combine(s, "or", a.as_view(), b.as_view(), 1)
    }

    /// `out[i] = a[i] ∧ ¬b[i]`. As [`and`].
    ///
    /// # Errors
    ///
    /// As [`and`].
    pub fn and_not(
        s: &Stream,
        a: &(impl ReadBuffer<u8> + ?Sized),
        b: &(impl ReadBuffer<u8> + ?Sized),
    ) -> Result<DeviceBuffer<u8>> {
        combine(s, "and_not", a.as_view(), b.as_view(), 2)
    }

    /// `out[i] = ¬a[i]`. One launch, `O(n)`.
    ///
    /// # Errors
    ///
    /// A budget refusal (`BudgetExceeded`) or a launch error.
    pub fn not(s: &Stream, a: &(impl ReadBuffer<u8> + ?Sized)) -> Result<DeviceBuffer<u8>> {
        let a = a.as_view();
        combine(s, "not", a, a, 3)
    }
}
