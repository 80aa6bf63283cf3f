//! The typed host launcher (host build only).
//!
//! The launcher is a type named after the kernel (`saxpy::launch(..)`), declared
//! with an inherent `impl` at the kernel's own scope: its signature names the
//! parameter types in exactly the scope the device entry point does, even for a
//! kernel declared inside a function body next to local types.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;

use super::{core_path, facade, local, local_for, Instantiated};
use crate::ast::{Block, Checked, Kernel, Kind, Settings};
use crate::attr::{Attr, Mode, Owner};

/// The launcher of a kernel; for a generic kernel (`each` not empty) one launcher
/// generic over the type parameters, and the trait mapping each instantiation's
/// types to its entry point.
pub fn launcher(
    attr: &Attr,
    settings: &Settings,
    kernel: &Kernel,
    params: &[Checked],
    each: &[Instantiated],
) -> TokenStream {
    let k = facade(kernel);
    let c = core_path(kernel);
    let rt = quote!(#k::__private::rt);
    let name = kernel.name();
    let name_str = super::symbol_name(attr, kernel, None);
    let generic = Generic::new(attr, settings, kernel, each);
    let vis = &kernel.item.vis;
    let unsafety = &kernel.item.sig.unsafety;
    let docs: Vec<_> = kernel
        .item
        .attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .collect();
    let (stream, config, func, pre, ptrs) = (
        local("__stream"),
        local("__config"),
        local("__f"),
        local("__uses"),
        local("__params"),
    );

    let g = syn::Lifetime::new("'__xlog_g", proc_macro2::Span::mixed_site());
    let mut args = Vec::new();
    let mut takes = Vec::new();
    let mut records = Vec::new();
    // The graph functions' versions: every buffer borrowed shared for the graph's
    // lifetime, written ones still bound by `WriteBuffer` (recording checks that a
    // written argument overlaps no other).
    let mut graph_args = Vec::new();
    let mut graph_takes = Vec::new();
    let mut graph_records = Vec::new();
    let mut param_ptrs = Vec::new();
    let mut table = String::new();
    let mut graph_table = String::new();
    let mut zero = Vec::new();
    for p in params {
        let id = &p.ident;
        match &p.kind {
            Kind::Scalar => {
                let ty = &p.ty;
                args.push(quote_spanned!(ty.span()=> #id: #ty));
                graph_args.push(quote_spanned!(ty.span()=> #id: #ty));
                // Typed: the pointer must be to a value of the declared type.
                param_ptrs.push(quote!(&#id as *const #ty as *mut #c::ffi::c_void));
                table.push_str(&format!("| `{id}` | value | — |\n"));
                graph_table.push_str(&format!("| `{id}` | value |\n"));
            }
            Kind::Slice { elem, mode } => {
                let arg = local_for(id, "arg");
                let ptr = local_for(id, "ptr");
                let len = local_for(id, "len");
                let (access, trait_call, ty) = match mode {
                    Mode::Read => (
                        quote!(Read),
                        quote!(<_ as #rt::ReadBuffer<#elem>>::arg(#id)),
                        quote_spanned!(p.ty.span()=> &(impl #rt::ReadBuffer<#elem> + ?#c::marker::Sized)),
                    ),
                    Mode::Write(_)
                    | Mode::WriteTransposed { .. }
                    | Mode::ReadWrite(_)
                    | Mode::Atomic
                    | Mode::LookBack => (
                        if matches!(mode, Mode::Write(_) | Mode::WriteTransposed { .. }) {
                            quote!(Write)
                        } else {
                            quote!(ReadWrite)
                        },
                        quote!(<_ as #rt::WriteBuffer<#elem>>::arg_mut(#id)),
                        quote_spanned!(p.ty.span()=> &mut (impl #rt::WriteBuffer<#elem> + ?#c::marker::Sized)),
                    ),
                };
                args.push(quote!(#id: #ty));
                let graph_ty = if *mode == Mode::Read {
                    quote_spanned!(p.ty.span()=> &#g (impl #rt::ReadBuffer<#elem> + ?#c::marker::Sized))
                } else {
                    quote_spanned!(p.ty.span()=> &#g (impl #rt::WriteBuffer<#elem> + ?#c::marker::Sized))
                };
                graph_args.push(quote!(#id: #graph_ty));
                graph_takes.push(quote! {
                    let #arg = <_ as #rt::ReadBuffer<#elem>>::arg(#id);
                    let #ptr: u64 = #arg.ptr();
                    let #len: usize = #arg.len();
                });
                graph_records.push(quote!((#arg, #rt::Access::#access)));
                takes.push(quote! {
                    let #arg = #trait_call;
                    let #ptr: u64 = #arg.ptr();
                    let #len: usize = #arg.len();
                });
                records.push(quote!(#rt::__private::BufferUse::new(#arg, #rt::Access::#access)));
                if *mode == Mode::LookBack {
                    zero.push(quote!((#ptr, #len * #c::mem::size_of::<#elem>())));
                }
                param_ptrs.push(quote!(&#ptr as *const u64 as *mut #c::ffi::c_void));
                param_ptrs.push(quote!(&#len as *const usize as *mut #c::ffi::c_void));
                let kw = mode.keyword();
                let m = match mode {
                    Mode::Read | Mode::Atomic | Mode::LookBack => kw.to_owned(),
                    Mode::Write(owner) | Mode::ReadWrite(owner) => match owner {
                        Owner::Thread => kw.to_owned(),
                        Owner::Block => format!("{kw} per block"),
                        Owner::Warp => format!("{kw} per warp"),
                        Owner::Chunk(k) => format!("{kw} per chunk({k})"),
                        Owner::Tile(k) => format!("{kw} per tile({k})"),
                    },
                    Mode::WriteTransposed { tile, .. } => {
                        format!("{kw} per transposed({tile}, ..)")
                    }
                };
                graph_table.push_str(&format!("| `{id}` | `{m}` |\n"));
                table.push_str(&format!(
                    "| `{id}` | `{m}` | waits on {} |\n",
                    if *mode == Mode::Read {
                        "the last write on other streams"
                    } else if *mode == Mode::LookBack {
                        "the last write and every read on other streams; zeroed on the stream right before the kernel"
                    } else {
                        "the last write and every read on other streams"
                    }
                ));
            }
        }
    }
    let not_fn_types: Vec<syn::Ident> = (1..params.len())
        .map(|i| format_ident!("__A{}", i))
        .collect();
    let nptrs = param_ptrs.len();
    let nuses = records.len();
    let param_names: Vec<String> = params.iter().map(|p| p.ident.to_string()).collect();
    let type_doc = format!(
        "Generated by `#[xlog_kernel]`: the launcher of kernel `{name_str}`. See [`launch`]({name}::launch)."
    );
    let launch_doc = format!(
        "Launch `{name_str}` on `stream`: records each buffer's access, queues the \
         cross-stream waits it needs, enqueues, and commits, all before returning.{}\n\n\
         | parameter | access | fencing |\n| --- | --- | --- |\n{table}\n\
         Errors before anything is queued: an invalid or multi-dimensional `config` \
         (typed launches are one-dimensional, see `LaunchConfig::for_len`), buffers of \
         another runtime, a module that fails to load, a device build whose parameter \
         list differs from this launcher's (`KernelAbiMismatch`).",
        generic.as_ref().map_or(String::new(), |g| format!(
            " Compiled for `{}`: the types pick the entry point.",
            g.lists
        ))
    );
    let safety_doc = if kernel.is_unsafe {
        quote! {
            #[doc = ""]
            #[doc = "# Safety"]
            #[doc = "The kernel is an `unsafe fn`: uphold its documented obligations."]
        }
    } else {
        quote!()
    };
    // `config(len)` gets a block size either way; a launch is held to one only
    // when the kernel declares it.
    let (config_block, required_block) = match settings.block {
        Block::Any => (
            quote!(#rt::LaunchConfig::DEFAULT_BLOCK),
            quote!(#c::option::Option::None),
        ),
        Block::Fixed { threads, .. } => {
            (quote!(#threads), quote!(#c::option::Option::Some(#threads)))
        }
    };
    let shared = settings.shared;
    let foreign_module = format!(
        "xlog: `crate::MODULE` was not compiled for this crate's lib target, so the launcher of \
         `{name_str}` cannot trust its entry points; declare kernels in the lib target of a crate \
         whose build.rs runs `xlog_build::Builder::new().run()`, call `xlog::kernel_module!()` at \
         its root, and launch them from other targets through that lib (never re-export another \
         crate's MODULE)"
    );
    let (graph, node) = (local("__graph"), local("__node"));
    // What differs for a generic kernel: the type parameters (`<T: CopyType>`), and
    // the handle and name of the entry point, which come from the types' trait.
    let (gens, graph_gens, handle, kname) = match &generic {
        None => (
            quote!(),
            quote!(<#g>),
            quote!(Self::__handle()),
            quote!(#name_str),
        ),
        Some(gen) => {
            let params = &gen.params;
            let inst = &gen.instance;
            (
                quote!(<#params>),
                quote!(<#g, #params>),
                quote!(<#inst>::__handle()),
                quote!(<#inst>::__NAME),
            )
        }
    };
    let record_doc = format!(
        "Record `{name_str}` into a graph instead of launching it: the node's edges come \
         from the accesses below, and every buffer stays borrowed while the recording and \
         its `Graph` live.\n\n\
         | parameter | access |\n| --- | --- |\n{graph_table}\n\
         Errors leave the recording unchanged: those of `launch`, and a written buffer \
         argument that overlaps another argument."
    );
    let update_doc = format!(
        "Give graph node `node` (recorded by `{name}::record`) new scalars and launch shape, \
         for the graph's later launches (`cuGraphExecKernelNodeSetParams`). The buffers must \
         be the node's own, with the same accesses (views of them may differ); other \
         buffers take a new recording and `Graph::update`."
    );
    let graph_fns = quote! {
        #[doc = #record_doc]
        #safety_doc
        #[allow(clippy::too_many_arguments)]
        pub #unsafety fn record #graph_gens (
            #graph: &mut #rt::GraphRecorder<#g>,
            #config: #rt::LaunchConfig,
            #(#graph_args),*
        ) -> #rt::Result<#rt::NodeId> {
            let #config = #rt::LaunchConfig::__with_kernel_settings(#config, #kname, #required_block, #c::option::Option::Some(#shared))?;
            #(#graph_takes)*
            let #pre: [(#rt::ArgRef<#g>, #rt::Access); #nuses] = [#(#graph_records),*];
            let #ptrs: [*mut #c::ffi::c_void; #nptrs] = [#(#param_ptrs),*];
            // SAFETY: as in `launch`: `#ptrs` mirrors the entry point and every slice
            // is listed with its declared access; the values are copied in the call.
            unsafe { #graph.__record_typed(#handle, #config, &#ptrs, &[#(#zero),*], &#pre) }
        }

        #[doc = #update_doc]
        #safety_doc
        #[allow(clippy::too_many_arguments)]
        pub #unsafety fn update #graph_gens (
            #graph: &mut #rt::Graph<#g>,
            #node: #rt::NodeId,
            #config: #rt::LaunchConfig,
            #(#graph_args),*
        ) -> #rt::Result<()> {
            let #config = #rt::LaunchConfig::__with_kernel_settings(#config, #kname, #required_block, #c::option::Option::Some(#shared))?;
            #(#graph_takes)*
            let #pre: [(#rt::ArgRef<#g>, #rt::Access); #nuses] = [#(#graph_records),*];
            let #ptrs: [*mut #c::ffi::c_void; #nptrs] = [#(#param_ptrs),*];
            // SAFETY: as in `record`.
            unsafe { #graph.__update_typed(#node, #handle, #config, &#ptrs, &[#(#zero),*], &#pre) }
        }
    };
    let check_doc = "Compares this launcher's parameter list with the one the device build \
        exported for the kernel. Needs no GPU; every launch checks it once per runtime \
        anyway, so this is for tests and start-up checks.";
    let (handle_items, types) = match &generic {
        None => {
            let sim_entry = super::device::sim_entry(attr, kernel, None);
            let abi = super::abi_expr(settings, kernel, params);
            let items = quote! {
                /// The host's view of this kernel's parameter list (see `xlog::device::abi`).
                #[doc(hidden)]
                pub const ABI: &'static [u64] = &#abi;

                #[doc(hidden)]
                pub fn __handle() -> &'static #rt::KernelHandle {
                    // SAFETY: `#sim_entry` is this kernel's host build, generated by the
                    // same expansion from the same parameter list as `ABI`.
                    static HANDLE: #rt::KernelHandle = unsafe {
                        #rt::KernelHandle::new(
                            &crate::MODULE,
                            #name_str,
                            #name::ABI,
                            &[#(#param_names),*],
                        )
                        .simulated_by(#sim_entry)
                    };
                    &HANDLE
                }

                #[doc = #check_doc]
                pub fn check_abi() -> #rt::Result<()> {
                    Self::__handle().check_abi()
                }
            };
            (items, quote!())
        }
        Some(gen) => gen.items(kernel, &param_names, check_doc),
    };
    // Each `lookback` buffer is zeroed in the launch's own recorded use, so every
    // launch starts with no tickets and no published status.
    let launch = quote!(#rt::__private::launch_typed(#stream, &#func, #config, &mut #ptrs, &[#(#zero),*], &mut #pre));
    quote! {
        #[cfg(not(target_arch = "nvptx64"))]
        #(#docs)*
        #[doc = ""]
        #[doc = #type_doc]
        #[allow(non_camel_case_types)]
        #vis struct #name {
            _launcher: (),
        }

        // The launcher is a braced struct, in the type namespace only; this function
        // takes the kernel's name in the value namespace, so calling the kernel like
        // a function fails with a message naming `launch` (the trait's
        // `on_unimplemented`) instead of "expected function, found struct". It takes
        // as many arguments as the kernel (at least one), so a call with the kernel's
        // arguments gets no argument-count error besides; the first argument's bound
        // is implemented only for `Infallible`, so no value reaches it, unless a crate
        // implements the hidden trait for a type of its own, whose `never` is then all
        // the call runs.
        #[cfg(not(target_arch = "nvptx64"))]
        #[doc(hidden)]
        #[allow(non_snake_case, dead_code, clippy::too_many_arguments)]
        #vis fn #name<__A0: #k::__private::KernelIsNotAFunction<#name> #(, #not_fn_types)*>(
            __a0: __A0 #(, _: #not_fn_types)*
        ) -> ! {
            __a0.never()
        }

        #[cfg(not(target_arch = "nvptx64"))]
        // Only the lib target of the crate compiled for the device (not a binary,
        // an example, an integration test or a bench of the same package) may
        // launch its module.
        const _: () = #c::assert!(
            #k::__private::device::__owned_by(
                &crate::MODULE,
                #c::concat!(#c::env!("CARGO_MANIFEST_DIR"), "#", #c::env!("CARGO_CRATE_NAME")),
                #c::option_env!("CARGO_BIN_NAME").is_none()
                    && #c::option_env!("CARGO_TARGET_TMPDIR").is_none(),
            ),
            #foreign_module
        );

        #[cfg(not(target_arch = "nvptx64"))]
        impl #name {
            #handle_items

            /// A one-dimensional configuration covering `len` elements, with the block
            /// size and dynamic shared memory this kernel declares (defaults otherwise).
            pub fn config(len: usize) -> #rt::LaunchConfig {
                #rt::LaunchConfig::__for_kernel(len, #config_block, #shared)
            }

            #[doc = #launch_doc]
            #safety_doc
            #[allow(clippy::too_many_arguments)]
            pub #unsafety fn launch #gens (
                #stream: &#rt::Stream,
                #config: #rt::LaunchConfig,
                #(#args),*
            ) -> #rt::Result<()> {
                let #config = #rt::LaunchConfig::__with_kernel_settings(#config, #kname, #required_block, #c::option::Option::Some(#shared))?;
                let #func = #handle.function(#stream)?;
                #(#takes)*
                let mut #pre: [#rt::__private::BufferUse<'_>; #nuses] = [#(#records),*];
                let mut #ptrs: [*mut #c::ffi::c_void; #nptrs] = [#(#param_ptrs),*];
                // SAFETY: `#ptrs` mirrors the entry point that the same expansion emitted
                // for the device (scalars by value, each slice as a u64 address and a usize
                // length, in declaration order), and every slice was recorded with its
                // declared access; `function` verified the device build's ABI descriptor.
                let _ = unsafe { #launch }?;
                #c::result::Result::Ok(())
            }

            #graph_fns
        }

        #types
    }
}

/// The parts of a generic kernel's launcher that name its type parameters.
struct Generic<'a> {
    attr: &'a Attr,
    settings: &'a Settings,
    each: &'a [Instantiated<'a>],
    /// The trait the listed types implement (`CopyType`).
    types_trait: syn::Ident,
    /// The launcher's type parameters with their bounds: the first implements the
    /// trait for the others (`T: CopyType`, `T: GatherType<I>, I: DeviceCopy`).
    params: TokenStream,
    /// `T as CopyType<..>`: where the entry point's handle and name come from.
    instance: TokenStream,
    /// The trait's own parameters (`<I>`), empty for one type parameter.
    trait_args: TokenStream,
    /// The lists as written, for messages: "T in [f32, u32] and I in [u32, u64]".
    lists: String,
    /// The kernel's bounds on its first type parameter, with `Self` for it: the
    /// types trait's supertraits, so `T: CopyType` implies them wherever it is
    /// written (the launcher's parameter types may need them: `<T as Widen>::Wide`).
    supers: Vec<TokenStream>,
}

impl<'a> Generic<'a> {
    fn new(
        attr: &'a Attr,
        settings: &'a Settings,
        kernel: &Kernel,
        each: &'a [Instantiated<'a>],
    ) -> Option<Self> {
        let (first, rest) = kernel.type_params.split_first()?;
        if each.is_empty() {
            return None;
        }
        let k = facade(kernel);
        let types_trait = super::types_trait(kernel);
        let trait_args = if rest.is_empty() {
            quote!()
        } else {
            quote!(<#(#rest),*>)
        };
        let params =
            quote!(#first: #types_trait #trait_args #(, #rest: #k::__private::device::DeviceCopy)*);
        let instance = quote!(#first as #types_trait #trait_args);
        let lists = kernel
            .type_params
            .iter()
            .map(|t| {
                let types: Vec<String> = attr
                    .for_lists
                    .iter()
                    .find(|l| l.param == *t)
                    .map(|l| l.types.iter().map(crate::check::type_string).collect())
                    .unwrap_or_default();
                format!("{t} in [{}]", types.join(", "))
            })
            .collect::<Vec<_>>()
            .join(" and ");
        let supers = first_bounds(kernel, first);
        Some(Generic {
            attr,
            settings,
            each,
            types_trait,
            params,
            instance,
            trait_args,
            lists,
            supers,
        })
    }

    /// The inherent items that differ from a plain kernel's (`check_abi::<T>` and
    /// `check_abi_all`), and the trait with its implementations.
    fn items(
        &self,
        kernel: &Kernel,
        param_names: &[String],
        check_doc: &str,
    ) -> (TokenStream, TokenStream) {
        let k = facade(kernel);
        let rt = quote!(#k::__private::rt);
        let name = kernel.name();
        let name_str = super::symbol_name(self.attr, kernel, None);
        let (gens, instance, tr, trait_args, supers) = (
            &self.params,
            &self.instance,
            &self.types_trait,
            &self.trait_args,
            &self.supers,
        );
        let vis = &kernel.item.vis;
        let m = super::facade_module(kernel);
        let rest = &kernel.type_params[1..];
        let checks = self.each.iter().map(|i| {
            let (_, first_ty) = &i.instance.args[0];
            let rest_tys = i.instance.args[1..].iter().map(|(_, t)| t);
            let args = if rest.is_empty() {
                quote!()
            } else {
                quote!(<#(#rest_tys),*>)
            };
            quote!(<#first_ty as #tr #args>::__handle().check_abi()?;)
        });
        let items = quote! {
            #[doc = #check_doc]
            pub fn check_abi<#gens>() -> #rt::Result<()> {
                <#instance>::__handle().check_abi()
            }

            /// [`check_abi`](Self::check_abi) for every instantiation the kernel is
            /// compiled for, stopping at the first mismatch.
            pub fn check_abi_all() -> #rt::Result<()> {
                #(#checks)*
                #k::__private::core::result::Result::Ok(())
            }
        };
        let assignments = kernel
            .type_params
            .iter()
            .enumerate()
            .map(|(n, t)| {
                if n == 0 {
                    format!("{t} = `{{Self}}`")
                } else {
                    format!("{t} = `{{{t}}}`")
                }
            })
            .collect::<Vec<_>>()
            .join(", ");
        let lists = self.lists.replace('{', "{{").replace('}', "}}");
        let message = format!("kernel `{name_str}` is not compiled for {assignments}");
        let label = format!("`{name}::launch` takes {lists}");
        let note = "each listed type gets an entry point of its own: add the type to its `for .. in [..]` list in the kernel's #[xlog_kernel(..)] to compile one for it".to_string();
        let trait_doc = format!(
            "The types kernel [`{name}`] is compiled for, `{}`: `{name}::launch` and \
             `{name}::record` take exactly these. Implemented by `#[xlog_kernel]`, once per \
             instantiation, mapping its types to the entry point compiled for them. The \
             kernel's bounds on `{first}` are supertraits, so `{first}: {tr}` implies them.",
            self.lists,
            first = kernel.type_params[0],
        );
        let impls = self.each.iter().map(|i| {
            let (_, first_ty) = &i.instance.args[0];
            let rest_tys: Vec<_> = i.instance.args[1..].iter().map(|(_, t)| t).collect();
            let args = if rest.is_empty() { quote!() } else { quote!(<#(#rest_tys),*>) };
            let symbol = super::symbol_name(self.attr, kernel, Some(i.instance));
            let sim_entry = super::device::sim_entry(self.attr, kernel, Some(i.instance));
            let abi = super::abi_expr(self.settings, kernel, &i.params);
            quote! {
                #[cfg(not(target_arch = "nvptx64"))]
                impl #m::Sealed #args for #first_ty {}

                // SAFETY: `#symbol` is the entry point this expansion compiled for these
                // types, from the parameter list `ABI` describes; `#sim_entry` is its
                // host build.
                #[cfg(not(target_arch = "nvptx64"))]
                unsafe impl #tr #args for #first_ty {
                    const __NAME: &'static str = #symbol;
                    fn __handle() -> &'static #rt::KernelHandle {
                        const ABI: &[u64] = &#abi;
                        // SAFETY: as above.
                        static HANDLE: #rt::KernelHandle = unsafe {
                            #rt::KernelHandle::new(&crate::MODULE, #symbol, ABI, &[#(#param_names),*])
                                .simulated_by(#sim_entry)
                        };
                        &HANDLE
                    }
                }
            }
        });
        let types = quote! {
            #[cfg(not(target_arch = "nvptx64"))]
            #[doc = #trait_doc]
            #[doc = ""]
            #[doc = "# Safety"]
            #[doc = "Only `#[xlog_kernel]` implements it: `__handle` must be the handle of the \
                     entry point compiled for these types, whose parameters the launcher's \
                     arguments are."]
            #[diagnostic::on_unimplemented(message = #message, label = #label, note = #note)]
            // clippy finds no `# Safety` among doc attributes a macro generated.
            #[allow(non_camel_case_types, clippy::missing_safety_doc)]
            #vis unsafe trait #tr #trait_args: #m::Sealed #trait_args + #k::__private::device::DeviceCopy #(+ #supers)* {
                #[doc(hidden)]
                const __NAME: &'static str;
                #[doc(hidden)]
                fn __handle() -> &'static #rt::KernelHandle;
            }

            #(#impls)*
        };
        (items, types)
    }
}

/// The kernel's own bounds on its first type parameter (inline, or in `where` as
/// `T: ..`), with `Self` for it: the types trait's supertraits. Without them a
/// parameter type that needs a bound (`<T as Widen>::Wide`) would not be
/// well-formed in the launcher, whose `T` is bounded by the types trait alone; as
/// supertraits they are implied wherever `T: CopyType` is written, so generic host
/// code naming the trait needs no more than before. (Bounds on the other type
/// parameters, or on other types, `[T; 4]: Vector`, cannot be implied that way,
/// and as bounds of the launcher every generic caller would have to repeat them:
/// they stay the body's.)
fn first_bounds(kernel: &Kernel, first: &syn::Ident) -> Vec<TokenStream> {
    use syn::visit_mut::VisitMut;
    use syn::{GenericParam, TraitBoundModifier, TypeParamBound, WherePredicate};
    /// `first` replaced by `Self`, as a whole type or as a path's first segment.
    struct ToSelf<'a>(&'a syn::Ident);
    impl VisitMut for ToSelf<'_> {
        fn visit_path_mut(&mut self, p: &mut syn::Path) {
            if p.leading_colon.is_none() {
                if let Some(seg) = p.segments.first_mut() {
                    if seg.ident == *self.0 {
                        seg.ident = syn::Ident::new("Self", seg.ident.span());
                    }
                }
            }
            syn::visit_mut::visit_path_mut(self, p);
        }
    }
    let types_trait = super::types_trait(kernel);
    // `?Sized` is no supertrait (and every listed type is `DeviceCopy`, so sized);
    // the types trait itself would be a cycle.
    let keep = |b: &&TypeParamBound| match b {
        TypeParamBound::Trait(t) => {
            !matches!(t.modifier, TraitBoundModifier::Maybe(_))
                && t.path
                    .segments
                    .last()
                    .is_none_or(|s| s.ident != types_trait)
        }
        _ => true,
    };
    let generics = &kernel.item.sig.generics;
    let inline = generics.params.iter().flat_map(|p| match p {
        GenericParam::Type(t) if t.ident == *first => t.bounds.iter().collect(),
        _ => Vec::new(),
    });
    let in_where = generics
        .where_clause
        .iter()
        .flat_map(|w| &w.predicates)
        .flat_map(|pred| match pred {
            WherePredicate::Type(pt)
                if pt.lifetimes.is_none()
                    && matches!(crate::ast::ungroup(&pt.bounded_ty), syn::Type::Path(p)
                        if p.qself.is_none() && p.path.is_ident(first)) =>
            {
                pt.bounds.iter().collect()
            }
            _ => Vec::new(),
        });
    inline
        .chain(in_where)
        .filter(keep)
        .map(|b| {
            let mut b = b.clone();
            ToSelf(first).visit_type_param_bound_mut(&mut b);
            quote!(#b)
        })
        .collect()
}
