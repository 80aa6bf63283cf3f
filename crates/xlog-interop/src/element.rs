//! [`Element`]: the element types both formats can describe.

use arrow_schema::DataType;
use dlpark::ffi::{DLDataType, DLDataTypeCode};
use xlog_runtime::DeviceCopy;

mod sealed {
    pub trait Sealed {}
}

/// An element type with a DLPack dtype and an Arrow primitive type.
///
/// Sealed: implemented for the fixed-width integers and floats.
pub trait Element: DeviceCopy + Send + Sync + sealed::Sealed {
    /// The DLPack data type (`lanes = 1`).
    const DTYPE: DLDataType;
    /// The Arrow data type.
    const ARROW: DataType;
    /// The Arrow C format string of [`ARROW`](Self::ARROW).
    const ARROW_FORMAT: &'static str;
}

macro_rules! element {
    ($($t:ty => $code:ident, $arrow:ident, $fmt:literal;)*) => {$(
        impl sealed::Sealed for $t {}
        impl Element for $t {
            const DTYPE: DLDataType = DLDataType {
                code: DLDataTypeCode::$code,
                bits: (8 * std::mem::size_of::<$t>()) as u8,
                lanes: 1,
            };
            const ARROW: DataType = DataType::$arrow;
            const ARROW_FORMAT: &'static str = $fmt;
        }
    )*};
}

element! {
    i8 => INT, Int8, "c";
    u8 => UINT, UInt8, "C";
    i16 => INT, Int16, "s";
    u16 => UINT, UInt16, "S";
    i32 => INT, Int32, "i";
    u32 => UINT, UInt32, "I";
    i64 => INT, Int64, "l";
    u64 => UINT, UInt64, "L";
    f32 => FLOAT, Float32, "f";
    f64 => FLOAT, Float64, "g";
}

/// `dtype` as a reader would write it, e.g. `float32`.
pub(crate) fn describe(dtype: DLDataType) -> String {
    let kind = match dtype.code {
        DLDataTypeCode::INT => "int",
        DLDataTypeCode::UINT => "uint",
        DLDataTypeCode::FLOAT => "float",
        DLDataTypeCode::BFLOAT => "bfloat",
        DLDataTypeCode::BOOL => "bool",
        DLDataTypeCode::COMPLEX => "complex",
        _ => "code",
    };
    let lanes = if dtype.lanes == 1 {
        String::new()
    } else {
        format!("x{}", dtype.lanes)
    };
    format!("{kind}{}{lanes}", dtype.bits)
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_schema::ffi::FFI_ArrowSchema;

    #[test]
    fn arrow_formats_match_arrow_rs() {
        fn check<T: Element>() {
            let schema = FFI_ArrowSchema::try_from(&T::ARROW).unwrap();
            assert_eq!(
                schema.format(),
                T::ARROW_FORMAT,
                "{}",
                std::any::type_name::<T>()
            );
            assert_eq!(T::DTYPE.bits as usize, 8 * std::mem::size_of::<T>());
        }
        check::<i8>();
        check::<u8>();
        check::<i16>();
        check::<u16>();
        check::<i32>();
        check::<u32>();
        check::<i64>();
        check::<u64>();
        check::<f32>();
        check::<f64>();
    }

    #[test]
    fn dtypes_read_like_numpy() {
        assert_eq!(describe(f32::DTYPE), "float32");
        assert_eq!(describe(u8::DTYPE), "uint8");
        assert_eq!(describe(i64::DTYPE), "int64");
    }
}
