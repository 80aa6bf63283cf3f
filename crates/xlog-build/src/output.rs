//! The files a device build writes: into `OUT_DIR` the PTX and the module file
//! `xlog_device::kernel_module!` includes (the cubins are the `pieces` module's);
//! into the device target directory a copy of the PTX to inspect.
//!
//! The module file holds literals only (strings, byte strings, integers), never a
//! macro call, so nothing in it resolves in the kernel crate's scope. Every write
//! goes through [`write_if_changed`], so an unchanged build leaves timestamps alone.

use std::fs;
use std::path::{Path, PathBuf};

use crate::abi::KernelAbi;
use crate::builder::Output;
use crate::error::{io_error, Error};
use crate::settings::DEFAULT_ARCH;

/// The file stem of the files written to `OUT_DIR`: `xlog-module.ptx` and
/// `xlog-module.rs`. `xlog_device::kernel_module!`
/// includes the fixed name `xlog-module.rs`, so it needs no arguments.
pub const MODULE_STEM: &str = "xlog-module";

/// Writes `$OUT_DIR/xlog-module.ptx`, and the same PTX as
/// `<target_dir>/xlog-modules/<lib_name>.ptx`, where every kernel crate's module can
/// be inspected in one place. Returns the path of the first.
pub(crate) fn write_ptx(
    out_dir: &Path,
    target_dir: &Path,
    lib_name: &str,
    ptx: &str,
) -> Result<PathBuf, Error> {
    let ptx_path = out_dir.join(format!("{MODULE_STEM}.ptx"));
    write_if_changed(&ptx_path, ptx.as_bytes())?;
    let modules = target_dir.join("xlog-modules");
    fs::create_dir_all(&modules)
        .map_err(|e| io_error(&modules, "create the module directory", e))?;
    write_if_changed(&modules.join(format!("{lib_name}.ptx")), ptx.as_bytes())?;
    Ok(ptx_path)
}

/// Writes `$OUT_DIR/xlog-module.rs` (see [`module_source`]) for the module owned by
/// `owner`, embedding the cubins `pieces::build_cubins` wrote (per arch, one per
/// kernel in the order of `kernels`).
pub(crate) fn write_module_file(
    out_dir: &Path,
    owner: &str,
    ptx: &str,
    cubins: &[(String, Vec<PathBuf>)],
    kernels: &[KernelAbi],
) -> Result<(), Error> {
    write_if_changed(
        &out_dir.join(format!("{MODULE_STEM}.rs")),
        module_source(
            owner,
            ptx,
            &cubins_source(&cubin_bytes(cubins)?),
            &kernels_source(kernels),
        )
        .as_bytes(),
    )
}

/// Writes an empty module (PTX without entries, no cubins, no kernels), for builds
/// that must not compile device code (`XLOG_DEVICE_STUB`, docs.rs), and warns that
/// it cannot launch anything.
pub(crate) fn write_stub(out_dir: &Path, owner: &str) -> Result<Output, Error> {
    println!(
        "cargo:warning=xlog-build: XLOG_DEVICE_STUB or DOCS_RS is set: no device code was built, \
         the module is an empty stub that cannot launch anything"
    );
    let ptx = format!(".version 7.0\n.target {DEFAULT_ARCH}\n.address_size 64\n");
    let path = out_dir.join(format!("{MODULE_STEM}.ptx"));
    write_if_changed(&path, ptx.as_bytes())?;
    write_if_changed(
        &out_dir.join(format!("{MODULE_STEM}.rs")),
        module_source(owner, &ptx, "&[]", "&[]").as_bytes(),
    )?;
    Ok(Output {
        ptx: path,
        kernels: Vec::new(),
        cubins: Vec::new(),
    })
}

/// What `$OUT_DIR/xlog-module.rs` holds, the one file `kernel_module!` includes:
/// the tuple `(owner, ptx, cubins, kernels)` of `ModuleImage::new`'s arguments, as
/// literals only (see [`cubins_source`]).
pub(crate) fn module_source(owner: &str, ptx: &str, cubins: &str, kernels: &str) -> String {
    format!("({owner:?}, {}, {cubins}, {kernels})", raw_string(ptx))
}

/// The Rust expression for the cubin table (`&[CubinSet]`): per arch its name and
/// its kernels' cubins, each a byte-string literal. The generated file holds data
/// only, no macro call: an `include_bytes!` there would resolve in the kernel
/// crate's scope, where a `macro_rules!` of that name could stand in for it.
pub(crate) fn cubins_source(cubins: &[ArchCubins]) -> String {
    let mut s = String::from("&[");
    for (arch, kernels) in cubins {
        s.push_str(&format!("({arch:?}, &["));
        for bytes in kernels {
            s.push_str(&format!("{}.as_slice(), ", byte_string(bytes)));
        }
        s.push_str("]), ");
    }
    s.push(']');
    s
}

/// The Rust expression `kernel_module!` includes for the kernel table, of type
/// `&'static [(&'static str, &'static [u64])]`: each entry point with its ABI
/// descriptor words (`&[]` for an entry without one).
pub(crate) fn kernels_source(kernels: &[KernelAbi]) -> String {
    let entries: Vec<String> = kernels
        .iter()
        .map(|k| {
            let words: Vec<String> = k.words.iter().map(|w| format!("{w:#018x}u64")).collect();
            format!("({:?}, &[{}])", k.name, words.join(", "))
        })
        .collect();
    format!("&[{}]", entries.join(", "))
}

/// `bytes` as a Rust byte-string literal.
fn byte_string(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 4 + 3);
    s.push_str("b\"");
    for b in bytes {
        s.push_str(&format!("\\x{b:02x}"));
    }
    s.push('"');
    s
}

/// `text` as a Rust raw string literal, with enough `#`s to hold it.
fn raw_string(text: &str) -> String {
    let mut hashes = String::from("#");
    while text.contains(&format!("\"{hashes}")) {
        hashes.push('#');
    }
    format!("r{hashes}\"{text}\"{hashes}")
}

/// An arch and its kernels' cubins, in the order of the kernel table.
pub(crate) type ArchCubins = (String, Vec<Vec<u8>>);

/// Reads back the cubins `pieces::build_cubins` wrote, to embed them as literals.
fn cubin_bytes(cubins: &[(String, Vec<PathBuf>)]) -> Result<Vec<ArchCubins>, Error> {
    cubins
        .iter()
        .map(|(arch, paths)| {
            let bytes = paths
                .iter()
                .map(|path| fs::read(path).map_err(|e| io_error(path, "read a cubin back", e)))
                .collect::<Result<_, _>>()?;
            Ok((arch.clone(), bytes))
        })
        .collect()
}

/// Writes `bytes` unless the file already holds them (keeps timestamps stable so
/// nothing downstream rebuilds needlessly).
fn write_if_changed(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    if fs::read(path).ok().as_deref() == Some(bytes) {
        return Ok(());
    }
    fs::write(path, bytes).map_err(|e| io_error(path, "write a device build output", e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_tables() {
        let table = [
            KernelAbi {
                name: "a".into(),
                words: vec![(1 << 56) | 1, 0x0200_0400_0000_0004, 0xdead_beef],
            },
            KernelAbi {
                name: "b".into(),
                words: vec![],
            },
        ];
        assert_eq!(
            kernels_source(&table),
            "&[(\"a\", &[0x0100000000000001u64, 0x0200040000000004u64, 0x00000000deadbeefu64]), \
             (\"b\", &[])]"
        );
        assert_eq!(kernels_source(&[]), "&[]");
        assert_eq!(
            cubins_source(&[("sm_90".into(), vec![vec![0x7f, b'E', 0], vec![1]])]),
            "&[(\"sm_90\", &[b\"\\x7f\\x45\\x00\".as_slice(), b\"\\x01\".as_slice(), ]), ]"
        );
        assert_eq!(raw_string("a\"#b"), "r##\"a\"#b\"##");
        assert_eq!(
            module_source("/k#k", ".entry", "&[]", "&[]"),
            "(\"/k#k\", r#\".entry\"#, &[], &[])"
        );
    }
}
