//! The sort's host side: validate, allocate every temporary, then launch.

use std::ops::Range;

use xlog::{
    AllocTag, BufferView, BufferViewMut, DeviceBuffer, Error, GraphArena, GraphRecorder,
    LaunchConfig, NodeId, ReadBuffer, Result, Stream, WriteBuffer,
};

use crate::exec::{Exec, Now, Record, Written};

use super::{
    portion_len, tile_len, tile_threads, BLOCK, HISTOGRAM_BLOCKS_PER_SM, RADIX, RADIX_BITS,
};

/// The direction of a sort.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Order {
    /// Smallest first (floats: `-∞ … -0.0, +0.0 … +∞, NaN`).
    #[default]
    Ascending,
    /// Largest first: the reverse of [`Ascending`](Order::Ascending), equal keys
    /// still in input order.
    Descending,
}

mod sealed {
    pub trait Key {}
    pub trait Value {}
    pub trait Position {}
}

/// Key types of the sort: `u32`, `i32`, `f32` (4 passes), `u64`, `i64`, `f64` (8
/// passes). See the [module docs](super) for the order of signed and float keys.
///
/// Each key type's kernels: the histogram, the keys-only pass of its width, and
/// the pass with values of every [`Value`] type.
pub trait Key:
    xlog::DeviceCopy
    + sealed::Key
    + super::SortHistogramType
    + super::SortOnesweepPairsType<u8>
    + super::SortOnesweepPairsType<u16>
    + super::SortOnesweepPairsType<u32>
    + super::SortOnesweepPairsType<i32>
    + super::SortOnesweepPairsType<f32>
    + super::SortOnesweepPairsType<u64>
    + super::SortOnesweepPairsType<i64>
    + super::SortOnesweepPairsType<f64>
{
    #[doc(hidden)]
    const __PASSES: usize;
    /// The keys-only pass: tiles of 32-bit keys are wider, so each width has its
    /// own kernel.
    #[doc(hidden)]
    #[allow(clippy::too_many_arguments)]
    fn __onesweep(
        s: &Stream,
        cfg: LaunchConfig,
        keys_in: &BufferView<'_, Self>,
        offsets: &BufferView<'_, u64>,
        keys_out: &mut BufferViewMut<'_, Self>,
        status: &mut BufferViewMut<'_, u32>,
        shift: u32,
        descending: u32,
        at: u32,
    ) -> Result<()>;

    /// Records the pass `__onesweep` launches.
    #[doc(hidden)]
    #[allow(clippy::too_many_arguments)]
    fn __record_onesweep<'g>(
        rec: &mut GraphRecorder<'g>,
        cfg: LaunchConfig,
        keys_in: &'g dyn ReadBuffer<Self>,
        offsets: &'g dyn ReadBuffer<u64>,
        keys_out: &'g dyn WriteBuffer<Self>,
        status: &'g dyn WriteBuffer<u32>,
        shift: u32,
        descending: u32,
        at: u32,
    ) -> Result<NodeId>;
}

/// Value types of the sort, moved with the keys: `u8`, `u16`, `u32`, `i32`,
/// `f32`, `u64`, `i64`, `f64`.
pub trait Value: xlog::DeviceCopy + sealed::Value {
    /// The pass with values of this type, for any key type.
    #[doc(hidden)]
    #[allow(clippy::too_many_arguments)]
    fn __onesweep<K: Key>(
        s: &Stream,
        cfg: LaunchConfig,
        keys_in: &BufferView<'_, K>,
        vals_in: &BufferView<'_, Self>,
        offsets: &BufferView<'_, u64>,
        keys_out: &mut BufferViewMut<'_, K>,
        vals_out: &mut BufferViewMut<'_, Self>,
        status: &mut BufferViewMut<'_, u32>,
        pass: Pass,
    ) -> Result<()>;

    /// Records the pass `__onesweep` launches.
    #[doc(hidden)]
    #[allow(clippy::too_many_arguments)]
    fn __record_onesweep<'g, K: Key>(
        rec: &mut GraphRecorder<'g>,
        cfg: LaunchConfig,
        keys_in: &'g dyn ReadBuffer<K>,
        vals_in: &'g dyn ReadBuffer<Self>,
        offsets: &'g dyn ReadBuffer<u64>,
        keys_out: &'g dyn WriteBuffer<K>,
        vals_out: &'g dyn WriteBuffer<Self>,
        status: &'g dyn WriteBuffer<u32>,
        pass: Pass,
    ) -> Result<NodeId>;
}

/// Value types that can number the keys of a [`sort_with_indices`]: `u32` (up to
/// 2^32 keys) and `u64`.
pub trait Position: Value + sealed::Position {
    #[doc(hidden)]
    const __POSITIONS: u64;
}

/// The scalar arguments of one scatter launch.
#[doc(hidden)]
#[derive(Clone, Copy, Debug)]
pub struct Pass {
    shift: u32,
    descending: u32,
    indices: u32,
    index_base: u64,
    /// Where the pass's offsets start in the offsets buffer.
    at: u32,
}

// Each key width's keys-only kernel.
macro_rules! keys {
    ($($kernel:ident: $($k:ty),*;)*) => {$($(
        impl sealed::Key for $k {}
        impl Key for $k {
            const __PASSES: usize = 8 * std::mem::size_of::<$k>() / RADIX_BITS as usize;
            fn __onesweep(
                s: &Stream,
                cfg: LaunchConfig,
                keys_in: &BufferView<'_, Self>,
                offsets: &BufferView<'_, u64>,
                keys_out: &mut BufferViewMut<'_, Self>,
                status: &mut BufferViewMut<'_, u32>,
                shift: u32,
                descending: u32,
                at: u32,
            ) -> Result<()> {
                super::$kernel::launch(s, cfg, keys_in, offsets, keys_out, status, shift, descending, at)
            }

            fn __record_onesweep<'g>(
                rec: &mut GraphRecorder<'g>,
                cfg: LaunchConfig,
                keys_in: &'g dyn ReadBuffer<Self>,
                offsets: &'g dyn ReadBuffer<u64>,
                keys_out: &'g dyn WriteBuffer<Self>,
                status: &'g dyn WriteBuffer<u32>,
                shift: u32,
                descending: u32,
                at: u32,
            ) -> Result<NodeId> {
                super::$kernel::record(rec, cfg, keys_in, offsets, keys_out, status, shift, descending, at)
            }
        }
    )*)*};
}

keys! {
    sort_onesweep: u32, i32, f32;
    sort_onesweep64: u64, i64, f64;
}

macro_rules! values {
    ($($v:ty),*) => {$(
        impl sealed::Value for $v {}
        impl Value for $v {
            fn __onesweep<K: Key>(
                s: &Stream,
                cfg: LaunchConfig,
                keys_in: &BufferView<'_, K>,
                vals_in: &BufferView<'_, Self>,
                offsets: &BufferView<'_, u64>,
                keys_out: &mut BufferViewMut<'_, K>,
                vals_out: &mut BufferViewMut<'_, Self>,
                status: &mut BufferViewMut<'_, u32>,
                p: Pass,
            ) -> Result<()> {
                super::sort_onesweep_pairs::launch(
                    s, cfg, keys_in, vals_in, offsets, keys_out, vals_out, status,
                    p.shift, p.descending, p.indices, p.index_base, p.at,
                )
            }

            fn __record_onesweep<'g, K: Key>(
                rec: &mut GraphRecorder<'g>,
                cfg: LaunchConfig,
                keys_in: &'g dyn ReadBuffer<K>,
                vals_in: &'g dyn ReadBuffer<Self>,
                offsets: &'g dyn ReadBuffer<u64>,
                keys_out: &'g dyn WriteBuffer<K>,
                vals_out: &'g dyn WriteBuffer<Self>,
                status: &'g dyn WriteBuffer<u32>,
                p: Pass,
            ) -> Result<NodeId> {
                super::sort_onesweep_pairs::record(
                    rec, cfg, keys_in, vals_in, offsets, keys_out, vals_out, status,
                    p.shift, p.descending, p.indices, p.index_base, p.at,
                )
            }
        }
    )*};
}

values!(u8, u16, u32, i32, f32, u64, i64, f64);

impl sealed::Position for u32 {}
impl Position for u32 {
    const __POSITIONS: u64 = u32::MAX as u64;
}
impl sealed::Position for u64 {}
impl Position for u64 {
    const __POSITIONS: u64 = u64::MAX;
}

/// What travels with the keys: `O` is an output of the caller's (`Exec::Out`).
enum Values<'a, O> {
    /// Nothing.
    None,
    /// The caller's values, sorted in place.
    InPlace(&'a mut O),
    /// The keys' input positions, written into this buffer.
    Indices(&'a mut O),
}

/// The scatter passes of a sort, launched or recorded.
trait Passes<K: Key, V: Value>: Exec {
    /// A pass over keys alone.
    #[allow(clippy::too_many_arguments)]
    fn keys_pass(
        &mut self,
        cfg: LaunchConfig,
        keys_in: Self::In<'_, K>,
        offsets: Self::In<'_, u64>,
        keys_out: &mut Self::Out<'_, K>,
        status: &mut Self::Out<'_, u32>,
        pass: Pass,
    ) -> Result<()>;

    /// A pass over keys with values.
    #[allow(clippy::too_many_arguments)]
    fn pairs_pass(
        &mut self,
        cfg: LaunchConfig,
        keys_in: Self::In<'_, K>,
        vals_in: Self::In<'_, V>,
        offsets: Self::In<'_, u64>,
        keys_out: &mut Self::Out<'_, K>,
        vals_out: &mut Self::Out<'_, V>,
        status: &mut Self::Out<'_, u32>,
        pass: Pass,
    ) -> Result<()>;
}

impl<K: Key, V: Value> Passes<K, V> for Now<'_> {
    fn keys_pass(
        &mut self,
        cfg: LaunchConfig,
        keys_in: BufferView<'_, K>,
        offsets: BufferView<'_, u64>,
        keys_out: &mut BufferViewMut<'_, K>,
        status: &mut BufferViewMut<'_, u32>,
        p: Pass,
    ) -> Result<()> {
        K::__onesweep(
            self.0,
            cfg,
            &keys_in,
            &offsets,
            keys_out,
            status,
            p.shift,
            p.descending,
            p.at,
        )
    }

    fn pairs_pass(
        &mut self,
        cfg: LaunchConfig,
        keys_in: BufferView<'_, K>,
        vals_in: BufferView<'_, V>,
        offsets: BufferView<'_, u64>,
        keys_out: &mut BufferViewMut<'_, K>,
        vals_out: &mut BufferViewMut<'_, V>,
        status: &mut BufferViewMut<'_, u32>,
        p: Pass,
    ) -> Result<()> {
        V::__onesweep::<K>(
            self.0, cfg, &keys_in, &vals_in, &offsets, keys_out, vals_out, status, p,
        )
    }
}

impl<'g, K: Key, V: Value> Passes<K, V> for Record<'_, 'g> {
    fn keys_pass(
        &mut self,
        cfg: LaunchConfig,
        keys_in: &'g dyn ReadBuffer<K>,
        offsets: &'g dyn ReadBuffer<u64>,
        keys_out: &mut Written<'g, K>,
        status: &mut Written<'g, u32>,
        p: Pass,
    ) -> Result<()> {
        K::__record_onesweep(
            self.rec,
            cfg,
            keys_in,
            offsets,
            keys_out.write,
            status.write,
            p.shift,
            p.descending,
            p.at,
        )
        .map(drop)
    }

    fn pairs_pass(
        &mut self,
        cfg: LaunchConfig,
        keys_in: &'g dyn ReadBuffer<K>,
        vals_in: &'g dyn ReadBuffer<V>,
        offsets: &'g dyn ReadBuffer<u64>,
        keys_out: &mut Written<'g, K>,
        vals_out: &mut Written<'g, V>,
        status: &mut Written<'g, u32>,
        p: Pass,
    ) -> Result<()> {
        V::__record_onesweep::<K>(
            self.rec,
            cfg,
            keys_in,
            vals_in,
            offsets,
            keys_out.write,
            vals_out.write,
            status.write,
            p,
        )
        .map(drop)
    }
}

kernel_calls! {
    /// The digit counts of a sort.
    trait Counts<K: Key> {
        fn histogram = super::sort_histogram(keys: r K, hist: o u32, descending: v u32);
        fn offsets = super::sort_offsets(hist: r u32, offsets: w u64, passes: v u32);
    }
}

/// Portion `q` of `n` keys, in portions of `len` keys.
fn portion(q: usize, n: usize, len: usize) -> Range<usize> {
    q * len..n.min((q + 1) * len)
}

/// The histogram launch over `n` keys on a device of `sms` multiprocessors: one
/// wave of blocks of 256 threads (the kernel's `min_blocks` per multiprocessor,
/// which its register limit guarantees fit at once), each looping over an equal
/// grid-stride share;
/// fewer for short inputs. More blocks would only add global atomics, and a second,
/// partial wave would leave most of the device idle while it runs.
fn histogram_config(n: usize, sms: u32) -> LaunchConfig {
    let wave = sms.max(1) as usize * HISTOGRAM_BLOCKS_PER_SM as usize;
    let blocks = n.div_ceil(BLOCK as usize * 16).clamp(1, wave);
    LaunchConfig::new([blocks as u32, 1, 1], [BLOCK, 1, 1])
}

/// The digit counts of a sort: per portion and pass, the histogram of the
/// pass's digit (`hist`) and where each digit's run starts (`offsets`), both laid
/// out `[(portion · passes + pass) · 256 + digit]`.
struct Digits<E: Exec> {
    hist: E::Buf<u32>,
    offsets: E::Buf<u64>,
    n: usize,
    portion_len: usize,
    passes: usize,
    descending: u32,
    sms: u32,
}

impl<E: Exec> Digits<E> {
    /// Counts the digits of every pass in each portion of `src` and derives the
    /// offsets (zeroing the histograms first when `again`: they start zeroed).
    fn count<K: Key>(&mut self, e: &mut E, src: E::In<'_, K>, again: bool) -> Result<()>
    where
        E: Counts<K>,
    {
        if again {
            e.fill(&mut E::view_mut(&mut self.hist), 0)?;
        }
        let block = self.passes * RADIX;
        for q in 0..self.n.div_ceil(self.portion_len) {
            let r = portion(q, self.n, self.portion_len);
            let cfg = histogram_config(r.len(), self.sms);
            let mut h = E::slice_mut(&mut self.hist, q * block..(q + 1) * block)?;
            e.histogram(cfg, E::slice(src, r)?, &mut h, self.descending)?;
        }
        let one_per_pass = LaunchConfig::new([self.passes as u32, 1, 1], [BLOCK, 1, 1]);
        e.offsets(
            one_per_pass,
            E::view(&self.hist),
            &mut self.offsets,
            self.passes as u32,
        )
    }
}

/// A recording sorts at most one portion: every launch then covers whole
/// buffers, which is all a graph can hold.
fn recordable(what: &str, n: usize) -> Result<()> {
    if n <= super::PORTION {
        return Ok(());
    }
    Err(Error::Unsupported {
        what: format!("xlog_kernels::sort::{what} of {n} keys in a graph"),
        reason: format!(
            "a recorded sort takes at most {} keys (one portion: longer inputs run parts of \
             buffers, which a graph cannot hold); sort them eagerly",
            super::PORTION
        ),
    })
}

/// Sorts `keys` (and what travels with them) in place through `e`, in portions of
/// `portion_tiles` tiles when given (at most the most a launch handles: the
/// tests' way to run several portions on small inputs), `sorted_passes` passes;
/// the first pass reads `input` instead when given (a sorted copy). Every
/// temporary is allocated before the first launch, so a budget refusal leaves
/// everything as it was. Every host decision depends on lengths alone, never on
/// the keys, so it records as it launches.
fn run_in_portions<E: Passes<K, V> + Counts<K>, K: Key, V: Value>(
    e: &mut E,
    order: Order,
    input: Option<E::In<'_, K>>,
    keys: &mut E::Out<'_, K>,
    mut values: Values<'_, E::Out<'_, V>>,
    portion_tiles: Option<usize>,
    sorted_passes: usize,
) -> Result<()> {
    // Every pass writes the whole second buffer, and the last one's result is
    // what the caller gets: at least one pass, at most the key's.
    assert!(
        (1..=K::__PASSES).contains(&sorted_passes),
        "{sorted_passes} passes of a key of {}",
        K::__PASSES
    );
    let n = E::out_len(keys);
    if n == 0 {
        return Ok(());
    }
    let passes = K::__PASSES;
    let value_bytes = match values {
        Values::None => 0,
        _ => std::mem::size_of::<V>(),
    };
    let tile = tile_len(std::mem::size_of::<K>(), value_bytes);
    let portion_len = match portion_tiles {
        Some(t) => t.max(1).saturating_mul(tile).min(portion_len(tile)),
        None => portion_len(tile),
    };
    let portions = n.div_ceil(portion_len);
    let words = portions * passes * RADIX;
    let max_tiles = n.min(portion_len).div_ceil(tile);
    // SAFETY: the passes alternate `keys → tmp`, `tmp → keys`, starting with a
    // write of `tmp`, and each pass writes every one of the `n` positions of its
    // destination: a key of digit `d` in portion `q` of the pass's input goes to
    // `offsets[d]` (the keys of smaller digits, and the keys of digit `d` in the
    // portions before `q` of that same input: with several portions the counts
    // are taken again from each pass's input) plus the keys of digit `d` before
    // it in its portion (earlier tiles, lower rank in its tile), a bijection onto
    // `0..n`. So nothing reads an element of `tmp` before a pass writes it.
    let mut tmp_keys = unsafe { e.alloc_uninit::<K>(n, AllocTag("sort: second key buffer")) }?;
    let mut tmp_values = match values {
        Values::None => None,
        // SAFETY: as for the keys: every pass that writes keys writes their values
        // at the same positions.
        _ => Some(unsafe { e.alloc_uninit::<V>(n, AllocTag("sort: second value buffer")) }?),
    };
    let mut digits = Digits::<E> {
        // The histograms add into their counts: zero at the start of every run.
        hist: e.filled::<u32>(words, 0)?,
        offsets: e.zeroed::<u64>(words)?,
        n,
        portion_len,
        passes,
        descending: (order == Order::Descending) as u32,
        sms: e.stream().runtime()?.device().info().multiprocessors,
    };
    // SAFETY: each scatter launch's status words are zeroed on the stream right
    // before it, and that launch is their only reader.
    let mut status =
        unsafe { e.alloc_uninit::<u32>(max_tiles * RADIX, AllocTag("sort: look-back status")) }?;
    let descending = digits.descending;
    let first = match input {
        Some(x) => E::shorten(x),
        None => E::read_out(keys),
    };
    digits.count(e, first, false)?;

    for p in 0..sorted_passes {
        if p > 0 && portions > 1 {
            // Each pass reorders the keys, so the keys of a digit in the portions
            // before `q` differ from pass to pass: count them again on this pass's
            // input (one more read of the keys per pass, only for inputs longer
            // than a portion).
            let src = if p % 2 == 0 {
                E::read_out(keys)
            } else {
                E::view(&tmp_keys)
            };
            digits.count(e, src, true)?;
        }
        for q in 0..portions {
            let r = portion(q, n, portion_len);
            let tiles = r.len().div_ceil(tile);
            let mut st = E::slice_mut(&mut status, 0..tiles * RADIX)?;
            e.fill(&mut st, 0)?;
            let threads = tile_threads(std::mem::size_of::<K>(), value_bytes);
            let cfg = LaunchConfig::new([tiles as u32, 1, 1], [threads, 1, 1]);
            let mut pass = Pass {
                shift: p as u32 * RADIX_BITS,
                descending,
                indices: 0,
                index_base: 0,
                at: ((q * passes + p) * RADIX) as u32,
            };
            let off = E::view(&digits.offsets);
            // Even passes read the keys (or the input) and write `tmp`; odd
            // passes read `tmp` and write the keys back.
            let (keys_in, mut keys_out) = if p % 2 == 0 {
                let src = match (p, input) {
                    (0, Some(x)) => E::shorten(x),
                    _ => E::read_out(keys),
                };
                (
                    E::slice(src, r.clone())?,
                    E::slice_mut(&mut tmp_keys, 0..n)?,
                )
            } else {
                (
                    E::slice(E::view(&tmp_keys), r.clone())?,
                    E::reslice(keys, 0..n)?,
                )
            };
            let Some(tmp_v) = tmp_values.as_mut() else {
                e.keys_pass(cfg, keys_in, off, &mut keys_out, &mut st, pass)?;
                continue;
            };
            if p == 0 && matches!(values, Values::Indices(_)) {
                pass.indices = 1;
                pass.index_base = r.start as u64;
            }
            let user = match &mut values {
                Values::InPlace(v) | Values::Indices(v) => v,
                Values::None => unreachable!("a value buffer exists only with values"),
            };
            let (vals_in, mut vals_out) = if p % 2 == 0 {
                let src = if pass.indices == 1 {
                    E::unread(E::read_out(&**user))
                } else {
                    E::slice(E::read_out(&**user), r)?
                };
                (src, E::slice_mut(tmp_v, 0..n)?)
            } else {
                (E::slice(E::view(tmp_v), r)?, E::reslice(&mut **user, 0..n)?)
            };
            e.pairs_pass(
                cfg,
                keys_in,
                vals_in,
                off,
                &mut keys_out,
                &mut vals_out,
                &mut st,
                pass,
            )?;
        }
    }
    if sorted_passes % 2 == 1 {
        // An odd number of passes ends in the second buffers: copy them back.
        e.copy(E::view(&tmp_keys), keys)?;
        if let (Some(tmp_v), Values::InPlace(v) | Values::Indices(v)) = (&tmp_values, &mut values) {
            e.copy(E::view(tmp_v), v)?;
        }
    }
    Ok(())
}

fn same_len(what: &str, keys: usize, values: usize) -> Result<()> {
    if keys == values {
        return Ok(());
    }
    Err(Error::InvalidArgument {
        what: format!("xlog_kernels::sort::{what}"),
        reason: format!("{keys} keys but {values} values; pass one value per key"),
    })
}

/// Sorts `keys` in place, stably. `O(n)` per pass (4 passes for 32-bit keys, 8
/// for 64-bit ones), `1 + 1 + passes` launches (more past
/// [`PORTION`](super::PORTION) keys); temporary memory: a second key buffer
/// (`n · size_of K` bytes) and 3–6 % more of look-back status, from the stream's
/// runtime ([module docs](super)).
///
/// ```no_run
/// # fn main() -> xlog::Result<()> {
/// use xlog_kernels::sort::{sort_keys, Order};
/// let rt = xlog::Runtime::get(0)?;
/// let s = rt.stream()?;
/// let mut x = rt.upload_on(&s, &[3.0f32, -0.0, f32::NAN, 0.0, -1.0])?;
/// sort_keys(&s, &mut x, Order::Ascending)?;
/// let v = x.download(&s)?;
/// assert_eq!(v[..4], [-1.0, -0.0, 0.0, 3.0]);
/// assert!(v[4].is_nan());
/// # Ok(()) }
/// ```
///
/// # Errors
///
/// A budget refusal of a temporary (`BudgetExceeded`; nothing was launched and
/// `keys` is unchanged), or a launch error.
pub fn sort_keys<K: Key>(
    s: &Stream,
    keys: &mut (impl WriteBuffer<K> + ?Sized),
    order: Order,
) -> Result<()> {
    let mut e = Now(s);
    let mut keys = e.output(keys);
    run_in_portions::<_, K, u32>(
        &mut e,
        order,
        None,
        &mut keys,
        Values::None,
        None,
        K::__PASSES,
    )
}

/// [`sort_keys`] recorded into a graph: every replay sorts `keys` in place
/// again. The same nodes as the eager sort launches (each pass's memset of its
/// status words included, and a memset zeroing the histograms); the temporaries
/// are allocated now on the recorder's stream and kept in `arena`, which
/// outlives the graph. The number of passes and every launch's shape depend on
/// the number of keys alone, never on their values.
///
/// # Errors
///
/// `Unsupported` (nothing recorded) for more than [`PORTION`](super::PORTION)
/// keys; a budget refusal or an error of recording.
pub fn record_sort_keys<'g, K: Key>(
    rec: &mut GraphRecorder<'g>,
    arena: &'g GraphArena,
    keys: &'g impl WriteBuffer<K>,
    order: Order,
) -> Result<()> {
    let mut e = Record::new(rec, arena);
    let mut keys = e.output(keys);
    recordable("record_sort_keys", Record::out_len(&keys))?;
    run_in_portions::<_, K, u32>(
        &mut e,
        order,
        None,
        &mut keys,
        Values::None,
        None,
        K::__PASSES,
    )
}

/// Sorts `keys` in place, stably, by their low bits only (like CUB's `end_bit`,
/// in whole 8-bit digits): one pass for each 8 of the `bits` bits, rounded up, so
/// keys known to be below `2^bits` sort in fewer passes (31-bit keys held in
/// `u64`s: 4 passes instead of 8). The sort covers the low `8 · ⌈bits / 8⌉` bits:
/// keys that differ only above those keep their input order. For signed and
/// float keys the bits are those of the order-preserving unsigned form the sort
/// works on (the sign bit flipped, and for floats the other bits of negatives
/// too), so `bits` short of the key's width only makes sense for unsigned keys.
/// An odd number of passes ends with a copy back into `keys`. As [`sort_keys`]
/// otherwise.
///
/// ```no_run
/// # fn main() -> xlog::Result<()> {
/// use xlog_kernels::sort::{sort_keys_low_bits, Order};
/// let rt = xlog::Runtime::get(0)?;
/// let s = rt.stream()?;
/// let mut x = rt.upload_on(&s, &[(3u64 << 16) | 1, 2 << 16, 7])?;
/// sort_keys_low_bits(&s, &mut x, Order::Ascending, 18)?;
/// assert_eq!(x.download(&s)?, [7, 2 << 16, (3 << 16) | 1]);
/// # Ok(()) }
/// ```
///
/// # Errors
///
/// `InvalidArgument` when `bits` is 0 or more than the key's width (nothing
/// launched); otherwise as [`sort_keys`].
pub fn sort_keys_low_bits<K: Key>(
    s: &Stream,
    keys: &mut (impl WriteBuffer<K> + ?Sized),
    order: Order,
    bits: u32,
) -> Result<()> {
    let width = 8 * std::mem::size_of::<K>() as u32;
    if bits == 0 || bits > width {
        return Err(Error::InvalidArgument {
            what: "xlog_kernels::sort::sort_keys_low_bits".to_owned(),
            reason: format!("{bits} bits of a {width}-bit key; pass 1 to {width}"),
        });
    }
    let passes = bits.div_ceil(RADIX_BITS) as usize;
    let mut e = Now(s);
    let mut keys = e.output(keys);
    run_in_portions::<_, K, u32>(&mut e, order, None, &mut keys, Values::None, None, passes)
}

/// Sorts `keys` in place, stably, moving `values[i]` with `keys[i]`. As
/// [`sort_keys`], with a second value buffer (`n · size_of V` bytes) more of
/// temporary memory.
///
/// # Errors
///
/// `InvalidArgument` when `keys` and `values` differ in length (nothing launched);
/// otherwise as [`sort_keys`] (a refusal leaves both buffers unchanged).
pub fn sort_pairs<K: Key, V: Value>(
    s: &Stream,
    keys: &mut (impl WriteBuffer<K> + ?Sized),
    values: &mut (impl WriteBuffer<V> + ?Sized),
    order: Order,
) -> Result<()> {
    let mut e = Now(s);
    let (mut keys, mut values) = (e.output(keys), e.output(values));
    same_len("sort_pairs", keys.len(), values.len())?;
    run_in_portions::<_, K, V>(
        &mut e,
        order,
        None,
        &mut keys,
        Values::InPlace(&mut values),
        None,
        K::__PASSES,
    )
}

/// [`sort_pairs`] recorded into a graph, as [`record_sort_keys`]: every replay
/// sorts `keys` and `values` in place again.
///
/// # Errors
///
/// As [`record_sort_keys`], and `InvalidArgument` when `keys` and `values`
/// differ in length (nothing recorded).
pub fn record_sort_pairs<'g, K: Key, V: Value>(
    rec: &mut GraphRecorder<'g>,
    arena: &'g GraphArena,
    keys: &'g impl WriteBuffer<K>,
    values: &'g impl WriteBuffer<V>,
    order: Order,
) -> Result<()> {
    let mut e = Record::new(rec, arena);
    let (mut keys, mut values) = (e.output(keys), e.output(values));
    let n = Record::out_len(&keys);
    same_len("record_sort_pairs", n, Record::out_len(&values))?;
    recordable("record_sort_pairs", n)?;
    run_in_portions::<_, K, V>(
        &mut e,
        order,
        None,
        &mut keys,
        Values::InPlace(&mut values),
        None,
        K::__PASSES,
    )
}

/// A sorted copy of `keys` (stable), `keys` left alone. As [`sort_keys`]; the
/// result is a new buffer and the temporary a second one of the same size.
///
/// # Errors
///
/// As [`sort_keys`].
pub fn sorted<K: Key>(
    s: &Stream,
    keys: &(impl ReadBuffer<K> + ?Sized),
    order: Order,
) -> Result<DeviceBuffer<K>> {
    let mut e = Now(s);
    let input = e.input(keys);
    sorted_on(&mut e, input, order)
}

/// [`sorted`] recorded into a graph, as [`record_sort_keys`]: the sorted copy is
/// allocated now and kept in `arena`, and every replay sorts `keys` into it.
///
/// # Errors
///
/// As [`record_sort_keys`].
pub fn record_sorted<'g, K: Key>(
    rec: &mut GraphRecorder<'g>,
    arena: &'g GraphArena,
    keys: &'g impl ReadBuffer<K>,
    order: Order,
) -> Result<&'g DeviceBuffer<K>> {
    let mut e = Record::new(rec, arena);
    let input = e.input(keys);
    recordable("record_sorted", Record::len(&input))?;
    sorted_on(&mut e, input, order)
}

/// [`sorted`] through `e`.
fn sorted_on<E: Passes<K, u32> + Counts<K>, K: Key>(
    e: &mut E,
    input: E::In<'_, K>,
    order: Order,
) -> Result<E::Buf<K>> {
    // SAFETY: `run_in_portions` writes every element of its key buffer in its
    // last pass (the permutation argument there), before anything else can read
    // it: later uses are fenced on those launches.
    let mut out = unsafe { e.alloc_uninit::<K>(E::len(&input), AllocTag("sort output")) }?;
    run_in_portions::<E, K, u32>(
        e,
        order,
        Some(input),
        &mut E::view_mut(&mut out),
        Values::None,
        None,
        K::__PASSES,
    )?;
    Ok(out)
}

/// A sorted copy of `keys` (stable) and the permutation that sorts them:
/// `sorted[i] = keys[perm[i]]`, equal keys in increasing `perm` order. `keys` is
/// left alone. `I` is a [`Position`]: `u32` (inputs of up to 2^32 keys) or `u64`. As
/// [`sort_pairs`] otherwise: the permutation costs no extra pass (the first pass
/// makes the indices as it reads the keys).
///
/// ```no_run
/// # fn main() -> xlog::Result<()> {
/// use xlog_kernels::sort::{sort_with_indices, Order};
/// let rt = xlog::Runtime::get(0)?;
/// let s = rt.stream()?;
/// let x = rt.upload_on(&s, &[30i64, 10, 20, 10])?;
/// let (keys, perm) = sort_with_indices::<i64, u32>(&s, &x, Order::Ascending)?;
/// assert_eq!(keys.download(&s)?, [10, 10, 20, 30]);
/// assert_eq!(perm.download(&s)?, [1, 3, 2, 0]);
/// # Ok(()) }
/// ```
///
/// # Errors
///
/// `InvalidArgument` when `I` cannot number every key (`u32` and more than 2^32
/// keys); otherwise as [`sort_keys`].
pub fn sort_with_indices<K: Key, I: Position>(
    s: &Stream,
    keys: &(impl ReadBuffer<K> + ?Sized),
    order: Order,
) -> Result<(DeviceBuffer<K>, DeviceBuffer<I>)> {
    let mut e = Now(s);
    let input = e.input(keys);
    with_indices(&mut e, input, order, None)
}

/// [`sort_with_indices`] recorded into a graph, as [`record_sorted`]: the sorted
/// copy and the permutation are allocated now and kept in `arena`.
///
/// # Errors
///
/// As [`record_sort_keys`], and `InvalidArgument` as [`sort_with_indices`].
#[allow(clippy::type_complexity)]
pub fn record_sort_with_indices<'g, K: Key, I: Position>(
    rec: &mut GraphRecorder<'g>,
    arena: &'g GraphArena,
    keys: &'g impl ReadBuffer<K>,
    order: Order,
) -> Result<(&'g DeviceBuffer<K>, &'g DeviceBuffer<I>)> {
    let mut e = Record::new(rec, arena);
    let input = e.input(keys);
    recordable("record_sort_with_indices", Record::len(&input))?;
    with_indices(&mut e, input, order, None)
}

/// [`sort_keys`] in portions of `portion_tiles` tiles of keys: how the tests run
/// the several launches per pass of an input longer than one launch handles
/// ([`PORTION`](super::PORTION) keys) on small inputs. Not part of the API.
#[doc(hidden)]
pub fn __sort_keys_in_portions<K: Key>(
    s: &Stream,
    keys: &mut (impl WriteBuffer<K> + ?Sized),
    order: Order,
    portion_tiles: usize,
) -> Result<()> {
    let mut e = Now(s);
    let mut keys = e.output(keys);
    run_in_portions::<_, K, u32>(
        &mut e,
        order,
        None,
        &mut keys,
        Values::None,
        Some(portion_tiles),
        K::__PASSES,
    )
}

/// [`sort_with_indices`] in portions of `portion_tiles` tiles, as
/// [`__sort_keys_in_portions`]. Not part of the API.
#[doc(hidden)]
pub fn __sort_with_indices_in_portions<K: Key, I: Position>(
    s: &Stream,
    keys: &(impl ReadBuffer<K> + ?Sized),
    order: Order,
    portion_tiles: usize,
) -> Result<(DeviceBuffer<K>, DeviceBuffer<I>)> {
    let mut e = Now(s);
    let input = e.input(keys);
    with_indices(&mut e, input, order, Some(portion_tiles))
}

fn with_indices<E: Passes<K, I> + Counts<K>, K: Key, I: Position>(
    e: &mut E,
    input: E::In<'_, K>,
    order: Order,
    portion_tiles: Option<usize>,
) -> Result<(E::Buf<K>, E::Buf<I>)> {
    let n = E::len(&input);
    if n as u64 > I::__POSITIONS.saturating_add(1) {
        return Err(Error::InvalidArgument {
            what: "xlog_kernels::sort::sort_with_indices".to_owned(),
            reason: format!(
                "{n} keys need indices past {}; ask for u64 indices",
                I::__POSITIONS
            ),
        });
    }
    // SAFETY: as in `sorted_on`, for both buffers: the last pass writes every key
    // and its index.
    let mut out = unsafe { e.alloc_uninit::<K>(n, AllocTag("sort output")) }?;
    // SAFETY: as above.
    let mut perm = unsafe { e.alloc_uninit::<I>(n, AllocTag("sort permutation")) }?;
    run_in_portions::<E, K, I>(
        e,
        order,
        Some(input),
        &mut E::view_mut(&mut out),
        Values::Indices(&mut E::view_mut(&mut perm)),
        portion_tiles,
        K::__PASSES,
    )?;
    Ok((out, perm))
}
