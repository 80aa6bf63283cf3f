//! The kernel function, parsed into what expansion needs.

use syn::{FnArg, GenericParam, Ident, ItemFn, Pat, ReturnType, Type};

use crate::attr::Mode;
use crate::ctxt::Ctxt;

/// What a parameter is, from its type alone.
#[derive(Clone, Debug)]
pub enum Shape {
    /// `&[T]` (`mutable == false`) or `&mut [T]`.
    Slice { elem: Box<Type>, mutable: bool },
    /// A value passed by copy.
    Scalar,
}

/// A parameter as written.
#[derive(Clone, Debug)]
pub struct Param {
    pub ident: Ident,
    pub ty: Type,
    pub shape: Shape,
}

/// A parameter after `check`: a value, or a slice with its access mode (and, for
/// a written slice, its ownership). Expansion works from this total model only.
#[derive(Clone, Debug)]
pub struct Checked {
    pub ident: Ident,
    /// The type as written (for spans).
    pub ty: Type,
    pub kind: Kind,
}

#[derive(Clone, Debug)]
pub enum Kind {
    /// Passed by copy.
    Scalar,
    /// `&[elem]` or `&mut [elem]`, with its declared access.
    Slice { elem: Box<Type>, mode: Mode },
}

/// The kernel's launch settings after `check`, every default applied: what
/// expansion turns into the launcher's configuration and the ABI header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Settings {
    pub block: Block,
    /// The dynamic shared memory the kernel needs per block, in bytes; 0 when it
    /// declares none (`shared = 0` means the same: the launcher then uses what the
    /// configuration gives).
    pub shared: u32,
}

/// The block size a kernel declares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Block {
    /// No `block = ..`: a launch may use any block size; `config(len)` uses the
    /// runtime's `LaunchConfig::DEFAULT_BLOCK`.
    Any,
    /// `block = threads`: the only block size a launch may use, and with
    /// `min_blocks = n` the blocks per multiprocessor `ptxas` is asked to fit.
    Fixed {
        threads: u32,
        min_blocks: Option<u32>,
    },
}

impl Checked {
    /// The scalar type, or the slice's element type: what must be `DeviceCopy`.
    pub fn value_type(&self) -> &Type {
        match &self.kind {
            Kind::Scalar => &self.ty,
            Kind::Slice { elem, .. } => elem,
        }
    }
}

/// One instantiation of a generic kernel: a listed type for each type parameter.
#[derive(Clone, Debug)]
pub struct Instance {
    /// `(parameter, type)`, in the order of the kernel's type parameters.
    pub args: Vec<(Ident, Type)>,
    /// What the entry point's symbol ends with: `__f32`, or `__f32__u32` for two
    /// type parameters (each type's last path segment).
    pub suffix: String,
}

pub struct Kernel {
    pub item: ItemFn,
    pub params: Vec<Param>,
    /// The type parameters, in order (empty for a kernel that is not generic).
    pub type_params: Vec<Ident>,
    pub is_unsafe: bool,
}

impl Kernel {
    pub fn name(&self) -> &Ident {
        &self.item.sig.ident
    }
}

const FIX_SIG: &str = "a kernel is a plain `fn name(params) { .. }`";

/// Parse the signature, reporting everything a kernel cannot be.
pub fn parse(cx: &Ctxt, item: ItemFn) -> Kernel {
    let sig = &item.sig;
    // Type parameters are what `for T in [..]` lists (`check::instances`); a
    // lifetime or a const parameter has no list to be compiled from.
    let mut type_params = Vec::new();
    for param in &sig.generics.params {
        match param {
            GenericParam::Type(t) => type_params.push(t.ident.clone()),
            GenericParam::Lifetime(l) => cx.error_spanned_by(
                l,
                "kernels take no lifetime parameters: kernel slices borrow for the whole launch",
            ),
            GenericParam::Const(c) => cx.error_spanned_by(
                c,
                "kernels take no const parameters: a generic kernel is generic over types, each listed in the attribute as `for T in [f32, u32, ..]`",
            ),
        }
    }
    if let Some(a) = &sig.asyncness {
        cx.error_spanned_by(a, format!("kernels cannot be `async`; {FIX_SIG}"));
    }
    if let Some(c) = &sig.constness {
        cx.error_spanned_by(c, format!("kernels cannot be `const`; {FIX_SIG}"));
    }
    if let Some(abi) = &sig.abi {
        cx.error_spanned_by(
            abi,
            "remove the ABI: #[xlog_kernel] emits the `gpu-kernel` entry point itself",
        );
    }
    if let Some(v) = &sig.variadic {
        cx.error_spanned_by(v, format!("kernels cannot be variadic; {FIX_SIG}"));
    }
    if let ReturnType::Type(_, ty) = &sig.output {
        let unit = matches!(&**ty, Type::Tuple(t) if t.elems.is_empty());
        if !unit {
            cx.error_spanned_by(
                ty,
                "kernels cannot return a value: write results into a `write(..)` or `read_write(..)` slice parameter",
            );
        }
    }
    let mut params = Vec::new();
    for arg in &sig.inputs {
        match arg {
            FnArg::Receiver(r) => {
                cx.error_spanned_by(r, "kernels are free functions; remove `self`")
            }
            FnArg::Typed(pt) => {
                let ident = match &*pt.pat {
                    Pat::Ident(pi) if pi.by_ref.is_none() && pi.subpat.is_none() => {
                        pi.ident.clone()
                    }
                    other => {
                        cx.error_spanned_by(
                            other,
                            "kernel parameters must be plain names (`x: &[f32]`), not patterns",
                        );
                        continue;
                    }
                };
                if let Some(mac) = macro_in(&pt.ty) {
                    cx.error_spanned_by(
                        mac,
                        format!("`{ident}`: a kernel parameter's type cannot invoke a macro: the launcher, the entry point and the ABI descriptor each expand it, and a macro need not expand the same way twice; declare the type once, `type Name = ..;`, and write `Name`"),
                    );
                }
                if let Some(shape) = shape_of(cx, &ident, &pt.ty) {
                    params.push(Param {
                        ident,
                        ty: (*pt.ty).clone(),
                        shape,
                    });
                }
            }
        }
    }
    Kernel {
        is_unsafe: sig.unsafety.is_some(),
        params,
        type_params,
        item,
    }
}

/// The first macro invoked anywhere in `ty` (as a type, or in an array length).
fn macro_in(ty: &Type) -> Option<&syn::Macro> {
    use syn::visit::Visit;
    struct Finder<'a>(Option<&'a syn::Macro>);
    impl<'a> Visit<'a> for Finder<'a> {
        fn visit_macro(&mut self, m: &'a syn::Macro) {
            self.0.get_or_insert(m);
        }
    }
    let mut f = Finder(None);
    f.visit_type(ty);
    f.0
}

/// `ty` without the invisible groups `macro_rules!` wraps around a `$t:ty`, and
/// without parentheses.
pub fn ungroup(ty: &Type) -> &Type {
    match ty {
        Type::Group(g) => ungroup(&g.elem),
        Type::Paren(p) => ungroup(&p.elem),
        other => other,
    }
}

/// Classify a parameter type, refusing what can never be device data.
fn shape_of(cx: &Ctxt, ident: &Ident, ty: &Type) -> Option<Shape> {
    match ungroup(ty) {
        Type::Reference(r) => match ungroup(&r.elem) {
            Type::Slice(s) => {
                if let Some(lt) = &r.lifetime {
                    cx.error_spanned_by(
                        lt,
                        "remove the lifetime: kernel slices borrow for the whole launch",
                    );
                }
                Some(Shape::Slice {
                    elem: s.elem.clone(),
                    mutable: r.mutability.is_some(),
                })
            }
            other => {
                cx.error_spanned_by(
                    ty,
                    format!(
                        "`{ident}`: only slices may be passed by reference; pass `{}` by value (it must be `DeviceCopy`) or use a slice `&[{}]`",
                        quote::quote!(#other),
                        quote::quote!(#other)
                    ),
                );
                None
            }
        },
        Type::Ptr(_) => {
            cx.error_spanned_by(
                ty,
                format!("`{ident}`: raw pointers are not kernel parameters; declare a slice `&[T]` or `&mut [T]` with an access mode (unsafe kernels reach raw pointers through the write handle's `as_mut_ptr`)"),
            );
            None
        }
        Type::Path(p) => {
            let last = p
                .path
                .segments
                .last()
                .map(|s| s.ident.to_string())
                .unwrap_or_default();
            let host_only = [
                "String", "Vec", "Box", "Rc", "Arc", "HashMap", "BTreeMap", "VecDeque", "Cow",
                "RefCell", "Mutex",
            ];
            if host_only.contains(&last.as_str()) {
                cx.error_spanned_by(
                    ty,
                    format!("`{ident}`: `{last}` owns host memory and cannot cross to the device; use a slice parameter with an access mode, or a `DeviceCopy` value"),
                );
                None
            } else {
                Some(Shape::Scalar)
            }
        }
        Type::Array(_) => Some(Shape::Scalar),
        Type::Tuple(t) if t.elems.is_empty() => {
            cx.error_spanned_by(
                ty,
                format!("`{ident}`: a `()` parameter carries nothing; remove it"),
            );
            None
        }
        _ => {
            cx.error_spanned_by(
                ty,
                format!("`{ident}`: this type cannot be a kernel parameter; use `&[T]` / `&mut [T]` with an access mode, or a `DeviceCopy` value (primitives, arrays, `#[derive(DeviceCopy)]` structs)"),
            );
            None
        }
    }
}
