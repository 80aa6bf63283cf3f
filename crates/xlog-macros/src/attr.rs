//! Parses the attribute arguments: `read(..)`, `write(..)`, `read_write(..)`,
//! `atomic(..)`, `lookback(..)`, each entry `name` or (written modes)
//! `name per block|warp|thread|chunk(K)|tile(K)|transposed(TILE, rows)`, and the
//! launch settings `block`, `shared`, `min_blocks` and `suffix` as written
//! (`check::settings` gives them their meaning), and the type lists of a generic
//! kernel, `for T in [f32, u32, ..]` (`check::instances` binds them to the
//! kernel's type parameters).

use proc_macro2::TokenStream;
use syn::parse::{ParseStream, Parser};
use syn::punctuated::Punctuated;
use syn::{Ident, Meta, MetaNameValue, Token, Type};

use crate::ctxt::Ctxt;
use crate::symbol::{
    ATOMIC, BLOCK, CHUNK, CRATE, LOOKBACK, MIN_BLOCKS, MODES, OWNERSHIP_SYNTAX, PER, READ,
    READ_WRITE, SHARED, SUFFIX, SYNTAX, THREAD, TILE, TRANSPOSED, WARP, WRITE,
};

/// The most threads a block can have, the bound on `block = N`: CUDA's limit on
/// every GPU xlog compiles for. It lives here, not in the runtime, because the
/// runtime has no such constant: it checks each launch against the limit the
/// device reports, so a kernel's declared size is refused at compile time here
/// and any other at launch there.
const MAX_BLOCK: u32 = 1024;

/// How a kernel uses a slice parameter and, for the modes whose elements are
/// partitioned among threads, which threads own which elements.
///
/// Only these modes carry an ownership, so a read, atomic or look-back slice
/// cannot have one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mode {
    Read,
    /// Written only, each element by the threads the [`Owner`] names.
    Write(Owner),
    /// Read and written, each element by the threads the [`Owner`] names.
    ReadWrite(Owner),
    /// `write(p per transposed(TILE, rows))`: the written-only output of a tiled
    /// transpose, whose shape comes from the value parameter `rows` (which
    /// `check::bind` requires to be a `usize` parameter of the kernel).
    WriteTransposed {
        tile: u32,
        rows: Ident,
    },
    /// Every access atomic, by any thread at any index; read-write for fencing.
    Atomic,
    /// A look-back status buffer (`&mut [u64]`): zeroed by the launcher right
    /// before the kernel, read-write for fencing.
    LookBack,
}

impl Mode {
    /// The attribute keyword that declares this mode.
    pub fn keyword(&self) -> &'static str {
        match self {
            Mode::Read => READ,
            Mode::Write(_) | Mode::WriteTransposed { .. } => WRITE,
            Mode::ReadWrite(_) => READ_WRITE,
            Mode::Atomic => ATOMIC,
            Mode::LookBack => LOOKBACK,
        }
    }

    /// Whether the parameter is `&mut [T]` (and borrowed `&mut` by the launcher).
    pub fn writes(&self) -> bool {
        !matches!(self, Mode::Read)
    }
}

/// Which threads own which elements of a `write` / `read_write` parameter: the
/// view's `xlog_device::view::Ownership`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Owner {
    Thread,
    Block,
    Warp,
    Chunk(u32),
    /// `per tile(K)`: chunks of `K` elements of look-back tiles.
    Tile(u32),
}

/// One `mode(ident [per owner])` entry.
#[derive(Clone, Debug)]
pub struct Decl {
    pub mode: Mode,
    pub ident: Ident,
}

/// The keyword of an access-mode list, before each entry's ownership clause.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum List {
    Read,
    Write,
    ReadWrite,
    Atomic,
    LookBack,
}

impl List {
    fn keyword(self) -> &'static str {
        match self {
            List::Read => READ,
            List::Write => WRITE,
            List::ReadWrite => READ_WRITE,
            List::Atomic => ATOMIC,
            List::LookBack => LOOKBACK,
        }
    }

    /// The mode of an entry written without `per ..`: written slices are owned
    /// one element per thread.
    fn plain(self) -> Mode {
        match self {
            List::Read => Mode::Read,
            List::Write => Mode::Write(Owner::Thread),
            List::ReadWrite => Mode::ReadWrite(Owner::Thread),
            List::Atomic => Mode::Atomic,
            List::LookBack => Mode::LookBack,
        }
    }

    /// The mode of entry `ident` with its ownership clause, reporting a clause
    /// this list does not take (the entry then gets its [`plain`](Self::plain)
    /// mode, so the remaining checks still run).
    fn mode(self, cx: &Ctxt, ident: &Ident, clause: Option<(Ident, Clause)>) -> Mode {
        match (self, clause) {
            (_, None) => self.plain(),
            (List::Write, Some((_, Clause::Transposed { tile, rows }))) => {
                Mode::WriteTransposed { tile, rows }
            }
            (_, Some((per, Clause::Transposed { .. }))) => {
                cx.error_spanned_by(
                    &per,
                    format!("`per transposed` is for write-only parameters: declare `write({ident} per transposed(..))`"),
                );
                self.plain()
            }
            (List::Write, Some((_, Clause::Owner(owner)))) => Mode::Write(owner),
            (List::ReadWrite, Some((_, Clause::Owner(owner)))) => Mode::ReadWrite(owner),
            (_, Some((per, Clause::Owner(_)))) => {
                cx.error_spanned_by(
                    &per,
                    format!(
                        "`{}({ident})` takes no ownership: only written parameters are partitioned among threads ({OWNERSHIP_SYNTAX})",
                        self.keyword()
                    ),
                );
                self.plain()
            }
        }
    }
}

/// An ownership clause as written: an ownership, or a transpose's tile side and
/// row parameter.
enum Clause {
    Owner(Owner),
    Transposed { tile: u32, rows: Ident },
}

/// A parsed entry: its name, and its ownership clause with the `per` token.
type Entry = (Ident, Option<(Ident, Clause)>);

/// `ident` or `ident per block|warp|thread|chunk(K)|tile(K)|transposed(TILE, rows)`.
fn parse_entry(input: ParseStream) -> syn::Result<Entry> {
    let ident: Ident = input.parse()?;
    if input.is_empty() || input.peek(Token![,]) {
        return Ok((ident, None));
    }
    let per: Ident = input.parse()?;
    if per != PER {
        return Err(syn::Error::new(
            per.span(),
            format!(
                "expected `,` or `per` after `{ident}`; ownership is written {OWNERSHIP_SYNTAX}"
            ),
        ));
    }
    let what: Ident = input.parse()?;
    let clause = match what.to_string().as_str() {
        THREAD => Clause::Owner(Owner::Thread),
        BLOCK => Clause::Owner(Owner::Block),
        WARP => Clause::Owner(Owner::Warp),
        CHUNK => {
            let content;
            syn::parenthesized!(content in input);
            let k: syn::LitInt = content.parse()?;
            match k.base10_parse::<u32>() {
                Ok(k) if (1..=64).contains(&k) => Clause::Owner(Owner::Chunk(k)),
                _ => {
                    return Err(syn::Error::new(
                        k.span(),
                        "the chunk length is an integer from 1 to 64, e.g. `per chunk(4)`",
                    ))
                }
            }
        }
        TILE => {
            let content;
            syn::parenthesized!(content in input);
            let k: syn::LitInt = content.parse()?;
            match k.base10_parse::<u32>() {
                Ok(k) if (1..=64).contains(&k) => Clause::Owner(Owner::Tile(k)),
                _ => {
                    return Err(syn::Error::new(
                        k.span(),
                        "the elements per thread of a tile are an integer from 1 to 64, e.g. `per tile(4)`",
                    ))
                }
            }
        }
        TRANSPOSED => {
            let content;
            syn::parenthesized!(content in input);
            let shape = "write `per transposed(TILE, rows)`: the tile side (an integer from 1 to 64) and the value parameter holding the input's row count, e.g. `per transposed(32, rows)`";
            let t: syn::LitInt = content
                .parse()
                .map_err(|e| syn::Error::new(e.span(), shape))?;
            let _: Token![,] = content
                .parse()
                .map_err(|e| syn::Error::new(e.span(), shape))?;
            let rows = content
                .parse::<Ident>()
                .map_err(|e| syn::Error::new(e.span(), shape))?;
            match t.base10_parse::<u32>() {
                Ok(tile) if (1..=64).contains(&tile) => Clause::Transposed { tile, rows },
                _ => return Err(syn::Error::new(t.span(), shape)),
            }
        }
        _ => {
            return Err(syn::Error::new(
                what.span(),
                format!("unknown ownership `{what}`; expected {OWNERSHIP_SYNTAX}"),
            ))
        }
    };
    Ok((ident, Some((per, clause))))
}

/// `for T in [f32, u32, ..]`: the types a generic kernel is compiled for.
#[derive(Clone, Debug)]
pub struct ForList {
    /// The `for` keyword, for diagnostics about the clause as a whole.
    pub for_token: Token![for],
    /// The kernel's type parameter the list is for.
    pub param: Ident,
    /// The bracketed list, for diagnostics about its contents.
    pub bracket: syn::token::Bracket,
    pub types: Vec<Type>,
}

impl syn::parse::Parse for ForList {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let shape = "a generic kernel lists its types as `for T in [f32, u32, ..]`";
        let for_token: Token![for] = input.parse()?;
        let param: Ident = input
            .parse()
            .map_err(|e| syn::Error::new(e.span(), shape))?;
        let _: Token![in] = input
            .parse()
            .map_err(|e| syn::Error::new(e.span(), shape))?;
        let content;
        let bracket = syn::bracketed!(content in input);
        let types = Punctuated::<Type, Token![,]>::parse_terminated(&content)
            .map_err(|e| syn::Error::new(e.span(), format!("{e}; {shape}")))?;
        Ok(ForList {
            for_token,
            param,
            bracket,
            types: types.into_iter().collect(),
        })
    }
}

/// One comma-separated argument of the attribute.
enum Arg {
    Meta(Meta),
    For(ForList),
}

impl syn::parse::Parse for Arg {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        if input.peek(Token![for]) {
            input.parse().map(Arg::For)
        } else {
            input.parse().map(Arg::Meta)
        }
    }
}

/// The attribute as written. Each launch setting is `None` when absent;
/// `check::settings` resolves them into what expansion uses.
#[derive(Debug)]
pub struct Attr {
    pub decls: Vec<Decl>,
    /// The `for T in [..]` lists, in the order written.
    pub for_lists: Vec<ForList>,
    /// Appended to the exported entry-point symbol (`suffix = f32` exports
    /// `add_f32` for `fn add`), so kernels of one name in several modules do not
    /// clash in the PTX module.
    pub suffix: Option<Ident>,
    /// `block = N` (1 to `MAX_BLOCK`): the block size the kernel relies on.
    pub block: Option<u32>,
    /// `shared = N`: the dynamic shared memory the kernel needs per block, in bytes.
    pub shared: Option<u32>,
    /// `min_blocks = N` (1 to 32), with the argument as written for diagnostics:
    /// the blocks per multiprocessor the kernel asks `ptxas` to fit.
    pub min_blocks: Option<(u32, MetaNameValue)>,
}

pub fn parse(cx: &Ctxt, args: TokenStream) -> Attr {
    let mut attr = Attr {
        decls: Vec::new(),
        for_lists: Vec::new(),
        suffix: None,
        block: None,
        shared: None,
        min_blocks: None,
    };
    let args = match Punctuated::<Arg, Token![,]>::parse_terminated.parse2(args) {
        Ok(m) => m,
        Err(e) => {
            cx.syn_error(syn::Error::new(e.span(), format!("{e}; expected {SYNTAX}")));
            return attr;
        }
    };
    for arg in args {
        let meta = match arg {
            Arg::Meta(meta) => meta,
            Arg::For(list) => {
                attr.for_lists.push(list);
                continue;
            }
        };
        match &meta {
            Meta::List(list) => {
                let kind = match list.path.get_ident().map(Ident::to_string).as_deref() {
                    Some(READ) => List::Read,
                    Some(WRITE) => List::Write,
                    Some(READ_WRITE) => List::ReadWrite,
                    Some(ATOMIC) => List::Atomic,
                    Some(LOOKBACK) => List::LookBack,
                    _ => {
                        cx.error_spanned_by(
                            &list.path,
                            format!("unknown access mode; expected {MODES}: {SYNTAX}"),
                        );
                        continue;
                    }
                };
                match list.parse_args_with(|input: ParseStream| Punctuated::<_, Token![,]>::parse_terminated_with(input, parse_entry)) {
                    Ok(entries) if !entries.is_empty() => {
                        for (ident, clause) in entries {
                            let mode = kind.mode(cx, &ident, clause);
                            attr.decls.push(Decl { mode, ident });
                        }
                    }
                    Ok(_) => cx.error_spanned_by(list, format!("`{}()` names no parameter: {SYNTAX}", kind.keyword())),
                    Err(e) => cx.syn_error(syn::Error::new(
                        e.span(),
                        format!("{e}; expected parameter names separated by commas in `{}(..)`", kind.keyword()),
                    )),
                }
            }
            Meta::NameValue(nv) if nv.path.is_ident(BLOCK) => {
                match int_value(&nv.value) {
                    Some(n) if (1..=u64::from(MAX_BLOCK)).contains(&n) => attr.block = Some(n as u32),
                    _ => cx.error_spanned_by(&nv.value, format!("`block` is the threads per block the kernel needs: an integer from 1 to {MAX_BLOCK}, e.g. `block = 256`")),
                }
            }
            Meta::NameValue(nv) if nv.path.is_ident(SHARED) => match int_value(&nv.value) {
                Some(n) if n <= u32::MAX as u64 => attr.shared = Some(n as u32),
                _ => cx.error_spanned_by(&nv.value, "`shared` is the dynamic shared memory per block in bytes: an integer, e.g. `shared = 4096`"),
            },
            Meta::NameValue(nv) if nv.path.is_ident(MIN_BLOCKS) => match int_value(&nv.value) {
                Some(n) if (1..=32).contains(&n) => attr.min_blocks = Some((n as u32, nv.clone())),
                _ => cx.error_spanned_by(&nv.value, "`min_blocks` is the blocks per multiprocessor the kernel must fit: an integer from 1 to 32, e.g. `min_blocks = 4` (with `block = ..`)"),
            },
            Meta::NameValue(nv) if nv.path.is_ident(SUFFIX) => match &nv.value {
                syn::Expr::Path(p) if p.path.get_ident().is_some() => attr.suffix = p.path.get_ident().cloned(),
                other => cx.error_spanned_by(other, "expected an identifier, e.g. `suffix = f32`"),
            },
            // Generated code names `::xlog` only: a path chosen by the user could
            // point the soundness checks (`DeviceCopy`, the ABI descriptor) at
            // look-alikes that check nothing.
            Meta::NameValue(nv) if nv.path.is_ident(CRATE) => cx.error_spanned_by(
                &nv.path,
                "`crate = ..` is not supported: generated code always uses the `xlog` facade; depend on it under the name `xlog`",
            ),
            other => cx.error_spanned_by(
                other,
                format!("unexpected argument; expected an access mode ({MODES}) or a launch setting: {SYNTAX}"),
            ),
        }
    }
    attr
}

fn int_value(e: &syn::Expr) -> Option<u64> {
    match e {
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Int(i),
            ..
        }) => i.base10_parse().ok(),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::quote;

    #[test]
    fn parses_look_back_and_transposed_ownership() {
        let cx = Ctxt::default();
        let a = parse(
            &cx,
            quote!(lookback(status), write(out per tile(4), t per transposed(32, rows))),
        );
        cx.check().unwrap();
        let got: Vec<_> = a.decls.into_iter().map(|d| d.mode).collect();
        assert_eq!(
            got,
            [
                Mode::LookBack,
                Mode::Write(Owner::Tile(4)),
                Mode::WriteTransposed {
                    tile: 32,
                    rows: Ident::new("rows", proc_macro2::Span::call_site()),
                },
            ]
        );
        for bad in [
            quote!(write(o per tile(0))),
            quote!(write(o per transposed(32))),
            quote!(read_write(o per transposed(32, rows))),
            quote!(lookback(s per tile(2))),
        ] {
            let cx = Ctxt::default();
            parse(&cx, bad);
            assert!(cx.check().is_err());
        }
        // A transposed read-modify-write is refused, never quietly made a write.
        let cx = Ctxt::default();
        parse(&cx, quote!(read_write(o per transposed(32, rows))));
        let e = cx.check().unwrap_err().to_string();
        assert!(
            e.contains("`per transposed` is for write-only parameters"),
            "{e}"
        );
    }

    #[test]
    fn parses_modes_in_order() {
        let cx = Ctxt::default();
        let a = parse(&cx, quote!(read(x, z), read_write(y), write(out)));
        cx.check().unwrap();
        let got: Vec<_> = a
            .decls
            .iter()
            .map(|d| (d.mode.clone(), d.ident.to_string()))
            .collect();
        assert_eq!(
            got,
            vec![
                (Mode::Read, "x".into()),
                (Mode::Read, "z".into()),
                (Mode::ReadWrite(Owner::Thread), "y".into()),
                (Mode::Write(Owner::Thread), "out".into())
            ]
        );
    }

    #[test]
    fn parses_atomic_and_ownership() {
        let cx = Ctxt::default();
        let a = parse(
            &cx,
            quote!(atomic(bins), write(partials per block, w per warp), read_write(y per chunk(4), z per thread)),
        );
        cx.check().unwrap();
        let got: Vec<_> = a
            .decls
            .iter()
            .map(|d| (d.mode.clone(), d.ident.to_string()))
            .collect();
        assert_eq!(
            got,
            vec![
                (Mode::Atomic, "bins".into()),
                (Mode::Write(Owner::Block), "partials".into()),
                (Mode::Write(Owner::Warp), "w".into()),
                (Mode::ReadWrite(Owner::Chunk(4)), "y".into()),
                (Mode::ReadWrite(Owner::Thread), "z".into()),
            ]
        );
    }

    #[test]
    fn bad_ownership_is_reported() {
        for bad in [
            quote!(read(x per block)),
            quote!(atomic(b per warp)),
            quote!(write(o per grid)),
            quote!(write(o per chunk(0))),
            quote!(write(o by block)),
        ] {
            let cx = Ctxt::default();
            parse(&cx, bad.clone());
            assert!(cx.check().is_err(), "{bad} was accepted");
        }
    }

    #[test]
    fn parses_launch_settings() {
        let cx = Ctxt::default();
        let a = parse(
            &cx,
            quote!(read(x), block = 128, shared = 4096, suffix = f32),
        );
        cx.check().unwrap();
        assert_eq!((a.block, a.shared), (Some(128), Some(4096)));
        assert!(a.min_blocks.is_none());
        assert_eq!(a.suffix.unwrap().to_string(), "f32");
        let cx = Ctxt::default();
        parse(&cx, quote!(block = 2048, shared = x));
        assert_eq!(cx.check().unwrap_err().into_iter().count(), 2);
    }

    #[test]
    fn every_bad_entry_is_reported() {
        let cx = Ctxt::default();
        parse(&cx, quote!(reed(x), write(), read(1)));
        let e = cx.check().unwrap_err();
        let msgs: Vec<String> = e.into_iter().map(|e| e.to_string()).collect();
        assert_eq!(msgs.len(), 3, "{msgs:?}");
        assert!(msgs[0].contains("unknown access mode"));
        assert!(msgs[0].contains("`lookback`") && msgs[0].contains("per transposed(32, rows)"));
        assert!(msgs[1].contains("names no parameter"));
        assert!(msgs[2].contains("parameter names"));
    }
}
