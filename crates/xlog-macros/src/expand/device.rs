//! The `extern "gpu-kernel"` entry point and its ABI descriptor (device build only).

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use super::{facade, local_for};
use crate::ast::{Checked, Instance, Kernel, Kind, Settings};
use crate::attr::{Attr, Mode};

/// The entry point of a kernel, or of one instantiation of a generic kernel
/// (`params` then carry the instantiation's types).
pub fn entry(
    attr: &Attr,
    settings: &Settings,
    kernel: &Kernel,
    params: &[Checked],
    instance: Option<&Instance>,
) -> TokenStream {
    let k = facade(kernel);
    let name = super::symbol(attr, kernel, instance);
    let body = super::body_ident(kernel);
    // The generic body, named with the instantiation's types (spanned where they
    // are listed, so a type missing a bound the body needs is reported there).
    let body = match instance {
        Some(i) => {
            let tys = i.args.iter().map(|(_, ty)| ty);
            quote!(#body::<#(#tys),*>)
        }
        None => quote!(#body),
    };
    let mut abi_params = Vec::new();
    let mut setup = Vec::new();
    let mut call_args = Vec::new();
    // The simulator's entry reads the launcher's parameter array instead: each
    // scalar from its pointer, each slice as an address and a length.
    let (sim_params, sim_body) = (super::local("__params"), super::local("__body"));
    let mut sim_reads = Vec::new();
    let mut sim_typed = Vec::new();
    let mut slot = 0usize;
    let mut read = |ty: TokenStream, name: &syn::Ident| {
        let i = slot;
        slot += 1;
        quote! {
            // SAFETY: slot #i of the launcher's array points to a value of this type.
            let #name: #ty = unsafe { #k::__private::core::ptr::read(#sim_params[#i] as *const #ty) };
        }
    };
    for p in params {
        let id = &p.ident;
        match &p.kind {
            Kind::Scalar => {
                let ty = &p.ty;
                abi_params.push(quote!(#id: #ty));
                call_args.push(quote!(#id));
                sim_reads.push(read(quote!(#ty), id));
            }
            Kind::Slice { elem, mode } => {
                let ptr = local_for(id, "ptr");
                let len = local_for(id, "len");
                let addr = local_for(id, "addr");
                sim_reads.push(read(quote!(u64), &addr));
                sim_reads.push(read(quote!(usize), &len));
                let pointer = if *mode == Mode::Read {
                    quote!(*const #elem)
                } else {
                    quote!(*mut #elem)
                };
                sim_typed.push(quote!(let #ptr = #addr as #pointer;));
                match mode {
                    Mode::Read => {
                        abi_params.push(quote!(#ptr: *const #elem, #len: usize));
                        setup.push(quote! {
                            // SAFETY: the launcher passes the address and length of a live,
                            // runtime-allocated range it recorded as a read.
                            let #id: &[#elem] = unsafe { #k::__private::device::slice_from_raw_parts(#ptr, #len) };
                        });
                        call_args.push(quote!(#id));
                    }
                    Mode::WriteTransposed { tile, rows } => {
                        let t = *tile as usize;
                        abi_params.push(quote!(#ptr: *mut #elem, #len: usize));
                        setup.push(quote! {
                            // SAFETY: as for every write view; `#rows` is a `usize` value
                            // parameter, the same in every thread, and the macro allows one
                            // `per transposed` parameter per kernel.
                            let mut #id = unsafe { #k::__private::device::view::TransposeOut::<#elem, #t>::__from_raw_parts(#k::__private::device::non_null_or_dangling(#ptr, #len), #len, #rows) };
                        });
                        call_args.push(quote!(&mut #id));
                    }
                    Mode::LookBack => {
                        abi_params.push(quote!(#ptr: *mut #elem, #len: usize));
                        setup.push(quote! {
                            // SAFETY: the launcher passes a live range it recorded as a
                            // read-write and zeroed on the stream right before this launch;
                            // the host borrow makes it distinct from every other slice
                            // argument; the macro allows one `lookback` parameter per kernel.
                            let mut #id = unsafe { #k::__private::device::view::LookBack::__from_raw_parts(#k::__private::device::non_null_or_dangling(#ptr, #len), #len) };
                        });
                        call_args.push(quote!(&mut #id));
                    }
                    Mode::Write(owner) | Mode::ReadWrite(owner) => {
                        let view = if matches!(mode, Mode::Write(_)) {
                            quote!(Out)
                        } else {
                            quote!(InOut)
                        };
                        let owner = super::owner_type(kernel, *owner);
                        abi_params.push(quote!(#ptr: *mut #elem, #len: usize));
                        setup.push(quote! {
                            // SAFETY: the launcher passes a live range it recorded as a write;
                            // the borrow rules on the host make it distinct from every other
                            // slice argument, and the view hands each thread only the elements
                            // its witness of the declared ownership names.
                            let mut #id = unsafe { #k::__private::device::view::#view::<#elem, #owner>::__from_raw_parts(#k::__private::device::non_null_or_dangling(#ptr, #len), #len) };
                        });
                        call_args.push(quote!(&mut #id));
                    }
                    Mode::Atomic => {
                        abi_params.push(quote!(#ptr: *mut #elem, #len: usize));
                        setup.push(quote! {
                            // SAFETY: the launcher passes a live range it recorded as a
                            // read-write; the host borrow makes it distinct from every other
                            // slice argument, and the view accesses it only atomically.
                            let #id = unsafe { #k::__private::device::view::AtomicView::<#elem>::__from_raw_parts(#k::__private::device::non_null_or_dangling(#ptr, #len), #len) };
                        });
                        call_args.push(quote!(&#id));
                    }
                }
            }
        }
    }
    let call = if kernel.is_unsafe {
        quote! {
            // SAFETY: an `unsafe fn` kernel's obligations are the caller's, and its
            // launcher is `unsafe` too.
            unsafe { #body(#(#call_args),*) }
        }
    } else {
        quote!(#body(#(#call_args),*))
    };
    let doc = format!("Device entry point of `{name}`, generated by `#[xlog_kernel]`.");
    let sim_name = sim_entry(attr, kernel, instance);
    let abi_symbol = format_ident!("__xlog_abi_{}", name);
    let abi = super::abi_expr(settings, kernel, params);
    let abi_len = super::abi_len(params);
    quote! {
        #[cfg(target_arch = "nvptx64")]
        #[doc = #doc]
        #[unsafe(no_mangle)]
        #[allow(non_snake_case, clippy::too_many_arguments)]
        pub unsafe extern "gpu-kernel" fn #name(#(#abi_params),*) {
            #(#setup)*
            #call
        }

        // The device's view of the parameter list, read from the PTX by xlog-build
        // into the module's kernel table and compared with the launcher's.
        #[cfg(target_arch = "nvptx64")]
        #[doc(hidden)]
        #[unsafe(no_mangle)]
        #[used]
        #[allow(non_upper_case_globals)]
        pub static #abi_symbol: [u64; #abi_len] = #abi;

        /// The simulator's entry point: binds a launch's parameter values to the
        /// body, which the simulator then runs once per thread.
        ///
        /// # Safety
        /// As `cuLaunchKernel` with the device entry point: one pointer per
        /// parameter to a value of its type; every slice a live, recorded range.
        #[cfg(not(target_arch = "nvptx64"))]
        #[doc(hidden)]
        #[allow(non_snake_case, unused_variables, unused_unsafe, clippy::too_many_arguments)]
        unsafe fn #sim_name(
            #sim_params: &[*mut #k::__private::core::ffi::c_void],
        ) -> #k::__private::rt::sim::SimKernel {
            #(#sim_reads)*
            let #sim_body = move || {
                #(#sim_typed)*
                #(#setup)*
                #call
            };
            // SAFETY: the body shares only its by-value parameters (plain
            // `DeviceCopy` data) and device memory among the simulated threads.
            unsafe { #k::__private::rt::sim::SimKernel::new(#sim_body) }
        }
    }
}

/// The simulator's entry point's name: `__xlog_sim_<symbol>`.
pub fn sim_entry(attr: &Attr, kernel: &Kernel, instance: Option<&Instance>) -> syn::Ident {
    format_ident!("__xlog_sim_{}", super::symbol_name(attr, kernel, instance))
}
