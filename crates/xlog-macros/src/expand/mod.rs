//! Generation: the device entry point and the host launcher from one kernel.

pub mod device;
pub mod host;

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;

use crate::ast::{Kernel, Shape};
use crate::attr::{Attr, Mode};

/// Everything both sides share: the body function with device parameter types,
/// and compile-time checks that every scalar and element type is `DeviceCopy`.
pub fn expand(attr: &Attr, kernel: &Kernel) -> TokenStream {
    let k = &attr.krate;
    let body = body_fn(attr, kernel);
    let checks = device_copy_checks(attr, kernel);
    let device = device::entry(attr, kernel);
    let host = host::launcher(attr, kernel);
    quote! {
        #body
        #checks
        #device
        #host
        #[allow(unused_imports)]
        use #k::__private::device as _;
    }
}

/// The exported entry-point symbol: the function's name, plus `_suffix` if given.
pub fn symbol(attr: &Attr, kernel: &Kernel) -> syn::Ident {
    match &attr.suffix {
        Some(s) => format_ident!("{}_{}", kernel.name(), s),
        None => kernel.name().clone(),
    }
}

pub fn body_ident(kernel: &Kernel) -> syn::Ident {
    format_ident!("__xlog_body_{}", kernel.name())
}

/// The device-side type of a parameter inside the body.
pub fn device_param_type(attr: &Attr, p: &crate::ast::Param) -> TokenStream {
    let k = &attr.krate;
    match (&p.shape, p.mode) {
        (Shape::Slice { elem, .. }, Some(Mode::Write)) => {
            quote!(&mut #k::__private::device::Out<'_, #elem>)
        }
        (Shape::Slice { elem, .. }, Some(Mode::ReadWrite)) => {
            quote!(&mut #k::__private::device::InOut<'_, #elem>)
        }
        (Shape::Slice { .. }, _) | (Shape::Scalar, _) => {
            let ty = &p.ty;
            quote!(#ty)
        }
    }
}

fn body_fn(attr: &Attr, kernel: &Kernel) -> TokenStream {
    let name = body_ident(kernel);
    let unsafety = &kernel.item.sig.unsafety;
    let block = &kernel.item.block;
    // The user's own attributes (lints, cfgs) apply to the body they wrote.
    let attrs = kernel
        .item
        .attrs
        .iter()
        .filter(|a| !a.path().is_ident("doc"));
    let params = kernel.params.iter().map(|p| {
        let id = &p.ident;
        let ty = device_param_type(attr, p);
        quote_spanned!(p.ty.span()=> #id: #ty)
    });
    quote! {
        #(#attrs)*
        #[inline(always)]
        #[allow(dead_code, non_snake_case, clippy::too_many_arguments)]
        #unsafety fn #name(#(#params),*) #block
    }
}

fn device_copy_checks(attr: &Attr, kernel: &Kernel) -> TokenStream {
    let k = &attr.krate;
    let checks = kernel.params.iter().map(|p| {
        let ty = match &p.shape {
            Shape::Slice { elem, .. } => elem,
            Shape::Scalar => &p.ty,
        };
        quote_spanned!(ty.span()=> #k::__private::assert_device_copy::<#ty>();)
    });
    quote! {
        const _: () = {
            #[allow(dead_code)]
            fn __xlog_check() {
                #(#checks)*
            }
        };
    }
}
