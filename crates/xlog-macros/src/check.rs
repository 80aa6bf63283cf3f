//! Rules that span the attribute and the signature.

use std::collections::HashMap;

use syn::visit::Visit;
use syn::{Ident, Type};

use crate::ast::{ungroup, Block, Checked, Instance, Kernel, Kind, Settings, Shape};
use crate::attr::{Attr, Mode};
use crate::ctxt::Ctxt;

/// Resolve the launch settings: the one place where a setting left out gets its
/// meaning. `min_blocks` sizes registers for blocks of a known size, so it needs
/// `block`.
pub fn settings(cx: &Ctxt, attr: &Attr) -> Settings {
    let block = match (attr.block, &attr.min_blocks) {
        (Some(threads), min_blocks) => Block::Fixed {
            threads,
            min_blocks: min_blocks.as_ref().map(|(n, _)| *n),
        },
        (None, Some((_, written))) => {
            cx.error_spanned_by(
                written,
                "`min_blocks` sizes registers for blocks of a known size: declare the block size too, e.g. `block = 256, min_blocks = 2`",
            );
            Block::Any
        }
        (None, None) => Block::Any,
    };
    Settings {
        block,
        shared: attr.shared.unwrap_or(0),
    }
}

/// The most instantiations one kernel may have: each is an entry point in the
/// module, compiled and checked by `ptxas`.
const MAX_INSTANCES: usize = 256;

/// Bind the `for T in [..]` lists to the kernel's type parameters and return every
/// instantiation (the product of the lists, the first parameter's type varying
/// slowest); empty for a kernel that is not generic.
pub fn instances(cx: &Ctxt, attr: &Attr, kernel: &Kernel) -> Vec<Instance> {
    let mut lists: Vec<Vec<(Type, String)>> = Vec::new();
    for param in &kernel.type_params {
        let mut matching = attr.for_lists.iter().filter(|l| l.param == *param);
        let Some(list) = matching.next() else {
            cx.error_spanned_by(
                param,
                format!("type parameter `{param}` needs the list of types to compile the kernel for: add `for {param} in [f32, u32, ..]` to #[xlog_kernel(..)] (one entry point is compiled per listed type)"),
            );
            continue;
        };
        for again in matching {
            cx.error_spanned_by(
                again.for_token,
                format!("`{param}` has two `for {param} in [..]` lists; merge them into one"),
            );
        }
        if list.types.is_empty() {
            cx.syn_error(syn::Error::new(
                list.bracket.span.join(),
                format!("`for {param} in []` lists no type, so no entry point would be compiled: list the types, e.g. `for {param} in [f32, u32]`"),
            ));
        }
        let mut named: Vec<(Type, String)> = Vec::new();
        for ty in &list.types {
            let Some(name) = type_name(ty) else {
                cx.error_spanned_by(
                    ty,
                    format!("list each type of `for {param} in [..]` by its name (`f32`, `Pair`, `my::Pair`): the name ends its entry point's symbol (`{}__f32`); name other types with `type Name = ..;`", symbol_base(attr, kernel)),
                );
                continue;
            };
            if let Some((first, _)) = named.iter().find(|(_, n)| *n == name) {
                let (first, ty_written) = (type_string(first), type_string(ty));
                let msg = if first == ty_written {
                    format!("`{name}` is listed twice in `for {param} in [..]`; list it once")
                } else {
                    format!("`{first}` and `{ty_written}` both end in `{name}`, the name that tells their entry points apart (`{}__{name}`); list one of them, or give one another name with `type Name = ..;`", symbol_base(attr, kernel))
                };
                cx.error_spanned_by(ty, msg);
                continue;
            }
            named.push((ty.clone(), name));
        }
        for p in &kernel.params {
            if let Some(path) = shorthand_path(&p.ty, param) {
                let written = quote::quote!(#path).to_string().replace(" :: ", "::");
                let rest = written
                    .strip_prefix(&format!("{param}::"))
                    .unwrap_or(&written)
                    .to_owned();
                cx.error_spanned_by(
                    path,
                    format!("`{}`: write `{written}` with its trait, `<{param} as Trait>::{rest}`: each instantiation's entry point names the type with the listed type in place of `{param}` (`<f32 as Trait>::{rest}`), which the shorthand cannot", p.ident),
                );
            }
        }
        if !kernel.params.iter().any(|p| mentions(&p.ty, param)) {
            cx.error_spanned_by(
                param,
                format!("type parameter `{param}` appears in no parameter's type: the launcher tells the kernel's instantiations apart by its arguments; take `{param}` values through a parameter (`&[{param}]`, `&mut [{param}]` or `{param}`)"),
            );
        }
        lists.push(named);
    }
    for list in &attr.for_lists {
        if !kernel.type_params.contains(&list.param) {
            let known = if kernel.type_params.is_empty() {
                format!(
                    "the kernel has none: declare it, `fn {}<{}>(..)`",
                    kernel.name(),
                    list.param
                )
            } else {
                let names: Vec<String> = kernel.type_params.iter().map(Ident::to_string).collect();
                format!("the kernel's are: {}", names.join(", "))
            };
            cx.error_spanned_by(
                &list.param,
                format!(
                    "`for {} in [..]` names no type parameter of the kernel; {known}",
                    list.param
                ),
            );
        }
    }
    let count = lists.iter().map(Vec::len).product::<usize>();
    if kernel.type_params.is_empty() || lists.len() != kernel.type_params.len() || count == 0 {
        return Vec::new();
    }
    if count > MAX_INSTANCES {
        cx.error_spanned_by(
            &kernel.item.sig.generics,
            format!("the lists make {count} instantiations of the kernel, more than {MAX_INSTANCES}: each is an entry point of its own; list fewer types"),
        );
        return Vec::new();
    }
    let mut all = vec![Instance {
        args: Vec::new(),
        suffix: String::new(),
    }];
    for (param, list) in kernel.type_params.iter().zip(&lists) {
        all = all
            .into_iter()
            .flat_map(|inst| {
                list.iter().map(move |(ty, name)| {
                    let mut next = inst.clone();
                    next.args.push((param.clone(), ty.clone()));
                    next.suffix.push_str(&format!("__{name}"));
                    next
                })
            })
            .collect();
    }
    all
}

/// The name a listed type contributes to its entry point's symbol: the last
/// segment of a plain path (`f32`, `Pair` for `my::Pair`); `None` for any other type.
fn type_name(ty: &Type) -> Option<String> {
    use syn::ext::IdentExt;
    let Type::Path(p) = ungroup(ty) else {
        return None;
    };
    if p.qself.is_some() || p.path.segments.iter().any(|s| !s.arguments.is_empty()) {
        return None;
    }
    p.path.segments.last().map(|s| s.ident.unraw().to_string())
}

/// A type as written, for messages (`my::Pair`, not `my :: Pair`).
pub fn type_string(ty: &Type) -> String {
    quote::quote!(#ty)
        .to_string()
        .replace(" :: ", "::")
        .replace(":: ", "::")
}

/// The entry point's symbol before an instantiation's suffix, for diagnostics.
fn symbol_base(attr: &Attr, kernel: &Kernel) -> String {
    use syn::ext::IdentExt;
    let name = kernel.name().unraw();
    match &attr.suffix {
        Some(s) => format!("{name}_{s}"),
        None => name.to_string(),
    }
}

/// Whether `ty` names the type parameter `param` anywhere (`T`, `&[T]`, `[T; 4]`,
/// `<T as Trait>::Assoc`).
pub fn mentions(ty: &Type, param: &Ident) -> bool {
    struct Finder<'a> {
        param: &'a Ident,
        found: bool,
    }
    impl<'ast> Visit<'ast> for Finder<'_> {
        fn visit_type_path(&mut self, p: &'ast syn::TypePath) {
            if p.qself.is_none()
                && p.path
                    .segments
                    .first()
                    .is_some_and(|s| s.ident == *self.param)
            {
                self.found = true;
            }
            syn::visit::visit_type_path(self, p);
        }
    }
    let mut f = Finder {
        param,
        found: false,
    };
    f.visit_type(ty);
    f.found
}

/// The first path in `ty` that reaches into the type parameter `param` without
/// naming a trait (`T::Assoc`), if any.
fn shorthand_path<'a>(ty: &'a Type, param: &Ident) -> Option<&'a syn::Path> {
    struct Finder<'a, 'p> {
        param: &'p Ident,
        found: Option<&'a syn::Path>,
    }
    impl<'a> Visit<'a> for Finder<'a, '_> {
        fn visit_type_path(&mut self, p: &'a syn::TypePath) {
            if self.found.is_none()
                && p.qself.is_none()
                && p.path.leading_colon.is_none()
                && p.path.segments.len() > 1
                && p.path.segments[0].ident == *self.param
            {
                self.found = Some(&p.path);
            }
            syn::visit::visit_type_path(self, p);
        }
    }
    let mut f = Finder { param, found: None };
    f.visit_type(ty);
    f.found
}

/// Bind every access declaration to its parameter and check modes against types.
/// Returns the checked parameters (complete when `cx` collected no error).
pub fn bind(cx: &Ctxt, attr: &Attr, kernel: &Kernel) -> Vec<Checked> {
    let names: Vec<String> = kernel.params.iter().map(|p| p.ident.to_string()).collect();
    let mut seen: HashMap<String, &Mode> = HashMap::new();
    for decl in &attr.decls {
        let name = decl.ident.to_string();
        if let Some(first) = seen.get(&name) {
            let msg = if first.keyword() == decl.mode.keyword() {
                format!(
                    "`{name}` is listed twice in `{}(..)`; list it once",
                    decl.mode.keyword()
                )
            } else {
                format!(
                    "`{name}` is listed in both `{}(..)` and `{}(..)`; a parameter has exactly one access mode (use `read_write({name})` for one the kernel reads and writes)",
                    first.keyword(),
                    decl.mode.keyword()
                )
            };
            cx.error_spanned_by(&decl.ident, msg);
            continue;
        }
        seen.insert(name.clone(), &decl.mode);
        let Some(param) = kernel.params.iter().find(|p| p.ident == decl.ident) else {
            let known = if names.is_empty() {
                "none".to_owned()
            } else {
                names.join(", ")
            };
            cx.error_spanned_by(
                &decl.ident,
                format!(
                    "unknown parameter `{name}` in `{}(..)`; the kernel's parameters are: {known}",
                    decl.mode.keyword()
                ),
            );
            continue;
        };
        match &param.shape {
            Shape::Scalar => cx.error_spanned_by(
                &decl.ident,
                format!("`{name}` is passed by value; access modes are only for slice parameters (`&[T]`, `&mut [T]`)"),
            ),
            Shape::Slice { elem, mutable } => {
                if decl.mode == Mode::LookBack && !is_primitive(elem, "u64") {
                    cx.error_spanned_by(
                        elem,
                        format!(
                            "`{name}` is declared `lookback({name})`, so its type is `&mut [u64]` (the status words: one ticket counter and four words per tile, `xlog::device::lookback::status_words(tiles)` of them), not `&mut [{}]`",
                            quote::quote!(#elem)
                        ),
                    );
                } else if decl.mode.writes() && !mutable {
                    cx.error_spanned_by(
                        &param.ty,
                        format!("`{name}` is declared `{}({name})` but has type `&[T]`; write it as `{name}: &mut [T]`, or declare `read({name})`", decl.mode.keyword()),
                    );
                } else if !decl.mode.writes() && *mutable {
                    cx.error_spanned_by(
                        &param.ty,
                        format!("`{name}` is declared `read({name})` but has type `&mut [T]`; write it as `{name}: &[T]`, or declare `write({name})` / `read_write({name})` / `atomic({name})`"),
                    );
                }
            }
        }
    }
    let once = |is: fn(&Mode) -> bool, what: &str| {
        let mut decls = attr.decls.iter().filter(|d| is(&d.mode));
        if let (Some(_), Some(second)) = (decls.next(), decls.next()) {
            cx.error_spanned_by(
                &second.ident,
                format!("a kernel takes at most one {what} parameter: witnesses drawn from two could name the same elements"),
            );
        }
    };
    once(|m| matches!(m, Mode::LookBack), "`lookback(..)`");
    once(
        |m| matches!(m, Mode::WriteTransposed { .. }),
        "`per transposed(..)`",
    );
    let transposed_rows = attr.decls.iter().filter_map(|d| match &d.mode {
        Mode::WriteTransposed { rows, .. } => Some(rows),
        _ => None,
    });
    for rows in transposed_rows {
        match kernel.params.iter().find(|p| p.ident == *rows) {
            Some(p) if matches!(p.shape, Shape::Scalar) => {
                if !is_primitive(&p.ty, "usize") {
                    let ty = &p.ty;
                    cx.error_spanned_by(
                        ty,
                        format!("`{rows}` holds the row count of `per transposed(TILE, {rows})`, so its type is `usize`, not `{}`: declare `{rows}: usize` (a conversion could change the shape the witnesses are derived from)", quote::quote!(#ty)),
                    );
                }
            }
            _ => cx.error_spanned_by(
                rows,
                format!("`{rows}` is not a value parameter of the kernel; `per transposed(TILE, rows)` names the `usize` parameter holding the input's row count"),
            ),
        }
    }
    let mut checked = Vec::with_capacity(kernel.params.len());
    for param in &kernel.params {
        let kind = match &param.shape {
            Shape::Scalar => Kind::Scalar,
            Shape::Slice { elem, .. } => match seen.get(&param.ident.to_string()) {
                Some(&mode) => Kind::Slice {
                    elem: elem.clone(),
                    mode: mode.clone(),
                },
                None => {
                    let n = &param.ident;
                    cx.error_spanned_by(
                        &param.ident,
                        format!("slice parameter `{n}` needs an access mode: add `read({n})`, `write({n})`, `read_write({n})`, `atomic({n})` or `lookback({n})` to #[xlog_kernel(..)]"),
                    );
                    continue;
                }
            },
        };
        checked.push(Checked {
            ident: param.ident.clone(),
            ty: param.ty.clone(),
            kind,
        });
    }
    checked
}

/// Whether `ty` is the primitive `name` (`u64`, `usize`), written bare or as
/// `core::primitive::name` / `std::primitive::name`. Only the spelling is checked;
/// generated code passes the value where the real primitive is required, so a type
/// merely named like one fails to compile there.
fn is_primitive(ty: &Type, name: &str) -> bool {
    let Type::Path(p) = ungroup(ty) else {
        return false;
    };
    if p.qself.is_some() || p.path.segments.iter().any(|s| !s.arguments.is_empty()) {
        return false;
    }
    let segments: Vec<String> = p
        .path
        .segments
        .iter()
        .map(|s| s.ident.to_string())
        .collect();
    match segments.as_slice() {
        [only] => only == name,
        [krate, primitive, last] => {
            (krate == "core" || krate == "std") && primitive == "primitive" && last == name
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::quote;

    /// The settings and the diagnostics of an attribute.
    fn resolve(args: proc_macro2::TokenStream) -> (Settings, Vec<String>) {
        let cx = Ctxt::default();
        let attr = crate::attr::parse(&cx, args);
        let settings = settings(&cx, &attr);
        let errors = cx.check().err().into_iter().flatten();
        (settings, errors.map(|e| e.to_string()).collect())
    }

    /// The checked parameters and the diagnostics of a kernel.
    fn bound(args: proc_macro2::TokenStream, item: syn::ItemFn) -> (Vec<Checked>, Vec<String>) {
        let cx = Ctxt::default();
        let attr = crate::attr::parse(&cx, args);
        let kernel = crate::ast::parse(&cx, item);
        let checked = bind(&cx, &attr, &kernel);
        let errors = cx.check().err().into_iter().flatten();
        (checked, errors.map(|e| e.to_string()).collect())
    }

    #[test]
    fn settings_get_their_defaults_here() {
        let any = Settings {
            block: Block::Any,
            shared: 0,
        };
        assert_eq!(resolve(quote!(read(x))), (any, vec![]));
        assert_eq!(
            resolve(quote!(block = 128, shared = 512, min_blocks = 2)),
            (
                Settings {
                    block: Block::Fixed {
                        threads: 128,
                        min_blocks: Some(2)
                    },
                    shared: 512
                },
                vec![]
            )
        );
        let (settings, errors) = resolve(quote!(min_blocks = 2));
        assert_eq!(settings, any);
        assert_eq!(errors.len(), 1);
        assert!(
            errors[0].contains("declare the block size too"),
            "{errors:?}"
        );
    }

    #[test]
    fn transposed_outputs_carry_their_row_parameter() {
        let (checked, errors) = bound(
            quote!(read(x), write(t per transposed(32, rows))),
            syn::parse_quote!(
                fn k(x: &[f32], t: &mut [f32], rows: usize) {}
            ),
        );
        assert!(errors.is_empty(), "{errors:?}");
        let Kind::Slice {
            mode: Mode::WriteTransposed { tile, rows },
            ..
        } = &checked[1].kind
        else {
            panic!("{:?}", checked[1].kind)
        };
        assert_eq!((*tile, rows.to_string().as_str()), (32, "rows"));
        let (_, errors) = bound(
            quote!(write(t per transposed(32, n))),
            syn::parse_quote!(
                fn k(t: &mut [f32], n: u32) {}
            ),
        );
        assert!(errors[0].contains("its type is `usize`"), "{errors:?}");
    }

    #[test]
    fn a_parameter_listed_twice_in_one_mode_is_named_so_whatever_its_ownership() {
        let (_, errors) = bound(
            quote!(write(o), write(o per block)),
            syn::parse_quote!(
                fn k(o: &mut [f32]) {}
            ),
        );
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(
            errors[0].contains("listed twice in `write(..)`"),
            "{errors:?}"
        );
    }

    /// The instantiations of a kernel and the diagnostics.
    fn instantiated(
        args: proc_macro2::TokenStream,
        item: syn::ItemFn,
    ) -> (Vec<String>, Vec<String>) {
        let cx = Ctxt::default();
        let attr = crate::attr::parse(&cx, args);
        let kernel = crate::ast::parse(&cx, item);
        let instances = instances(&cx, &attr, &kernel);
        let errors = cx.check().err().into_iter().flatten();
        (
            instances.into_iter().map(|i| i.suffix).collect(),
            errors.map(|e| e.to_string()).collect(),
        )
    }

    #[test]
    fn instantiations_are_the_product_of_the_lists_first_slowest() {
        let (got, errors) = instantiated(
            quote!(read(x, i), for I in [u32, core::primitive::u64], for T in [f32, my::Pair]),
            syn::parse_quote!(
                fn k<T, I>(x: &[T], i: &[I]) {}
            ),
        );
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(
            got,
            ["__f32__u32", "__f32__u64", "__Pair__u32", "__Pair__u64"]
        );
        // A plain kernel has none.
        let (got, errors) = instantiated(
            quote!(read(x)),
            syn::parse_quote!(
                fn k(x: &[f32]) {}
            ),
        );
        assert!(got.is_empty() && errors.is_empty());
    }

    #[test]
    fn a_type_parameter_is_found_wherever_a_parameter_type_names_it() {
        let t: Ident = syn::parse_quote!(T);
        for (ty, yes) in [
            ("T", true),
            ("&[T]", true),
            ("[T; 4]", true),
            ("&mut [(T, u32)]", true),
            ("<T as Tr>::X", true),
            ("u32", false),
            ("my::T", false),
            ("&[Tee]", false),
        ] {
            let parsed: Type = syn::parse_str(ty).unwrap();
            assert_eq!(mentions(&parsed, &t), yes, "{ty}");
        }
    }

    #[test]
    fn primitives_are_recognised_by_their_spellings() {
        for (ty, name, yes) in [
            ("usize", "usize", true),
            ("::core::primitive::usize", "usize", true),
            ("std::primitive::u64", "u64", true),
            ("u32", "u64", false),
            ("f32", "usize", false),
            ("my::usize", "usize", false),
            ("Vec<usize>", "usize", false),
            ("&usize", "usize", false),
        ] {
            let t: Type = syn::parse_str(ty).unwrap();
            assert_eq!(is_primitive(&t, name), yes, "{ty}");
        }
    }
}
