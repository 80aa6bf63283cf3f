//! The element types the module handles, and dispatch over them.
//!
//! A [`Typed`] is a device buffer of one of eight element types; functions match
//! on it with [`dispatch!`], listing the types the Rust function they wrap is
//! compiled for, and any other type raises `TypeError` naming that list.

use dlpark::ffi::{DLDataType, DLDataTypeCode};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::PyList;
use xlog_interop::Element;
use xlog_runtime::{BufferCore, DeviceBuffer};

/// The Python name (NumPy's, torch's) of a [`Typed`] variant.
macro_rules! name {
    (U8) => {
        "uint8"
    };
    (U16) => {
        "uint16"
    };
    (I32) => {
        "int32"
    };
    (U32) => {
        "uint32"
    };
    (I64) => {
        "int64"
    };
    (U64) => {
        "uint64"
    };
    (F32) => {
        "float32"
    };
    (F64) => {
        "float64"
    };
}

/// Runs `$body` with `$b` bound to the buffer inside `$x` (a `Typed`, `&Typed` or
/// `&mut Typed`), whatever its type: `$body` is written out once per type.
macro_rules! each {
    ($x:expr, $b:ident => $body:expr) => {
        match $x {
            $crate::typed::Typed::U8($b) => $body,
            $crate::typed::Typed::U16($b) => $body,
            $crate::typed::Typed::I32($b) => $body,
            $crate::typed::Typed::U32($b) => $body,
            $crate::typed::Typed::I64($b) => $body,
            $crate::typed::Typed::U64($b) => $body,
            $crate::typed::Typed::F32($b) => $body,
            $crate::typed::Typed::F64($b) => $body,
        }
    };
}

/// Runs `$body` with `$b` bound to the buffer inside `$x` when its type is one of
/// those listed (the types the wrapped Rust function supports); otherwise the
/// expression is `Err(TypeError)` naming the call, the argument and the list.
macro_rules! dispatch {
    ($what:expr, $arg:expr, $x:expr, [$($v:ident),+], $b:ident => $body:expr) => {
        match $x {
            $($crate::typed::Typed::$v($b) => $body,)+
            #[allow(unreachable_patterns)]
            other => Err($crate::typed::unsupported(
                $what,
                $arg,
                other.dtype(),
                &[$(name!($v)),+],
            )),
        }
    };
}

/// An element type of the module: its [`Typed`] variant and Python name.
pub(crate) trait Elem: Element {
    /// The Python name, e.g. `float32`.
    const NAME: &'static str;
    /// The buffer as a [`Typed`].
    fn wrap(b: DeviceBuffer<Self>) -> Typed;
    /// The buffer inside `t`, if `t` holds this type.
    fn of(t: &Typed) -> Option<&DeviceBuffer<Self>>;
    /// The values inside `h`, if `h` holds this type.
    fn host(h: &HostVec) -> Option<&[Self]>;
    /// The values as a [`HostVec`].
    fn wrap_host(v: Vec<Self>) -> HostVec;
}

macro_rules! elems {
    ($($v:ident $t:ty;)*) => {
        /// A device buffer of one of the module's element types.
        pub(crate) enum Typed {
            $(
                #[doc = concat!("`", name!($v), "`")]
                $v(DeviceBuffer<$t>),
            )*
        }

        /// Host values of one of the module's element types.
        pub(crate) enum HostVec {
            $(
                #[doc = concat!("`", name!($v), "`")]
                $v(Vec<$t>),
            )*
        }

        $(
            impl Elem for $t {
                const NAME: &'static str = name!($v);
                fn wrap(b: DeviceBuffer<Self>) -> Typed {
                    Typed::$v(b)
                }
                fn of(t: &Typed) -> Option<&DeviceBuffer<Self>> {
                    match t {
                        Typed::$v(b) => Some(b),
                        _ => None,
                    }
                }
                fn wrap_host(v: Vec<Self>) -> HostVec {
                    HostVec::$v(v)
                }
                fn host(h: &HostVec) -> Option<&[Self]> {
                    match h {
                        HostVec::$v(v) => Some(v),
                        _ => None,
                    }
                }
            }
        )*

        /// Every type the module handles, by Python name.
        pub(crate) const DTYPES: &[&str] = &[$(name!($v)),*];

        impl HostVec {
            /// `values` (a sequence of Python numbers) as host values of `dtype`.
            pub(crate) fn extract(values: &Bound<'_, PyAny>, dtype: &str) -> PyResult<HostVec> {
                match dtype {
                    $(name!($v) => Ok(HostVec::$v(values.extract()?)),)*
                    _ => Err(PyTypeError::new_err(format!(
                        "dtype {dtype:?} is not one of xlog's element types ({})",
                        DTYPES.join(", ")
                    ))),
                }
            }

            /// A Python list of the values.
            pub(crate) fn into_list<'py>(self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
                match self {
                    $(HostVec::$v(v) => PyList::new(py, v),)*
                }
            }
        }

        /// The type of a DLPack dtype, if the module handles it.
        pub(crate) fn dtype_of(d: DLDataType) -> Option<&'static str> {
            $(if d == <$t as Element>::DTYPE {
                return Some(name!($v));
            })*
            None
        }
    };
}

elems! {
    U8 u8;
    U16 u16;
    I32 i32;
    U32 u32;
    I64 i64;
    U64 u64;
    F32 f32;
    F64 f64;
}

impl Typed {
    /// The Python name of the element type.
    pub(crate) fn dtype(&self) -> &'static str {
        fn n<T: Elem>(_: &DeviceBuffer<T>) -> &'static str {
            T::NAME
        }
        each!(self, b => n(b))
    }

    /// The number of elements.
    pub(crate) fn len(&self) -> usize {
        each!(self, b => b.len())
    }

    /// The device address of the first element.
    pub(crate) fn device_ptr(&self) -> u64 {
        each!(self, b => b.device_ptr())
    }

    /// The device ordinal.
    pub(crate) fn device(&self) -> u32 {
        each!(self, b => b.block_id().device)
    }

    /// The buffer's tracking state.
    pub(crate) fn core(&self) -> &BufferCore {
        each!(self, b => b.core())
    }
}

/// The buffer inside `t` as `T`'s, or `TypeError` saying `arg` must have the type
/// of `like` (the argument `T` came from).
pub(crate) fn same<'t, T: Elem>(
    what: &str,
    arg: &str,
    like: &str,
    t: &'t Typed,
) -> PyResult<&'t DeviceBuffer<T>> {
    T::of(t).ok_or_else(|| {
        PyTypeError::new_err(format!(
            "xlog.{what}: {arg} is {} but {like} is {}; pass both of one type",
            t.dtype(),
            T::NAME
        ))
    })
}

/// The `TypeError` of an argument whose type the call does not support.
pub(crate) fn unsupported(what: &str, arg: &str, found: &str, supported: &[&str]) -> PyErr {
    PyTypeError::new_err(format!(
        "xlog.{what}: {arg} is {found}, which it does not support; it takes {}",
        supported.join(", ")
    ))
}

/// A DLPack dtype as a reader writes it (`float16`, `bool`, `int32x4`).
pub(crate) fn describe(d: DLDataType) -> String {
    let kind = match d.code {
        DLDataTypeCode::INT => "int",
        DLDataTypeCode::UINT => "uint",
        DLDataTypeCode::FLOAT => "float",
        DLDataTypeCode::BFLOAT => "bfloat",
        DLDataTypeCode::BOOL => return "bool".to_owned(),
        DLDataTypeCode::COMPLEX => "complex",
        _ => "dtype code ",
    };
    let lanes = if d.lanes == 1 {
        String::new()
    } else {
        format!("x{}", d.lanes)
    };
    format!("{kind}{}{lanes}", d.bits)
}
