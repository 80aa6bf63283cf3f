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
//! **Layout.** The table has `capacity` slots, the smallest power of two at least
//! four times the build side (a load factor of at most 1/4) and at least one
//! bucket, grouped in buckets of four slots. A bucket holds its slots' key words
//! (the key's bitwise complement) and then their value words, so a bucket of `u32`
//! keys is one 32-byte memory sector and a probe that ends in its home bucket costs
//! one random read, like a gather. A value word is the key's build row plus one
//! when it has one build row, and `MAX` when it has more: then a side array,
//! indexed by slot, holds the key's count of build rows and the head of their chain
//! (a row id plus one), the chain continuing through `next[row]`. The side array
//! is read only for duplicate keys.
//!
//! The load factor trades memory for probe speed. A search goes past its home
//! bucket when that bucket is full: for about one search in seven at a load
//! factor of 1/2, one in fifty at 1/4. On an H200 (2^26 distinct build keys,
//! 2^27 probe keys) an inner join's probe took 4.27 ms at 1/2 and 4.02 ms at
//! 1/4, for twice the table memory.
//!
//! **Build** (one launch, one thread per build row). A thread hashes its key
//! (MurmurHash3's finaliser) to a bucket, walks from there by linear probing over
//! buckets to the key's slot or the first empty one and claims it with an atomic
//! compare-exchange of the key word; then it adds one to the slot's count
//! (`fetch_add`), pushes its row on the slot's chain (`swap` of the head, the old
//! head stored in `next[row]`) and sets the value word: the first row of a key
//! stores its row by a compare-exchange from 0, the second stores `MAX`, which the
//! first row's compare-exchange cannot overwrite. Every distinct key has one slot,
//! so duplicates cost a few atomics each, never a longer probe: all-equal keys
//! build in `O(n)`.
//!
//! **Sentinel-free.** A zeroed slot is empty, and its key word holds the
//! complement of the key, so only the key whose complement is 0 (`u32::MAX`,
//! `u64::MAX`) could be mistaken for an empty slot: that one key has its own entry
//! in the side array, past the hashed slots, reached without hashing. Every key
//! value joins. A value word of `MAX` is never a row: build rows are fewer than
//! `u32::MAX`.
//!
//! **Probe** (count, scan, write). A thread takes [`ROWS`] (4) consecutive probe
//! rows, whose keys and per-row words move as vectors; a warp's 128 rows are a
//! count tile. The *count* pass, in blocks of [`COUNT_BLOCK`] (64) threads,
//! finds each row's slot: a
//! thread reads the home bucket of all its rows before looking at any (four random
//! reads in flight), each read a whole bucket (for a semi or anti join only its
//! key words); then the rows whose home bucket was full read the next bucket, again
//! together, so that a warp waits for two rounds of reads rather than for one a
//! row; the rare longer searches walk on row by row. An inner join writes one match
//! word per row: 0 for no match, the build row plus one when its key has exactly
//! one, `u32::MAX` when it has more; a semi or anti join one word of flags per
//! thread, a bit a row. Each tile's total follows, summed by its warp with no
//! block barrier, so that a block holds its multiprocessor only until its own two
//! warps end (the searches' lengths vary, and a block of 256 threads waited for
//! the longest of eight warps: 4.09 ms against 3.87 for the count pass, on an
//! H200). An inclusive scan of the tile totals
//! ([`scan::inclusive_sum`](crate::scan::inclusive_sum)) gives every tile's end in
//! the output and, in its last element, the output count, which the host reads to
//! allocate the output exactly; an inner join's count pass also sets a flag when
//! any key had several build rows, copied next to the count on the device and
//! read back with it in one read. The *write* pass
//! then takes one of two forms:
//!
//! - **Staged**, for a semi or anti join and for an inner join whose keys each
//!   have at most one build row (distinct build keys, the common key and foreign
//!   key join): a block takes 32 count tiles, [`WRITE_ROWS`] (16) rows a thread,
//!   scans their flags or match words for each kept row's rank in the tile,
//!   stages the rows (an inner join's pairs) in shared memory at those ranks, and
//!   after a barrier stores them from there, consecutive threads writing
//!   consecutive rows, so that a warp's stores fill whole memory sectors.
//! - **Per row**, for an inner join with a key of several build rows: a block
//!   of [`BLOCK`] threads (eight count tiles) scans its rows' counts
//!   ([`collective::block_exclusive_scan`]) for each row's first position and
//!   stores the row's pairs there. A row whose match word names its one build row
//!   costs nothing more; a row whose key has several searches the table again (the
//!   same search, so the same count) and walks the chain (`next`).
//!
//! Writes to computed positions go through atomic views (`atomic(build_rows,
//! probe_rows)`): each is one relaxed store, as cheap as a plain one, and safe
//! without a proof that positions never collide. The kernels have no `unsafe`.
//!
//! | | |
//! | --- | --- |
//! | build | `O(b)` work for `b` build rows (expected), 1 launch, plus zeroing the table |
//! | probe | `O(p + m)` work for `p` probe rows and `m` output rows (expected), 3 launches (count, scan, write) and one synchronisation to read the output count (with an inner join's flag of keys with several build rows) |
//! | graphs | not recordable: the probe reads its output count back to size the output, which a graph cannot do between its nodes |
//! | table memory (kept) | four words of the key type a slot (key and value in the buckets, count and head in the side array), `capacity + 1` slots: `16 · (capacity + 1)` bytes for `u32` keys, `32 · (capacity + 1)` for `u64` (64 to 128 bytes a build row for `u32` keys, 128 to 256 for `u64`), and a `u32` a build row for the chains. A probe reads the buckets, half of it, and the side array only for duplicate keys |
//! | probe memory (temporary) | an inner join: a `u32` a probe row (its match word); a semi or anti join: a `u32` per four probe rows (their flags); 16 bytes per count tile of 128 rows and the scan's status words. The output, 8 bytes a pair or 4 a row, is the result. A staged write pass's block holds 16 KiB of shared memory a column (32 KiB for pairs) |
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
use xlog::device::view::{read_chunks, AtomicView, Chunks, PerWarp};
use xlog::prelude::*;

/// Threads per block of the probe kernels.
pub const BLOCK: u32 = 256;

/// Probe rows per thread of the probe kernels: consecutive rows, their keys and
/// per-row words each read or written as vectors, and their first table reads
/// issued together.
pub const ROWS: usize = 4;

/// Threads per block of the count kernels. The count pass sums its output rows a
/// warp at a time, with no barrier, so that a block, which holds its
/// multiprocessor's registers until its last warp ends, is as small as can be:
/// a warp that ends its searches early lets the next block start sooner.
pub const COUNT_BLOCK: u32 = 64;

/// Probe rows per count tile: a warp's, `32 · ROWS` (128). The count pass writes
/// one total a tile, and the write passes find where their rows go from the scan
/// of those totals.
const TILE: usize = xlog::device::warp::WARP_SIZE as usize * ROWS;

/// Probe rows per thread of the write kernels of a semi or anti join and of an
/// inner join whose keys each have at most one build row: a block's tile is 32
/// count tiles (`BLOCK · WRITE_ROWS`, 4096 rows), its output staged in shared
/// memory and stored with consecutive threads writing consecutive rows.
pub const WRITE_ROWS: usize = 16;

/// The count pass's modes (what a probe row contributes to the output): an inner
/// join's, its number of matches; a semi join's, 1 when it has a match; an anti
/// join's, 1 when it has none.
const INNER: u32 = 0;
const SEMI: u32 = 1;
const ANTI: u32 = 2;

/// Slots per bucket. A bucket is its slots' key words then their value words, so a
/// bucket of `u32` keys is one 32-byte memory sector (of `u64` keys, two of one
/// 128-byte line): a probe reads a whole bucket at once.
const BUCKET: usize = 4;

/// Words of the key type per slot in the table's buffer: a key word and a value
/// word in the buckets, a count and a chain head in the side array.
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
    /// The largest value: the one key whose complement is an empty slot's word,
    /// and the value word of a key with more than one build row.
    const MAX: Self;
    /// The key's hash (MurmurHash3's 32- or 64-bit finaliser, a bijection).
    fn hash(self) -> u64;
    /// `n` as a key-typed word (a count or a row id plus one, both below `2^32`).
    fn word(n: u32) -> Self;
    /// A count or chain word back as a `u32` (it was made by [`Key::word`]).
    fn as_u32(self) -> u32;
    /// Bucket `b` of `table`: its key words and, when `values`, its value words
    /// (zeros otherwise), read as the widest vectors the type has; `None` past the
    /// end of `table`.
    fn read_bucket(table: &[Self], b: usize, values: bool) -> Option<[[Self; BUCKET]; 2]>;
}

impl Key for u32 {
    const ZERO: Self = 0;
    const ONE: Self = 1;
    const MAX: Self = u32::MAX;
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
    #[inline(always)]
    fn read_bucket(table: &[u32], b: usize, values: bool) -> Option<[[u32; BUCKET]; 2]> {
        // A bucket is two 16-byte chunks: keys, values.
        let first = b.checked_mul(2)?;
        if values {
            read_chunks::<u32, 4, 2>(table, first, 1)
        } else {
            read_chunks::<u32, 4, 1>(table, first, 1).map(|[keys]| [keys, [0; BUCKET]])
        }
    }
}

impl Key for u64 {
    const ZERO: Self = 0;
    const ONE: Self = 1;
    const MAX: Self = u64::MAX;
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
    #[inline(always)]
    fn read_bucket(table: &[u64], b: usize, values: bool) -> Option<[[u64; BUCKET]; 2]> {
        // A bucket is four 16-byte chunks: two of keys, two of values.
        let first = b.checked_mul(4)?;
        if values {
            let [k0, k1, v0, v1] = read_chunks::<u64, 2, 4>(table, first, 1)?;
            Some([[k0[0], k0[1], k1[0], k1[1]], [v0[0], v0[1], v1[0], v1[1]]])
        } else {
            let [k0, k1] = read_chunks::<u64, 2, 2>(table, first, 1)?;
            Some([[k0[0], k0[1], k1[0], k1[1]], [0; BUCKET]])
        }
    }
}

/// The table's capacity (slots reached by hashing, a power of two of at least one
/// bucket) from its length in words, `SLOT_WORDS · (capacity + 1)`; 0 for a table
/// too short to be one.
#[inline(always)]
fn capacity_of(words: usize) -> usize {
    let cap = (words / SLOT_WORDS).saturating_sub(1);
    if cap.is_power_of_two() && cap >= BUCKET {
        cap
    } else {
        0
    }
}

/// The bucket a search for `key` starts at, in a table of `capacity` slots.
#[inline(always)]
fn home<K: Key>(key: K, capacity: usize) -> usize {
    key.hash() as usize & (capacity / BUCKET - 1)
}

/// The word index of slot `p`'s key word (its value word is `BUCKET` further on).
#[inline(always)]
fn key_word(p: usize) -> usize {
    2 * BUCKET * (p / BUCKET) + p % BUCKET
}

/// The word index of slot `p`'s count in the side array of a table of `capacity`
/// slots (its chain head is the next word).
#[inline(always)]
fn side_word(p: usize, capacity: usize) -> usize {
    2 * capacity + 2 * p
}

/// The slot of `key`, claimed for it if it has none yet. `capacity` is the table's
/// (a power of two, more than the keys inserted, so an empty slot always exists).
#[inline(always)]
fn claim<K: Key>(table: &AtomicView<'_, K>, key: K, capacity: usize) -> usize {
    if key == K::MAX {
        return capacity;
    }
    let want = !key;
    let mut b = home(key, capacity);
    loop {
        for p in BUCKET * b..BUCKET * (b + 1) {
            let w = table.load(key_word(p));
            if w == want {
                return p;
            }
            if w == K::ZERO {
                match table.compare_exchange(key_word(p), K::ZERO, want) {
                    Ok(_) => return p,
                    Err(now) if now == want => return p,
                    Err(_) => {}
                }
            }
        }
        b = (b + 1) & (capacity / BUCKET - 1);
    }
}

/// The count and chain head of slot `p` from the side array (`(0, 0)` for a count
/// of 0 or outside the table).
#[inline(always)]
fn side<K: Key>(table: &[K], p: usize, capacity: usize) -> (u32, u32)
where
    [K; 2]: Vector,
{
    match read_chunks::<K, 2, 1>(table, side_word(p, capacity) / 2, 1) {
        Some([[n, head]]) if n != K::ZERO => (n.as_u32(), head.as_u32()),
        _ => (0, 0),
    }
}

/// What a bucket says of the key whose complement is `want`: in slot `j` of the
/// bucket, with value word `v` (`Found(j, v)`); absent, the bucket having an empty
/// slot; or maybe further on, the bucket being full.
enum Seen<K> {
    Found(usize, K),
    Absent,
    Full,
}

/// Looks for the key whose complement is `want` among a bucket's key words
/// (`keys`, value words `vals`).
#[inline(always)]
fn look<K: Key>([keys, vals]: [[K; BUCKET]; 2], want: K) -> Seen<K> {
    let mut empty = false;
    for j in 0..BUCKET {
        if keys[j] == want {
            return Seen::Found(j, vals[j]);
        }
        empty |= keys[j] == K::ZERO;
    }
    if empty {
        Seen::Absent
    } else {
        Seen::Full
    }
}

/// The count and chain head a search that found its key in slot `slot` of bucket
/// `b`, with value word `v`, gives: `(1, 0)` without `values` (`v` was not read),
/// `(1, head)` for a key of one build row (`head` its row plus one, the value
/// word), the side array's count and head for more.
#[inline(always)]
fn found_at<K: Key>(table: &[K], b: usize, slot: usize, v: K, values: bool) -> (u32, u32)
where
    [K; 2]: Vector,
{
    match (values, v) {
        (false, _) => (1, 0),
        (true, v) if v == K::MAX => side(table, BUCKET * b + slot, capacity_of(table.len())),
        (true, v) => (1, v.as_u32()),
    }
}

/// Walks the table from bucket `b`, whose words are `bucket`, to `key`'s slot or an
/// empty one: `(count, head)` of `key` ([`found_at`]), `(0, 0)` when no build row
/// has it.
#[inline(always)]
fn walk<K: Key>(
    table: &[K],
    key: K,
    mut b: usize,
    mut bucket: Option<[[K; BUCKET]; 2]>,
    values: bool,
) -> (u32, u32)
where
    [K; 2]: Vector,
{
    let capacity = capacity_of(table.len());
    while let Some(words) = bucket {
        match look(words, !key) {
            Seen::Found(slot, v) => return found_at(table, b, slot, v, values),
            Seen::Absent => break,
            Seen::Full => {
                b = (b + 1) & (capacity / BUCKET - 1);
                bucket = K::read_bucket(table, b, values);
            }
        }
    }
    (0, 0)
}

/// For each of [`ROWS`] keys (`None` finds nothing), the count of build rows with
/// it and the head of their chain (a row plus one), `(0, 0)` when there is none;
/// without `values`, `(1, 0)` for a key that is there (the value words are not
/// read).
///
/// Every row's home bucket is read before any is looked at, and then every row
/// whose home bucket is full reads the next one, again before any is looked at: a
/// thread has `ROWS` random reads in flight instead of one, and a warp waits for
/// two reads, not for one a row (at a load factor of 1/4 about one search in fifty
/// goes past its home bucket, so some lane of a warp often does). Searches longer still walk on one row at a time. Without
/// `SECOND_ROUND` every search past its home bucket walks on one row at a time,
/// which needs fewer registers (the inner join's per-row write pass, which
/// searches again only for keys of several build rows).
#[inline(always)]
fn find_rows<K: Key, const SECOND_ROUND: bool>(
    table: &[K],
    keys: [Option<K>; ROWS],
    values: bool,
) -> [(u32, u32); ROWS]
where
    [K; 2]: Vector,
{
    let capacity = capacity_of(table.len());
    let mut found = [(0, 0); ROWS];
    if capacity == 0 {
        return found;
    }
    let mut b = [0; ROWS];
    let mut bucket = [None; ROWS];
    // Written out per row: a rolled loop would keep these arrays in local memory.
    each_item!(j in 0 1 2 3 => {
        if let Some(k) = keys[j] {
            if k != K::MAX {
                b[j] = home(k, capacity);
                bucket[j] = K::read_bucket(table, b[j], values);
            }
        }
    });
    if !SECOND_ROUND {
        each_item!(j in 0 1 2 3 => {
            if let Some(k) = keys[j] {
                found[j] = if k == K::MAX {
                    side(table, capacity, capacity)
                } else {
                    walk(table, k, b[j], bucket[j], values)
                };
            }
        });
        return found;
    }
    let mut more = [false; ROWS];
    each_item!(j in 0 1 2 3 => {
        if let (Some(k), Some(words)) = (keys[j], bucket[j]) {
            match look(words, !k) {
                Seen::Found(slot, v) => found[j] = found_at(table, b[j], slot, v, values),
                Seen::Absent => {}
                Seen::Full => more[j] = true,
            }
        }
    });
    each_item!(j in 0 1 2 3 => {
        bucket[j] = None;
        if more[j] {
            b[j] = (b[j] + 1) & (capacity / BUCKET - 1);
            bucket[j] = K::read_bucket(table, b[j], values);
        }
    });
    each_item!(j in 0 1 2 3 => {
        if let Some(k) = keys[j] {
            if k == K::MAX {
                found[j] = side(table, capacity, capacity);
            } else if more[j] {
                found[j] = walk(table, k, b[j], bucket[j], values);
            }
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
        let id = K::word(row.get() as u32 + 1);
        let before = table.fetch_add(side_word(p, capacity), K::ONE);
        let head = table.swap(side_word(p, capacity) + 1, id);
        if let Some(link) = next.get_mut(row) {
            *link = head.as_u32();
        }
        // The value word: the row of a key's only build row, `MAX` once it has a
        // second. The first row's compare-exchange fails when the second row's
        // store came first, so the word ends `MAX` in either order.
        if p < capacity {
            let value = key_word(p) + BUCKET;
            if before == K::ZERO {
                let _ = table.compare_exchange(value, K::ZERO, id);
            } else if before == K::ONE {
                table.store(value, K::MAX);
            }
        }
    }
}

/// The count step: probe row `i`'s output rows under `mode`, and `totals[w]` the
/// sum over tile `w` (warp `w`'s rows `[TILE·w, TILE·(w + 1))`, [`ROWS`]
/// consecutive ones a thread). An inner join (`matches` not empty) stores
/// the row's match word as `matches[i]` ([`match_word`]); a semi or anti join,
/// whose rows count 0 or 1, stores bit `i mod ROWS` of `flags[i / ROWS]`. A row
/// whose key has several build rows sets `many[0]` to 1.
#[inline(always)]
fn count_rows<K: Key>(
    keys: &[K],
    table: &[K],
    matches: &mut Out<'_, u32, Chunks<ROWS>>,
    flags: &mut Out<'_, u32>,
    totals: &mut Out<'_, u64, PerWarp>,
    many: &AtomicView<'_, u64>,
    mode: u32,
) where
    [K; 2]: Vector,
{
    let c = thread::index_1d();
    let row = c.get().saturating_mul(ROWS);
    let mine: [K; ROWS] = lookback::load_chunk_by::<K, ROWS, 2>(keys, c.get(), K::ZERO);
    let live = |j: usize| row.saturating_add(j) < keys.len();
    let found = find_rows::<K, true>(
        table,
        core::array::from_fn(|j| live(j).then_some(mine[j])),
        mode == INNER,
    );
    let n: [u32; ROWS] = core::array::from_fn(|j| match mode {
        SEMI => u32::from(found[j].0 > 0),
        ANTI => u32::from(live(j) && found[j].0 == 0),
        _ => found[j].0,
    });
    if !matches.is_empty() {
        let words = found.map(match_word);
        if words.contains(&MANY) && !many.is_empty() {
            many.store(0, 1);
        }
        store_rows(matches, c, words);
    } else if let Some(f) = flags.get_mut(c) {
        *f = n.iter().rev().fold(0, |bits, &x| bits << 1 | x);
    }
    let total = n.iter().fold(0u64, |t, &x| t + u64::from(x));
    let total = collective::warp_reduce(total, u64::wrapping_add);
    if let Some(w) = thread::warp_leader() {
        if let Some(t) = totals.get_mut(w) {
            *t = total;
        }
    }
}

/// An inner join's word for a probe row whose key has `count` build rows, the
/// first `head` (a row plus one): 0 for none, `head` for exactly one, [`MANY`]
/// for more. One word a row is all the write pass reads back, and a key with one
/// build row, the common case, needs nothing else.
#[inline(always)]
fn match_word((count, head): (u32, u32)) -> u32 {
    match count {
        0 => 0,
        1 => head,
        _ => MANY,
    }
}

/// The match word of a probe row whose key has more than one build row: the
/// write pass searches the table again for its count and chain. A head is a build
/// row plus one, at most `u32::MAX - 1`, so it is never `MANY`.
const MANY: u32 = u32::MAX;

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

/// Where this block's rows (`BLOCK · ROWS`, [`ROWS`] a thread) start in the
/// output: the end of the count tiles before them (`ends`, the inclusive scan of
/// the tile totals). Read first thing, so that its load is in flight with the
/// tile's own.
#[inline(always)]
fn tile_start(ends: &[u64]) -> u64 {
    let first_tile = thread::block_idx().x as usize * (BLOCK as usize * ROWS / TILE);
    match first_tile.checked_sub(1) {
        Some(prev) => ends.get(prev).copied().unwrap_or(0),
        None => 0,
    }
}

/// The output position of this thread's first row, whose [`ROWS`] rows have `n`
/// output rows, in a tile starting at `start`: `start` plus the output rows of the
/// threads before it in its tile. Every thread of the block calls it.
#[inline(always)]
fn tile_position(n: [u32; ROWS], start: u64) -> usize {
    let mine = n.iter().fold(0u64, |t, &x| t + u64::from(x));
    let (before, _) = collective::block_exclusive_scan(mine, 0, u64::wrapping_add);
    (start + before) as usize
}

/// The write step of an inner join: probe row `i`'s pairs at its positions,
/// `(build_rows[k], probe_rows[k])`. A match word of one build row is the pair;
/// for [`MANY`] the thread searches the table again for the row's key (the same
/// count the count step found: the table is only read) and walks its chain
/// (`next`).
#[inline(always)]
fn write_pairs<K: Key>(
    keys: &[K],
    table: &[K],
    next: &[u32],
    matches: &[u32],
    ends: &[u64],
    build_rows: &AtomicView<'_, u32>,
    probe_rows: &AtomicView<'_, u32>,
) where
    [K; 2]: Vector,
{
    let start = tile_start(ends);
    let c = thread::index_1d().get();
    let words: [u32; ROWS] = lookback::load_chunk_by::<u32, ROWS, ROWS>(matches, c, 0);
    let mut found: [(u32, u32); ROWS] = words.map(|w| (u32::from(w != 0), w));
    if words.contains(&MANY) {
        let mine: [K; ROWS] = lookback::load_chunk_by::<K, ROWS, 2>(keys, c, K::ZERO);
        let again = find_rows::<K, false>(
            table,
            core::array::from_fn(|j| (words[j] == MANY).then_some(mine[j])),
            true,
        );
        each_item!(j in 0 1 2 3 => {
            if words[j] == MANY {
                found[j] = again[j];
            }
        });
    }
    let mut pos = tile_position(found.map(|(n, _)| n), start);
    for (j, &(n, mut head)) in found.iter().enumerate() {
        for k in 0..n {
            // A table `JoinTable::build` made has as many links in a chain as its
            // slot's count; past a chain's end (no such table) the row is
            // `u32::MAX`, so every position of the output is still written.
            let row = head.checked_sub(1).unwrap_or(u32::MAX);
            build_rows.store(pos, row);
            probe_rows.store(pos, (c * ROWS + j) as u32);
            pos += 1;
            if k + 1 < n {
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
/// anti), as an inner join's match words or a semi or anti join's flags, and each
/// tile's total. 32-bit keys; [`join_count_wide`] takes 64-bit ones.
// The probe kernels are bound by random reads and their latency: `min_blocks`
// asks for registers enough for 16 blocks of 64 threads a multiprocessor (64
// registers a thread), so that more reads are in flight. The 64-bit kernels are
// left unbounded: held to 64 registers they spill hundreds of bytes a thread.
#[xlog_kernel(
    read(keys, table),
    write(matches per chunk(4), flags, totals per warp),
    atomic(many),
    block = 64,
    min_blocks = 16,
    for K in [u32]
)]
pub fn join_count<K: Key>(
    keys: &[K],
    table: &[K],
    matches: &mut [u32],
    flags: &mut [u32],
    totals: &mut [u64],
    many: &mut [u64],
    mode: u32,
) where
    [K; 2]: Vector,
{
    count_rows::<K>(keys, table, matches, flags, totals, many, mode);
}

/// [`join_count`] for 64-bit keys.
#[xlog_kernel(
    read(keys, table),
    write(matches per chunk(4), flags, totals per warp),
    atomic(many),
    block = 64,
    for K in [u64]
)]
pub fn join_count_wide<K: Key>(
    keys: &[K],
    table: &[K],
    matches: &mut [u32],
    flags: &mut [u32],
    totals: &mut [u64],
    many: &mut [u64],
    mode: u32,
) where
    [K; 2]: Vector,
{
    count_rows::<K>(keys, table, matches, flags, totals, many, mode);
}

/// The write step of an inner join: each probe row's `(build row, probe row)`
/// pairs at its scanned positions, from the match words the count step stored.
/// 32-bit keys; [`join_write_pairs_wide`] takes 64-bit ones.
#[xlog_kernel(
    read(keys, table, next, matches, ends),
    atomic(build_rows, probe_rows),
    block = 256,
    min_blocks = 4,
    for K in [u32]
)]
pub fn join_write_pairs<K: Key>(
    keys: &[K],
    table: &[K],
    next: &[u32],
    matches: &[u32],
    ends: &[u64],
    build_rows: &mut [u32],
    probe_rows: &mut [u32],
) where
    [K; 2]: Vector,
{
    write_pairs::<K>(keys, table, next, matches, ends, build_rows, probe_rows);
}

/// [`join_write_pairs`] for 64-bit keys.
#[xlog_kernel(
    read(keys, table, next, matches, ends),
    atomic(build_rows, probe_rows),
    block = 256,
    for K in [u64]
)]
pub fn join_write_pairs_wide<K: Key>(
    keys: &[K],
    table: &[K],
    next: &[u32],
    matches: &[u32],
    ends: &[u64],
    build_rows: &mut [u32],
    probe_rows: &mut [u32],
) where
    [K; 2]: Vector,
{
    write_pairs::<K>(keys, table, next, matches, ends, build_rows, probe_rows);
}

/// Where this block's write tile ([`WRITE_ROWS`] rows a thread, `BLOCK ·
/// WRITE_ROWS / TILE` (32) count tiles) starts and ends in the output: the end of
/// the count tiles before it and the end of its last one (`ends`, the inclusive
/// scan of the count tiles' totals). Read first thing, so that the loads are in
/// flight with the tile's own.
#[inline(always)]
fn write_tile_range(ends: &[u64]) -> (usize, usize) {
    const TILES: usize = BLOCK as usize * WRITE_ROWS / TILE;
    let first_tile = thread::block_idx().x as usize * TILES;
    let start = match first_tile.checked_sub(1) {
        Some(prev) => ends.get(prev).copied().unwrap_or(0) as usize,
        None => 0,
    };
    let last = (first_tile + TILES - 1).min(ends.len().saturating_sub(1));
    (start, ends.get(last).copied().unwrap_or(0) as usize)
}

/// Stages this thread's kept rows (bit `j` of `kept` for row `first + j`) from
/// slot `at` of the staging arrays: its probe row, and with `PAIRS` `build(j)`,
/// its build row. Then, after a barrier, the block's `total` staged rows go to
/// `out[1][start..start + total]` (the build rows to `out[0]`), consecutive
/// threads storing consecutive rows.
///
/// # Panics
///
/// When `start + total` is not `end`, the tile's end as the count pass scanned it
/// (the whole block, before storing anything): the block kept another number of
/// rows than the count pass counted, and part of the output would go unwritten.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn stage_and_store<const PAIRS: bool>(
    kept: u32,
    first: usize,
    at: u32,
    total: u32,
    (start, end): (usize, usize),
    build: impl Fn(usize) -> u32,
    out: [&AtomicView<'_, u32>; 2],
) {
    if start.wrapping_add(total as usize) != end {
        panic!("a join write tile kept another number of rows than its count pass counted");
    }
    let [build_rows, probe_rows] = out;
    // A write tile's output, a slot a row (the build rows' array only for pairs).
    const SLOTS: usize = BLOCK as usize * WRITE_ROWS;
    let staged_probe = xlog::device::static_shared!(XLOG_JOIN_STAGED_PROBE: [u32; SLOTS]).words();
    let staged_build = if PAIRS {
        Some(xlog::device::static_shared!(XLOG_JOIN_STAGED_BUILD: [u32; SLOTS]).words())
    } else {
        None
    };
    each_item!(j => {
        if kept & (1 << j) != 0 {
            let k = (at + (kept & ((1 << j) - 1)).count_ones()) as usize;
            if let Some(staged) = staged_build {
                staged.store(k, build(j));
            }
            staged_probe.store(k, (first + j) as u32);
        }
    });
    barrier::sync_threads();
    let threads = thread::block_dim().x as usize;
    let mut i = thread::thread_idx().x as usize;
    while i < total as usize {
        if let Some(staged) = staged_build {
            build_rows.store(start + i, staged.load(i));
        }
        probe_rows.store(start + i, staged_probe.load(i));
        i += threads;
    }
}

/// The write step of a semi or anti join: the probe rows whose flag is set, in
/// order, at their scanned positions (a stream compaction of the flags,
/// [`WRITE_ROWS`] rows a thread, staged in shared memory).
#[xlog_kernel(read(flags, ends), atomic(rows), block = 256)]
pub fn join_select_rows(flags: &[u32], ends: &[u64], rows: &mut [u32]) {
    let range = write_tile_range(ends);
    let c = thread::index_1d().get();
    // Four flag words of `ROWS` bits each, one vector load.
    let w: [u32; 4] = lookback::load_chunk_by::<u32, 4, 4>(flags, c, 0);
    let kept = w[0] | w[1] << 4 | w[2] << 8 | w[3] << 12;
    let (at, total) = collective::block_exclusive_scan(kept.count_ones(), 0, u32::wrapping_add);
    stage_and_store::<false>(kept, c * WRITE_ROWS, at, total, range, |_| 0, [rows, rows]);
}

/// The write step of an inner join whose probe keys each have at most one build
/// row (no match word is [`MANY`]: the count step's `many` stayed 0): each
/// matching row's pair at its scanned position, [`WRITE_ROWS`] rows a thread,
/// staged in shared memory.
// `min_blocks` holds the kernel to 64 registers (68 unbounded, no spill either
// way): four blocks a multiprocessor instead of three, 448 µs instead of 478 for
// 2^27 probe rows on an H200 (`bench/runs/2026-11-29-rounds`); their staging
// arrays, 32 KiB a block, still fit.
#[xlog_kernel(
    read(matches, ends),
    atomic(build_rows, probe_rows),
    block = 256,
    min_blocks = 4
)]
pub fn join_write_single_pairs(
    matches: &[u32],
    ends: &[u64],
    build_rows: &mut [u32],
    probe_rows: &mut [u32],
) {
    let range = write_tile_range(ends);
    let c = thread::index_1d().get();
    let words: [u32; WRITE_ROWS] = lookback::load_chunk_by::<u32, WRITE_ROWS, 4>(matches, c, 0);
    let mut kept = 0u32;
    each_item!(j => {
        kept |= u32::from(words[j] != 0) << j;
    });
    let (at, total) = collective::block_exclusive_scan(kept.count_ones(), 0, u32::wrapping_add);
    // A match word of one build row is that row plus one.
    let build = |j: usize| words[j].wrapping_sub(1);
    let out = [build_rows, probe_rows];
    stage_and_store::<true>(kept, c * WRITE_ROWS, at, total, range, build, out);
}

const _: () = assert!(ROWS == 4, "the count kernels' views are `per chunk(4)`");
const _: () = assert!(
    COUNT_BLOCK == 64,
    "the count kernels' attributes say `block = 64`"
);
const _: () = assert!(
    (COUNT_BLOCK as usize * ROWS) % TILE == 0
        && (BLOCK as usize * ROWS) % TILE == 0
        && (BLOCK as usize * WRITE_ROWS) % TILE == 0,
    "blocks and write tiles hold whole count tiles"
);
const _: () = assert!(WRITE_ROWS == 16, "each_item! writes out 16 rows");

#[cfg(not(target_arch = "nvptx64"))]
pub use host::*;

#[cfg(not(target_arch = "nvptx64"))]
mod host {
    use xlog::{
        AllocTag, BufferView, DeviceBuffer, Error, LaunchConfig, ReadBuffer, Result, Stream,
    };

    use super::{
        Key, ANTI, BLOCK, BUCKET, COUNT_BLOCK, INNER, ROWS, SEMI, SLOT_WORDS, TILE, WRITE_ROWS,
    };

    /// Key types a [`JoinTable`] is built over: `u32` and `u64`, the types the
    /// join's kernels are compiled for.
    pub trait JoinKey: Key + xlog::DeviceCopy + super::JoinBuildType {
        #[doc(hidden)]
        #[allow(clippy::too_many_arguments)]
        fn __count(
            s: &Stream,
            cfg: LaunchConfig,
            probe: &BufferView<'_, Self>,
            table: &DeviceBuffer<Self>,
            matches: &mut DeviceBuffer<u32>,
            flags: &mut DeviceBuffer<u32>,
            totals: &mut DeviceBuffer<u64>,
            many: &mut DeviceBuffer<u64>,
            mode: u32,
        ) -> Result<()>;

        #[doc(hidden)]
        #[allow(clippy::too_many_arguments)]
        fn __write_pairs(
            s: &Stream,
            cfg: LaunchConfig,
            probe: &BufferView<'_, Self>,
            table: &DeviceBuffer<Self>,
            next: &DeviceBuffer<u32>,
            matches: &DeviceBuffer<u32>,
            ends: &DeviceBuffer<u64>,
            build_rows: &mut DeviceBuffer<u32>,
            probe_rows: &mut DeviceBuffer<u32>,
        ) -> Result<()>;
    }

    /// [`JoinKey`] for a key type whose count and write kernels are `$count` and
    /// `$write`.
    macro_rules! join_key {
        ($($k:ty => $count:ident, $write:ident;)*) => {$(
            impl JoinKey for $k {
                fn __count(
                    s: &Stream,
                    cfg: LaunchConfig,
                    probe: &BufferView<'_, Self>,
                    table: &DeviceBuffer<Self>,
                    matches: &mut DeviceBuffer<u32>,
                    flags: &mut DeviceBuffer<u32>,
                    totals: &mut DeviceBuffer<u64>,
                    many: &mut DeviceBuffer<u64>,
                    mode: u32,
                ) -> Result<()> {
                    super::$count::launch(
                        s, cfg, probe, table, matches, flags, totals, many, mode,
                    )
                }

                fn __write_pairs(
                    s: &Stream,
                    cfg: LaunchConfig,
                    probe: &BufferView<'_, Self>,
                    table: &DeviceBuffer<Self>,
                    next: &DeviceBuffer<u32>,
                    matches: &DeviceBuffer<u32>,
                    ends: &DeviceBuffer<u64>,
                    build_rows: &mut DeviceBuffer<u32>,
                    probe_rows: &mut DeviceBuffer<u32>,
                ) -> Result<()> {
                    super::$write::launch(
                        s, cfg, probe, table, next, matches, ends, build_rows, probe_rows,
                    )
                }
            }
        )*};
    }

    join_key! {
        u32 => join_count, join_write_pairs;
        u64 => join_count_wide, join_write_pairs_wide;
    }

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

    /// What a probe's count pass leaves for its write pass.
    struct Counted {
        /// An inner join's match word per probe row (empty otherwise).
        matches: DeviceBuffer<u32>,
        /// A semi or anti join's kept rows, `ROWS` bits a word (empty otherwise).
        flags: DeviceBuffer<u32>,
        /// The inclusive scan of the tiles' output rows.
        ends: DeviceBuffer<u64>,
        /// The output count.
        total: usize,
        /// Whether an inner join's probe keys had a key with several build rows
        /// (a match word [`MANY`](super::MANY)); false for a semi or anti join.
        many: bool,
    }

    /// Count tiles of `TILE` probe rows over `n` rows.
    fn tiles(n: usize) -> usize {
        n.div_ceil(TILE)
    }

    /// The count pass's grid: blocks of `COUNT_BLOCK` threads, `ROWS` rows a
    /// thread, over `n` rows.
    fn count_grid(n: usize) -> LaunchConfig {
        let blocks = n.div_ceil(COUNT_BLOCK as usize * ROWS);
        LaunchConfig::new([blocks as u32, 1, 1], [COUNT_BLOCK, 1, 1])
    }

    /// One block of `BLOCK` threads per `BLOCK · ROWS` rows, over `n` rows.
    fn tile_grid(n: usize) -> LaunchConfig {
        let blocks = n.div_ceil(BLOCK as usize * ROWS);
        LaunchConfig::new([blocks as u32, 1, 1], [BLOCK, 1, 1])
    }

    /// One block of `BLOCK` threads per write tile of `BLOCK · WRITE_ROWS` rows,
    /// over `n` rows.
    fn write_grid(n: usize) -> LaunchConfig {
        let tiles = n.div_ceil(BLOCK as usize * WRITE_ROWS);
        LaunchConfig::new([tiles as u32, 1, 1], [BLOCK, 1, 1])
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
        /// table, `capacity` the smallest power of two at least `4 · keys.len()`
        /// (and at least one bucket, 4), and a `u32` per row.
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
            let capacity = (4 * rows).max(BUCKET).next_power_of_two();
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

        /// The number of hashed slots (a power of two, at least four times
        /// [`rows`](Self::rows)).
        pub fn capacity(&self) -> usize {
            self.table.len() / SLOT_WORDS - 1
        }

        /// The device memory the table holds, in bytes.
        pub fn bytes(&self) -> usize {
            self.table.len() * std::mem::size_of::<K>() + self.next.len() * 4
        }

        /// The count pass and the scan: each probe row's match word (an inner
        /// join) or flag (a semi or anti join), the tiles' ends and the output
        /// count (read back, synchronising `s`).
        fn count(
            &self,
            s: &Stream,
            what: &str,
            probe: &BufferView<'_, K>,
            mode: u32,
        ) -> Result<Counted> {
            let n = probe.len();
            if n > u32::MAX as usize + 1 {
                return Err(too_long(what, "probe", n, u32::MAX as u64 + 1));
            }
            let tiles = tiles(n);
            let rt = s.runtime()?;
            // An inner join's count pass writes a match word per row, a semi or anti
            // join's a word of `ROWS` flags per thread.
            let (per_row, per_thread) = match mode {
                INNER => (n, 0),
                _ => (0, n.div_ceil(ROWS)),
            };
            // SAFETY: the grid's threads own `ROWS` consecutive rows each and cover
            // every row; each writes its rows' match words (an inner join) or its
            // word of flags (a semi or anti join) before anything reads them.
            let mut matches =
                unsafe { rt.alloc_uninit::<u32>(s, per_row, AllocTag("join matches")) }?;
            // SAFETY: as for `matches`.
            let mut flags =
                unsafe { rt.alloc_uninit::<u32>(s, per_thread, AllocTag("join flags")) }?;
            // SAFETY: every warp's leader writes its tile's total.
            let mut totals =
                unsafe { rt.alloc_uninit::<u64>(s, tiles, AllocTag("join tile totals")) }?;
            // An inner join's count pass sets its first word when a key has several
            // build rows; the output count is copied to its second, so that one
            // read brings back both.
            let mut many = rt.alloc_zeroed_on::<u64>(s, 2 * usize::from(mode == INNER))?;
            K::__count(
                s,
                count_grid(n),
                probe,
                &self.table,
                &mut matches,
                &mut flags,
                &mut totals,
                &mut many,
                mode,
            )?;
            let ends = crate::scan::inclusive_sum(s, &totals)?;
            let last = ends.slice(tiles - 1..);
            let (total, many) = if mode == INNER {
                many.slice_mut(1..).copy_from(s, &last)?;
                let [many, total] = many.download(s)?[..] else {
                    unreachable!("an inner join's flag buffer holds two words")
                };
                (total, many != 0)
            } else {
                (last.download(s)?[0], false)
            };
            let total = usize::try_from(total).map_err(|_| Error::InvalidArgument {
                what: format!("xlog_kernels::join::{what}"),
                reason: format!("the join has {total} rows, more than this host can address"),
            })?;
            Ok(Counted {
                matches,
                flags,
                ends,
                total,
                many,
            })
        }

        /// Every `(build row, probe row)` pair with equal keys, ordered by probe row
        /// (within one, in an unspecified order). `O(p + m)` expected for `p` probe
        /// rows and `m` pairs; three launches and one read, a synchronisation (the
        /// output count, to allocate the output exactly, with whether a key had
        /// several build rows, to pick the write pass). Cannot be recorded into a
        /// graph, for that read-back.
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
            let Counted {
                matches,
                ends,
                total,
                many,
                ..
            } = self.count(s, "inner_join", &probe, INNER)?;
            // SAFETY: the write pass stores every position `0..total`: it finds each
            // probe row's count again (its match word, or the same search of the
            // same table for a key with several build rows), the scanned counts give
            // each row the disjoint range of its pairs, the ranges tile `0..total`,
            // and each row stores exactly its count of pairs there. Without a key of
            // several build rows (`many` unset: no match word is `MANY`), every
            // count is 0 or 1 and the single-pair pass stores each matching row's
            // one pair at its rank among them, which is its scanned position.
            let mut build_rows =
                unsafe { rt.alloc_uninit::<u32>(s, total, AllocTag("join build rows")) }?;
            // SAFETY: as for `build_rows`.
            let mut probe_rows =
                unsafe { rt.alloc_uninit::<u32>(s, total, AllocTag("join probe rows")) }?;
            if total > 0 && !many {
                super::join_write_single_pairs::launch(
                    s,
                    write_grid(probe.len()),
                    &matches,
                    &ends,
                    &mut build_rows,
                    &mut probe_rows,
                )?;
            } else if total > 0 {
                K::__write_pairs(
                    s,
                    tile_grid(probe.len()),
                    &probe,
                    &self.table,
                    &self.next,
                    &matches,
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
        /// expected; three launches and one synchronisation (to read the output
        /// count).
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
            let Counted {
                flags, ends, total, ..
            } = self.count(s, what, probe, mode)?;
            // SAFETY: the compaction stores every position `0..total` once: each
            // kept row at its rank among the kept rows.
            let mut rows = unsafe { rt.alloc_uninit::<u32>(s, total, AllocTag("join rows")) }?;
            if total > 0 {
                super::join_select_rows::launch(
                    s,
                    write_grid(probe.len()),
                    &flags,
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
        assert_eq!(capacity_of(SLOT_WORDS * 5), 4);
        assert_eq!(capacity_of(SLOT_WORDS * 1025), 1024);
        assert_eq!(capacity_of(SLOT_WORDS * 1024), 0);
        assert_eq!(capacity_of(SLOT_WORDS * 3), 0);
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
    fn a_match_word_is_the_one_build_row_or_many() {
        assert_eq!(match_word((0, 0)), 0);
        assert_eq!(match_word((1, 1)), 1);
        // The last build row there can be (`u32::MAX - 2`) has head `u32::MAX - 1`.
        assert_eq!(match_word((1, u32::MAX - 1)), u32::MAX - 1);
        assert_ne!(match_word((1, u32::MAX - 1)), MANY);
        assert_eq!(match_word((2, 7)), MANY);
        assert_eq!(match_word((u32::MAX, 7)), MANY);
    }

    /// [`find_rows`] with and without its second round of reads, which must agree.
    fn find<K: Key + core::fmt::Debug>(
        t: &[K],
        q: [Option<K>; ROWS],
        values: bool,
    ) -> [(u32, u32); ROWS]
    where
        [K; 2]: Vector,
    {
        let found = find_rows::<K, true>(t, q, values);
        assert_eq!(found, find_rows::<K, false>(t, q, values));
        found
    }

    /// Puts `key` into slot `p` of the host table `t` of `capacity` slots with
    /// `value` as its value word and `(count, head)` in the side array.
    fn put<K: Key>(t: &mut [K], capacity: usize, p: usize, key: K, value: K, side: (u32, u32)) {
        t[key_word(p)] = !key;
        t[key_word(p) + BUCKET] = value;
        t[side_word(p, capacity)] = K::word(side.0);
        t[side_word(p, capacity) + 1] = K::word(side.1);
    }

    fn find_walks_a_table_built_on_the_host<K: Key + core::fmt::Debug>(keys: &[K])
    where
        [K; 2]: Vector,
    {
        // capacity 8: buckets 0 and 1, the MAX key's side entry at slot 8. The home
        // bucket of `a` is full of other keys, so `a` sits in the other bucket; `b`
        // has two build rows, the MAX key one.
        let cap = 8;
        let mut t = vec![K::ZERO; SLOT_WORDS * (cap + 1)];
        let a = keys[0];
        let home_a = home(a, cap);
        let others: Vec<K> = keys[1..]
            .iter()
            .copied()
            .filter(|&k| k != K::MAX && home(k, cap) == home_a)
            .take(BUCKET)
            .collect();
        assert_eq!(others.len(), BUCKET);
        for (j, &k) in others.iter().enumerate() {
            put(
                &mut t,
                cap,
                BUCKET * home_a + j,
                k,
                K::word(20 + j as u32),
                (1, 20 + j as u32),
            );
        }
        let spill = BUCKET * (1 - home_a);
        put(&mut t, cap, spill, a, K::word(3), (1, 3));
        let b = keys[1..]
            .iter()
            .copied()
            .find(|&k| k != K::MAX && !others.contains(&k) && home(k, cap) != home_a)
            .unwrap();
        put(&mut t, cap, spill + 1, b, K::MAX, (2, 9));
        put(&mut t, cap, cap, K::MAX, K::ZERO, (1, 6));
        let missing = keys[1..]
            .iter()
            .copied()
            .find(|&k| k != K::MAX && k != b && !others.contains(&k))
            .unwrap();
        let q = [Some(a), Some(K::MAX), Some(b), Some(missing)];
        assert_eq!(find(&t, q, true), [(1, 3), (1, 6), (2, 9), (0, 0)]);
        assert_eq!(find(&t, q, false), [(1, 0), (1, 6), (1, 0), (0, 0)]);
        assert_eq!(
            find(&t, [None, Some(others[2]), None, None], true)[1],
            (1, 22)
        );
        // The MAX key with no build row: its count is 0.
        t[side_word(cap, cap)] = K::ZERO;
        assert_eq!(
            find(&t, [None, Some(K::MAX), None, None], true),
            [(0, 0); 4]
        );
    }

    /// Searches three buckets long, beside searches of one and two, wrapping
    /// around the table's end: the keys searched are homed at the last bucket `h`,
    /// which and the first bucket after it (bucket 0) are full of other keys homed
    /// at `h`, so `a` sits two buckets on (bucket 1) and a missing key homed at `h`
    /// ends at the empty slot after it.
    fn find_walks_past_two_full_buckets<K: Key + core::fmt::Debug>(keys: &[K])
    where
        [K; 2]: Vector,
    {
        // capacity 16: buckets 0 to 3, the MAX key's side entry at slot 16.
        let cap = 16;
        let mut t = vec![K::ZERO; SLOT_WORDS * (cap + 1)];
        let h = cap / BUCKET - 1;
        let mut homed = keys
            .iter()
            .copied()
            .filter(|&k| k != K::MAX && home(k, cap) == h);
        let a = homed.next().unwrap();
        let full: Vec<K> = homed.by_ref().take(2 * BUCKET).collect();
        let missing = homed.next().unwrap();
        assert_eq!(full.len(), 2 * BUCKET);
        for (j, &k) in full.iter().enumerate() {
            let p = (BUCKET * h + j) % cap;
            put(
                &mut t,
                cap,
                p,
                k,
                K::word(40 + j as u32),
                (1, 40 + j as u32),
            );
        }
        let third = BUCKET * ((h + 2) % (cap / BUCKET));
        assert_eq!(third, BUCKET, "the search wraps around to bucket 1");
        put(&mut t, cap, third, a, K::word(7), (1, 7));
        let q = [
            Some(missing),
            Some(a),
            Some(full[BUCKET + 1]),
            Some(full[0]),
        ];
        assert_eq!(find(&t, q, true), [(0, 0), (1, 7), (1, 45), (1, 40)]);
        assert_eq!(find(&t, q, false), [(0, 0), (1, 0), (1, 0), (1, 0)]);
    }

    #[test]
    fn find_walks_a_table_built_on_the_host_u32() {
        let keys: Vec<u32> = (0..1000).collect();
        find_walks_a_table_built_on_the_host(&keys);
        find_walks_past_two_full_buckets(&keys);
    }

    #[test]
    fn find_walks_a_table_built_on_the_host_u64() {
        let keys: Vec<u64> = (0..1000).map(|k| k << 40).collect();
        find_walks_a_table_built_on_the_host(&keys);
        find_walks_past_two_full_buckets(&keys);
    }
}
