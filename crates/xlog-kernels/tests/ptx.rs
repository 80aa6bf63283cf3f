//! CI check (no GPU): the embedded module defines every elementwise kernel for
//! every element type and every single-pass and library kernel,
//! `ptxas` validates it for sm_80 and sm_90 without spills, and every shared-memory
//! access in it is a 32-bit word, the reductions and the transpose keep four loads
//! in flight, and every kernel comes out of the module alone (its own cubin).

use xlog_kernels::{sort, MODULE};
use xlog_test_support::shared_ptx::{is_one_word, is_strong, shared_accesses};

const OPS: &[&str] = &[
    "fill", "copy", "cast_f32", "cast_f64", "scale", "axpy", "add", "sub", "mul", "min", "max",
];
const SINGLE_PASS: &[&str] = &[
    "inclusive_scan_u32",
    "inclusive_scan_u64",
    "inclusive_scan_f32",
    "inclusive_max_scan_u32",
    "transpose__u32",
    "transpose__i32",
    "transpose__f32",
    "transpose__u64",
    "transpose__i64",
    "transpose__f64",
];
const TYPES: &[&str] = &["f32", "f64", "i32", "u32", "u64"];

/// The elementwise kernels' entry points: every operation for every type, and the
/// vectorised axpy of each width for its types.
fn elementwise() -> Vec<String> {
    OPS.iter()
        .flat_map(|op| TYPES.iter().map(move |t| format!("{op}__{t}")))
        .chain(["f32", "i32", "u32"].map(|t| format!("axpy_vec__{t}")))
        .chain(["f64", "u64"].map(|t| format!("axpy_vec2__{t}")))
        .collect()
}
/// The query-engine library's element types.
const LIBRARY_TYPES: &[&str] = &["u32", "i32", "f32", "u64", "i64", "f64"];

/// The library's kernels: reduce and scan for every type, gather / scatter for
/// every type and index type, and the user-style operators.
fn library() -> Vec<String> {
    let mut v: Vec<String> = LIBRARY_TYPES
        .iter()
        .flat_map(|t| {
            let wide = if t.ends_with("64") { "64" } else { "" };
            [
                format!("reduce_sum__{t}"),
                format!("reduce_min__{t}"),
                format!("reduce_max__{t}"),
                format!("scan_inclusive_sum{wide}__{t}"),
                format!("scan_exclusive_sum{wide}__{t}"),
            ]
        })
        .collect();
    for t in ["u8", "u16", "i8", "i16"] {
        v.push(format!("reduce_min_narrow__{t}"));
        v.push(format!("reduce_max_narrow__{t}"));
    }
    for t in ["u8", "u16"] {
        v.push(format!("reduce_sum_widened_u64__{t}"));
    }
    for t in ["i8", "i16"] {
        v.push(format!("reduce_sum_widened_i64__{t}"));
    }
    for t in ["u8", "u16", "u32", "i32", "f32", "u64", "i64", "f64"] {
        for i in ["u32", "u64"] {
            v.push(format!("gather_indexed__{t}__{i}"));
            v.push(format!("scatter_indexed__{t}__{i}"));
        }
    }
    v.extend(
        [
            "fold_or_u32",
            "fold_xor__u32",
            "fold_xor__u64",
            "scan_inclusive_max_u32",
            "scan_last_nonzero_u32",
            "scan_inclusive_xor__u32",
            "scan_inclusive_xor__i32",
            "join_select_rows",
            "join_write_single_pairs",
        ]
        .map(String::from),
    );
    v.extend(["join_build__u32", "join_build__u64"].map(String::from));
    v.extend(["join_count__u32", "join_write_pairs__u32"].map(String::from));
    v.extend(["join_count_wide__u64", "join_write_pairs_wide__u64"].map(String::from));
    v
}

/// The sort's value types.
const SORT_VALUES: &[&str] = &["u8", "u16", "u32", "i32", "f32", "u64", "i64", "f64"];

/// The keys-only pass of key type `t`: one kernel for 32-bit keys, one for 64-bit.
fn keys_only_pass(t: &str) -> String {
    if t.ends_with("32") {
        format!("sort_onesweep__{t}")
    } else {
        format!("sort_onesweep64__{t}")
    }
}

/// The sort's kernels: per key type a histogram, a keys-only pass and a pass with
/// values of each value type; and the offsets scan.
fn sort_kernels() -> Vec<String> {
    let mut v: Vec<String> = LIBRARY_TYPES
        .iter()
        .flat_map(|t| {
            [format!("sort_histogram__{t}"), keys_only_pass(t)]
                .into_iter()
                .chain(
                    SORT_VALUES
                        .iter()
                        .map(move |v| format!("sort_onesweep_pairs__{t}__{v}")),
                )
        })
        .collect();
    v.push("sort_offsets".to_owned());
    v
}

/// The histogram, compaction and segmented kernels.
fn selection_kernels() -> Vec<String> {
    let mut v: Vec<String> = LIBRARY_TYPES
        .iter()
        .flat_map(|t| {
            [
                "count_runs",
                "partition_by_flags",
                "unique",
                "unique_runs",
                "segment_max",
                "segment_max_warps",
                "segment_min",
                "segment_min_warps",
                "segment_sum",
                "segment_sum_warps",
            ]
            .map(|k| format!("{k}__{t}"))
        })
        .collect();
    for t in ["u32", "i32", "f32"] {
        v.push(format!("select_by_flags__{t}"));
    }
    for t in ["u64", "i64", "f64"] {
        v.push(format!("select_by_flags64__{t}"));
    }
    // The 8- and 16-bit compaction: its selection, partition and runs.
    for t in ["u8", "u16", "i8", "i16"] {
        v.push(format!("select_by_flags_narrow__{t}"));
        for k in ["count_runs", "partition_by_flags", "unique", "unique_runs"] {
            v.push(format!("{k}__{t}"));
        }
    }
    for t in ["u8", "u16", "u32", "i32", "u64", "i64"] {
        v.push(format!("histogram_counts__{t}"));
    }
    for t in ["f32", "u8", "u16", "u32", "i32"] {
        v.push(format!("histogram_even__{t}"));
    }
    for t in ["u32", "u64"] {
        v.push(format!("segment_or__{t}"));
    }
    for k in ["count_flags", "run_lengths", "run_ends"] {
        v.push(k.to_owned());
    }
    v
}

/// The set operations' kernels over their four integer types, and the merge's
/// bounds kernel, the same for every type.
fn set_kernels() -> Vec<String> {
    ["i32", "i64", "u32", "u64"]
        .iter()
        .flat_map(|t| {
            ["merge_places", "merge_runs", "set_windows", "set_flags"].map(|k| format!("{k}__{t}"))
        })
        .chain(["merge_bounds".to_owned()])
        .collect()
}

fn predicate_kernels() -> Vec<String> {
    ["u8", "u16", "u32", "i32", "f32", "u64", "i64", "f64"]
        .iter()
        .flat_map(|t| {
            ["compare_scalar_flags", "compare_flags", "between_flags"].map(|k| format!("{k}__{t}"))
        })
        .chain(["combine_flags".to_owned()])
        .collect()
}

/// The dense group-by's kernels: counts by `u32` and `u64` counts, sums and order
/// keys over its value types, each by every key type; the decode per value type.
fn dense_group_kernels() -> Vec<String> {
    let keys = ["u8", "u16", "u32"];
    let values = ["u32", "i32", "f32", "u64", "i64", "f64"];
    let mut v = Vec::new();
    for k in keys {
        for c in ["u32", "u64"] {
            v.push(format!("dense_group_count__{c}__{k}"));
        }
        for t in values {
            v.push(format!("dense_group_sum__{t}__{k}"));
            v.push(format!("dense_group_least__{t}__{k}"));
        }
    }
    v.extend(values.map(|t| format!("dense_group_decode__{t}")));
    v
}

#[test]
fn module_defines_every_kernel_for_every_type() {
    let mut want: Vec<String> = elementwise()
        .into_iter()
        .chain(SINGLE_PASS.iter().map(|k| k.to_string()))
        .chain(library())
        .chain(sort_kernels())
        .chain(selection_kernels())
        .chain(set_kernels())
        .chain(predicate_kernels())
        .chain(dense_group_kernels())
        .collect();
    want.sort();
    let mut got: Vec<String> = MODULE
        .kernels()
        .iter()
        .map(|(k, _)| k.to_string())
        .collect();
    got.sort();
    assert_eq!(got, want);
}

#[test]
fn ptxas_accepts_every_kernel_without_spills() {
    let reports = xlog_build::ptxas::check_image(&MODULE).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(reports.len(), 2);
    // The scans trade registers for occupancy (`min_blocks`), which lets ptxas
    // spill; they must still keep their tiles in registers. A scan written as a
    // loop over tiles (the loop's invariants stay live across each tile) spills
    // 60 to 160 bytes a thread at the same bound.
    for r in &reports {
        for f in r
            .functions
            .iter()
            .filter(|f| f.is_entry && f.name.starts_with("scan_"))
        {
            assert!(
                f.spill_stores <= 24 && f.spill_loads <= 24,
                "{} on {}: {} B spill stores, {} B spill loads",
                f.name,
                r.arch,
                f.spill_stores,
                f.spill_loads
            );
        }
    }
}

/// `(path, check)` for each `check_abi` / `check_abi_all` path.
macro_rules! checks {
    ($($($seg:ident)::+),* $(,)?) => {
        [$((stringify!($($seg)::+), $($seg)::+ as fn() -> xlog::Result<()>)),*]
    };
}

/// The kernel a launcher's check belongs to: the path's second-last segment.
fn kernel_of(path: &str) -> String {
    let mut segs = path.rsplit("::").map(str::trim);
    segs.next();
    segs.next().unwrap_or("").to_owned()
}

#[test]
fn every_launcher_agrees_with_the_device_build() {
    // The kernels whose launchers were checked, by name (an instantiation's entry
    // point is its kernel's name, `__`, its types).
    let mut checked: Vec<String> = Vec::new();
    use xlog_kernels::elementwise as e;
    for (path, check) in checks![
        e::fill::check_abi_all,
        e::copy::check_abi_all,
        e::cast_f32::check_abi_all,
        e::cast_f64::check_abi_all,
        e::scale::check_abi_all,
        e::axpy::check_abi_all,
        e::axpy_vec::check_abi_all,
        e::axpy_vec2::check_abi_all,
        e::add::check_abi_all,
        e::sub::check_abi_all,
        e::mul::check_abi_all,
        e::min::check_abi_all,
        e::max::check_abi_all,
    ] {
        check().unwrap_or_else(|e| panic!("{path}: {e}"));
        checked.push(kernel_of(path));
    }
    use xlog_kernels::single_pass as p;
    for (path, check) in checks![
        p::inclusive_scan_u32::check_abi,
        p::inclusive_scan_u64::check_abi,
        p::inclusive_scan_f32::check_abi,
        p::inclusive_max_scan_u32::check_abi,
        p::transpose::check_abi_all,
    ] {
        check().unwrap_or_else(|e| panic!("{path}: {e}"));
        checked.push(kernel_of(path));
    }
    use xlog_kernels::{gather as g, join as j, reduce as r, scan as s};
    for (path, check) in checks![
        r::reduce_sum::check_abi_all,
        r::reduce_min::check_abi_all,
        r::reduce_max::check_abi_all,
        r::reduce_min_narrow::check_abi_all,
        r::reduce_max_narrow::check_abi_all,
        r::reduce_sum_widened_u64::check_abi_all,
        r::reduce_sum_widened_i64::check_abi_all,
        r::fold_or_u32::check_abi,
        r::fold_xor::check_abi_all,
        s::scan_inclusive_sum::check_abi_all,
        s::scan_exclusive_sum::check_abi_all,
        s::scan_inclusive_sum64::check_abi_all,
        s::scan_exclusive_sum64::check_abi_all,
        s::scan_inclusive_max_u32::check_abi,
        s::scan_last_nonzero_u32::check_abi,
        s::scan_inclusive_xor::check_abi_all,
        g::gather_indexed::check_abi_all,
        g::scatter_indexed::check_abi_all,
        j::join_build::check_abi_all,
        j::join_count::check_abi_all,
        j::join_write_pairs::check_abi_all,
        j::join_count_wide::check_abi_all,
        j::join_write_pairs_wide::check_abi_all,
        j::join_select_rows::check_abi,
        j::join_write_single_pairs::check_abi,
        xlog_kernels::sort::sort_histogram::check_abi_all,
        xlog_kernels::sort::sort_offsets::check_abi,
        xlog_kernels::sort::sort_onesweep::check_abi_all,
        xlog_kernels::sort::sort_onesweep64::check_abi_all,
        xlog_kernels::sort::sort_onesweep_pairs::check_abi_all,
        xlog_kernels::set::merge_places::check_abi_all,
        xlog_kernels::set::merge_bounds::check_abi,
        xlog_kernels::set::merge_runs::check_abi_all,
        xlog_kernels::set::set_windows::check_abi_all,
        xlog_kernels::set::set_flags::check_abi_all,
        xlog_kernels::predicate::compare_scalar_flags::check_abi_all,
        xlog_kernels::predicate::compare_flags::check_abi_all,
        xlog_kernels::predicate::between_flags::check_abi_all,
        xlog_kernels::predicate::combine_flags::check_abi,
        xlog_kernels::dense_group::dense_group_count::check_abi_all,
        xlog_kernels::dense_group::dense_group_sum::check_abi_all,
        xlog_kernels::dense_group::dense_group_least::check_abi_all,
        xlog_kernels::dense_group::dense_group_decode::check_abi_all,
        xlog_kernels::compact::select_by_flags::check_abi_all,
        xlog_kernels::compact::select_by_flags64::check_abi_all,
        xlog_kernels::compact::select_by_flags_narrow::check_abi_all,
        xlog_kernels::compact::partition_by_flags::check_abi_all,
        xlog_kernels::compact::unique::check_abi_all,
        xlog_kernels::compact::unique_runs::check_abi_all,
        xlog_kernels::compact::run_ends::check_abi,
        xlog_kernels::compact::count_runs::check_abi_all,
        xlog_kernels::compact::count_flags::check_abi,
        xlog_kernels::compact::run_lengths::check_abi,
        xlog_kernels::segmented::segment_sum::check_abi_all,
        xlog_kernels::segmented::segment_min::check_abi_all,
        xlog_kernels::segmented::segment_max::check_abi_all,
        xlog_kernels::segmented::segment_or::check_abi_all,
        xlog_kernels::segmented::segment_sum_warps::check_abi_all,
        xlog_kernels::segmented::segment_min_warps::check_abi_all,
        xlog_kernels::segmented::segment_max_warps::check_abi_all,
        xlog_kernels::histogram::histogram_even::check_abi_all,
        xlog_kernels::histogram::histogram_counts::check_abi_all,
    ] {
        check().unwrap_or_else(|e| panic!("{path}: {e}"));
        checked.push(kernel_of(path));
    }
    for (entry, _) in MODULE.kernels() {
        let kernel = entry.split("__").next().unwrap_or_default();
        assert!(
            checked.iter().any(|k| k == kernel),
            "no launcher of `{entry}` is checked against the device build"
        );
    }
    assert_eq!(
        elementwise().len()
            + SINGLE_PASS.len()
            + library().len()
            + sort_kernels().len()
            + selection_kernels().len()
            + set_kernels().len()
            + predicate_kernels().len()
            + dense_group_kernels().len(),
        MODULE.kernels().len()
    );
}

/// Safe code's shared-memory accesses (tiles, collectives) must all be relaxed
/// atomics of one size, 4-byte words: two unsynchronised atomics that partially
/// overlap (a `u64` store over a `u32` one) are a data race. A 64-bit or vector
/// access to shared memory reintroduced anywhere in the module fails here.
#[test]
fn every_shared_memory_access_is_a_32_bit_word() {
    let accesses = shared_accesses(MODULE.ptx());
    // The analysis sees the accesses it guards: 64-bit block collectives, the
    // look-back scans' ticket broadcast and a padded 64-bit tile. (The guide's
    // kernels hold static and dynamic 64-bit tiles to the same rule.)
    for kernel in ["reduce_sum__u64", "inclusive_scan_u64", "transpose__f64"] {
        let n = accesses.iter().filter(|(f, _)| f == kernel).count();
        assert!(n >= 2, "{kernel}: found {n} shared accesses");
    }
    let wide: Vec<_> = accesses.iter().filter(|(_, i)| !is_one_word(i)).collect();
    assert!(
        wide.is_empty(),
        "shared-memory accesses wider than one 32-bit word: {wide:#?}"
    );
    // And strong: a weak `ld.shared` / `st.shared` racing another thread's access
    // is a data race in PTX's model, whatever its width.
    let weak: Vec<_> = accesses.iter().filter(|(_, i)| !is_strong(i)).collect();
    assert!(weak.is_empty(), "weak shared-memory accesses: {weak:#?}");
}

#[test]
fn the_shared_access_check_catches_a_64_bit_access() {
    let ptx = "\
.shared .align 8 .b8 S[64];
.visible .entry k(
\t.param .u64 k_param_0
)
{
\t// begin inline asm
\tcvta.shared.u64 %rd1, S;
\t// end inline asm
\tshl.b64 %rd2, %rd3, 3;
\tadd.s64 %rd4, %rd1, %rd2;
\t@%p1 st.relaxed.sys.b32 [%rd4], %r1;
\tld.relaxed.sys.b64 %rd5, [%rd4+8];
\tld.global.b64 %rd6, [%rd7];
\tst.shared.v2.u32 [S], {%r1, %r2};
}
";
    let accesses = shared_accesses(ptx);
    let found: Vec<&str> = accesses.iter().map(|(_, i)| i.as_str()).collect();
    assert_eq!(
        found,
        [
            "st.relaxed.sys.b32 [%rd4], %r1",
            "ld.relaxed.sys.b64 %rd5, [%rd4+8]",
            "st.shared.v2.u32 [S], {%r1, %r2}",
        ]
    );
    assert_eq!(
        found.iter().map(|i| is_one_word(i)).collect::<Vec<_>>(),
        [true, false, false]
    );
    assert_eq!(
        found.iter().map(|i| is_strong(i)).collect::<Vec<_>>(),
        [true, true, false]
    );
    assert!(is_strong("ld.relaxed.cta.shared.b32 %r1, [%r2]"));
    assert!(is_strong("atom.relaxed.cta.shared.add.u32 %r1, [%r2], %r3"));
    assert!(!is_strong("ld.shared.b32 %r1, [%r2]"));
    assert!(!is_strong("st.weak.shared.b32 [%r2], %r1"));
    assert!(accesses.iter().all(|(f, _)| f == "k"));
}

/// `min_blocks = N` reaches the PTX as launch bounds on the kernel's entry only.
#[test]
fn min_blocks_become_launch_bounds_in_the_module() {
    let ptx = MODULE.ptx();
    let bounds = |kernel: &str| -> Option<String> {
        let at = ptx.find(&format!(".entry {kernel}("))?;
        let body = at + ptx[at..].find("\n{")?;
        let close = at + ptx[at..].find(')')?;
        Some(
            ptx[close..body]
                .lines()
                .skip(1)
                .collect::<Vec<_>>()
                .join(" "),
        )
    };
    assert_eq!(
        bounds("sort_onesweep__u32").as_deref(),
        Some(".maxntid 384, 1, 1 .minnctapersm 2")
    );
    assert_eq!(
        bounds("scan_inclusive_sum__i32").as_deref(),
        Some(".maxntid 256, 1, 1 .minnctapersm 5")
    );
    assert_eq!(bounds("reduce_sum__f32").as_deref(), Some(""));
}

/// The PTX of `kernel`'s entry, from `.entry` to its closing brace.
fn entry_body<'a>(ptx: &'a str, kernel: &str) -> &'a str {
    let at = ptx
        .find(&format!(".entry {kernel}("))
        .unwrap_or_else(|| panic!("no entry {kernel}"));
    &ptx[at..at + ptx[at..].find("\n}\n").expect("end of the entry")]
}

/// `(instructions, those whose member mask is the constant full warp)` for every
/// `op` (`vote.sync.ballot.b32`, say) in `kernel`'s body: a mask written `-1` or a
/// register the body sets with `mov.b32 %r, -1`.
fn full_warp_masks(ptx: &str, kernel: &str, op: &str) -> (usize, usize) {
    let body = entry_body(ptx, kernel);
    let full: Vec<&str> = body
        .lines()
        .filter_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            (w.len() == 3 && w[0] == "mov.b32" && w[2] == "-1;").then(|| w[1].trim_end_matches(','))
        })
        .collect();
    let masks: Vec<&str> = body
        .match_indices(op)
        .map(|(i, _)| {
            let operands = &body[i + op.len()..];
            let operands = &operands[..operands.find(';').expect("end of instruction")];
            operands.rsplit(',').next().unwrap().trim()
        })
        .collect();
    let constant = masks
        .iter()
        .filter(|m| **m == "-1" || full.contains(m))
        .count();
    (masks.len(), constant)
}

#[test]
fn the_sort_ranks_with_constant_full_warp_masks() {
    // Per item eight ballots and one shuffle, in the full-tile and the
    // partial-tile copies of the body: with a mask computed at run time, ptxas
    // wraps every one in a convergence check (11 % of a pass's instructions). The
    // counts also pin the items per thread each kernel ranks to the tile the host
    // launches it with (`tile_len` over `tile_threads`): 20 for 32-bit keys
    // alone, 16 otherwise.
    for t in LIBRARY_TYPES {
        let key_bytes = if t.ends_with("32") { 4 } else { 8 };
        let pairs = SORT_VALUES.iter().map(|v| {
            let bytes = if v.ends_with('8') {
                1
            } else if v.ends_with("16") {
                2
            } else if v.ends_with("32") {
                4
            } else {
                8
            };
            (format!("sort_onesweep_pairs__{t}__{v}"), bytes)
        });
        for (kernel, value_bytes) in [(keys_only_pass(t), 0)].into_iter().chain(pairs) {
            let items = sort::tile_len(key_bytes, value_bytes)
                / sort::tile_threads(key_bytes, value_bytes) as usize;
            let (n, full) = full_warp_masks(MODULE.ptx(), &kernel, "vote.sync.ballot.b32");
            assert!(
                n == 2 * items * 8 && full == n,
                "{kernel}: {full} of {n} ballots, {items} items per thread"
            );
            let (n, full) = full_warp_masks(MODULE.ptx(), &kernel, "shfl.sync.idx.b32");
            assert!(
                n == 2 * items && full == n,
                "{kernel}: {full} of {n} shuffles, {items} items per thread"
            );
        }
    }
    // The check tells the masks apart: the block scan's shuffles use the live lanes'.
    let (n, full) = full_warp_masks(MODULE.ptx(), "sort_onesweep__u32", "shfl.sync.up.b32");
    assert!(n > 0 && full == 0, "{full} of {n} scan shuffles");
}

#[test]
fn the_histogram_launch_wave_matches_the_kernels_min_blocks() {
    for t in LIBRARY_TYPES {
        let kernel = format!("sort_histogram__{t}");
        let (_, words) = MODULE
            .kernels()
            .iter()
            .find(|(k, _)| *k == kernel)
            .unwrap_or_else(|| panic!("no {kernel}"));
        let header = xlog::device::abi::HeaderAbi::decode(words[0]);
        assert_eq!(
            header.min_blocks,
            xlog_kernels::sort::HISTOGRAM_BLOCKS_PER_SM,
            "{kernel}"
        );
    }
}

/// Whether `kernel`'s body issues four guarded vector loads (`@%g ld.global.v…`,
/// the aligned path of `view::read_chunks`) with only address arithmetic between
/// them: no instruction that would wait for a loaded value.
fn four_loads_in_flight(ptx: &str, kernel: &str) -> bool {
    let body = entry_body(ptx, kernel);
    // One instruction an entry: an inline `asm!` block may put several on a line.
    let lines: Vec<&str> = body
        .lines()
        .flat_map(|l| l.split(';'))
        .map(|i| i.trim().trim_start_matches('{').trim())
        .collect();
    let loads: Vec<usize> = (0..lines.len())
        .filter(|&i| lines[i].starts_with("@%g ld.global.v"))
        .collect();
    let addressing = |l: &str| {
        l.is_empty()
            || l.starts_with("//")
            || l.starts_with('}')
            || l.starts_with("@!%g ld.")
            || [
                ".reg",
                "isspacep",
                "add.s64",
                "mov.",
                "cvta",
                "shl.b64",
                "mul.lo.s64",
                "mad.lo.s64",
            ]
            .iter()
            .any(|op| l.starts_with(op))
    };
    loads
        .windows(4)
        .any(|w| (w[0] + 1..w[3]).all(|i| w.contains(&i) || addressing(lines[i])))
}

#[test]
fn the_reductions_keep_four_loads_in_flight() {
    // A thread that folds each chunk as it arrives has one load in flight; on an
    // H200 that held the sum at 0.83x CUB's (run 29 of bench/runs/2026-11-26-archive/log.md).
    for t in LIBRARY_TYPES {
        for op in ["reduce_sum", "reduce_min", "reduce_max"] {
            let kernel = format!("{op}__{t}");
            assert!(four_loads_in_flight(MODULE.ptx(), &kernel), "{kernel}");
        }
    }
    assert!(four_loads_in_flight(MODULE.ptx(), "count_flags"));
    // The radix sort's histograms read their keys in pairs, four pairs (one vector
    // load each) in flight per thread, twice the bytes of four single keys (the
    // i64 sort of 10^8 keys on an H200: 12.63 Gkeys/s before, 12.86 and 12.88 in
    // the two calls of `bench/runs/2026-11-28-sort`).
    // The 32-bit ones also issue four loads, but the PTX packs each loaded pair
    // into one 64-bit register before the next load (ptxas schedules it), which
    // this strict check counts as a wait.
    for t in ["u64", "i64", "f64"] {
        let kernel = format!("sort_histogram__{t}");
        assert!(four_loads_in_flight(MODULE.ptx(), &kernel), "{kernel}");
    }
    // The check tells them apart: the scan's four loads of one tile each sit
    // behind their own alignment test.
    assert!(!four_loads_in_flight(
        MODULE.ptx(),
        "scan_inclusive_sum__u32"
    ));
}

/// Whether some straight-line stretch of `kernel` (no label, no branch) issues four
/// or more global loads and then reaches a block barrier.
fn four_loads_reach_a_barrier_unbranched(ptx: &str, kernel: &str) -> bool {
    let body = entry_body(ptx, kernel);
    let mut loads = 0;
    for l in body.lines().flat_map(|l| l.split(';')).map(str::trim) {
        if l.ends_with(':') || l.starts_with('@') || l.starts_with("bra") {
            loads = 0;
        } else if l.starts_with("ld.global") {
            loads += 1;
        } else if l.starts_with("barrier.sync") {
            if loads >= 4 {
                return true;
            }
            loads = 0;
        }
    }
    false
}

/// The transpose's whole-tile path reads a thread's four elements before storing
/// any, with nothing between the loads and the barrier that could branch: a loop
/// storing each element as it arrived held the transpose at 0.27x a copy, and a
/// bounds check on each staging slot (a branch to a panic) let ptxas sink each
/// load behind it, one load in flight, 0.42x the CUDA C++ transpose on an H200
/// (`bench/runs/2026-11-28-tpose/first-call`).
#[test]
fn the_transpose_keeps_four_loads_in_flight() {
    for t in LIBRARY_TYPES {
        let kernel = format!("transpose__{t}");
        assert!(
            four_loads_reach_a_barrier_unbranched(MODULE.ptx(), &kernel),
            "{kernel}"
        );
    }
    // The check tells them apart: the look-back scan's loads each sit behind
    // their own branch.
    assert!(!four_loads_reach_a_barrier_unbranched(
        MODULE.ptx(),
        "inclusive_scan_u32"
    ));
}

/// The transposes fit eight 256-thread blocks on a multiprocessor (32 registers or
/// fewer, 2048 threads), as the CUDA C++ transpose does. A panic with a formatted
/// message anywhere in a kernel (an indexed `x[i]`, a witness's shape check) puts
/// `core::fmt` in reach of its call graph, which ptxas sizes the kernel for: 56
/// registers, four blocks, and 0.70x that transpose on an H200
/// (`bench/runs/2026-11-29-tpose`).
#[test]
fn the_transposes_fit_eight_blocks_of_256_threads() {
    let ptxas = xlog_build::ptxas::require().unwrap_or_else(|e| panic!("{e}"));
    let split = xlog_build::pieces::Split::new(MODULE.ptx()).unwrap_or_else(|e| panic!("{e}"));
    let scratch = std::env::temp_dir().join(format!("xlog-tpose-regs-{}", std::process::id()));
    for t in LIBRARY_TYPES {
        let kernel = format!("transpose__{t}");
        let ptx = split.kernel_ptx(&kernel).unwrap();
        for arch in xlog_build::ptxas::CHECKED_ARCHS {
            let (_, report) = xlog_build::ptxas::compile(&ptxas, &ptx, arch, &kernel, &scratch)
                .unwrap_or_else(|e| panic!("{e}"));
            let f = report.functions.iter().find(|f| f.name == kernel).unwrap();
            let regs = f.registers.unwrap();
            assert!(regs <= 32, "{kernel} on {arch}: {regs} registers");
        }
    }
    let _ = std::fs::remove_dir_all(&scratch);
}

/// Each kernel ships as a cubin of its own, compiled from the module's PTX without
/// the other kernels, so that a first call loads only the kernels it runs: every
/// kernel of the table comes out of the PTX alone, and where the build shipped
/// cubins (`XLOG_CUBIN_ARCHS`), each arch has one per kernel, defining that kernel.
#[test]
fn every_kernel_comes_out_of_the_module_alone() {
    let split = xlog_build::pieces::Split::new(MODULE.ptx()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(split.kernels().count(), MODULE.kernels().len());
    for (kernel, _) in MODULE.kernels() {
        let ptx = split
            .kernel_ptx(kernel)
            .unwrap_or_else(|| panic!("`{kernel}` has no .entry"));
        assert_eq!(xlog_build::ptx_entries(&ptx), [kernel.to_string()]);
    }
    for (arch, cubins) in MODULE.cubins() {
        assert_eq!(cubins.len(), MODULE.kernels().len(), "{arch}");
        for ((kernel, _), cubin) in MODULE.kernels().iter().zip(cubins.iter()) {
            let section = format!(".text.{kernel}\0");
            assert!(
                cubin.starts_with(b"\x7fELF")
                    && cubin
                        .windows(section.len())
                        .any(|w| w == section.as_bytes()),
                "the {arch} cubin of `{kernel}` does not define it"
            );
        }
    }
}

/// The compaction kernels keep their resident blocks per width and step: the
/// selection three for 32-bit elements and two for 64-bit ones (its tile's
/// registers), the partition and the runs four, whatever the type.
#[test]
fn the_compaction_kernels_keep_their_launch_bounds_per_width() {
    let ptx = MODULE.ptx();
    let min_blocks = |kernel: &str| -> String {
        let at = ptx
            .find(&format!(".entry {kernel}("))
            .unwrap_or_else(|| panic!("no entry {kernel}"));
        let body = at + ptx[at..].find("\n{").unwrap();
        let close = at + ptx[at..].find(')').unwrap();
        ptx[close..body]
            .split_whitespace()
            .skip_while(|w| *w != ".minnctapersm")
            .nth(1)
            .unwrap_or_else(|| panic!("{kernel} has no .minnctapersm"))
            .to_owned()
    };
    for t in ["u32", "i32", "f32"] {
        assert_eq!(min_blocks(&format!("select_by_flags__{t}")), "3", "{t}");
    }
    for t in ["u64", "i64", "f64"] {
        assert_eq!(min_blocks(&format!("select_by_flags64__{t}")), "2", "{t}");
    }
    for t in LIBRARY_TYPES {
        assert_eq!(min_blocks(&format!("partition_by_flags__{t}")), "4", "{t}");
        assert_eq!(min_blocks(&format!("unique__{t}")), "4", "{t}");
        assert_eq!(min_blocks(&format!("unique_runs__{t}")), "3", "{t}");
    }
}
