//! Recursion in a PTX module: which kernels can call themselves, directly or
//! through other functions (host only).
//!
//! A GPU thread's stack is a fixed allocation per thread. For a kernel without
//! recursion its size is known when the module is compiled (the deepest chain of
//! frames), and the driver provides it at launch. A recursive call chain has no
//! such bound: its depth comes from the data, and a recursion deeper than the
//! context's stack limit (`CU_LIMIT_STACK_SIZE`, 1 KiB per thread by default) runs
//! off the stack, which the GPU reports as an illegal address (or launch failure)
//! that ends the context, without a message. [`recursive_kernels`] finds these
//! kernels in the PTX text, so that `xlog-build` can warn when it builds one and
//! the runtime can name a likely stack overflow when one of them faults.
//!
//! The call graph is read from the direct calls of each function body
//! (`call.uni name, (..)` / `call (retval0), name, (..)`). Indirect calls (through
//! a register, as `core::fmt` makes them) are not followed, and cycles made only of
//! functions of the panic path (`core::fmt`, `core::panicking`, xlog-device's
//! panic handler), which end in a trap, are not reported.

use std::collections::{BTreeMap, BTreeSet};
use std::string::{String, ToString};
use std::vec::Vec;

/// A kernel that can reach a cycle of direct calls.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Recursion {
    /// The kernel (`.entry`) name.
    pub kernel: String,
    /// The functions of one cycle it reaches, in call order, the first repeated at
    /// the end (`f → g → f`), as readable names (see [`readable`]).
    pub cycle: Vec<String>,
}

impl core::fmt::Display for Recursion {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "kernel `{}` recurses ({})",
            self.kernel,
            self.cycle.join(" → ")
        )
    }
}

/// Names of the panic path's functions contain one of these (mangled) pieces.
const PANIC_PATH: &[&str] = &["4core3fmt", "4core9panicking", "11xlog_device5panic"];

/// Every kernel of `ptx` that reaches a cycle of direct calls, in the order of the
/// kernels' names.
pub fn recursive_kernels(ptx: &str) -> Vec<Recursion> {
    let graph = CallGraph::parse(ptx);
    let mut out = Vec::new();
    for entry in &graph.entries {
        if let Some(cycle) = graph.cycle_from(entry) {
            out.push(Recursion {
                kernel: entry.clone(),
                cycle: cycle.iter().map(|n| readable(n)).collect(),
            });
        }
    }
    out
}

/// The function names a PTX module defines and the direct calls of each body.
#[derive(Default)]
struct CallGraph {
    entries: BTreeSet<String>,
    calls: BTreeMap<String, BTreeSet<String>>,
}

impl CallGraph {
    fn parse(ptx: &str) -> CallGraph {
        let mut graph = CallGraph::default();
        // The function whose header or body is being read, and the brace depth.
        let mut current: Option<String> = None;
        let mut depth = 0usize;
        let mut pending_call = false;
        for line in ptx.lines() {
            let l = line.trim();
            if depth == 0 {
                if let Some((name, entry)) = header(l) {
                    if entry {
                        graph.entries.insert(name.clone());
                    }
                    current = Some(name);
                }
            }
            let code = l.split("//").next().unwrap_or("");
            if let Some(f) = &current {
                if depth > 0 {
                    let mut rest = code;
                    if pending_call {
                        pending_call = false;
                        if let Some(callee) = callee(rest) {
                            graph.calls.entry(f.clone()).or_default().insert(callee);
                        }
                    }
                    while let Some(at) = find_call(rest) {
                        rest = &rest[at..];
                        match callee(rest) {
                            Some(callee) => {
                                graph.calls.entry(f.clone()).or_default().insert(callee);
                            }
                            // The callee is on the next line (older LLVM output).
                            None => {
                                pending_call = rest.trim_end().ends_with(',') || {
                                    let r = rest.trim_end();
                                    r == "call.uni" || r == "call"
                                }
                            }
                        }
                        rest = &rest[1..];
                    }
                }
            }
            for c in code.chars() {
                match c {
                    '{' => depth += 1,
                    '}' => {
                        depth = depth.saturating_sub(1);
                        if depth == 0 {
                            current = None;
                        }
                    }
                    // A declaration (no body) ends at `;` outside any body.
                    ';' if depth == 0 => current = None,
                    _ => {}
                }
            }
        }
        graph
    }

    /// A cycle reachable from `entry` that is not all panic path, if any.
    fn cycle_from(&self, entry: &str) -> Option<Vec<String>> {
        // Iterative depth-first search keeping the path, to name the cycle.
        let mut done: BTreeSet<&str> = BTreeSet::new();
        let mut path: Vec<&str> = Vec::new();
        let mut on_path: BTreeSet<&str> = BTreeSet::new();
        let mut stack: Vec<(&str, Vec<&str>)> = Vec::new();
        let next = |f: &str| -> Vec<&str> {
            self.calls
                .get(f)
                .map(|c| c.iter().map(String::as_str).collect())
                .unwrap_or_default()
        };
        stack.push((entry, next(entry)));
        path.push(entry);
        on_path.insert(entry);
        while let Some((_, pending)) = stack.last_mut() {
            match pending.pop() {
                Some(g) if on_path.contains(g) => {
                    let at = path.iter().position(|p| *p == g).unwrap_or(0);
                    let mut cycle: Vec<String> = path[at..].iter().map(|s| s.to_string()).collect();
                    cycle.push(g.to_string());
                    if !cycle
                        .iter()
                        .all(|n| PANIC_PATH.iter().any(|p| n.contains(p)))
                    {
                        return Some(cycle);
                    }
                }
                Some(g) if !done.contains(g) => {
                    stack.push((g, next(g)));
                    path.push(g);
                    on_path.insert(g);
                }
                Some(_) => {}
                None => {
                    let (f, _) = stack.pop().unwrap_or_default();
                    path.pop();
                    on_path.remove(f);
                    done.insert(f);
                }
            }
        }
        None
    }
}

/// `(name, is_entry)` when `l` starts a function: `.entry name(`, `.func name(`,
/// `.func (.param .b32 func_retval0) name(`, with optional linkage first.
fn header(l: &str) -> Option<(String, bool)> {
    let mut rest = l;
    for linkage in [".visible ", ".weak ", ".extern "] {
        if let Some(r) = rest.strip_prefix(linkage) {
            rest = r.trim_start();
        }
    }
    let (rest, entry) = if let Some(r) = rest.strip_prefix(".entry") {
        (r, true)
    } else if let Some(r) = rest.strip_prefix(".func") {
        (r, false)
    } else {
        return None;
    };
    let mut rest = rest.trim_start();
    if rest.starts_with('(') {
        // The return parameter list.
        rest = rest[rest.find(')')? + 1..].trim_start();
    }
    let name: String = rest.chars().take_while(|c| is_ident(*c)).collect();
    (!name.is_empty()).then_some((name, entry))
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '$' | '.')
}

/// Where the next `call` instruction starts in `code`.
fn find_call(code: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(i) = code[from..].find("call") {
        let at = from + i;
        let before_ok = at == 0 || !is_ident(code[..at].chars().next_back()?);
        let after = &code[at + 4..];
        let after_ok = after.is_empty()
            || after.starts_with(".uni")
            || after.starts_with(' ')
            || after.starts_with('\t');
        if before_ok && after_ok {
            return Some(at);
        }
        from = at + 4;
    }
    None
}

/// The direct callee of the `call` at the start of `code` (or of a line that
/// continues one), if it names a function: `call.uni f, (..)`, `call (r), f, (..)`.
fn callee(code: &str) -> Option<String> {
    let mut rest = code.trim_start();
    for op in ["call.uni", "call"] {
        if let Some(r) = rest.strip_prefix(op) {
            rest = r.trim_start();
            break;
        }
    }
    if rest.starts_with('(') {
        // The return value list: `(retval0),`.
        rest = rest[rest.find(')')? + 1..].trim_start();
        rest = rest.strip_prefix(',').unwrap_or(rest).trim_start();
    }
    let name: String = rest.chars().take_while(|c| is_ident(*c)).collect();
    // A register (`%rd3`) is an indirect call; a bare `(` or nothing is a callee
    // on the next line.
    (!name.is_empty() && !name.starts_with('%') && !name.starts_with("prototype")).then_some(name)
}

/// A mangled Rust name as a path of its identifiers (`xlog_device::panic::cold`),
/// best effort: the length-prefixed identifiers of a legacy (`_ZN..E`) or v0
/// (`_R..`) symbol that start with a letter, without the legacy hash; other names
/// unchanged.
pub fn readable(name: &str) -> String {
    let Some(body) = name.strip_prefix("_ZN").or_else(|| name.strip_prefix("_R")) else {
        return name.to_string();
    };
    let bytes = body.as_bytes();
    let mut parts: Vec<&str> = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        // A v0 crate root's disambiguator, `Cs<base-62 hash>_`: skipped whole,
        // since the hash may hold digits.
        if bytes[i..].starts_with(b"Cs") {
            match body[i..].find('_') {
                Some(end) => {
                    i += end + 1;
                    continue;
                }
                None => break,
            }
        }
        if bytes[i].is_ascii_digit() && (i == 0 || !bytes[i - 1].is_ascii_digit()) {
            let start = i;
            while i < bytes.len() && bytes[i].is_ascii_digit() {
                i += 1;
            }
            let n: usize = body[start..i].parse().unwrap_or(0);
            if n > 0 && i + n <= bytes.len() {
                let ident = &body[i..i + n];
                let legacy_hash = ident.len() == 17 && ident.starts_with('h');
                // Best effort: a crate hash's digits can look like a length, so
                // only identifiers that start with a letter are taken.
                if ident.starts_with(|c: char| c.is_ascii_alphabetic())
                    && ident
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
                    && !legacy_hash
                {
                    parts.push(ident);
                    i += n;
                    continue;
                }
            }
        } else {
            i += 1;
        }
    }
    if parts.is_empty() {
        name.to_string()
    } else {
        parts.join("::")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec;

    const PTX: &str = r#"
.func _RNvCs1_6kernel4deep
(
	.param .b64 p0
)
;
.func  (.param .b32 func_retval0) _RNvCs1_6kernel3odd(.param .b32 p0);
.visible .entry straight(
	.param .u64 straight_param_0
)
{
	{ // callseq 0, 0
	call.uni _RNvNtCs2_4core9panicking9panic_fmt, (param0);
	} // callseq 0
	ret;
}
.visible .entry recursive(
	.param .u64 recursive_param_0
)
{
	{ // callseq 1, 0
	call.uni 
	_RNvCs1_6kernel4deep, 
	(
	param0
	);
	} // callseq 1
	ret;
}
.func _RNvCs1_6kernel4deep(
	.param .b64 p0
)
{
	call.uni _RNvCs1_6kernel4deep, (param0);
	ret;
}
.visible .entry mutual(
	.param .u64 mutual_param_0
)
{
	call (retval0), _RNvCs1_6kernel3odd, (param0);
	ret;
}
.func  (.param .b32 func_retval0) _RNvCs1_6kernel3odd(
	.param .b32 p0
)
{
	call (retval0), _RNvCs1_6kernel4even, (param0);
	ret;
}
.func  (.param .b32 func_retval0) _RNvCs1_6kernel4even(
	.param .b32 p0
)
{
	call (retval0), _RNvCs1_6kernel3odd, (param0);
	call (retval0), %rd3, (param0), prototype_1;
	ret;
}
.func _RNvNtCs2_4core9panicking9panic_fmt(
	.param .b64 p0
)
{
	call.uni _RNvNtCs2_4core9panicking9panic_fmt, (param0);
	ret;
}
"#;

    #[test]
    fn kernels_reaching_a_call_cycle_are_found_with_the_cycle() {
        let found = recursive_kernels(PTX);
        assert_eq!(
            found,
            [
                Recursion {
                    kernel: "mutual".into(),
                    cycle: vec![
                        "kernel::odd".into(),
                        "kernel::even".into(),
                        "kernel::odd".into()
                    ],
                },
                Recursion {
                    kernel: "recursive".into(),
                    cycle: vec!["kernel::deep".into(), "kernel::deep".into()],
                },
            ]
        );
        assert_eq!(
            found[1].to_string(),
            "kernel `recursive` recurses (kernel::deep → kernel::deep)"
        );
    }

    #[test]
    fn names_read_as_paths() {
        assert_eq!(
            readable("_RNvNtNtCsfbYRXlvoeIx_11xlog_device5panic4cold13out_of_bounds"),
            "xlog_device::panic::cold::out_of_bounds"
        );
        assert_eq!(
            readable("_ZN4core9panicking9panic_fmt17h0123456789abcdefE"),
            "core::panicking::panic_fmt"
        );
        assert_eq!(
            readable("_RNvNtCs4W6zzV8aB_19xlog_device_kernels6bodies7recurse"),
            "xlog_device_kernels::bodies::recurse"
        );
        assert_eq!(readable("saxpy"), "saxpy");
    }
}
