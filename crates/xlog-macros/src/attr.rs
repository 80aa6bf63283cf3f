//! Parses the attribute arguments: `read(..)`, `write(..)`, `read_write(..)`,
//! `atomic(..)`, `lookback(..)`, each entry `name` or (written modes)
//! `name per block|warp|thread|chunk(K)|tile(K)|transposed(TILE, rows)`.

use proc_macro2::TokenStream;
use syn::parse::{ParseStream, Parser};
use syn::punctuated::Punctuated;
use syn::{Ident, Meta, Token};

use crate::ctxt::Ctxt;
use crate::symbol::{
    ATOMIC, BLOCK, CHUNK, CRATE, LOOKBACK, MIN_BLOCKS, MODES, OWNERSHIP_SYNTAX, PER, READ,
    READ_WRITE, SHARED, SUFFIX, SYNTAX, THREAD, TILE, TRANSPOSED, WARP, WRITE,
};

/// How a kernel uses a slice parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Read,
    Write,
    ReadWrite,
    /// Every access atomic, by any thread at any index; read-write for fencing.
    Atomic,
    /// A look-back status buffer (`&mut [u64]`): zeroed by the launcher right
    /// before the kernel, read-write for fencing.
    LookBack,
}

impl Mode {
    pub fn keyword(self) -> &'static str {
        match self {
            Mode::Read => READ,
            Mode::Write => WRITE,
            Mode::ReadWrite => READ_WRITE,
            Mode::Atomic => ATOMIC,
            Mode::LookBack => LOOKBACK,
        }
    }

    /// Whether the parameter is `&mut [T]` (and borrowed `&mut` by the launcher).
    pub fn writes(self) -> bool {
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
    /// `per transposed(TILE, rows)`: the transposed tiles of a transpose; the row
    /// parameter is [`Attr::transposed_rows`].
    Transposed(u32),
}

/// One `mode(ident [per owner])` entry.
#[derive(Clone, Debug)]
pub struct Decl {
    pub mode: Mode,
    pub ident: Ident,
    pub owner: Owner,
}

/// A parsed entry: its name, and its ownership clause with the `per` token, the
/// ownership and, for `per transposed(TILE, rows)`, the row parameter.
type Entry = (Ident, Option<(Ident, Owner, Option<Ident>)>);

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
    let mut rows = None;
    let owner = match what.to_string().as_str() {
        THREAD => Owner::Thread,
        BLOCK => Owner::Block,
        WARP => Owner::Warp,
        CHUNK => {
            let content;
            syn::parenthesized!(content in input);
            let k: syn::LitInt = content.parse()?;
            match k.base10_parse::<u32>() {
                Ok(k) if (1..=64).contains(&k) => Owner::Chunk(k),
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
                Ok(k) if (1..=64).contains(&k) => Owner::Tile(k),
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
            rows = Some(
                content
                    .parse::<Ident>()
                    .map_err(|e| syn::Error::new(e.span(), shape))?,
            );
            match t.base10_parse::<u32>() {
                Ok(t) if (1..=64).contains(&t) => Owner::Transposed(t),
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
    Ok((ident, Some((per, owner, rows))))
}

#[derive(Debug)]
pub struct Attr {
    pub decls: Vec<Decl>,
    /// Appended to the exported entry-point symbol (`suffix = f32` exports
    /// `add_f32` for `fn add`), so kernels of one name in several modules do not
    /// clash in the PTX module.
    pub suffix: Option<Ident>,
    /// A block size the kernel relies on (`block = 256`): launches with another
    /// block size are refused.
    pub block: Option<u32>,
    /// Dynamic shared memory the kernel needs per block (`shared = 4096`).
    pub shared: Option<u32>,
    /// Blocks per multiprocessor the kernel asks `ptxas` to fit (`min_blocks = 4`,
    /// with `block`): its registers are limited to what that many blocks can share.
    pub min_blocks: Option<u32>,
    /// The value parameters named as row counts by `per transposed(TILE, rows)`,
    /// with the written parameter each belongs to.
    pub transposed_rows: Vec<(Ident, Ident)>,
}

pub fn parse(cx: &Ctxt, args: TokenStream) -> Attr {
    let mut attr = Attr {
        decls: Vec::new(),
        suffix: None,
        block: None,
        shared: None,
        min_blocks: None,
        transposed_rows: Vec::new(),
    };
    let mut min_blocks_at = None;
    let metas = match Punctuated::<Meta, Token![,]>::parse_terminated.parse2(args) {
        Ok(m) => m,
        Err(e) => {
            cx.syn_error(syn::Error::new(e.span(), format!("{e}; expected {SYNTAX}")));
            return attr;
        }
    };
    for meta in metas {
        match &meta {
            Meta::List(list) => {
                let mode = match list.path.get_ident().map(Ident::to_string).as_deref() {
                    Some(READ) => Mode::Read,
                    Some(WRITE) => Mode::Write,
                    Some(READ_WRITE) => Mode::ReadWrite,
                    Some(ATOMIC) => Mode::Atomic,
                    Some(LOOKBACK) => Mode::LookBack,
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
                        for (ident, per) in entries {
                            let owner = match per {
                                None => Owner::Thread,
                                Some((per, Owner::Transposed(_), _)) if mode != Mode::Write => {
                                    cx.error_spanned_by(
                                        &per,
                                        format!("`per transposed` is for write-only parameters: declare `write({ident} per transposed(..))`"),
                                    );
                                    Owner::Thread
                                }
                                Some((_, owner, rows)) if matches!(mode, Mode::Write | Mode::ReadWrite) => {
                                    if let Some(rows) = rows {
                                        attr.transposed_rows.push((ident.clone(), rows));
                                    }
                                    owner
                                }
                                Some((per, _, _)) => {
                                    cx.error_spanned_by(
                                        &per,
                                        format!(
                                            "`{}({ident})` takes no ownership: only written parameters are partitioned among threads ({OWNERSHIP_SYNTAX})",
                                            mode.keyword()
                                        ),
                                    );
                                    Owner::Thread
                                }
                            };
                            attr.decls.push(Decl { mode, ident, owner });
                        }
                    }
                    Ok(_) => cx.error_spanned_by(list, format!("`{}()` names no parameter: {SYNTAX}", mode.keyword())),
                    Err(e) => cx.syn_error(syn::Error::new(
                        e.span(),
                        format!("{e}; expected parameter names separated by commas in `{}(..)`", mode.keyword()),
                    )),
                }
            }
            Meta::NameValue(nv) if nv.path.is_ident(BLOCK) => {
                match int_value(&nv.value) {
                    Some(n) if (1..=1024).contains(&n) => attr.block = Some(n as u32),
                    _ => cx.error_spanned_by(&nv.value, "`block` is the threads per block the kernel needs: an integer from 1 to 1024, e.g. `block = 256`"),
                }
            }
            Meta::NameValue(nv) if nv.path.is_ident(SHARED) => match int_value(&nv.value) {
                Some(n) if n <= u32::MAX as u64 => attr.shared = Some(n as u32),
                _ => cx.error_spanned_by(&nv.value, "`shared` is the dynamic shared memory per block in bytes: an integer, e.g. `shared = 4096`"),
            },
            Meta::NameValue(nv) if nv.path.is_ident(MIN_BLOCKS) => match int_value(&nv.value) {
                Some(n) if (1..=32).contains(&n) => {
                    attr.min_blocks = Some(n as u32);
                    min_blocks_at = Some(nv.clone());
                }
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
    if let (Some(nv), None) = (&min_blocks_at, attr.block) {
        cx.error_spanned_by(
            nv,
            "`min_blocks` sizes registers for blocks of a known size: declare the block size too, e.g. `block = 256, min_blocks = 2`",
        );
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
        let got: Vec<_> = a.decls.iter().map(|d| (d.mode, d.owner)).collect();
        assert_eq!(
            got,
            [
                (Mode::LookBack, Owner::Thread),
                (Mode::Write, Owner::Tile(4)),
                (Mode::Write, Owner::Transposed(32)),
            ]
        );
        assert_eq!(a.transposed_rows[0].1, "rows");
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
    }

    #[test]
    fn parses_modes_in_order() {
        let cx = Ctxt::default();
        let a = parse(&cx, quote!(read(x, z), read_write(y), write(out)));
        cx.check().unwrap();
        let got: Vec<_> = a
            .decls
            .iter()
            .map(|d| (d.mode, d.ident.to_string()))
            .collect();
        assert_eq!(
            got,
            vec![
                (Mode::Read, "x".into()),
                (Mode::Read, "z".into()),
                (Mode::ReadWrite, "y".into()),
                (Mode::Write, "out".into())
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
            .map(|d| (d.mode, d.ident.to_string(), d.owner))
            .collect();
        assert_eq!(
            got,
            vec![
                (Mode::Atomic, "bins".into(), Owner::Thread),
                (Mode::Write, "partials".into(), Owner::Block),
                (Mode::Write, "w".into(), Owner::Warp),
                (Mode::ReadWrite, "y".into(), Owner::Chunk(4)),
                (Mode::ReadWrite, "z".into(), Owner::Thread),
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
