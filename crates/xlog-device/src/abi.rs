//! Kernel ABI descriptors: the parameter list a host launcher passes and a device
//! entry point expects, as numbers both builds compute on their own.
//!
//! The host launcher and the device entry point of a kernel come from one
//! `#[xlog_kernel]` expansion, but from two compilations: the host build (stable
//! rustc, the application's features and profile) and the device build (the pinned
//! nightly, `nvptx64-nvidia-cuda`). Anything that makes the two see different types
//! (a feature, a `cfg`, a type alias, a re-exported module) would make the driver
//! copy the wrong bytes into the kernel's parameters. So each expansion also emits
//! a descriptor of the kernel's parameters, evaluated by each compiler for its own
//! target:
//!
//! - the device build exports it as the global `__xlog_abi_<entry>`, which
//!   `xlog-build` reads from the PTX into the module's kernel table (and checks
//!   against the `.entry` parameter list, failing the build on a divergence);
//! - the host launcher keeps its own copy and compares it with the table once per
//!   kernel and runtime, before the first launch.
//!
//! A descriptor is `1 + 2·N` words for `N` parameters:
//!
//! | word | meaning |
//! | --- | --- |
//! | 0 | [`header`]: format version, whether the kernel is `unsafe fn`, `N` |
//! | `1 + 2i` | [`shape`] of parameter `i`: its [`ParamKind`], and the size and alignment of the scalar or element type |
//! | `2 + 2i` | the type's layout digest, [`DeviceCopy::__LAYOUT`](crate::DeviceCopy::__LAYOUT) |

use core::fmt;

/// Version of the descriptor format, in the top byte of the [`header`].
pub const VERSION: u64 = 2;

/// The prefix of the exported descriptor global: `__xlog_abi_<entry>`.
pub const SYMBOL_PREFIX: &str = "__xlog_abi_";

/// How a kernel receives a parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum ParamKind {
    /// A value passed by copy.
    Scalar = 0,
    /// A `read(..)` slice: address and length.
    Read = 1,
    /// A `write(..)` slice: address and length.
    Write = 2,
    /// A `read_write(..)` slice: address and length.
    ReadWrite = 3,
    /// An `atomic(..)` slice: address and length.
    Atomic = 4,
    /// A `lookback(..)` status buffer of `u64` words: address and length.
    LookBack = 5,
}

impl ParamKind {
    /// The kind with discriminant `bits` (the top byte of a [`shape`] word), or
    /// `None` for a value this format version does not define.
    pub const fn from_bits(bits: u64) -> Option<ParamKind> {
        match bits {
            0 => Some(ParamKind::Scalar),
            1 => Some(ParamKind::Read),
            2 => Some(ParamKind::Write),
            3 => Some(ParamKind::ReadWrite),
            4 => Some(ParamKind::Atomic),
            5 => Some(ParamKind::LookBack),
            _ => None,
        }
    }
}

impl fmt::Display for ParamKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ParamKind::Scalar => "a value",
            ParamKind::Read => "a read slice",
            ParamKind::Write => "a write slice",
            ParamKind::ReadWrite => "a read_write slice",
            ParamKind::Atomic => "an atomic slice",
            ParamKind::LookBack => "a look-back status slice",
        })
    }
}

/// Word 0 of a descriptor: the format [`VERSION`] (bits 56–63), whether the kernel
/// is `unsafe fn` (bit 48), the dynamic shared memory it declares with `shared = N`
/// (bits 27–47, saturating; 0 for none), the block size it declares with
/// `block = N` (bits 16–26; 0 for none) and its number of parameters (bits 0–15).
///
/// The launch settings belong here because an `unsafe` body may rely on them: a
/// second launcher for the same entry point that dropped `block = 256` could launch
/// it with 1024 threads per block.
pub const fn header(is_unsafe: bool, params: usize, block: u32, shared: u32) -> u64 {
    let shared = if shared > SHARED_MAX {
        SHARED_MAX
    } else {
        shared
    };
    (VERSION << 56)
        | ((is_unsafe as u64) << 48)
        | ((shared as u64) << 27)
        | ((block as u64 & 0x7ff) << 16)
        | (params as u64 & 0xffff)
}

/// A [`header`] word with the occupancy the kernel asks for with `min_blocks = N`
/// (bits 49–55; 0 for none): at least `N` blocks of its `block = B` threads
/// resident per multiprocessor. `xlog-build` gives the entry point
/// `.maxntid B, 1, 1` and `.minnctapersm N`, so `ptxas` keeps the kernel's
/// registers within what `N` blocks can share.
pub const fn with_min_blocks(header: u64, min_blocks: u32) -> u64 {
    let n = if min_blocks > MIN_BLOCKS_MAX {
        MIN_BLOCKS_MAX
    } else {
        min_blocks
    };
    (header & !((MIN_BLOCKS_MAX as u64) << 49)) | ((n as u64) << 49)
}

/// The largest `min_blocks = N` a header holds (7 bits; the attribute allows 1–32).
const MIN_BLOCKS_MAX: u32 = 0x7f;

/// The largest `shared = N` a header represents exactly (larger values saturate;
/// no GPU offers that much shared memory per block).
const SHARED_MAX: u32 = (1 << 21) - 1;

/// A [`header`] word, decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeaderAbi {
    /// The descriptor format version; this crate writes [`VERSION`].
    pub version: u64,
    /// Whether the kernel is an `unsafe fn`.
    pub is_unsafe: bool,
    /// The number of parameters, `N`.
    pub params: u64,
    /// The block size the kernel declares (`block = N`), 0 for none.
    pub block: u32,
    /// The dynamic shared memory the kernel declares (`shared = N`), 0 for none.
    pub shared: u32,
    /// The blocks per multiprocessor the kernel asks for (`min_blocks = N`), 0 for
    /// none (see [`with_min_blocks`]).
    pub min_blocks: u32,
}

impl HeaderAbi {
    /// Decodes a header word.
    pub const fn decode(word: u64) -> HeaderAbi {
        HeaderAbi {
            version: word >> 56,
            is_unsafe: (word >> 48) & 1 == 1,
            params: word & 0xffff,
            block: ((word >> 16) & 0x7ff) as u32,
            shared: ((word >> 27) & SHARED_MAX as u64) as u32,
            min_blocks: ((word >> 49) & MIN_BLOCKS_MAX as u64) as u32,
        }
    }
}

/// The shape word of a parameter whose scalar or element type is `T`.
pub const fn shape<T>(kind: ParamKind) -> u64 {
    ((kind as u64) << 56)
        | ((core::mem::align_of::<T>() as u64 & 0xffff) << 40)
        | (core::mem::size_of::<T>() as u64 & 0xff_ffff_ffff)
}

/// One parameter, decoded from its two words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParamAbi {
    /// Scalar or slice, and the slice's access.
    pub kind: Option<ParamKind>,
    /// `size_of` the scalar or element type.
    pub size: u64,
    /// `align_of` the scalar or element type.
    pub align: u64,
    /// The layout digest.
    pub layout: u64,
}

impl ParamAbi {
    /// Decodes a shape word and a layout word.
    pub const fn decode(shape: u64, layout: u64) -> ParamAbi {
        ParamAbi {
            kind: ParamKind::from_bits(shape >> 56),
            size: shape & 0xff_ffff_ffff,
            align: (shape >> 40) & 0xffff,
            layout,
        }
    }
}

impl fmt::Display for ParamAbi {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = if matches!(self.kind, Some(ParamKind::Scalar)) {
            "type"
        } else {
            "elements"
        };
        match self.kind {
            Some(k) => write!(f, "{k}, ")?,
            None => f.write_str("an unknown kind, ")?,
        }
        write!(
            f,
            "{what} of {} bytes aligned to {} (layout {:#018x})",
            self.size, self.align, self.layout
        )
    }
}

/// Where two descriptors of one kernel first differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AbiDifference {
    /// Different format versions, `unsafe`-ness or parameter counts.
    Header {
        /// The host's header word.
        host: u64,
        /// The device's header word.
        device: u64,
    },
    /// Parameter `index` differs.
    Param {
        /// Zero-based position in the kernel's signature.
        index: usize,
        /// What the host launcher passes.
        host: ParamAbi,
        /// What the device entry point expects.
        device: ParamAbi,
    },
}

/// The first difference between the host's and the device's descriptor of one
/// kernel, or `None` when they agree.
pub fn first_difference(host: &[u64], device: &[u64]) -> Option<AbiDifference> {
    let (h, d) = (host.first().copied(), device.first().copied());
    if h != d || host.len() != device.len() || host.len() % 2 != 1 {
        return Some(AbiDifference::Header {
            host: h.unwrap_or(0),
            device: d.unwrap_or(0),
        });
    }
    let pairs = host[1..].chunks_exact(2).zip(device[1..].chunks_exact(2));
    for (index, (h, d)) in pairs.enumerate() {
        if h != d {
            return Some(AbiDifference::Param {
                index,
                host: ParamAbi::decode(h[0], h[1]),
                device: ParamAbi::decode(d[0], d[1]),
            });
        }
    }
    None
}

/// Describes a header word: `"safe kernel with 3 parameters"`.
pub fn describe_header(word: u64) -> impl fmt::Display {
    struct Header(u64);
    impl fmt::Display for Header {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            let h = HeaderAbi::decode(self.0);
            if h.version != VERSION {
                return write!(f, "descriptor format {} (expected {VERSION})", h.version);
            }
            let safety = if h.is_unsafe { "unsafe" } else { "safe" };
            write!(f, "{safety} kernel with {} parameters", h.params)?;
            if h.block != 0 {
                write!(f, ", block = {}", h.block)?;
            }
            if h.shared != 0 {
                write!(f, ", shared = {}", h.shared)?;
            }
            if h.min_blocks != 0 {
                write!(f, ", min_blocks = {}", h.min_blocks)?;
            }
            Ok(())
        }
    }
    Header(word)
}

/// FNV-1a over the eight bytes of `v`, continuing from `h`.
pub const fn mix(mut h: u64, v: u64) -> u64 {
    let mut i = 0;
    while i < 8 {
        h ^= (v >> (8 * i)) & 0xff;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
        i += 1;
    }
    h
}

const SEED: u64 = 0xcbf2_9ce4_8422_2325;

/// The layout digest of a type known only by size and alignment.
pub const fn opaque_layout(size: usize, align: usize) -> u64 {
    mix(mix(mix(SEED, 0), size as u64), align as u64)
}

/// The layout digest of a primitive, told apart from same-sized ones by `tag`.
pub const fn primitive_layout<T>(tag: u64) -> u64 {
    mix(
        opaque_layout(core::mem::size_of::<T>(), core::mem::align_of::<T>()),
        tag,
    )
}

/// The layout digest of `[E; n]` for an element digest `elem`.
pub const fn array_layout(elem: u64, n: usize) -> u64 {
    mix(mix(mix(SEED, 1), elem), n as u64)
}

/// The layout digest of a struct: its size and alignment, then each field's offset
/// and digest in declaration order (what `#[derive(DeviceCopy)]` emits).
pub const fn struct_layout(size: usize, align: usize, fields: &[(usize, u64)]) -> u64 {
    let mut h = mix(mix(mix(SEED, 2), size as u64), align as u64);
    let mut i = 0;
    while i < fields.len() {
        h = mix(mix(h, fields[i].0 as u64), fields[i].1);
        i += 1;
    }
    h
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use crate::DeviceCopy;
    use std::string::ToString;

    fn descriptor(params: &[(ParamKind, u64, u64)]) -> std::vec::Vec<u64> {
        let mut v = std::vec![header(false, params.len(), 0, 0)];
        for &(k, s, l) in params {
            v.push(((k as u64) << 56) | s);
            v.push(l);
        }
        v
    }

    #[test]
    fn same_sized_primitives_differ() {
        assert_ne!(f32::__LAYOUT, u32::__LAYOUT);
        assert_ne!(f64::__LAYOUT, u64::__LAYOUT);
        assert_ne!(<[f32; 2]>::__LAYOUT, <[f32; 3]>::__LAYOUT);
        assert_ne!(<[f32; 2]>::__LAYOUT, u64::__LAYOUT);
    }

    #[test]
    fn header_words_decode() {
        let h = HeaderAbi::decode(header(true, 3, 1024, 232_448));
        assert_eq!(
            h,
            HeaderAbi {
                version: VERSION,
                is_unsafe: true,
                params: 3,
                block: 1024,
                shared: 232_448,
                min_blocks: 0,
            }
        );
        let h = HeaderAbi::decode(header(false, 0, 0, 0));
        assert_eq!((h.is_unsafe, h.params, h.block, h.shared), (false, 0, 0, 0));
        assert_eq!(
            HeaderAbi::decode(header(false, 1, 0, u32::MAX)).shared,
            SHARED_MAX
        );
        assert_ne!(header(false, 2, 256, 0), header(false, 2, 0, 0));
        let bounded = with_min_blocks(header(true, 3, 256, 4096), 4);
        let h = HeaderAbi::decode(bounded);
        assert_eq!(
            (h.is_unsafe, h.params, h.block, h.shared, h.min_blocks),
            (true, 3, 256, 4096, 4)
        );
        assert_eq!(HeaderAbi::decode(header(true, 3, 256, 4096)).min_blocks, 0);
        assert_eq!(
            HeaderAbi::decode(with_min_blocks(bounded, 1000)).min_blocks,
            0x7f
        );
        assert!(describe_header(bounded)
            .to_string()
            .ends_with(", min_blocks = 4"));
        assert_eq!(
            describe_header(header(true, 2, 256, 4096)).to_string(),
            "unsafe kernel with 2 parameters, block = 256, shared = 4096"
        );
        assert_eq!(HeaderAbi::decode(7 << 56).version, 7);
    }

    #[test]
    fn kinds_round_trip_through_their_bits() {
        for k in [
            ParamKind::Scalar,
            ParamKind::Read,
            ParamKind::Write,
            ParamKind::ReadWrite,
            ParamKind::Atomic,
            ParamKind::LookBack,
        ] {
            assert_eq!(ParamKind::from_bits(k as u64), Some(k));
        }
        assert_eq!(ParamKind::from_bits(6), None);
        assert_eq!(ParamKind::from_bits(0xff), None);
    }

    #[test]
    fn shape_words_decode() {
        let w = shape::<[f64; 3]>(ParamKind::Write);
        let p = ParamAbi::decode(w, 7);
        assert_eq!(p.kind, Some(ParamKind::Write));
        assert_eq!((p.size, p.align, p.layout), (24, 8, 7));
        assert_eq!(
            p.to_string(),
            "a write slice, elements of 24 bytes aligned to 8 (layout 0x0000000000000007)"
        );
    }

    #[test]
    fn first_difference_names_the_parameter() {
        let a = descriptor(&[(ParamKind::Scalar, 4, 1), (ParamKind::Read, 4, 2)]);
        let mut b = a.clone();
        assert_eq!(first_difference(&a, &b), None);
        b[4] = 3;
        match first_difference(&a, &b) {
            Some(AbiDifference::Param {
                index,
                host,
                device,
            }) => {
                assert_eq!(index, 1);
                assert_eq!((host.layout, device.layout), (2, 3));
            }
            other => panic!("{other:?}"),
        }
        let fewer = descriptor(&[(ParamKind::Scalar, 4, 1)]);
        assert!(matches!(
            first_difference(&a, &fewer),
            Some(AbiDifference::Header { .. })
        ));
        let mut unsafe_kernel = a.clone();
        unsafe_kernel[0] = header(true, 2, 0, 0);
        assert!(matches!(
            first_difference(&a, &unsafe_kernel),
            Some(AbiDifference::Header { .. })
        ));
        assert_eq!(
            describe_header(header(true, 2, 0, 0)).to_string(),
            "unsafe kernel with 2 parameters"
        );
        assert!(first_difference(&[], &[]).is_some());
    }
}
