//! Group-by over a small dense key domain, without a sort: the count, sum,
//! minimum or maximum of the values of each key `k` in `[0, domain)`, as one
//! buffer of `domain` results indexed by key.
//!
//! - [`count`]: rows per key (`u32` or `u64` counts), `torch.bincount`.
//! - [`sum`]: the sum of each key's values, `torch.zeros(domain).index_add_(0, keys, values)`.
//! - [`min`], [`max`]: each key's least or greatest value, `scatter_reduce` with
//!   `"amin"` / `"amax"`.
//!
//! Keys are `u8`, `u16` or `u32`; values `u32`, `i32`, `u64`, `i64`, `f32` or
//! `f64`. Each kernel is generic over both (`dense_group_sum__f32__u16`).
//!
//! # Algorithm
//!
//! One launch per aggregate (CUB's `DeviceHistogram` shape, with values). Each
//! block keeps its own copy of the first keys' accumulators in shared memory: it
//! sets them to the identity, its threads walk a grid-stride sequence of the rows
//! and fold each value into its key's shared accumulator with a shared-memory
//! atomic, and after a block barrier the block's threads merge each accumulator the
//! block touched into the output with one global atomic. Keys past the shared
//! copy (only with more than [`SHARED_WORDS`] words of accumulators) take global
//! atomics directly.
//!
//! Safe shared memory is accessed in 4-byte words only (`docs/SOUNDNESS.md`), so
//! the accumulators are words:
//!
//! | aggregate | type | shared accumulator per key |
//! | --- | --- | --- |
//! | count | `u32`, `u64` | one `u32` word (a block counts fewer than 2^32 rows), merged by a global add |
//! | sum | `u32`, `i32` (wrapping), `f32` | one word, `atom.shared.add` |
//! | sum | `u64`, `i64` (wrapping) | two words: the low word's add returns the old value, and its carry goes into the high word with the high half, so the pair is exact modulo 2^64 |
//! | sum | `f64` | none: global `atom.add.f64` per row |
//! | min, max | `u32`, `i32`, `f32` | one word holding an order key (below), `atom.shared.min` |
//! | min, max | `u64`, `i64`, `f64` | none: global `atom.min.u64` per row |
//!
//! Minimum and maximum fold order keys: unsigned integers whose unsigned order is
//! the value's order (the radix sort's: the sign bit flipped for signed integers,
//! all bits of negative floats flipped and the sign bit of the others set). A
//! maximum is the minimum of the complemented keys, so one kernel serves both, and
//! a second launch over the `domain` results turns the keys back into values.
//!
//! | | |
//! | --- | --- |
//! | work | `O(n + blocks · domain)`: one shared atomic per row, one global atomic per block and key it met |
//! | launches | 1 (2 for `min` / `max`), plus the output's fill and the error word's |
//! | temporary memory | the error word (8 bytes); for `min` / `max` the order keys (`domain` words); `4 · min(words, SHARED_WORDS)` bytes of shared memory per block |
//! | synchronisation | every eager call reads the error word back, which waits for the stream |
//! | determinism | counts, integer sums, minima and maxima are exact; float sums add in an unspecified order, so their last bits may vary from run to run |
//!
//! # Edge cases
//!
//! A key `≥ domain` is an error: no row of it is aggregated, the others are, and
//! the eager call returns `InvalidArgument` naming the first (lowest) position
//! holding such a key, its value and the domain (the recorded calls leave that
//! position in an error word instead). An empty input gives every key its
//! identity. A key no row names gets the identity of its aggregate: 0 for counts
//! and sums, the greatest value of the type for a minimum (`+∞` for floats) and the
//! least for a maximum (`−∞`); the counts tell such keys apart. Minimum and maximum
//! skip NaN values (a key whose values are all NaN gets the identity); a sum adds
//! them (giving NaN), as `index_add_` does. `-0.0` is less than `+0.0`.
//! Float sums are in no fixed order (atomic adds), and on the GPU an `f32` sum of
//! a domain too large for shared memory adds in global memory, where the
//! hardware's `f32` atomic add flushes subnormal values to zero; the shared-memory
//! path and the simulator keep them.

use xlog::device::atomic::{AtomicAdd, AtomicInt};
use xlog::device::exchange::SharedWords;
use xlog::device::shared::DynamicShared;
use xlog::prelude::*;

/// Threads per block of the group-by kernels.
pub const BLOCK: u32 = 256;

/// The most shared-memory words of accumulators a block keeps (48 KiB, the shared
/// memory every launch may take without opting in): 12288 keys of one-word
/// accumulators, 6144 of two-word ones. Keys past them use global atomics.
pub const SHARED_WORDS: usize = 12 * 1024;

/// The largest domain: keys from 0 to `MAX_DOMAIN - 1`.
pub const MAX_DOMAIN: usize = 1 << 24;

mod sealed {
    pub trait Sealed {}
    impl Sealed for u8 {}
    impl Sealed for u16 {}
    impl Sealed for u32 {}
    impl Sealed for i32 {}
    impl Sealed for u64 {}
    impl Sealed for i64 {}
    impl Sealed for f32 {}
    impl Sealed for f64 {}
}

/// Key types of the group-by: `u8`, `u16`, `u32`.
pub trait GroupKey: Copy + sealed::Sealed {
    /// The key as an index.
    #[doc(hidden)]
    fn __slot(self) -> usize;
}

impl GroupKey for u8 {
    #[inline(always)]
    fn __slot(self) -> usize {
        self as usize
    }
}
impl GroupKey for u16 {
    #[inline(always)]
    fn __slot(self) -> usize {
        self as usize
    }
}
impl GroupKey for u32 {
    #[inline(always)]
    fn __slot(self) -> usize {
        self as usize
    }
}

/// Count types of [`count`]: `u32`, `u64`.
pub trait Counted: AtomicAdd + Default + sealed::Sealed {
    /// A block's count of one key.
    #[doc(hidden)]
    fn __from_count(c: u32) -> Self;
    /// One row.
    #[doc(hidden)]
    const __ONE: Self;
    /// The largest count.
    #[doc(hidden)]
    const __MAX: u64;
}

impl Counted for u32 {
    const __ONE: Self = 1;
    const __MAX: u64 = u32::MAX as u64;
    #[inline(always)]
    fn __from_count(c: u32) -> Self {
        c
    }
}
impl Counted for u64 {
    const __ONE: Self = 1;
    const __MAX: u64 = u64::MAX;
    #[inline(always)]
    fn __from_count(c: u32) -> Self {
        c as u64
    }
}

/// Value types of [`sum`]: `u32`, `i32`, `u64`, `i64` (wrapping), `f32`, `f64`.
pub trait Summed: AtomicAdd + Default + sealed::Sealed {
    /// Shared words per key (0: no shared copy, global atomics only).
    #[doc(hidden)]
    const __WORDS: usize;
    /// Adds `v` into the accumulator of `key` (words `key · WORDS ..`), set to zero
    /// before.
    #[doc(hidden)]
    fn __add_shared(words: SharedWords<u32>, key: usize, v: Self);
    /// The accumulator of `key`, after a barrier.
    #[doc(hidden)]
    fn __load_shared(words: SharedWords<u32>, key: usize) -> Self;
    /// Whether adding `self` leaves every sum as it was (an integer 0, `+0.0`).
    #[doc(hidden)]
    fn __adds_nothing(self) -> bool;
}

/// `Summed` for a type of one shared word: its bits are a `u32`'s.
macro_rules! summed_in_one_word {
    ($t:ty, $add:expr) => {
        impl Summed for $t {
            const __WORDS: usize = 1;
            #[inline(always)]
            fn __add_shared(words: SharedWords<u32>, key: usize, v: Self) {
                let add: fn(SharedWords<u32>, usize, Self) = $add;
                add(words, key, v);
            }
            #[inline(always)]
            fn __load_shared(words: SharedWords<u32>, key: usize) -> Self {
                words.cast::<$t>().load(key)
            }
            #[inline(always)]
            fn __adds_nothing(self) -> bool {
                self.to_bits_u32() == 0
            }
        }
    };
}

/// The bits of a 32-bit value.
trait Bits32: Copy {
    fn to_bits_u32(self) -> u32;
}
impl Bits32 for u32 {
    #[inline(always)]
    fn to_bits_u32(self) -> u32 {
        self
    }
}
impl Bits32 for i32 {
    #[inline(always)]
    fn to_bits_u32(self) -> u32 {
        self as u32
    }
}
impl Bits32 for f32 {
    #[inline(always)]
    fn to_bits_u32(self) -> u32 {
        self.to_bits()
    }
}

summed_in_one_word!(u32, |w, k, v| {
    w.fetch_add(k, v);
});
summed_in_one_word!(i32, |w, k, v| {
    w.fetch_add(k, v as u32);
});
summed_in_one_word!(f32, |w, k, v| {
    w.cast::<f32>().fetch_add(k, v);
});

/// Adds the 64 bits `v` into the two words `2·key` (low) and `2·key + 1` (high):
/// the low add returns the old low word, so this thread knows whether its add
/// wrapped, and adds that carry with the high half. Every wrap of the low word is
/// counted once, by the add that made it, so after a barrier the pair is the
/// wrapping sum of every value added.
#[inline(always)]
fn add_two_words(words: SharedWords<u32>, key: usize, v: u64) {
    let (lo, hi) = (v as u32, (v >> 32) as u32);
    let old = words.fetch_add(2 * key, lo);
    let carry = old.checked_add(lo).is_none() as u32;
    let high = hi.wrapping_add(carry);
    if high != 0 {
        words.fetch_add(2 * key + 1, high);
    }
}

#[inline(always)]
fn load_two_words(words: SharedWords<u32>, key: usize) -> u64 {
    words.load(2 * key) as u64 | (words.load(2 * key + 1) as u64) << 32
}

impl Summed for u64 {
    const __WORDS: usize = 2;
    #[inline(always)]
    fn __add_shared(words: SharedWords<u32>, key: usize, v: Self) {
        add_two_words(words, key, v);
    }
    #[inline(always)]
    fn __load_shared(words: SharedWords<u32>, key: usize) -> Self {
        load_two_words(words, key)
    }
    #[inline(always)]
    fn __adds_nothing(self) -> bool {
        self == 0
    }
}

impl Summed for i64 {
    const __WORDS: usize = 2;
    #[inline(always)]
    fn __add_shared(words: SharedWords<u32>, key: usize, v: Self) {
        add_two_words(words, key, v as u64);
    }
    #[inline(always)]
    fn __load_shared(words: SharedWords<u32>, key: usize) -> Self {
        load_two_words(words, key) as i64
    }
    #[inline(always)]
    fn __adds_nothing(self) -> bool {
        self == 0
    }
}

impl Summed for f64 {
    const __WORDS: usize = 0;
    #[inline(always)]
    fn __add_shared(_: SharedWords<u32>, _: usize, _: Self) {}
    #[inline(always)]
    fn __load_shared(_: SharedWords<u32>, _: usize) -> Self {
        0.0
    }
    #[inline(always)]
    fn __adds_nothing(self) -> bool {
        self.to_bits() == 0
    }
}

/// Value types of [`min`] and [`max`]: `u32`, `i32`, `f32`, `u64`, `i64`, `f64`,
/// each with its order key ([module docs](self)).
pub trait Ordered: Copy + sealed::Sealed {
    /// The order key: `u32` for 32-bit types, `u64` for 64-bit ones.
    type Bits: AtomicInt + xlog::DeviceCopy + Eq + core::ops::BitXor<Output = Self::Bits>;
    /// Whether the keys fit one shared word (32-bit types).
    #[doc(hidden)]
    const __SHARED: bool;
    /// The order key with every bit set: the identity of the minimum over keys
    /// (a NaN's key, or the identity value's own).
    #[doc(hidden)]
    const __ALL_ONES: Self::Bits;
    /// The order key with no bit set.
    #[doc(hidden)]
    const __ZERO: Self::Bits;
    /// The order key of `self`, `None` for a NaN.
    #[doc(hidden)]
    fn __key(self) -> Option<Self::Bits>;
    /// The value of an order key made by `__key`.
    #[doc(hidden)]
    fn __value(key: Self::Bits) -> Self;
    /// A 32-bit key as a shared word (32-bit types only).
    #[doc(hidden)]
    fn __word(key: Self::Bits) -> u32;
    /// A shared word back as a key (32-bit types only).
    #[doc(hidden)]
    fn __from_word(w: u32) -> Self::Bits;
}

macro_rules! ordered_int {
    ($t:ty, $bits:ty, $shared:expr, $flip:expr) => {
        impl Ordered for $t {
            type Bits = $bits;
            const __SHARED: bool = $shared;
            const __ALL_ONES: $bits = <$bits>::MAX;
            const __ZERO: $bits = 0;
            #[inline(always)]
            fn __key(self) -> Option<$bits> {
                Some(self as $bits ^ $flip)
            }
            #[inline(always)]
            fn __value(key: $bits) -> Self {
                (key ^ $flip) as $t
            }
            #[inline(always)]
            fn __word(key: $bits) -> u32 {
                key as u32
            }
            #[inline(always)]
            fn __from_word(w: u32) -> $bits {
                w as $bits
            }
        }
    };
}

ordered_int!(u32, u32, true, 0);
ordered_int!(i32, u32, true, 1 << 31);
ordered_int!(u64, u64, false, 0);
ordered_int!(i64, u64, false, 1 << 63);

macro_rules! ordered_float {
    ($t:ty, $bits:ty, $shared:expr) => {
        impl Ordered for $t {
            type Bits = $bits;
            const __SHARED: bool = $shared;
            const __ALL_ONES: $bits = <$bits>::MAX;
            const __ZERO: $bits = 0;
            #[inline(always)]
            fn __key(self) -> Option<$bits> {
                const SIGN: $bits = 1 << (<$bits>::BITS - 1);
                if self.is_nan() {
                    return None;
                }
                let b = self.to_bits();
                Some(if b & SIGN != 0 { !b } else { b | SIGN })
            }
            #[inline(always)]
            fn __value(key: $bits) -> Self {
                const SIGN: $bits = 1 << (<$bits>::BITS - 1);
                <$t>::from_bits(if key & SIGN != 0 { key & !SIGN } else { !key })
            }
            #[inline(always)]
            fn __word(key: $bits) -> u32 {
                key as u32
            }
            #[inline(always)]
            fn __from_word(w: u32) -> $bits {
                w as $bits
            }
        }
    };
}

ordered_float!(f32, u32, true);
ordered_float!(f64, u64, false);

/// A block's shared accumulators: `WORDS` words for each of the first `keys` keys
/// of the domain, in the launch's dynamic shared memory (every access a relaxed,
/// bounds-checked 4-byte atomic, so a missing barrier gives wrong results, never
/// undefined behaviour).
#[derive(Clone, Copy)]
struct Accumulators {
    words: SharedWords<u32>,
    keys: usize,
}

impl Accumulators {
    /// The accumulators of the first keys of a `domain`, `per_key` words each (0:
    /// none), each word set to `identity` (every thread of the block must call it:
    /// it holds a block barrier).
    #[inline(always)]
    fn begin(domain: usize, per_key: usize, identity: u32) -> Self {
        let words = DynamicShared::<u32>::get().words();
        let keys = words
            .len()
            .checked_div(per_key)
            .map_or(0, |fit| core::cmp::min(domain, fit));
        for s in thread::block_stride(keys * per_key) {
            words.store(s.get(), identity);
        }
        barrier::sync_threads();
        Accumulators { words, keys }
    }

    /// Waits for the block's rows (every thread of the block must call it), then
    /// calls `merge` on a share of the keys, each key once in the block.
    #[inline(always)]
    fn finish(self, mut merge: impl FnMut(SharedWords<u32>, usize)) {
        barrier::sync_threads();
        for s in thread::block_stride(self.keys) {
            merge(self.words, s.get());
        }
    }
}

/// Records `i`, the position of a key out of the domain, in the error word (the
/// lowest such position wins).
#[inline(always)]
fn out_of_domain(bad: &AtomicView<'_, u64>, i: usize) {
    bad.fetch_min(0, i as u64);
}

/// The mask the order keys are folded with: every bit for a maximum (`greatest`
/// not 0), none for a minimum.
#[inline(always)]
fn flip<T: Ordered>(greatest: u32) -> T::Bits {
    if greatest != 0 {
        T::__ALL_ONES
    } else {
        T::__ZERO
    }
}

/// `out[k] += |{ i : keys[i] == k }|`; `bad[0] = min(bad[0], i)` for each key
/// `≥ out.len()`. The kernel of [`count`].
#[xlog_kernel(
    read(keys), atomic(out, bad), block = 256,
    for C in [u32, u64], for K in [u8, u16, u32]
)]
pub fn dense_group_count<C: Counted, K: GroupKey>(keys: &[K], out: &mut [C], bad: &mut [u64]) {
    let acc = Accumulators::begin(out.len(), 1, 0);
    for i in thread::grid_stride(keys.len()) {
        let k = keys[i].__slot();
        if k < acc.keys {
            acc.words.fetch_add(k, 1);
        } else if k < out.len() {
            out.fetch_add(k, C::__ONE);
        } else {
            out_of_domain(bad, i.get());
        }
    }
    acc.finish(|words, k| {
        let c = words.load(k);
        if c != 0 {
            out.fetch_add(k, C::__from_count(c));
        }
    });
}

/// `out[k] += Σ { values[i] : keys[i] == k }`; `bad[0] = min(bad[0], i)` for each
/// key `≥ out.len()`. The kernel of [`sum`].
#[xlog_kernel(
    read(keys, values), atomic(out, bad), block = 256,
    for T in [u32, i32, f32, u64, i64, f64], for K in [u8, u16, u32]
)]
pub fn dense_group_sum<T: Summed, K: GroupKey>(
    keys: &[K],
    values: &[T],
    out: &mut [T],
    bad: &mut [u64],
) {
    let acc = Accumulators::begin(out.len(), T::__WORDS, 0);
    for i in thread::grid_stride(keys.len()) {
        let k = keys[i].__slot();
        let Some(&v) = values.get(i.get()) else {
            continue;
        };
        if k < acc.keys {
            T::__add_shared(acc.words, k, v);
        } else if k < out.len() {
            out.fetch_add(k, v);
        } else {
            out_of_domain(bad, i.get());
        }
    }
    acc.finish(|words, k| {
        let v = T::__load_shared(words, k);
        if !v.__adds_nothing() {
            out.fetch_add(k, v);
        }
    });
}

/// `out[k] = min(out[k], min { key(values[i]) ^ flip : keys[i] == k })` over order
/// keys, NaNs skipped, where `flip` has every bit set when `greatest` is 1 (a
/// maximum) and none when it is 0 (a minimum); `bad[0] = min(bad[0], i)` for each
/// key `≥ out.len()`. The first kernel of [`min`] and [`max`].
#[xlog_kernel(
    read(keys, values), atomic(out, bad), block = 256,
    for T in [u32, i32, f32, u64, i64, f64], for K in [u8, u16, u32]
)]
pub fn dense_group_least<T: Ordered, K: GroupKey>(
    keys: &[K],
    values: &[T],
    greatest: u32,
    out: &mut [<T as Ordered>::Bits],
    bad: &mut [u64],
) {
    let flip = flip::<T>(greatest);
    let per_key = if T::__SHARED { 1 } else { 0 };
    let acc = Accumulators::begin(out.len(), per_key, u32::MAX);
    for i in thread::grid_stride(keys.len()) {
        let k = keys[i].__slot();
        let Some(&v) = values.get(i.get()) else {
            continue;
        };
        if k >= out.len() {
            out_of_domain(bad, i.get());
        } else if let Some(key) = v.__key() {
            let key = key ^ flip;
            if k < acc.keys {
                acc.words.fetch_min(k, T::__word(key));
            } else {
                out.fetch_min(k, key);
            }
        }
    }
    acc.finish(|words, k| {
        let w = words.load(k);
        if w != u32::MAX {
            out.fetch_min(k, T::__from_word(w));
        }
    });
}

/// `out[k]` the value of order key `keys[k] ^ flip` (`flip` as in
/// [`dense_group_least`]), or `empty` where the key is still all ones (no row, or
/// only NaNs). The second kernel of [`min`] and [`max`].
#[xlog_kernel(
    read(keys), write(out),
    for T in [u32, i32, f32, u64, i64, f64]
)]
pub fn dense_group_decode<T: Ordered>(
    keys: &[<T as Ordered>::Bits],
    greatest: u32,
    empty: T,
    out: &mut [T],
) {
    let flip = flip::<T>(greatest);
    for i in thread::grid_stride(out.len()) {
        let key = keys.get(i.get()).copied().unwrap_or(T::__ALL_ONES);
        out[i] = if key == T::__ALL_ONES {
            empty
        } else {
            T::__value(key ^ flip)
        };
    }
}

#[cfg(not(target_arch = "nvptx64"))]
pub use host::*;

#[cfg(not(target_arch = "nvptx64"))]
mod host {
    use xlog::{
        AllocTag, BufferView, DeviceBuffer, Error, GraphArena, GraphRecorder, LaunchConfig,
        ReadBuffer, Result, Stream,
    };

    use super::{Counted, GroupKey, Ordered, Summed, BLOCK, MAX_DOMAIN, SHARED_WORDS};
    use crate::exec::{Now, Record};

    /// Key types: `u8`, `u16`, `u32`, with the traits of the kernels compiled for
    /// them.
    pub trait Key: GroupKey + xlog::DeviceCopy + Into<u64> {}
    impl Key for u8 {}
    impl Key for u16 {}
    impl Key for u32 {}

    /// Count types of [`count`] by key type `K`: `u32`, `u64`.
    pub trait Count<K: Key>: Counted + xlog::DeviceCopy + super::DenseGroupCountType<K> {}
    impl<C, K: Key> Count<K> for C where C: Counted + xlog::DeviceCopy + super::DenseGroupCountType<K> {}

    /// Value types of [`sum`] by key type `K`: `u32`, `i32`, `f32`, `u64`, `i64`,
    /// `f64`.
    pub trait Sum<K: Key>: Summed + xlog::DeviceCopy + super::DenseGroupSumType<K> {}
    impl<T, K: Key> Sum<K> for T where T: Summed + xlog::DeviceCopy + super::DenseGroupSumType<K> {}

    /// Value types of [`min`] and [`max`] by key type `K`: `u32`, `i32`, `f32`,
    /// `u64`, `i64`, `f64`.
    pub trait Extreme<K: Key>:
        Ordered + xlog::DeviceCopy + super::DenseGroupLeastType<K> + super::DenseGroupDecodeType
    {
        /// The greatest value (`+∞` for floats): the minimum of no rows.
        #[doc(hidden)]
        const __HIGHEST: Self;
        /// The least value (`−∞` for floats): the maximum of no rows.
        #[doc(hidden)]
        const __LOWEST: Self;
    }

    macro_rules! extreme {
        ($($t:ty: $hi:expr, $lo:expr;)*) => {$(
            impl<K: Key> Extreme<K> for $t where $t: super::DenseGroupLeastType<K> {
                const __HIGHEST: Self = $hi;
                const __LOWEST: Self = $lo;
            }
        )*};
    }
    extreme! {
        u32: u32::MAX, u32::MIN;
        i32: i32::MAX, i32::MIN;
        u64: u64::MAX, u64::MIN;
        i64: i64::MAX, i64::MIN;
        f32: f32::INFINITY, f32::NEG_INFINITY;
        f64: f64::INFINITY, f64::NEG_INFINITY;
    }

    kernel_calls! {
        /// The count kernel.
        trait CountCalls<C: Count<K>, K: Key> {
            fn count = super::dense_group_count(keys: r K, out: w C, bad: w u64);
        }
    }

    kernel_calls! {
        /// The sum kernel.
        trait SumCalls<T: Sum<K>, K: Key> {
            fn sum = super::dense_group_sum(keys: r K, values: r T, out: w T, bad: w u64);
        }
    }

    kernel_calls! {
        /// The minimum's kernels.
        trait LeastCalls<T: Extreme<K>, K: Key> {
            fn least = super::dense_group_least(
                keys: r K, values: r T, greatest: v u32, out: w T::Bits, bad: w u64
            );
            fn decode = super::dense_group_decode(
                keys: r T::Bits, greatest: v u32, empty: v T, out: w T
            );
        }
    }

    fn invalid(what: &str, reason: String) -> Error {
        Error::InvalidArgument {
            what: format!("xlog_kernels::dense_group::{what}"),
            reason,
        }
    }

    /// The checks every call makes before anything is allocated.
    fn check(what: &str, n: usize, values: Option<usize>, domain: usize) -> Result<()> {
        if domain == 0 || domain > MAX_DOMAIN {
            return Err(invalid(
                what,
                format!("a domain of {domain} keys; pass from 1 to {MAX_DOMAIN} keys"),
            ));
        }
        if let Some(m) = values.filter(|&m| m != n) {
            return Err(invalid(
                what,
                format!("{n} keys but {m} values; pass one value per key"),
            ));
        }
        Ok(())
    }

    /// The launch: blocks enough for about 16 rows per thread (at least one block,
    /// at most 2048; fewer with a large domain, so merging stays small against the
    /// rows), and the shared accumulators (`per_key` words a key) as dynamic shared
    /// memory.
    fn config(n: usize, domain: usize, per_key: usize) -> LaunchConfig {
        let per_block = BLOCK as usize * 16;
        let cap = (n / domain.max(1)).clamp(64, 2048);
        let blocks = n.div_ceil(per_block).clamp(1, cap);
        let shared = (domain * per_key).min(SHARED_WORDS / per_key.max(1) * per_key) * 4;
        LaunchConfig::new([blocks as u32, 1, 1], [BLOCK, 1, 1]).with_shared_bytes(shared as u32)
    }

    /// Counts through `e`: the counts (zero at the start of every run) and the
    /// error word (`u64::MAX` at the start of every run).
    fn count_on<E: CountCalls<C, K>, C: Count<K>, K: Key>(
        e: &mut E,
        keys: E::In<'_, K>,
        domain: usize,
    ) -> Result<(E::Buf<C>, E::Buf<u64>)> {
        let n = E::len(&keys);
        check("count", n, None, domain)?;
        if n as u64 > C::__MAX {
            return Err(invalid(
                "count",
                format!(
                    "{n} keys could overflow a {} count; count with u64",
                    std::any::type_name::<C>()
                ),
            ));
        }
        let mut out = e.filled::<C>(domain, C::default())?;
        let mut bad = e.filled(1, u64::MAX)?;
        if n > 0 {
            e.count(config(n, domain, 1), keys, &mut out, &mut bad)?;
        }
        Ok((out, bad))
    }

    /// Sums through `e`: the sums (zero at the start of every run) and the error
    /// word.
    fn sum_on<E: SumCalls<T, K>, T: Sum<K>, K: Key>(
        e: &mut E,
        keys: E::In<'_, K>,
        values: E::In<'_, T>,
        domain: usize,
    ) -> Result<(E::Buf<T>, E::Buf<u64>)> {
        let n = E::len(&keys);
        check("sum", n, Some(E::len(&values)), domain)?;
        let mut out = e.filled::<T>(domain, T::default())?;
        let mut bad = e.filled(1, u64::MAX)?;
        if n > 0 {
            e.sum(
                config(n, domain, T::__WORDS),
                keys,
                values,
                &mut out,
                &mut bad,
            )?;
        }
        Ok((out, bad))
    }

    /// Minima (`greatest` false) or maxima through `e`: the order keys folded with
    /// `flip` (all ones at the start of every run), decoded into the results, and
    /// the error word.
    fn extreme_on<E: LeastCalls<T, K>, T: Extreme<K>, K: Key>(
        e: &mut E,
        keys: E::In<'_, K>,
        values: E::In<'_, T>,
        domain: usize,
        greatest: bool,
    ) -> Result<(E::Buf<T>, E::Buf<u64>)> {
        let what = if greatest { "max" } else { "min" };
        let n = E::len(&keys);
        check(what, n, Some(E::len(&values)), domain)?;
        let empty = if greatest { T::__LOWEST } else { T::__HIGHEST };
        let greatest = greatest as u32;
        let mut order = e.filled::<T::Bits>(domain, T::__ALL_ONES)?;
        let mut bad = e.filled(1, u64::MAX)?;
        if n > 0 {
            let per_key = if T::__SHARED { 1 } else { 0 };
            let cfg = config(n, domain, per_key);
            e.least(cfg, keys, values, greatest, &mut order, &mut bad)?;
        }
        // SAFETY: the decode kernel writes every element of `out` (one grid-stride
        // pass over its length) before anything reads it.
        let mut out = unsafe { e.alloc_uninit::<T>(domain, AllocTag("group-by results")) }?;
        e.decode(
            crate::per_element(domain),
            E::view(&order),
            greatest,
            empty,
            &mut out,
        )?;
        Ok((out, bad))
    }

    /// Reads the error word back (synchronising `s`) and turns a recorded position
    /// into an error naming it, its key and the domain.
    fn verdict<K: Key>(
        s: &Stream,
        what: &str,
        bad: &DeviceBuffer<u64>,
        keys: &BufferView<'_, K>,
        domain: usize,
    ) -> Result<()> {
        let first = bad.download(s)?[0];
        if first == u64::MAX {
            return Ok(());
        }
        let at = first as usize;
        let key: u64 = keys.slice(at..at + 1).download(s)?[0].into();
        Err(invalid(
            what,
            format!(
                "key {key} at position {at} is outside the domain of {domain} keys (the first \
                 such key; pass a larger domain or filter the rows)"
            ),
        ))
    }

    /// How many rows each key `0..domain` has: a new buffer of `domain` counts
    /// (`torch.bincount(keys, minlength = domain)`). `O(n)`, one launch
    /// ([module docs](super)).
    ///
    /// ```no_run
    /// # fn main() -> xlog::Result<()> {
    /// let rt = xlog::Runtime::get(0)?;
    /// let s = rt.stream()?;
    /// let keys = rt.upload_on(&s, &[3u8, 1, 3])?;
    /// let c = xlog_kernels::dense_group::count::<u32, _>(&s, &keys, 4)?;
    /// assert_eq!(c.download(&s)?, [0, 1, 0, 2]);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// `InvalidArgument` when `domain` is 0 or more than
    /// [`MAX_DOMAIN`](super::MAX_DOMAIN), or `u32` counts could overflow (nothing
    /// allocated or launched); when a key is `≥ domain`, naming the first position
    /// holding one (the counts are dropped); a budget refusal or a launch error.
    /// Synchronises `s` to read the device's verdict on the keys.
    pub fn count<C: Count<K>, K: Key>(
        s: &Stream,
        keys: &(impl ReadBuffer<K> + ?Sized),
        domain: usize,
    ) -> Result<DeviceBuffer<C>> {
        let mut e = Now(s);
        let keys = e.input(keys);
        let (out, bad) = count_on(&mut e, keys, domain)?;
        verdict(s, "count", &bad, &keys, domain)?;
        Ok(out)
    }

    /// The sum of the values of each key `0..domain`: a new buffer of `domain`
    /// sums, 0 for a key no row names (`torch.zeros(domain).index_add_(0, keys,
    /// values)`). Integer sums wrap; float sums add in an unspecified order.
    /// `O(n)`, one launch ([module docs](super)).
    ///
    /// ```no_run
    /// # fn main() -> xlog::Result<()> {
    /// let rt = xlog::Runtime::get(0)?;
    /// let s = rt.stream()?;
    /// let keys = rt.upload_on(&s, &[2u16, 0, 2])?;
    /// let values = rt.upload_on(&s, &[1.5f32, 4.0, 2.0])?;
    /// let sums = xlog_kernels::dense_group::sum(&s, &keys, &values, 3)?;
    /// assert_eq!(sums.download(&s)?, [4.0, 0.0, 3.5]);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// As [`count`], and `InvalidArgument` when `keys` and `values` differ in
    /// length (nothing allocated or launched).
    pub fn sum<T: Sum<K>, K: Key>(
        s: &Stream,
        keys: &(impl ReadBuffer<K> + ?Sized),
        values: &(impl ReadBuffer<T> + ?Sized),
        domain: usize,
    ) -> Result<DeviceBuffer<T>> {
        let mut e = Now(s);
        let (keys, values) = (e.input(keys), e.input(values));
        let (out, bad) = sum_on(&mut e, keys, values, domain)?;
        verdict(s, "sum", &bad, &keys, domain)?;
        Ok(out)
    }

    /// The least value of each key `0..domain`: a new buffer of `domain` minima,
    /// the type's greatest value (`+∞` for floats) for a key no row names. NaNs
    /// are skipped. `O(n)`, two launches ([module docs](super)).
    ///
    /// # Errors
    ///
    /// As [`sum`].
    pub fn min<T: Extreme<K>, K: Key>(
        s: &Stream,
        keys: &(impl ReadBuffer<K> + ?Sized),
        values: &(impl ReadBuffer<T> + ?Sized),
        domain: usize,
    ) -> Result<DeviceBuffer<T>> {
        let mut e = Now(s);
        let (keys, values) = (e.input(keys), e.input(values));
        let (out, bad) = extreme_on(&mut e, keys, values, domain, false)?;
        verdict(s, "min", &bad, &keys, domain)?;
        Ok(out)
    }

    /// The greatest value of each key `0..domain`: a new buffer of `domain` maxima,
    /// the type's least value (`−∞` for floats) for a key no row names. NaNs are
    /// skipped. `O(n)`, two launches ([module docs](super)).
    ///
    /// # Errors
    ///
    /// As [`sum`].
    pub fn max<T: Extreme<K>, K: Key>(
        s: &Stream,
        keys: &(impl ReadBuffer<K> + ?Sized),
        values: &(impl ReadBuffer<T> + ?Sized),
        domain: usize,
    ) -> Result<DeviceBuffer<T>> {
        let mut e = Now(s);
        let (keys, values) = (e.input(keys), e.input(values));
        let (out, bad) = extreme_on(&mut e, keys, values, domain, true)?;
        verdict(s, "max", &bad, &keys, domain)?;
        Ok(out)
    }

    /// A group-by recorded into a graph: its results, and the device's verdict on
    /// the keys, which a graph cannot turn into an error (that needs a read-back).
    #[derive(Clone, Copy, Debug)]
    pub struct RecordedGroups<'g, T: xlog::DeviceCopy> {
        /// One result per key of the domain, recomputed at every replay.
        pub out: &'g DeviceBuffer<T>,
        /// One word: `u64::MAX` when every key of the last replay was inside the
        /// domain, else the first position holding one outside it (its rows were
        /// left out). Download it to check.
        pub first_bad: &'g DeviceBuffer<u64>,
    }

    /// [`count`] recorded into a graph: fill nodes resetting the counts and the
    /// error word, then the kernel node, so every replay counts afresh. The
    /// buffers are allocated now on the recorder's stream and kept in `arena`,
    /// which outlives the graph.
    ///
    /// # Errors
    ///
    /// As [`count`] before anything is recorded (keys outside the domain are
    /// reported in [`RecordedGroups::first_bad`]); those of recording.
    pub fn record_count<'g, C: Count<K>, K: Key>(
        rec: &mut GraphRecorder<'g>,
        arena: &'g GraphArena,
        keys: &'g impl ReadBuffer<K>,
        domain: usize,
    ) -> Result<RecordedGroups<'g, C>> {
        let mut e = Record::new(rec, arena);
        let keys = e.input(keys);
        let (out, first_bad) = count_on(&mut e, keys, domain)?;
        Ok(RecordedGroups { out, first_bad })
    }

    /// [`sum`] recorded into a graph, as [`record_count`].
    ///
    /// # Errors
    ///
    /// As [`record_count`].
    pub fn record_sum<'g, T: Sum<K>, K: Key>(
        rec: &mut GraphRecorder<'g>,
        arena: &'g GraphArena,
        keys: &'g impl ReadBuffer<K>,
        values: &'g impl ReadBuffer<T>,
        domain: usize,
    ) -> Result<RecordedGroups<'g, T>> {
        let mut e = Record::new(rec, arena);
        let (keys, values) = (e.input(keys), e.input(values));
        let (out, first_bad) = sum_on(&mut e, keys, values, domain)?;
        Ok(RecordedGroups { out, first_bad })
    }

    /// [`min`] recorded into a graph, as [`record_count`].
    ///
    /// # Errors
    ///
    /// As [`record_count`].
    pub fn record_min<'g, T: Extreme<K>, K: Key>(
        rec: &mut GraphRecorder<'g>,
        arena: &'g GraphArena,
        keys: &'g impl ReadBuffer<K>,
        values: &'g impl ReadBuffer<T>,
        domain: usize,
    ) -> Result<RecordedGroups<'g, T>> {
        let mut e = Record::new(rec, arena);
        let (keys, values) = (e.input(keys), e.input(values));
        let (out, first_bad) = extreme_on(&mut e, keys, values, domain, false)?;
        Ok(RecordedGroups { out, first_bad })
    }

    /// [`max`] recorded into a graph, as [`record_count`].
    ///
    /// # Errors
    ///
    /// As [`record_count`].
    pub fn record_max<'g, T: Extreme<K>, K: Key>(
        rec: &mut GraphRecorder<'g>,
        arena: &'g GraphArena,
        keys: &'g impl ReadBuffer<K>,
        values: &'g impl ReadBuffer<T>,
        domain: usize,
    ) -> Result<RecordedGroups<'g, T>> {
        let mut e = Record::new(rec, arena);
        let (keys, values) = (e.input(keys), e.input(values));
        let (out, first_bad) = extreme_on(&mut e, keys, values, domain, true)?;
        Ok(RecordedGroups { out, first_bad })
    }
}
