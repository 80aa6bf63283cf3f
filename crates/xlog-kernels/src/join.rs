//! Hash joins on `u32` and `u64` keys: inner (matching row pairs), semi (the probe
//! rows with a match) and anti (the probe rows without one), with duplicate keys on
//! both sides.
//!
//! - [`JoinTable::build`] hashes the build side once; [`JoinTable::inner_join`],
//!   [`JoinTable::semi_join`] and [`JoinTable::anti_join`] probe it, as often as
//!   you like.
//! - [`inner_join`], [`semi_join`] and [`anti_join`] do both in one call.
//!
//! Results stay on the device: row ids (`u32`, positions in the inputs) in buffers
//! exactly as long as the result, whose length is the output count.
//!
//! # Algorithm
//!
//! **Build** (one launch, one thread per build row). The table has `capacity`
//! slots, the smallest power of two at least twice the build side (a load factor
//! of at most 0.5), each four words of the key type: the key's bitwise complement,
//! how many build rows have that key, the head of their chain (a row id plus one,
//! 0 for none), and padding. A thread hashes its key (MurmurHash3's finaliser)
//! to a slot, rounded down to the first of its 32-byte memory sector (two slots of
//! `u32` keys), walks from there by linear probing to the key's slot or the first
//! empty one and claims it with an atomic compare-exchange of the key word; then it adds one
//! to the slot's count (`fetch_add`) and pushes its row on the slot's chain
//! (`swap` of the head, the old head stored in `next[row]`). Every distinct key
//! has one slot, so duplicates cost one atomic add and one swap each, never a
//! longer probe: all-equal keys build in `O(n)`.
//!
//! **Sentinel-free.** A zeroed slot is empty, and its key word holds the
//! complement of the key, so only the key whose complement is 0 (`u32::MAX`,
//! `u64::MAX`) could be mistaken for an empty slot: that one key has its own slot
//! past the end of the table, reached without hashing. Every key value joins.
//!
//! **Probe** (count, scan, write). One block of [`BLOCK`] threads per tile of
//! `BLOCK · ROWS` probe rows, [`ROWS`] (4) consecutive rows a thread, whose keys,
//! counts and heads move as vectors. The *count* pass finds each row's slot: a
//! thread reads the first slot of all its rows before looking at any (four random
//! reads in flight), each read fetching the key word, count and chain head
//! together. It writes each row's number of output rows (its key's count for an
//! inner join, 0 or 1 for a semi or anti join), for an inner join the head of its
//! chain, and each tile's total; an inclusive scan of the tile totals
//! ([`scan::inclusive_sum`](crate::scan::inclusive_sum)) gives every tile's end in
//! the output and, in its last element, the output count, which the host reads to
//! allocate the output exactly. The *write* pass scans the counts within each tile
//! ([`collective::block_exclusive_scan`]) for each row's first position and stores
//! the row's pairs there: the head, then the rest of the chain (`next`), so a key
//! with one build row costs no second random read. A semi or anti join's write
//! pass is a stream compaction of the counts.
//!
//! Writes to computed positions go through atomic views (`atomic(build_rows,
//! probe_rows)`): each is one relaxed store, as cheap as a plain one, and safe
//! without a proof that positions never collide. The kernels have no `unsafe`.
//!
//! | | |
//! | --- | --- |
//! | build | `O(b)` work for `b` build rows (expected), 1 launch, plus zeroing the table |
//! | probe | `O(p + m)` work for `p` probe rows and `m` output rows (expected), 3 launches (count, scan, write) and one synchronisation, to read the output count |
//! | graphs | not recordable: the probe reads its output count back to size the output, which a graph cannot do between its nodes |
//! | table memory (kept) | `capacity + 1` slots of four keys: `16 · (capacity + 1)` bytes for `u32` keys, `32 · (capacity + 1)` for `u64` (about 32 or 64 bytes a build row, 16 to 32 at best), and a `u32` a build row for the chains |
//! | probe memory (temporary) | a `u32` a probe row (its count) and, for an inner join, another (its chain's head); 16 bytes per tile of 1024 rows and the scan's status words. The output, 8 bytes a pair or 4 a row, is the result |
//! | order | ascending probe row; within one probe row of an inner join, the build rows in an unspecified order (the order the build's atomics ran in) |
//!
//! All memory comes from the stream's runtime, under its budget. A refused
//! allocation fails the call with `BudgetExceeded` before the step that needs it:
//! inputs are never modified, and what the call allocated is freed.
//!
//! # Edge cases
//!
//! An empty build side gives empty inner and semi joins and an anti join of every
//! probe row; an empty probe side gives empty results without a launch. Keys equal
//! to `0` and `MAX` join like any other. When every key is equal the inner join has
//! `b · p` rows: its count is computed exactly (in `u64`), and the output must fit
//! the budget. Row ids are `u32`: the build side may have up to `u32::MAX - 1`
//! rows and the probe side up to `u32::MAX + 1`; longer inputs are refused with
//! `InvalidArgument`.

use core::ops::Not;

use xlog::device::atomic::AtomicInt;
use xlog::device::lookback;
use xlog::device::vector::Vector;
use xlog::device::view::{read_chunks, Chunks, PerBlock};
use xlog::prelude::*;

/// Threads per block of the probe kernels.
pub const BLOCK: u32 = 256;

/// Probe rows per thread of the probe kernels: consecutive rows, their keys,
/// counts and heads each read or written as vectors, and their first table reads
/// issued together. A tile is `BLOCK · ROWS` (1024) probe rows.
pub const ROWS: usize = 4;

/// The count pass's modes (what a probe row contributes to the output) other than
/// the inner join's, 0 (its number of matches).
const SEMI: u32 = 1;
const ANTI: u32 = 2;

/// Words of the key type per slot: complemented key, count, chain head, padding.
const SLOT_WORDS: usize = 4;

mod sealed {
    pub trait Sealed {}
    impl Sealed for u32 {}
    impl Sealed for u64 {}
}

/// Key types of the join, `u32` and `u64`: the arithmetic the build and probe
/// kernels do on them, the same on the host and the device.
pub trait Key: Copy + PartialEq + Not<Output = Self> + AtomicInt + sealed::Sealed {
    /// 0.
    const ZERO: Self;
    /// 1.
    const ONE: Self;
    /// The largest value, the one key whose complement is an empty slot's word.
    const MAX: Self;
    /// Slots per 32-byte memory sector (2 for `u32` keys, 1 for `u64`): probing
    /// starts at the first slot of the sector the hash names.
    const SECTOR_SLOTS: usize;
    /// The key's hash (MurmurHash3's 32- or 64-bit finaliser, a bijection).
    fn hash(self) -> u64;
    /// `n` as a key-typed word (a count or a row id plus one, both below `2^32`).
    fn word(n: u32) -> Self;
    /// A count or chain word back as a `u32` (it was made by [`Key::word`]).
    fn as_u32(self) -> u32;
}

impl Key for u32 {
    const ZERO: Self = 0;
    const ONE: Self = 1;
    const MAX: Self = u32::MAX;
    const SECTOR_SLOTS: usize = 2;
    #[inline(always)]
    fn hash(self) -> u64 {
        let mut h = self;
        h ^= h >> 16;
        h = h.wrapping_mul(0x85eb_ca6b);
        h ^= h >> 13;
        h = h.wrapping_mul(0xc2b2_ae35);
        h ^= h >> 16;
        h as u64
    }
    #[inline(always)]
    fn word(n: u32) -> Self {
        n
    }
    #[inline(always)]
    fn as_u32(self) -> u32 {
        self
    }
}

impl Key for u64 {
    const ZERO: Self = 0;
    const ONE: Self = 1;
    const MAX: Self = u64::MAX;
    const SECTOR_SLOTS: usize = 1;
    #[inline(always)]
    fn hash(self) -> u64 {
        let mut h = self;
        h ^= h >> 33;
        h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^= h >> 33;
        h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        h ^= h >> 33;
        h
    }
    #[inline(always)]
    fn word(n: u32) -> Self {
        n as u64
    }
    #[inline(always)]
    fn as_u32(self) -> u32 {
        self as u32
    }
}

/// The table's capacity (slots reached by hashing, a power of two) from its
/// length in words, `SLOT_WORDS · (capacity + 1)`; 0 for a table too short to be
/// one.
#[inline(always)]
fn capacity_of(words: usize) -> usize {
    let cap = (words / SLOT_WORDS).saturating_sub(1);
    if cap.is_power_of_two() {
        cap
    } else {
        0
    }
}

/// The first slot a probe for `key` reads: the first of the 32-byte sector its
/// hash names (`mask` is the capacity minus one), so that a probe reads whole
/// sectors and a miss less often crosses into the next one.
#[inline(always)]
fn start<K: Key>(key: K, mask: usize) -> usize {
    (key.hash() as usize & mask) & !(K::SECTOR_SLOTS - 1)
}

/// The slot of `key`, claimed for it if it has none yet. `capacity` is the table's
/// (a power of two, more than the keys inserted, so an empty slot always exists).
#[inline(always)]
fn claim<K: Key>(table: &AtomicView<'_, K>, key: K, capacity: usize) -> usize {
    if key == K::MAX {
        return capacity;
    }
    let want = !key;
    let mask = capacity - 1;
    let mut p = start(key, mask);
    loop {
        let w = table.load(SLOT_WORDS * p);
        if w == want {
            return p;
        }
        if w == K::ZERO {
            match table.compare_exchange(SLOT_WORDS * p, K::ZERO, want) {
                Ok(_) => return p,
                Err(now) if now == want => return p,
                Err(_) => {}
            }
        }
        p = (p + 1) & mask;
    }
}

/// What one slot says about a key a probe looks for.
enum Step {
    /// The key's slot: its count of build rows and the head of their chain (a row
    /// plus one).
    Found(u32, u32),
    /// An empty slot: no build row has the key.
    Missing,
    /// Another key's slot: look at the next one.
    Next,
}

/// The first slot a probe for `key` reads in a table of `capacity` hashed slots:
/// the key `MAX` has its own slot, `capacity`, past the hashed ones.
#[inline(always)]
fn first_slot<K: Key>(key: K, capacity: usize) -> usize {
    if key == K::MAX {
        capacity
    } else {
        start(key, capacity - 1)
    }
}

/// What slot `p`, read as chunks `[[key word, count], [head, padding]]`, says about
/// `key`.
#[inline(always)]
fn step<K: Key>(key: K, p: usize, capacity: usize, slot: [[K; 2]; 2]) -> Step {
    let [[w, n], [head, _]] = slot;
    if p == capacity {
        // The `MAX` key's own slot: it is there when its count is not 0.
        return if n != K::ZERO {
            Step::Found(n.as_u32(), head.as_u32())
        } else {
            Step::Missing
        };
    }
    if w == !key {
        Step::Found(n.as_u32(), head.as_u32())
    } else if w == K::ZERO {
        Step::Missing
    } else {
        Step::Next
    }
}

/// Slot `p` of `table` as its two chunks of two words (chunks `2p` and `2p + 1`:
/// key word and count, head and padding), both loads issued together.
#[inline(always)]
fn read_slot<K: Key>(table: &[K], p: usize) -> Option<[[K; 2]; 2]>
where
    [K; 2]: Vector,
{
    read_chunks::<K, 2, 2>(table, p.checked_mul(2)?, 1)
}

/// Walks the table from slot `p`, whose words are `slot`, to `key`'s slot or an
/// empty one: `(count, head)` of `key`, `(0, 0)` when no build row has it.
#[inline(always)]
fn walk<K: Key>(table: &[K], key: K, mut p: usize, mut slot: Option<[[K; 2]; 2]>) -> (u32, u32)
where
    [K; 2]: Vector,
{
    let capacity = capacity_of(table.len());
    loop {
        let Some(words) = slot else {
            return (0, 0);
        };
        match step(key, p, capacity, words) {
            Step::Found(n, head) => return (n, head),
            Step::Missing => return (0, 0),
            Step::Next => {
                p = (p + 1) & (capacity - 1);
                slot = read_slot(table, p);
            }
        }
    }
}

/// For each of [`ROWS`] keys (`None` finds nothing), the count of build rows with
/// it and the head of their chain (a row plus one), `(0, 0)` when there is none.
/// The first slot of every key is read before any is looked at, so a thread has
/// `ROWS` random reads in flight instead of one.
#[inline(always)]
fn find_rows<K: Key>(table: &[K], keys: [Option<K>; ROWS]) -> [(u32, u32); ROWS]
where
    [K; 2]: Vector,
{
    let capacity = capacity_of(table.len());
    let mut found = [(0, 0); ROWS];
    if capacity == 0 {
        return found;
    }
    let mut p = [0; ROWS];
    let mut first = [None; ROWS];
    // Written out per row: a rolled loop would keep these arrays in local memory.
    each_item!(j in 0 1 2 3 => {
        if let Some(k) = keys[j] {
            p[j] = first_slot(k, capacity);
            first[j] = read_slot(table, p[j]);
        }
    });
    each_item!(j in 0 1 2 3 => {
        if let Some(k) = keys[j] {
            found[j] = walk(table, k, p[j], first[j]);
        }
    });
    found
}

/// The build step: every row of `keys` into the table, `next[row]` its chain link.
/// A grid-stride loop over the rows; the table must be zeroed, as long as
/// `SLOT_WORDS · (capacity + 1)` with `capacity` a power of two above `keys.len()`.
#[inline(always)]
fn build_rows<K: Key>(keys: &[K], table: &AtomicView<'_, K>, next: &mut Out<'_, u32>) {
    let capacity = capacity_of(table.len());
    if capacity <= keys.len() {
        return;
    }
    for row in thread::grid_stride(keys.len()) {
        let p = claim(table, keys[row], capacity);
        table.fetch_add(SLOT_WORDS * p + 1, K::ONE);
        let head = table.swap(SLOT_WORDS * p + 2, K::word(row.get() as u32 + 1));
        if let Some(link) = next.get_mut(row) {
            *link = head.as_u32();
        }
    }
}

/// The count step: `counts[i]` = probe row `i`'s output rows under `mode`,
/// `firsts[i]` (when `firsts` is not empty) the head of its key's chain (a build
/// row plus one, 0 for none), and `totals[b]` the sum over tile `b` (block `b`'s
/// rows `[BLOCK·ROWS·b, BLOCK·ROWS·(b + 1))`, [`ROWS`] consecutive ones a thread).
#[inline(always)]
fn count_rows<K: Key>(
    keys: &[K],
    table: &[K],
    counts: &mut Out<'_, u32, Chunks<ROWS>>,
    firsts: &mut Out<'_, u32, Chunks<ROWS>>,
    totals: &mut Out<'_, u64, PerBlock>,
    mode: u32,
) where
    [K; 2]: Vector,
{
    let c = thread::index_1d();
    let row = c.get().saturating_mul(ROWS);
    let mine: [K; ROWS] = lookback::load_chunk_by::<K, ROWS, 2>(keys, c.get(), K::ZERO);
    let live = |j: usize| row.saturating_add(j) < keys.len();
    let found = find_rows(table, core::array::from_fn(|j| live(j).then_some(mine[j])));
    let n: [u32; ROWS] = core::array::from_fn(|j| match mode {
        SEMI => u32::from(found[j].0 > 0),
        ANTI => u32::from(live(j) && found[j].0 == 0),
        _ => found[j].0,
    });
    store_rows(counts, c, n);
    if !firsts.is_empty() {
        store_rows(firsts, c, found.map(|(_, head)| head));
    }
    let total = n.iter().fold(0u64, |t, &x| t + u64::from(x));
    let total = collective::block_reduce(total, u64::wrapping_add);
    if let Some(b) = thread::block_leader() {
        if let Some(t) = totals.get_mut(b) {
            *t = total;
        }
    }
}

/// Stores this thread's [`ROWS`] values as chunk `c` of `out`: one vector store
/// for a whole chunk, the rows inside `out` of a short last one, nothing past it.
#[inline(always)]
fn store_rows(out: &mut Out<'_, u32, Chunks<ROWS>>, c: ThreadIndex, v: [u32; ROWS]) {
    if c.get().saturating_add(1).saturating_mul(ROWS) <= out.len() {
        out.set_vector(c, v);
    } else if c < out.chunk_count() {
        for (e, x) in out.chunk_mut(c).iter_mut().zip(v) {
            *e = x;
        }
    }
}

/// This thread's [`ROWS`] counts and the output position of its first row: the
/// end of the tiles before its block (`ends`, the inclusive scan of the tile
/// totals) plus the counts of the rows before it in its tile. Every thread of the
/// block calls it.
#[inline(always)]
fn first_position(counts: &[u32], ends: &[u64]) -> (usize, [u32; ROWS]) {
    let c = thread::index_1d().get();
    let n: [u32; ROWS] = lookback::load_chunk_by::<u32, ROWS, ROWS>(counts, c, 0);
    let mine = n.iter().fold(0u64, |t, &x| t + u64::from(x));
    let (before, _) = collective::block_exclusive_scan(mine, 0, u64::wrapping_add);
    let b = thread::block_idx().x as usize;
    let start = match b.checked_sub(1) {
        Some(prev) => ends.get(prev).copied().unwrap_or(0),
        None => 0,
    };
    ((start + before) as usize, n)
}

/// The write step of an inner join: probe row `i`'s pairs at its positions,
/// `(build_rows[k], probe_rows[k])`: the head the count step found, then the rest
/// of its chain (`next`).
#[inline(always)]
fn write_pairs(
    firsts: &[u32],
    next: &[u32],
    counts: &[u32],
    ends: &[u64],
    build_rows: &AtomicView<'_, u32>,
    probe_rows: &AtomicView<'_, u32>,
) {
    let (mut pos, n) = first_position(counts, ends);
    let c = thread::index_1d().get();
    let heads: [u32; ROWS] = lookback::load_chunk_by::<u32, ROWS, ROWS>(firsts, c, 0);
    for j in 0..ROWS {
        let mut head = heads[j];
        for k in 0..n[j] {
            // A table `JoinTable::build` made has as many links in a chain as its
            // slot's count; past a chain's end (no such table) the row is
            // `u32::MAX`, so every position of the output is still written.
            let row = head.checked_sub(1).unwrap_or(u32::MAX);
            build_rows.store(pos, row);
            probe_rows.store(pos, (c * ROWS + j) as u32);
            pos += 1;
            if k + 1 < n[j] {
                head = next.get(row as usize).copied().unwrap_or(0);
            }
        }
    }
}

/// The build step: every row of `keys` into the zeroed `table`, `next[row]` its
/// chain link ([module docs](self)).
#[xlog_kernel(read(keys), atomic(table), write(next), for K in [u32, u64])]
pub fn join_build<K: Key>(keys: &[K], table: &mut [K], next: &mut [u32]) {
    build_rows::<K>(keys, table, next);
}

/// The count step: each probe row's output rows under `mode` (0 inner, 1 semi, 2
/// anti), its chain's head (when `firsts` is not empty) and each tile's total.
#[xlog_kernel(
    read(keys, table), write(counts per chunk(4), firsts per chunk(4), totals per block), block = 256,
    for K in [u32, u64]
)]
pub fn join_count<K: Key>(
    keys: &[K],
    table: &[K],
    counts: &mut [u32],
    firsts: &mut [u32],
    totals: &mut [u64],
    mode: u32,
) where
    [K; 2]: Vector,
{
    count_rows::<K>(keys, table, counts, firsts, totals, mode);
}

/// The write step of an inner join: each probe row's `(build row, probe row)`
/// pairs at its scanned positions, from the chain heads the count step found.
#[xlog_kernel(
    read(firsts, next, counts, ends),
    atomic(build_rows, probe_rows),
    block = 256
)]
pub fn join_write_pairs(
    firsts: &[u32],
    next: &[u32],
    counts: &[u32],
    ends: &[u64],
    build_rows: &mut [u32],
    probe_rows: &mut [u32],
) {
    write_pairs(firsts, next, counts, ends, build_rows, probe_rows);
}

/// The write step of a semi or anti join: the probe rows whose count is 1, in
/// order, at their scanned positions (a stream compaction of the counts).
#[xlog_kernel(read(counts, ends), atomic(rows), block = 256)]
pub fn join_select_rows(counts: &[u32], ends: &[u64], rows: &mut [u32]) {
    let (mut pos, n) = first_position(counts, ends);
    let c = thread::index_1d().get();
    for (j, &kept) in n.iter().enumerate() {
        if kept > 0 {
            rows.store(pos, (c * ROWS + j) as u32);
            pos += 1;
        }
    }
}

const _: () = assert!(ROWS == 4, "the count kernels' views are `per chunk(4)`");

#[cfg(not(target_arch = "nvptx64"))]
pub use host::*;

#[cfg(not(target_arch = "nvptx64"))]
mod host {
    use xlog::{
        AllocTag, BufferView, DeviceBuffer, Error, LaunchConfig, ReadBuffer, Result, Stream,
    };

    use super::{Key, ANTI, BLOCK, ROWS, SEMI, SLOT_WORDS};

    /// The count pass's mode of an inner join: a probe row's number of matches.
    const INNER: u32 = 0;

    /// Key types a [`JoinTable`] is built over: `u32` and `u64`, the types the
    /// join's kernels are compiled for.
    pub trait JoinKey:
        Key + xlog::DeviceCopy + super::JoinBuildType + super::JoinCountType
    {
    }

    impl JoinKey for u32 {}
    impl JoinKey for u64 {}

    /// The result of an inner join: `(build_rows[k], probe_rows[k])` is the `k`-th
    /// matching pair of row ids, ordered by probe row ([module docs](super)).
    #[derive(Debug)]
    pub struct JoinPairs {
        /// Row ids into the build side.
        pub build_rows: DeviceBuffer<u32>,
        /// Row ids into the probe side, ascending.
        pub probe_rows: DeviceBuffer<u32>,
    }

    impl JoinPairs {
        /// The number of matching pairs (the output count).
        pub fn len(&self) -> usize {
            self.probe_rows.len()
        }

        /// Whether no pair matched.
        pub fn is_empty(&self) -> bool {
            self.probe_rows.is_empty()
        }
    }

    /// A hash table over the build side of a join, on the device: build it once,
    /// probe it with any number of probe sides, on any stream ([module docs](super)).
    ///
    /// ```no_run
    /// # fn main() -> xlog::Result<()> {
    /// use xlog_kernels::join::JoinTable;
    /// let rt = xlog::Runtime::get(0)?;
    /// let s = rt.stream()?;
    /// let customers = rt.upload_on(&s, &[7u32, 3, 7])?;
    /// let orders = rt.upload_on(&s, &[3u32, 5, 7])?;
    /// let table = JoinTable::build(&s, &customers)?;
    /// let pairs = table.inner_join(&s, &orders)?;
    /// assert_eq!(pairs.probe_rows.download(&s)?, [0, 2, 2]); // order 2 matches two customers
    /// assert_eq!(table.anti_join(&s, &orders)?.download(&s)?, [1]);
    /// # Ok(()) }
    /// ```
    #[derive(Debug)]
    pub struct JoinTable<K: JoinKey> {
        table: DeviceBuffer<K>,
        next: DeviceBuffer<u32>,
        rows: usize,
    }

    /// Tiles of `BLOCK · ROWS` probe rows over `n` rows.
    fn tiles(n: usize) -> usize {
        n.div_ceil(BLOCK as usize * ROWS)
    }

    /// One block of `BLOCK` threads per tile of `BLOCK · ROWS` rows, over `n` rows.
    fn tile_grid(n: usize) -> LaunchConfig {
        LaunchConfig::new([tiles(n) as u32, 1, 1], [BLOCK, 1, 1])
    }

    fn too_long(what: &str, side: &str, len: usize, max: u64) -> Error {
        Error::InvalidArgument {
            what: format!("xlog_kernels::join::{what}"),
            reason: format!(
                "the {side} side has {len} rows, more than the {max} that u32 row ids can name; split it"
            ),
        }
    }

    impl<K: JoinKey> JoinTable<K> {
        /// Hashes `keys` (the build side) into a new table on `s`: one launch after
        /// zeroing the table, `O(n)` expected work whatever the duplicates.
        ///
        /// Memory, kept while the table lives: `4 · (capacity + 1)` keys for the
        /// table, `capacity` the smallest power of two at least `2 · keys.len()`
        /// (and at least 2), and a `u32` per row.
        ///
        /// # Errors
        ///
        /// `InvalidArgument` when `keys` has `u32::MAX` rows or more;
        /// `BudgetExceeded` when the table does not fit the budget (nothing was
        /// launched); a launch error.
        pub fn build(s: &Stream, keys: &(impl ReadBuffer<K> + ?Sized)) -> Result<Self> {
            let keys = keys.as_view();
            let rows = keys.len();
            if rows >= u32::MAX as usize {
                return Err(too_long(
                    "JoinTable::build",
                    "build",
                    rows,
                    u32::MAX as u64 - 1,
                ));
            }
            let capacity = (2 * rows).max(2).next_power_of_two();
            let rt = s.runtime()?;
            let mut table = rt.alloc_zeroed_on::<K>(s, SLOT_WORDS * (capacity + 1))?;
            // SAFETY: the build kernel writes `next[row]` for every row (a
            // grid-stride loop over all of them) before anything reads it; for no
            // rows there is nothing to read.
            let mut next = unsafe { rt.alloc_uninit::<u32>(s, rows, AllocTag("join chains")) }?;
            if rows > 0 {
                let blocks = rows.div_ceil(BLOCK as usize).min(1 << 20) as u32;
                let cfg = LaunchConfig::new([blocks, 1, 1], [BLOCK, 1, 1]);
                super::join_build::launch(s, cfg, &keys, &mut table, &mut next)?;
            }
            Ok(JoinTable { table, next, rows })
        }

        /// The number of build rows.
        pub fn rows(&self) -> usize {
            self.rows
        }

        /// The number of hashed slots (a power of two, at least twice [`rows`](Self::rows)).
        pub fn capacity(&self) -> usize {
            self.table.len() / SLOT_WORDS - 1
        }

        /// The device memory the table holds, in bytes.
        pub fn bytes(&self) -> usize {
            self.table.len() * std::mem::size_of::<K>() + self.next.len() * 4
        }

        /// The count pass and the scan: each probe row's count (and, for an inner
        /// join, its chain's head), the tiles' ends and the output count (read
        /// back, synchronising `s`).
        #[allow(clippy::type_complexity)]
        fn count(
            &self,
            s: &Stream,
            what: &str,
            probe: &BufferView<'_, K>,
            mode: u32,
        ) -> Result<(
            DeviceBuffer<u32>,
            DeviceBuffer<u32>,
            DeviceBuffer<u64>,
            usize,
        )> {
            let n = probe.len();
            if n > u32::MAX as usize + 1 {
                return Err(too_long(what, "probe", n, u32::MAX as u64 + 1));
            }
            let tiles = tiles(n);
            let rt = s.runtime()?;
            // SAFETY: the grid's threads own `ROWS` consecutive rows each and cover
            // every row; each writes its rows' counts, and heads for an inner join,
            // before anything reads them.
            let mut counts = unsafe { rt.alloc_uninit::<u32>(s, n, AllocTag("join counts")) }?;
            let heads = if mode == INNER { n } else { 0 };
            // SAFETY: as for `counts`.
            let mut firsts = unsafe { rt.alloc_uninit::<u32>(s, heads, AllocTag("join heads")) }?;
            // SAFETY: every block's leader writes its tile's total.
            let mut totals =
                unsafe { rt.alloc_uninit::<u64>(s, tiles, AllocTag("join tile totals")) }?;
            super::join_count::launch(
                s,
                tile_grid(n),
                probe,
                &self.table,
                &mut counts,
                &mut firsts,
                &mut totals,
                mode,
            )?;
            let ends = crate::scan::inclusive_sum(s, &totals)?;
            let total = ends.slice(tiles - 1..).download(s)?[0];
            let total = usize::try_from(total).map_err(|_| Error::InvalidArgument {
                what: format!("xlog_kernels::join::{what}"),
                reason: format!("the join has {total} rows, more than this host can address"),
            })?;
            Ok((counts, firsts, ends, total))
        }

        /// Every `(build row, probe row)` pair with equal keys, ordered by probe row
        /// (within one, in an unspecified order). `O(p + m)` expected for `p` probe
        /// rows and `m` pairs; three launches and one synchronisation (to read the
        /// output count and allocate the output exactly). Cannot be recorded into a graph,
        /// for that read-back.
        ///
        /// # Errors
        ///
        /// `InvalidArgument` when `probe` has more than `2^32` rows;
        /// `BudgetExceeded` when the temporaries or the output do not fit (the
        /// temporaries are freed, nothing else changed); a launch error.
        pub fn inner_join(
            &self,
            s: &Stream,
            probe: &(impl ReadBuffer<K> + ?Sized),
        ) -> Result<JoinPairs> {
            let probe = probe.as_view();
            let rt = s.runtime()?;
            if probe.is_empty() {
                return Ok(JoinPairs {
                    build_rows: rt.alloc_zeroed_on(s, 0)?,
                    probe_rows: rt.alloc_zeroed_on(s, 0)?,
                });
            }
            let (counts, firsts, ends, total) = self.count(s, "inner_join", &probe, INNER)?;
            // SAFETY: the write pass stores every position `0..total`: the scanned
            // counts give each probe row the disjoint range of its pairs, the ranges
            // tile `0..total`, and each row stores exactly its count of pairs there.
            let mut build_rows =
                unsafe { rt.alloc_uninit::<u32>(s, total, AllocTag("join build rows")) }?;
            // SAFETY: as for `build_rows`.
            let mut probe_rows =
                unsafe { rt.alloc_uninit::<u32>(s, total, AllocTag("join probe rows")) }?;
            if total > 0 {
                super::join_write_pairs::launch(
                    s,
                    tile_grid(probe.len()),
                    &firsts,
                    &self.next,
                    &counts,
                    &ends,
                    &mut build_rows,
                    &mut probe_rows,
                )?;
            }
            Ok(JoinPairs {
                build_rows,
                probe_rows,
            })
        }

        /// The probe rows whose key is in the build side, ascending (each once,
        /// whatever its number of matches). `O(p)` expected; three launches and one
        /// synchronisation.
        ///
        /// # Errors
        ///
        /// As [`inner_join`](Self::inner_join).
        pub fn semi_join(
            &self,
            s: &Stream,
            probe: &(impl ReadBuffer<K> + ?Sized),
        ) -> Result<DeviceBuffer<u32>> {
            self.select(s, "semi_join", &probe.as_view(), SEMI)
        }

        /// The probe rows whose key is not in the build side, ascending. `O(p)`
        /// expected; three launches and one synchronisation.
        ///
        /// # Errors
        ///
        /// As [`inner_join`](Self::inner_join).
        pub fn anti_join(
            &self,
            s: &Stream,
            probe: &(impl ReadBuffer<K> + ?Sized),
        ) -> Result<DeviceBuffer<u32>> {
            self.select(s, "anti_join", &probe.as_view(), ANTI)
        }

        fn select(
            &self,
            s: &Stream,
            what: &str,
            probe: &BufferView<'_, K>,
            mode: u32,
        ) -> Result<DeviceBuffer<u32>> {
            let rt = s.runtime()?;
            if probe.is_empty() {
                return rt.alloc_zeroed_on(s, 0);
            }
            let (counts, _, ends, total) = self.count(s, what, probe, mode)?;
            // SAFETY: the compaction stores every position `0..total` once: each
            // kept row at its rank among the kept rows.
            let mut rows = unsafe { rt.alloc_uninit::<u32>(s, total, AllocTag("join rows")) }?;
            if total > 0 {
                super::join_select_rows::launch(
                    s,
                    tile_grid(probe.len()),
                    &counts,
                    &ends,
                    &mut rows,
                )?;
            }
            Ok(rows)
        }
    }

    /// The inner join of `build` and `probe` on equal keys: builds a
    /// [`JoinTable`] over `build` and probes it ([`JoinTable::inner_join`]).
    ///
    /// ```no_run
    /// # fn main() -> xlog::Result<()> {
    /// let rt = xlog::Runtime::get(0)?;
    /// let s = rt.stream()?;
    /// let build = rt.upload_on(&s, &[10u64, 20, 30])?;
    /// let probe = rt.upload_on(&s, &[30u64, 40, 10])?;
    /// let pairs = xlog_kernels::join::inner_join(&s, &build, &probe)?;
    /// assert_eq!(pairs.len(), 2);
    /// assert_eq!(pairs.build_rows.download(&s)?, [2, 0]);
    /// assert_eq!(pairs.probe_rows.download(&s)?, [0, 2]);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// As [`JoinTable::build`] and [`JoinTable::inner_join`].
    pub fn inner_join<K: JoinKey>(
        s: &Stream,
        build: &(impl ReadBuffer<K> + ?Sized),
        probe: &(impl ReadBuffer<K> + ?Sized),
    ) -> Result<JoinPairs> {
        JoinTable::build(s, build)?.inner_join(s, probe)
    }

    /// The probe rows with a match in `build`, ascending ([`JoinTable::semi_join`]).
    ///
    /// # Errors
    ///
    /// As [`JoinTable::build`] and [`JoinTable::inner_join`].
    pub fn semi_join<K: JoinKey>(
        s: &Stream,
        build: &(impl ReadBuffer<K> + ?Sized),
        probe: &(impl ReadBuffer<K> + ?Sized),
    ) -> Result<DeviceBuffer<u32>> {
        JoinTable::build(s, build)?.semi_join(s, probe)
    }

    /// The probe rows without a match in `build`, ascending ([`JoinTable::anti_join`]).
    ///
    /// # Errors
    ///
    /// As [`JoinTable::build`] and [`JoinTable::inner_join`].
    pub fn anti_join<K: JoinKey>(
        s: &Stream,
        build: &(impl ReadBuffer<K> + ?Sized),
        probe: &(impl ReadBuffer<K> + ?Sized),
    ) -> Result<DeviceBuffer<u32>> {
        JoinTable::build(s, build)?.anti_join(s, probe)
    }
}

#[cfg(all(test, not(target_arch = "nvptx64")))]
mod tests {
    use super::*;

    #[test]
    fn hashes_are_bijections_on_small_ranges() {
        let mut seen: Vec<u64> = (0..1u32 << 16).map(Key::hash).collect();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), 1 << 16);
        let mut seen: Vec<u64> = (0..1u64 << 16).map(|k| (k << 40).hash()).collect();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), 1 << 16);
    }

    #[test]
    fn capacity_is_read_back_from_the_table_length() {
        assert_eq!(capacity_of(SLOT_WORDS * 3), 2);
        assert_eq!(capacity_of(SLOT_WORDS * 1025), 1024);
        assert_eq!(capacity_of(SLOT_WORDS * 1024), 0);
        assert_eq!(capacity_of(3), 0);
        assert_eq!(capacity_of(0), 0);
    }

    #[test]
    fn only_max_complements_to_an_empty_word() {
        assert_eq!(!<u32 as Key>::MAX, 0);
        assert_eq!(!<u64 as Key>::MAX, 0);
        assert_ne!(!0u32, 0);
    }

    #[test]
    fn find_walks_a_table_built_on_the_host() {
        // capacity 4: slots 0..4 and the MAX slot 4; key 9 in the slot its hash
        // names, key MAX in its own slot.
        let mut t = vec![0u32; SLOT_WORDS * 5];
        let p = start(9u32, 3);
        t[SLOT_WORDS * p] = !9;
        t[SLOT_WORDS * p + 1] = 2;
        t[SLOT_WORDS * p + 2] = 8;
        t[SLOT_WORDS * 4] = 0;
        t[SLOT_WORDS * 4 + 1] = 1;
        t[SLOT_WORDS * 4 + 2] = 6;
        let other = (0..100u32).find(|&k| k != 9 && start(k, 3) != p);
        assert_eq!(
            find_rows(&t, [Some(9u32), Some(u32::MAX), other, None]),
            [(2, 8), (1, 6), (0, 0), (0, 0)]
        );
        t[SLOT_WORDS * 4 + 1] = 0;
        assert_eq!(
            find_rows(&t, [None, Some(u32::MAX), None, None]),
            [(0, 0); 4]
        );
    }
}
