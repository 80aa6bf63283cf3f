//! `#[xlog_kernel]` and `#[derive(DeviceCopy)]`.
//!
//! Use them through the `xlog` facade (`use xlog::prelude::*`). The attribute turns
//! a Rust function into a CUDA kernel entry point (device build) and a typed,
//! fenced launcher `name::launch` (host build); see the `xlog` crate's docs and
//! `docs/expansion.md` for what it expands to.
//!
//! This crate parses (`attr`, `ast`), checks rules spanning both (`check`), and
//! generates (`expand::{device, host}`); `fallback` keeps a failed expansion from
//! cascading into unrelated errors.
#![deny(unsafe_op_in_unsafe_fn, clippy::undocumented_unsafe_blocks)]
#![warn(missing_docs)]

mod ast;
mod attr;
mod check;
mod ctxt;
mod derive;
mod expand;
mod fallback;
mod symbol;

use proc_macro::TokenStream;

/// Declare a CUDA kernel written in Rust.
///
/// ```ignore
/// #[xlog_kernel(read(x), read_write(y))]
/// pub fn saxpy(a: f32, x: &[f32], y: &mut [f32]) {
///     let i = thread::index_1d();
///     if i < y.len() { y[i] = a * x[i.get()] + y[i]; }
/// }
/// // host: saxpy::launch(&stream, LaunchConfig::for_len(n), 2.0, &x, &mut y)?;
/// ```
///
/// Every slice parameter takes exactly one access mode: `read` (`&[T]`), `write`
/// or `read_write` (`&mut [T]`, which the body sees as a per-thread write handle
/// indexed by `ThreadIndex`). Scalars are `DeviceCopy` values. `unsafe fn`
/// kernels get `unsafe` launchers.
///
/// A kernel may be generic over types listed in the attribute, one entry point
/// per instantiation (`copy__f32`) and one launcher generic over them, through the
/// sealed trait `CopyType` the listed types implement:
///
/// ```ignore
/// #[xlog_kernel(read(x), write(out), for T in [u8, f32, u64])]
/// pub fn copy<T>(x: &[T], out: &mut [T]) { .. }
/// // host: copy::launch(&stream, copy::config(n), &x, &mut out)?;   // T from the buffers
/// ```
#[proc_macro_attribute]
pub fn xlog_kernel(args: TokenStream, input: TokenStream) -> TokenStream {
    let item = match syn::parse::<syn::ItemFn>(input) {
        Ok(item) => item,
        Err(e) => {
            return syn::Error::new(
                e.span(),
                "#[xlog_kernel] applies to a free function `fn name(..) { .. }`",
            )
            .to_compile_error()
            .into()
        }
    };
    let cx = ctxt::Ctxt::default();
    let attr = attr::parse(&cx, args.into());
    let settings = check::settings(&cx, &attr);
    let kernel = ast::parse(&cx, item.clone());
    let params = check::bind(&cx, &attr, &kernel);
    let instances = check::instances(&cx, &attr, &kernel);
    match cx.check() {
        Ok(()) => expand::expand(&attr, &settings, &kernel, &params, &instances).into(),
        Err(e) => fallback::stub(&item, e.to_compile_error()).into(),
    }
}

/// Mark a `#[repr(C)]` struct of `DeviceCopy` fields as plain device data.
#[proc_macro_derive(DeviceCopy)]
pub fn derive_device_copy(input: TokenStream) -> TokenStream {
    match syn::parse::<syn::DeriveInput>(input) {
        Ok(input) => derive::derive(input).into(),
        Err(e) => e.to_compile_error().into(),
    }
}
