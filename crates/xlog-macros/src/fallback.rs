//! On error: the diagnostics plus a stub launcher, so callers see one error, not a cascade.

use proc_macro2::TokenStream;
use quote::quote;
use syn::ItemFn;

pub fn stub(item: &ItemFn, errors: TokenStream) -> TokenStream {
    let name = &item.sig.ident;
    let vis = &item.vis;
    let args = item.sig.inputs.iter().enumerate().map(|(i, _)| {
        let id = quote::format_ident!("__a{}", i);
        quote!(#id: impl Sized)
    });
    quote! {
        #errors
        #[cfg(not(target_arch = "nvptx64"))]
        #[allow(dead_code, non_camel_case_types)]
        #vis struct #name {
            _launcher: (),
        }

        #[cfg(not(target_arch = "nvptx64"))]
        #[allow(dead_code, unused_variables)]
        impl #name {
            #[allow(clippy::too_many_arguments)]
            pub fn launch(
                __stream: &::xlog::__private::rt::Stream,
                __config: ::xlog::__private::rt::LaunchConfig,
                #(#args),*
            ) -> ::xlog::__private::rt::Result<()> {
                unreachable!("#[xlog_kernel] failed to expand")
            }
        }
    }
}
