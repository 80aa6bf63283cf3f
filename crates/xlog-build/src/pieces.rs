//! A module's PTX cut into one module per kernel, and their cubins.
//!
//! A driver loads a cubin in time about proportional to its size (about 1 ms a
//! megabyte on an H200, lazy loading or not), and a library's module holds hundreds
//! of kernels: loading it whole made the first library call of a process cost the
//! whole library. So each kernel is compiled to a cubin of its own, and the runtime
//! loads a kernel's cubin at the kernel's first use.
//!
//! A kernel's PTX is the module's PTX without the other kernels: every line outside
//! an `.entry` block (the header, shared and global declarations, device functions,
//! which ptxas drops where unused), then its own `.entry` block in its place. The
//! other kernels' ABI descriptors (`__xlog_abi_<kernel>`) are left out too: the
//! runtime reads the descriptors from the module's table, never from the device.
//!
//! ptxas runs once per kernel and arch, several at a time; a kernel whose PTX did
//! not change since the last build keeps its cubin (`OUT_DIR/xlog-ptxas/<arch>/`),
//! so adding a kernel to a crate compiles that kernel alone.

use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use crate::abi::ABI_SYMBOL_PREFIX;
use crate::error::{io_error, Error};
use crate::link::entry_name;
use crate::ptxas;

/// One top-level piece of a module's PTX.
enum Item<'a> {
    /// A line outside every `.entry` block, with its line break.
    Line(&'a str),
    /// A kernel's `.entry` block, from its opening line to its closing `}` line.
    Entry { name: String, text: &'a str },
}

/// A module's PTX, cut at its `.entry` blocks.
pub struct Split<'a> {
    items: Vec<Item<'a>>,
    /// The kernels' names.
    kernels: HashSet<String>,
}

impl<'a> Split<'a> {
    /// Cuts `ptx` at its `.entry` blocks (as LLVM writes them: the block closes with
    /// a `}` alone at the start of a line). Fails on a block that never closes.
    pub fn new(ptx: &'a str) -> Result<Split<'a>, Error> {
        let mut items = Vec::new();
        let mut rest = ptx;
        while !rest.is_empty() {
            let len = rest.find('\n').map_or(rest.len(), |i| i + 1);
            let line = &rest[..len];
            let Some(name) = entry_name(line) else {
                items.push(Item::Line(line));
                rest = &rest[len..];
                continue;
            };
            let mut end = len;
            loop {
                if end >= rest.len() {
                    return Err(Error::Unexpected {
                        message: format!("the PTX of kernel `{name}` has no closing `}}` line"),
                    });
                }
                let next = rest[end..].find('\n').map_or(rest.len(), |i| end + i + 1);
                let closing = rest[end..next].trim_end() == "}";
                end = next;
                if closing {
                    break;
                }
            }
            items.push(Item::Entry {
                name,
                text: &rest[..end],
            });
            rest = &rest[end..];
        }
        let kernels = items
            .iter()
            .filter_map(|i| match i {
                Item::Entry { name, .. } => Some(name.clone()),
                Item::Line(_) => None,
            })
            .collect();
        Ok(Split { items, kernels })
    }

    /// The kernels, in the order of the PTX.
    pub fn kernels(&self) -> impl Iterator<Item = &str> {
        self.items.iter().filter_map(|i| match i {
            Item::Entry { name, .. } => Some(name.as_str()),
            Item::Line(_) => None,
        })
    }

    /// The PTX of kernel `kernel` alone (see the module docs), or `None` when the
    /// module has no such kernel.
    pub fn kernel_ptx(&self, kernel: &str) -> Option<String> {
        if !self.kernels.contains(kernel) {
            return None;
        }
        let mut out = String::new();
        for item in &self.items {
            match item {
                Item::Entry { name, text } if name == kernel => out.push_str(text),
                Item::Entry { .. } => {}
                Item::Line(line) => match descriptor_of(line) {
                    Some(of) if of != kernel && self.kernels.contains(of) => {}
                    _ => out.push_str(line),
                },
            }
        }
        Some(out)
    }
}

/// The kernel whose ABI descriptor `line` declares, if it declares one.
fn descriptor_of(line: &str) -> Option<&str> {
    let l = line.trim_start();
    if !l.starts_with(".visible .global") {
        return None;
    }
    let at = l.find(ABI_SYMBOL_PREFIX)? + ABI_SYMBOL_PREFIX.len();
    l[at..].split(['[', ' ', ';']).next()
}

/// Compiles each of `kernels` alone (its PTX from [`Split::kernel_ptx`]) for each of
/// `archs`, writing `$OUT_DIR/xlog-ptxas/<arch>/<kernel>.cubin`; returns per arch the
/// cubins' paths in the order of `kernels`. Without ptxas, warns and returns none:
/// the module then ships PTX only.
pub(crate) fn build_cubins(
    archs: &[String],
    ptx: &str,
    kernels: &[&str],
    lib_name: &str,
    out_dir: &Path,
) -> Result<Vec<(String, Vec<PathBuf>)>, Error> {
    if archs.is_empty() {
        return Ok(Vec::new());
    }
    let Some(ptxas) = ptxas::find() else {
        println!(
            "cargo:warning=xlog-build: ptxas not found, shipping PTX only for `{lib_name}` \
             (cubins for {} skipped); {}",
            archs.join(", "),
            ptxas::INSTALL_HINT
        );
        return Ok(Vec::new());
    };
    let split = Split::new(ptx)?;
    let pieces: Vec<String> = kernels
        .iter()
        .map(|k| {
            split.kernel_ptx(k).ok_or_else(|| Error::Unexpected {
                message: format!("kernel `{k}` of `{lib_name}` has no `.entry` in its PTX"),
            })
        })
        .collect::<Result<_, _>>()?;
    let jobs: Vec<(&String, usize)> = archs
        .iter()
        .flat_map(|arch| (0..kernels.len()).map(move |i| (arch, i)))
        .collect();
    let next = AtomicUsize::new(0);
    let failure: Mutex<Option<Error>> = Mutex::new(None);
    let workers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(jobs.len());
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| loop {
                let at = next.fetch_add(1, Ordering::Relaxed);
                let Some(&(arch, i)) = jobs.get(at) else {
                    return;
                };
                if failure.lock().map_or(true, |f| f.is_some()) {
                    return;
                }
                let dir = out_dir.join("xlog-ptxas").join(arch);
                if let Err(e) = compile_piece(&ptxas, &pieces[i], arch, kernels[i], &dir) {
                    if let Ok(mut f) = failure.lock() {
                        f.get_or_insert(e);
                    }
                }
            });
        }
    });
    if let Some(e) = failure.into_inner().ok().flatten() {
        return Err(e);
    }
    Ok(archs
        .iter()
        .map(|arch| {
            let dir = out_dir.join("xlog-ptxas").join(arch);
            let paths = kernels
                .iter()
                .map(|k| dir.join(format!("{k}.cubin")))
                .collect();
            (arch.clone(), paths)
        })
        .collect())
}

/// Compiles one kernel's PTX for `arch` into `dir/<kernel>.cubin`, unless
/// `dir/<kernel>.ptx` shows the cubin there was compiled from the same PTX. The PTX
/// is written after the cubin and removed before ptxas runs, so a cubin is reused
/// only next to the PTX it came from.
fn compile_piece(
    ptxas: &Path,
    ptx: &str,
    arch: &str,
    kernel: &str,
    dir: &Path,
) -> Result<(), Error> {
    let cubin = dir.join(format!("{kernel}.cubin"));
    let source = dir.join(format!("{kernel}.ptx"));
    if cubin.is_file() && fs::read(&source).ok().as_deref() == Some(ptx.as_bytes()) {
        return Ok(());
    }
    fs::create_dir_all(dir).map_err(|e| io_error(dir, "create the ptxas directory", e))?;
    if source.exists() {
        fs::remove_file(&source).map_err(|e| io_error(&source, "remove a stale PTX", e))?;
    }
    let scratch = dir.join("scratch");
    let (bytes, _) = ptxas::compile(ptxas, ptx, arch, kernel, &scratch)?;
    // ptxas's input and output there are copies of what is kept below.
    for ext in ["ptx", "cubin"] {
        let _ = fs::remove_file(scratch.join(format!("{kernel}-{arch}.{ext}")));
    }
    fs::write(&cubin, bytes).map_err(|e| io_error(&cubin, "write a kernel's cubin", e))?;
    fs::write(&source, ptx).map_err(|e| io_error(&source, "write a kernel's PTX", e))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const PTX: &str = "//\n.version 7.0\n.target sm_80\n.address_size 64\n\
.shared .align 4 .b8 tile[64];\n\
.func helper\n(\n\t.param .b64 helper_param_0\n)\n;\n\
.visible .global .align 8 .b8 __xlog_abi_first[16] = {1, 0};\n\
.visible .global .align 8 .b8 __xlog_abi_second[16] = {2, 0};\n\
.visible .global .align 8 .u64 __xlog_panic_sink;\n\
\t// .globl\tfirst\n\
.visible .entry first(\n\t.param .u64 first_param_0\n)\n{\n\t{\n\tret;\n\t}\n}\n\
\t// .globl\tsecond\n\
.visible .entry second(\n\t.param .u64 second_param_0\n)\n.maxntid 256, 1, 1\n{\n\tret;\n}\n\
.func helper(\n\t.param .b64 helper_param_0\n)\n{\n\tret;\n}\n";

    #[test]
    fn each_kernel_keeps_everything_but_the_other_kernels() {
        let split = Split::new(PTX).unwrap();
        assert_eq!(split.kernels().collect::<Vec<_>>(), ["first", "second"]);
        let first = split.kernel_ptx("first").unwrap();
        assert!(first.contains(".visible .entry first(\n"), "{first}");
        assert!(first.contains("\t{\n\tret;\n\t}\n}\n"), "{first}");
        assert!(!first.contains(".entry second"), "{first}");
        assert!(first.contains("__xlog_abi_first"), "{first}");
        assert!(!first.contains("__xlog_abi_second"), "{first}");
        for kept in [
            ".version 7.0",
            ".shared .align 4 .b8 tile[64];",
            "__xlog_panic_sink",
        ] {
            assert!(first.contains(kept), "{kept}: {first}");
        }
        // The device function's declaration and definition both stay.
        assert_eq!(first.matches(".func helper").count(), 2, "{first}");
        let second = split.kernel_ptx("second").unwrap();
        assert!(
            second.contains(".maxntid 256, 1, 1\n{\n\tret;\n}\n"),
            "{second}"
        );
        assert!(!second.contains(".entry first") && !second.contains("__xlog_abi_first"));
        // Every line of the module is in some kernel's PTX.
        for line in PTX.lines() {
            assert!(
                first.lines().chain(second.lines()).any(|l| l == line),
                "{line}"
            );
        }
        assert!(split.kernel_ptx("third").is_none());
    }

    #[test]
    fn an_unclosed_entry_is_an_error() {
        let e = Split::new(".version 7.0\n.visible .entry k(\n)\n{\n\tret;\n")
            .err()
            .expect("an unclosed block is refused");
        assert!(e.to_string().contains("`k`"), "{e}");
    }

    /// ptxas accepts each kernel's PTX, and reuses a cubin only for the PTX it
    /// came from.
    #[test]
    fn each_kernel_compiles_alone_and_unchanged_kernels_are_not_recompiled() {
        let Some(_) = ptxas::find() else {
            eprintln!("skipped: no ptxas");
            return;
        };
        let ptx = ".version 7.0\n.target sm_80\n.address_size 64\n\
.visible .entry a(\n\t.param .u64 a_param_0\n)\n{\n\tret;\n}\n\
.visible .entry b(\n\t.param .u64 b_param_0\n)\n{\n\tret;\n}\n";
        let out = std::env::temp_dir().join(format!("xlog-pieces-{}", std::process::id()));
        let _ = fs::remove_dir_all(&out);
        let archs = ["sm_80".to_string()];
        let built = build_cubins(&archs, ptx, &["b", "a"], "k", &out).unwrap();
        assert_eq!(built.len(), 1);
        let (arch, paths) = &built[0];
        assert_eq!(arch, "sm_80");
        assert_eq!(paths.len(), 2);
        assert!(paths[0].ends_with("sm_80/b.cubin") && paths[1].ends_with("sm_80/a.cubin"));
        for p in paths {
            assert!(
                fs::read(p).unwrap().starts_with(b"\x7fELF"),
                "{}",
                p.display()
            );
        }
        // A marked cubin survives a rebuild of the same PTX, not of another.
        fs::write(&paths[0], b"\x7fELF marked").unwrap();
        build_cubins(&archs, ptx, &["b", "a"], "k", &out).unwrap();
        assert_eq!(fs::read(&paths[0]).unwrap(), b"\x7fELF marked");
        let changed = ptx.replace("b_param_0", "b_param_zero");
        build_cubins(&archs, &changed, &["b", "a"], "k", &out).unwrap();
        assert_ne!(fs::read(&paths[0]).unwrap(), b"\x7fELF marked");
        fs::remove_dir_all(&out).unwrap();
    }
}
