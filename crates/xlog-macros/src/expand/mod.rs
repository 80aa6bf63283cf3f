//! Generation: the device entry point and the host launcher from one kernel.
//!
//! Everything the two sides share is generated once, here, and placed at the
//! kernel's own scope, so host and device resolve every type in the same place:
//! the body function (with device parameter types), the `DeviceCopy`, size and
//! alignment checks, and the ABI descriptor expression.
//!
//! Generated locals and parameters use [`local`] (mixed-site hygiene), so a user
//! parameter can never be shadowed by one of them, whatever its name.
//!
//! Generated paths never start with `::xlog` or `::core`: a crate can put any
//! module of its own under those names (`extern crate self as xlog;` at its root
//! adds to the extern prelude, which `::name` paths consult first), and the checks
//! below would then reach look-alikes. Each kernel instead declares
//! `mod __xlog_<kernel> { pub extern crate xlog; }` next to itself — `extern crate`
//! outside the crate root always loads the dependency named `xlog` — and every
//! generated path goes through it, `core` included
//! (`__xlog_<kernel>::xlog::__private::core`).

pub mod device;
pub mod host;

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;

use crate::ast::{Block, Checked, Instance, Kernel, Kind, Settings};
use crate::attr::{Attr, Mode, Owner};

/// The facade every generated path goes through: the kernel's own `extern crate`
/// alias of `xlog` (see the module docs). Not configurable: the checks below must
/// reach the real `DeviceCopy` and ABI helpers.
pub fn facade(kernel: &Kernel) -> TokenStream {
    let m = facade_module(kernel);
    quote!(#m::xlog)
}

/// The hidden module holding the kernel's `extern crate xlog`. A module rather than
/// an `extern crate .. as` alias at the kernel's scope, so diagnostics keep naming
/// types `xlog::..`.
pub fn facade_module(kernel: &Kernel) -> syn::Ident {
    format_ident!("__xlog_{}", kernel.name())
}

/// `tokens` with every span set to `span`, so an error inside them (a missing
/// `DeviceCopy` impl, a failed assertion) points at the user's type.
pub fn respan(tokens: TokenStream, span: Span) -> TokenStream {
    tokens
        .into_iter()
        .map(|mut t| {
            if let proc_macro2::TokenTree::Group(g) = &t {
                let mut inner = proc_macro2::Group::new(g.delimiter(), respan(g.stream(), span));
                inner.set_span(span);
                t = proc_macro2::TokenTree::Group(inner);
            } else {
                t.set_span(span);
            }
            t
        })
        .collect()
}

/// `core`, reached through [`facade`].
pub fn core_path(kernel: &Kernel) -> TokenStream {
    let k = facade(kernel);
    quote!(#k::__private::core)
}

/// A generated local: invisible to (and unshadowable by) the user's code.
pub fn local(name: &str) -> syn::Ident {
    syn::Ident::new(name, Span::mixed_site())
}

/// A generated local derived from a parameter name (`__x_ptr`).
pub fn local_for(id: &syn::Ident, suffix: &str) -> syn::Ident {
    format_ident!("__{}_{}", id, suffix, span = Span::mixed_site())
}

/// One instantiation of a generic kernel with its parameters, every type
/// parameter replaced by the instantiation's type.
pub struct Instantiated<'a> {
    pub instance: &'a Instance,
    pub params: Vec<Checked>,
}

pub fn expand(
    attr: &Attr,
    settings: &Settings,
    kernel: &Kernel,
    params: &[Checked],
    instances: &[Instance],
) -> TokenStream {
    let m = facade_module(kernel);
    let body = body_fn(kernel, params);
    let (checks, device);
    let host;
    if instances.is_empty() {
        checks = type_checks(kernel, params);
        device = device::entry(attr, settings, kernel, params, None);
        host = host::launcher(attr, settings, kernel, params, &[]);
    } else {
        // A generic kernel: the body stays generic, and each instantiation gets its
        // own entry point, descriptor, checks and simulator entry from the
        // parameters with its types substituted.
        let each: Vec<Instantiated> = instances
            .iter()
            .map(|instance| Instantiated {
                instance,
                params: params.iter().map(|p| substitute(p, instance)).collect(),
            })
            .collect();
        checks = each
            .iter()
            .map(|i| type_checks(kernel, &i.params))
            .collect();
        device = each
            .iter()
            .map(|i| device::entry(attr, settings, kernel, &i.params, Some(i.instance)))
            .collect();
        host = host::launcher(attr, settings, kernel, params, &each);
    }
    // A generic kernel's types trait is sealed by a trait of this module, which
    // other crates cannot name.
    let sealed = kernel.type_params.split_first().map(|(_, rest)| {
        quote! {
            #[cfg(not(target_arch = "nvptx64"))]
            pub trait Sealed<#(#rest),*> {}
        }
    });
    quote! {
        #[doc(hidden)]
        #[allow(unused_extern_crates, non_snake_case)]
        mod #m {
            pub extern crate xlog;
            #sealed
        }
        #body
        #checks
        #device
        #host
    }
}

/// `p` with every type parameter replaced by the instantiation's type (spanned
/// where the type is listed, so an error about it points at the list).
fn substitute(p: &Checked, instance: &Instance) -> Checked {
    use syn::visit_mut::VisitMut;
    struct Subst<'a>(&'a Instance);
    impl VisitMut for Subst<'_> {
        fn visit_type_mut(&mut self, ty: &mut syn::Type) {
            if let syn::Type::Path(tp) = ty {
                if tp.qself.is_none() {
                    if let Some(id) = tp.path.get_ident() {
                        if let Some((_, concrete)) =
                            self.0.args.iter().find(|(param, _)| param == id)
                        {
                            *ty = concrete.clone();
                            return;
                        }
                    }
                }
            }
            syn::visit_mut::visit_type_mut(self, ty);
        }
    }
    let mut p = p.clone();
    let mut subst = Subst(instance);
    subst.visit_type_mut(&mut p.ty);
    if let Kind::Slice { elem, .. } = &mut p.kind {
        subst.visit_type_mut(elem);
    }
    p
}

/// The exported entry-point symbol: the function's name, plus `_suffix` if given,
/// plus an instantiation's type names (`copy__f32`).
pub fn symbol(attr: &Attr, kernel: &Kernel, instance: Option<&Instance>) -> syn::Ident {
    let base = match &attr.suffix {
        Some(s) => format_ident!("{}_{}", kernel.name(), s),
        None => kernel.name().clone(),
    };
    match instance {
        Some(i) => format_ident!("{}{}", base, i.suffix),
        None => base,
    }
}

/// The entry point's name as the PTX spells it (`loop` for `fn r#loop`).
pub fn symbol_name(attr: &Attr, kernel: &Kernel, instance: Option<&Instance>) -> String {
    use syn::ext::IdentExt;
    symbol(attr, kernel, instance).unraw().to_string()
}

/// The trait a generic kernel's listed types implement: the kernel's name in
/// camel case followed by `Type` (`CopyType` for `copy`, `SortPairsType` for
/// `sort_pairs`).
pub fn types_trait(kernel: &Kernel) -> syn::Ident {
    use syn::ext::IdentExt;
    let camel: String = kernel
        .name()
        .unraw()
        .to_string()
        .split('_')
        .filter(|w| !w.is_empty())
        .map(|w| {
            let mut c = w.chars();
            c.next()
                .map(|f| f.to_uppercase().chain(c).collect::<String>())
                .unwrap_or_default()
        })
        .collect();
    syn::Ident::new(&format!("{camel}Type"), kernel.name().span())
}

pub fn body_ident(kernel: &Kernel) -> syn::Ident {
    format_ident!("__xlog_body_{}", kernel.name())
}

/// The ABI descriptor of the kernel (see `xlog_device::abi`), as an array
/// expression. Each build evaluates it for its own target.
pub fn abi_expr(settings: &Settings, kernel: &Kernel, params: &[Checked]) -> TokenStream {
    let k = facade(kernel);
    let abi = quote!(#k::__private::device::abi);
    let is_unsafe = kernel.is_unsafe;
    let n = params.len();
    let words = params.iter().map(|p| {
        let ty = p.value_type();
        let kind = match &p.kind {
            Kind::Scalar => quote!(Scalar),
            Kind::Slice {
                mode: Mode::Read, ..
            } => quote!(Read),
            Kind::Slice {
                mode: Mode::Write(_) | Mode::WriteTransposed { .. },
                ..
            } => quote!(Write),
            Kind::Slice {
                mode: Mode::ReadWrite(_),
                ..
            } => quote!(ReadWrite),
            Kind::Slice {
                mode: Mode::Atomic, ..
            } => quote!(Atomic),
            Kind::Slice {
                mode: Mode::LookBack,
                ..
            } => quote!(LookBack),
        };
        let (abi, k) = (respan(abi.clone(), ty.span()), respan(k.clone(), ty.span()));
        quote_spanned! {ty.span()=>
            #abi::shape::<#ty>(#abi::ParamKind::#kind),
            <#ty as #k::__private::device::DeviceCopy>::__LAYOUT
        }
    });
    // The header's encoding: 0 for a block size or occupancy not declared.
    let (block, min_blocks) = match settings.block {
        Block::Any => (0u32, 0u32),
        Block::Fixed {
            threads,
            min_blocks,
        } => (threads, min_blocks.unwrap_or(0)),
    };
    let shared = settings.shared;
    quote!([#abi::with_min_blocks(#abi::header(#is_unsafe, #n, #block, #shared), #min_blocks) #(, #words)*])
}

/// Number of words in [`abi_expr`].
pub fn abi_len(params: &[Checked]) -> usize {
    1 + 2 * params.len()
}

/// The ownership type of a written view (`xlog_device::view::Ownership`).
pub fn owner_type(kernel: &Kernel, owner: Owner) -> TokenStream {
    let k = facade(kernel);
    let v = quote!(#k::__private::device::view);
    match owner {
        Owner::Thread => quote!(#v::PerThread),
        Owner::Block => quote!(#v::PerBlock),
        Owner::Warp => quote!(#v::PerWarp),
        Owner::Chunk(n) => {
            let n = n as usize;
            quote!(#v::Chunks<#n>)
        }
        Owner::Tile(n) => {
            let n = n as usize;
            quote!(#v::Tiles<#n>)
        }
    }
}

/// The device-side type of a parameter inside the body.
fn device_param_type(kernel: &Kernel, p: &Checked) -> TokenStream {
    let k = facade(kernel);
    match &p.kind {
        Kind::Slice {
            elem,
            mode: Mode::WriteTransposed { tile, .. },
        } => {
            let t = *tile as usize;
            quote!(&mut #k::__private::device::view::TransposeOut<'_, #elem, #t>)
        }
        Kind::Slice {
            mode: Mode::LookBack,
            ..
        } => quote!(&mut #k::__private::device::view::LookBack<'_>),
        Kind::Slice {
            elem,
            mode: mode @ (Mode::Write(owner) | Mode::ReadWrite(owner)),
        } => {
            let view = if matches!(mode, Mode::Write(_)) {
                quote!(Out)
            } else {
                quote!(InOut)
            };
            let owner = owner_type(kernel, *owner);
            quote!(&mut #k::__private::device::view::#view<'_, #elem, #owner>)
        }
        Kind::Slice {
            elem,
            mode: Mode::Atomic,
            ..
        } => {
            // Spanned on the element type, so an element without atomics is reported
            // on the user's type.
            let k = respan(k, elem.span());
            quote_spanned!(elem.span()=> &#k::__private::device::view::AtomicView<'_, #elem>)
        }
        Kind::Slice {
            mode: Mode::Read, ..
        }
        | Kind::Scalar => {
            let ty = &p.ty;
            quote!(#ty)
        }
    }
}

fn body_fn(kernel: &Kernel, params: &[Checked]) -> TokenStream {
    let name = body_ident(kernel);
    let unsafety = &kernel.item.sig.unsafety;
    let block = &kernel.item.block;
    // The user's own attributes (lints, cfgs) apply to the body they wrote.
    let attrs = kernel
        .item
        .attrs
        .iter()
        .filter(|a| !a.path().is_ident("doc"));
    let params = params.iter().map(|p| {
        let id = &p.ident;
        let ty = device_param_type(kernel, p);
        quote_spanned!(p.ty.span()=> #id: #ty)
    });
    // A generic kernel's body keeps the user's bounds; every type parameter is also
    // `DeviceCopy` (so `Copy`), which its values are as kernel parameters anyway.
    let mut generics = kernel.item.sig.generics.clone();
    if !kernel.type_params.is_empty() {
        let k = facade(kernel);
        let where_clause = generics.make_where_clause();
        for t in &kernel.type_params {
            where_clause
                .predicates
                .push(syn::parse_quote!(#t: #k::__private::device::DeviceCopy));
        }
    }
    let (generics, _, where_clause) = generics.split_for_impl();
    quote! {
        #(#attrs)*
        #[inline(always)]
        #[allow(dead_code, non_snake_case, clippy::too_many_arguments, clippy::multiple_bound_locations)]
        #unsafety fn #name #generics (#(#params),*) #where_clause #block
    }
}

/// Compile-time checks on every scalar and element type, in both builds: not
/// zero-sized, and aligned no more than device allocations are. (`DeviceCopy` is
/// required by the ABI descriptor, whose error lands on the user's type.)
fn type_checks(kernel: &Kernel, params: &[Checked]) -> TokenStream {
    let k = facade(kernel);
    let c = core_path(kernel);
    let layout = params.iter().map(|p| {
        let ty = p.value_type();
        let id = &p.ident;
        let (zst, what) = match p.kind {
            Kind::Scalar => (
                format!("xlog: kernel parameter `{id}` has a zero-sized type: it would get no PTX parameter and shift every later one; remove it"),
                "type",
            ),
            Kind::Slice { .. } => (
                format!("xlog: kernel parameter `{id}` is a slice of zero-sized elements, which device memory cannot address; use a non-zero-sized element type"),
                "element type",
            ),
        };
        let align = format!(
            "xlog: the {what} of kernel parameter `{id}` is aligned to more than 256 bytes, more than device allocations guarantee; lower its `#[repr(align(..))]`"
        );
        let (c, k) = (respan(c.clone(), ty.span()), respan(k.clone(), ty.span()));
        quote_spanned! {ty.span()=>
            #c::assert!(#c::mem::size_of::<#ty>() != 0, #zst);
            #c::assert!(#c::mem::align_of::<#ty>() <= #k::__private::MAX_ELEMENT_ALIGN, #align);
        }
    });
    quote! {
        const _: () = {
            #(#layout)*
        };
    }
}
