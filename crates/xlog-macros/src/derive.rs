//! `#[derive(DeviceCopy)]`: opt a `#[repr(C)]` struct into plain device data.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Data, DeriveInput, Fields};

use crate::ctxt::Ctxt;

pub fn derive(input: DeriveInput) -> TokenStream {
    let cx = Ctxt::default();
    // The facade through a module of its own next to the struct, holding
    // `extern crate xlog`: unlike a `::xlog` path, no item of the user's crate
    // (`extern crate self as xlog;`) can stand in for it. Declared in the struct's own
    // scope, not in a block of its own, so it cannot shadow anything the field types
    // name: a user item of the same name is a duplicate definition instead.
    let facade_mod = quote::format_ident!("__xlog_derive_{}", input.ident);
    let krate = quote!(#facade_mod::xlog);
    let fields = match &input.data {
        Data::Struct(s) => Some(&s.fields),
        Data::Enum(e) => {
            cx.error_spanned_by(
                e.enum_token,
                "DeviceCopy cannot be derived for enums: an invalid discriminant written by a kernel would be undefined behaviour on the host; use a #[repr(C)] struct with an integer tag",
            );
            None
        }
        Data::Union(u) => {
            cx.error_spanned_by(
                u.union_token,
                "DeviceCopy cannot be derived for unions; use a #[repr(C)] struct",
            );
            None
        }
    };
    let repr_ok = input.attrs.iter().any(|a| {
        a.path().is_ident("repr") && {
            let mut ok = false;
            let _ = a.parse_nested_meta(|m| {
                ok |= m.path.is_ident("C") || m.path.is_ident("transparent");
                Ok(())
            });
            ok
        }
    });
    if !repr_ok && matches!(input.data, Data::Struct(_)) {
        cx.error_spanned_by(
            &input.ident,
            "DeviceCopy needs a fixed layout shared by host and device: add #[repr(C)] (or #[repr(transparent)])",
        );
    }
    if let Err(e) = cx.check() {
        return e.to_compile_error();
    }
    let name = &input.ident;
    let (impl_g, ty_g, where_c) = input.generics.split_for_impl();
    let fields: Vec<&syn::Field> = fields
        .into_iter()
        .flat_map(|f| match f {
            Fields::Named(n) => n.named.iter().collect::<Vec<_>>(),
            Fields::Unnamed(u) => u.unnamed.iter().collect(),
            Fields::Unit => Vec::new(),
        })
        .collect();
    // The layout digest: each field's offset and digest, in order, as this
    // compiler lays the struct out (see `xlog_device::abi`).
    let layout_fields = fields.iter().enumerate().map(|(i, f)| {
        let ty = &f.ty;
        let member = match &f.ident {
            Some(id) => quote!(#id),
            None => {
                let index = syn::Index::from(i);
                quote!(#index)
            }
        };
        // Spanned on the field type: a field that is not `DeviceCopy` is reported here.
        quote_spanned!(ty.span()=> (#krate::__private::core::mem::offset_of!(Self, #member), <#ty as #krate::__private::device::DeviceCopy>::__LAYOUT))
    });
    let bounds = input.generics.type_params().map(|t| {
        let id = &t.ident;
        quote!(#id: #krate::__private::device::DeviceCopy)
    });
    let where_extra = if input.generics.type_params().next().is_some() {
        match where_c {
            Some(w) => quote!(#w, #(#bounds),*),
            None => quote!(where #(#bounds),*),
        }
    } else {
        quote!(#where_c)
    };
    quote! {
        #[doc(hidden)]
        #[allow(non_snake_case, unused_extern_crates)]
        mod #facade_mod {
            pub extern crate xlog;
        }
        const _: () = {
        // SAFETY: #[repr(C)]/#[repr(transparent)] was checked above, and the layout
        // digest below names every field's `DeviceCopy` impl (so each field must have
        // one): the struct holds no pointers and has one layout.
        unsafe impl #impl_g #krate::__private::device::DeviceCopy for #name #ty_g #where_extra {
            const __LAYOUT: u64 = #krate::__private::device::abi::struct_layout(
                #krate::__private::core::mem::size_of::<Self>(),
                #krate::__private::core::mem::align_of::<Self>(),
                &[#(#layout_fields),*],
            );
        }
        };
    }
}
