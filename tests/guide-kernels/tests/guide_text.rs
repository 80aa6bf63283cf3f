//! The guide prints code that must compile and run: every kernel it shows from this
//! crate and its filter, join and group-by (run by `tests/gpu_guide.rs`) must be
//! the code here, up to whitespace and `//` comments. Fails when either side
//! changes alone.

const GUIDE: &str = include_str!("../../../docs/guide.md");
const KERNELS_RS: &str = include_str!("../src/lib.rs");
const GPU_RS: &str = include_str!("gpu_guide.rs");

/// `code` without `//` comments (doc comments included) and whitespace.
fn normalised(code: &str) -> String {
    code.lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .flat_map(|l| l.chars().filter(|c| !c.is_whitespace()))
        .collect()
}

/// The guide's fenced `rust` blocks, in order.
fn rust_blocks() -> Vec<String> {
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in GUIDE.lines() {
        match (&mut current, line.trim_start()) {
            (None, "```rust") => current = Some(String::new()),
            (Some(_), "```") => blocks.extend(current.take()),
            (Some(b), _) => {
                b.push_str(line);
                b.push('\n');
            }
            _ => {}
        }
    }
    blocks
}

/// The name of the kernel a block defines, if it defines one of this crate's.
fn guide_kernel(block: &str) -> Option<&'static str> {
    xlog_guide_kernels::KERNELS
        .iter()
        .copied()
        .find(|k| block.contains(&format!("pub fn {k}(")))
}

#[test]
fn the_kernels_the_guide_shows_are_this_crates() {
    let source = normalised(KERNELS_RS);
    let mut shown: Vec<&str> = Vec::new();
    for block in rust_blocks() {
        if let Some(k) = guide_kernel(&block) {
            assert!(
                source.contains(&normalised(&block)),
                "the guide's `{k}` differs from tests/guide-kernels/src/lib.rs:\n{block}"
            );
            shown.push(k);
        }
    }
    for k in ["histogram_u8", "block_sum_u64", "block_reverse_f32"] {
        assert!(shown.contains(&k), "the guide no longer shows `{k}`");
    }
}

#[test]
fn the_guides_query_is_the_one_the_gpu_suite_runs() {
    let source = normalised(GPU_RS);
    let blocks: Vec<String> = rust_blocks()
        .into_iter()
        .filter(|b| b.contains("dense_group::sum("))
        .collect();
    assert_eq!(
        blocks.len(),
        1,
        "the guide shows one filter, join and group-by"
    );
    // Each paragraph (the imports, the query) appears in the suite as written.
    for part in blocks[0].split("\n\n") {
        assert!(
            source.contains(&normalised(part)),
            "the guide's query differs from tests/gpu_guide.rs `query`:\n{part}"
        );
    }
}

#[test]
fn normalising_drops_comments_and_layout_only() {
    assert_eq!(
        normalised("let a = 1; // one\n/// doc\n  let  b = a;"),
        "leta=1;letb=a;"
    );
    assert_ne!(normalised("let a = 1;"), normalised("let a = 2;"));
}

/// The element types the guide's library table marks: its columns, in order.
const TYPE_COLUMNS: [&str; 10] = [
    "u8", "u16", "i8", "i16", "u32", "i32", "u64", "i64", "f32", "f64",
];

/// The first type parameter of each entry point of `kernel` in the library's
/// module (`reduce_sum__u32` → `u32`, `gather_indexed__u8__u64` → `u8`).
fn kernel_types(kernel: &str) -> Vec<String> {
    let prefix = format!("{kernel}__");
    let mut types: Vec<String> = xlog_kernels::MODULE
        .kernels()
        .iter()
        .filter_map(|(name, _)| name.strip_prefix(prefix.as_str()))
        .map(|rest| rest.split("__").next().unwrap_or(rest).to_owned())
        .collect();
    types.sort();
    types.dedup();
    types
}

/// Every row of the guide's table of algorithms by element type marks exactly the
/// types its kernels are compiled for (the union over the kernels it names).
#[test]
fn the_guides_library_table_matches_the_kernels() {
    let mut rows = GUIDE
        .lines()
        .skip_while(|l| !l.starts_with("| algorithm | kernels |"))
        .take_while(|l| l.starts_with('|'));
    let header: Vec<&str> = rows
        .next()
        .expect("the table")
        .split('|')
        .map(str::trim)
        .collect();
    assert_eq!(header[3..13], TYPE_COLUMNS, "the table's type columns");
    let mut checked = 0;
    for row in rows.skip(1) {
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        let kernels: Vec<&str> = cells[2].split('`').skip(1).step_by(2).collect();
        assert!(!kernels.is_empty(), "a row names no kernel: {row}");
        let mut have: Vec<String> = kernels.iter().flat_map(|k| kernel_types(k)).collect();
        for k in &kernels {
            assert!(
                !kernel_types(k).is_empty(),
                "no kernel `{k}` in the library: {row}"
            );
        }
        have.sort();
        have.dedup();
        let mut marked: Vec<String> = TYPE_COLUMNS
            .iter()
            .zip(&cells[3..13])
            .filter(|(_, c)| !c.is_empty())
            .map(|(t, c)| {
                assert_eq!(*c, "✓", "a cell that is neither empty nor ✓: {row}");
                t.to_string()
            })
            .collect();
        marked.sort();
        assert_eq!(
            marked, have,
            "the guide's row differs from the kernels: {row}"
        );
        checked += 1;
    }
    assert!(checked >= 15, "the table has {checked} rows");
}
