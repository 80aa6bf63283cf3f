//! The kernel library's algorithms as module functions.
//!
//! Each function reads its input buffers (refusing lent ones with
//! `BufferError`), dispatches over the element types the Rust function is
//! compiled for (`TypeError` naming them otherwise), runs it with the GIL
//! released on `stream` (by default the first input's stream), and returns new
//! buffers: inputs are never written. xlog fences inputs that other streams
//! wrote, as everywhere.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use xlog_kernels as k;
use xlog_kernels::sort::Order;
use xlog_runtime::{DeviceBuffer, DeviceCopy};

use crate::typed::{same, unsupported, Elem, HostVec, Typed};
use crate::{rt_err, scalar, scalar_of, Buffer, Stream};

/// The stream a function runs on: `stream` if given, else `first`'s.
fn on(stream: Option<&Stream>, first: &Buffer) -> xlog_runtime::Stream {
    stream.map_or_else(|| first.stream.clone(), |s| s.inner.clone())
}

fn order(descending: bool) -> Order {
    if descending {
        Order::Descending
    } else {
        Order::Ascending
    }
}

/// A new buffer holding a copy of `x`, on `s`.
fn duplicate<T: DeviceCopy>(
    s: &xlog_runtime::Stream,
    x: &DeviceBuffer<T>,
) -> PyResult<DeviceBuffer<T>> {
    let rt = s.runtime().map_err(rt_err)?;
    let mut out = rt.alloc_zeroed_on::<T>(s, x.len()).map_err(rt_err)?;
    out.copy_from(s, x).map_err(rt_err)?;
    Ok(out)
}

/// `TypeError` unless `dtype` is one of `supported` (checked before extracting
/// scalars of that type, so an unsupported type reads as such).
fn require(what: &str, arg: &str, dtype: &str, supported: &[&str]) -> PyResult<()> {
    if supported.contains(&dtype) {
        Ok(())
    } else {
        Err(unsupported(what, arg, dtype, supported))
    }
}

fn sort_t<T: Elem + k::sort::Key>(
    s: &xlog_runtime::Stream,
    x: &DeviceBuffer<T>,
    o: Order,
) -> PyResult<Typed> {
    Ok(T::wrap(k::sort::sorted(s, x, o).map_err(rt_err)?))
}

/// A sorted copy of `x` (a stable radix sort; floats: `-inf … -0.0, +0.0 … +inf,
/// NaN`, `descending` the exact reverse). uint32, int32, float32, uint64, int64,
/// float64.
#[pyfunction]
#[pyo3(signature = (x, *, descending = false, stream = None))]
fn sort(py: Python<'_>, x: &Buffer, descending: bool, stream: Option<&Stream>) -> PyResult<Buffer> {
    let s = on(stream, x);
    let out = py.detach(|| {
        let xs = x.get()?;
        dispatch!("sort", "x", &*xs, [U32, I32, F32, U64, I64, F64],
            b => sort_t(&s, b, order(descending)))
    })?;
    Ok(Buffer::new(out, &s))
}

fn sort_pairs_t<K: Elem + k::sort::Key, V: Elem + k::sort::Value>(
    s: &xlog_runtime::Stream,
    keys: &DeviceBuffer<K>,
    values: &DeviceBuffer<V>,
    o: Order,
) -> PyResult<(Typed, Typed)> {
    if keys.len() != values.len() {
        return Err(PyValueError::new_err(format!(
            "xlog.sort_pairs: {} keys but {} values; pass one value per key",
            keys.len(),
            values.len()
        )));
    }
    let (mut keys, mut values) = (duplicate(s, keys)?, duplicate(s, values)?);
    k::sort::sort_pairs(s, &mut keys, &mut values, o).map_err(rt_err)?;
    Ok((K::wrap(keys), V::wrap(values)))
}

/// Sorted copies of `keys` and of `values` moved with them (stable). Keys as
/// `sort`; values of any element type the module handles (row ids, a
/// permutation, a payload column).
#[pyfunction]
#[pyo3(signature = (keys, values, *, descending = false, stream = None))]
fn sort_pairs(
    py: Python<'_>,
    keys: &Buffer,
    values: &Buffer,
    descending: bool,
    stream: Option<&Stream>,
) -> PyResult<(Buffer, Buffer)> {
    let s = on(stream, keys);
    let (k, v) = py.detach(|| {
        let (k, v) = (keys.get()?, values.get()?);
        dispatch!("sort_pairs", "keys", &*k, [U32, I32, F32, U64, I64, F64],
            keys => dispatch!("sort_pairs", "values", &*v, [U8, U16, U32, I32, F32, U64, I64, F64],
                values => sort_pairs_t(&s, keys, values, order(descending))))
    })?;
    Ok((Buffer::new(k, &s), Buffer::new(v, &s)))
}

fn runs_t<T: Elem + k::compact::Compactable + k::sort::Key>(
    s: &xlog_runtime::Stream,
    x: &DeviceBuffer<T>,
    sort_first: bool,
) -> PyResult<(Typed, Typed)> {
    let runs = if sort_first {
        let sorted = k::sort::sorted(s, x, Order::Ascending).map_err(rt_err)?;
        k::compact::unique_counts(s, &sorted)
    } else {
        k::compact::unique_counts(s, x)
    }
    .map_err(rt_err)?;
    Ok((T::wrap(runs.values), Typed::U64(runs.counts)))
}

fn runs(
    py: Python<'_>,
    what: &str,
    x: &Buffer,
    sort_first: bool,
    return_counts: bool,
    stream: Option<&Stream>,
) -> PyResult<Py<PyAny>> {
    let s = on(stream, x);
    let (values, counts) = py.detach(|| {
        let xs = x.get()?;
        dispatch!(what, "x", &*xs, [U32, I32, F32, U64, I64, F64],
            b => runs_t(&s, b, sort_first))
    })?;
    let values = Buffer::new(values, &s);
    Ok(if return_counts {
        (values, Buffer::new(counts, &s))
            .into_pyobject(py)?
            .into_any()
            .unbind()
    } else {
        Py::new(py, values)?.into_any()
    })
}

/// The distinct values of `x`, ascending (`torch.unique`), and with
/// `return_counts` how often each occurs (uint64). Sorts a copy first. The
/// types of `sort`.
#[pyfunction]
#[pyo3(signature = (x, *, return_counts = false, stream = None))]
fn unique(
    py: Python<'_>,
    x: &Buffer,
    return_counts: bool,
    stream: Option<&Stream>,
) -> PyResult<Py<PyAny>> {
    runs(py, "unique", x, true, return_counts, stream)
}

/// The first value of each run of equal adjacent values of `x`
/// (`torch.unique_consecutive`), and with `return_counts` each run's length
/// (uint64). On sorted input, `unique` without the sort. The types of `sort`.
#[pyfunction]
#[pyo3(signature = (x, *, return_counts = false, stream = None))]
fn unique_consecutive(
    py: Python<'_>,
    x: &Buffer,
    return_counts: bool,
    stream: Option<&Stream>,
) -> PyResult<Py<PyAny>> {
    runs(py, "unique_consecutive", x, false, return_counts, stream)
}

/// The kinds of join.
enum How {
    Inner,
    Semi,
    Anti,
}

fn join_t<K: Elem + k::join::JoinKey>(
    s: &xlog_runtime::Stream,
    build: &DeviceBuffer<K>,
    probe: &Typed,
    how: &How,
) -> PyResult<Vec<Typed>> {
    let probe = same::<K>("join", "probe", "build", probe)?;
    let table = k::join::JoinTable::build(s, build).map_err(rt_err)?;
    Ok(match how {
        How::Inner => {
            let pairs = table.inner_join(s, probe).map_err(rt_err)?;
            vec![Typed::U32(pairs.build_rows), Typed::U32(pairs.probe_rows)]
        }
        How::Semi => vec![Typed::U32(table.semi_join(s, probe).map_err(rt_err)?)],
        How::Anti => vec![Typed::U32(table.anti_join(s, probe).map_err(rt_err)?)],
    })
}

/// A hash join of `build` and `probe` on equal keys (uint32 or uint64, both of
/// one type). `how="inner"`: `(build_rows, probe_rows)`, the row ids (uint32) of
/// every matching pair, ordered by probe row; `"semi"` / `"anti"`: the probe rows
/// with / without a match, ascending.
#[pyfunction]
#[pyo3(signature = (build, probe, *, how = "inner", stream = None))]
fn join(
    py: Python<'_>,
    build: &Buffer,
    probe: &Buffer,
    how: &str,
    stream: Option<&Stream>,
) -> PyResult<Py<PyAny>> {
    let how = match how {
        "inner" => How::Inner,
        "semi" => How::Semi,
        "anti" => How::Anti,
        other => {
            return Err(PyValueError::new_err(format!(
                "xlog.join: how={other:?}; pass \"inner\", \"semi\" or \"anti\""
            )))
        }
    };
    let s = on(stream, build);
    let out = py.detach(|| {
        let (b, p) = (build.get()?, probe.get()?);
        dispatch!("join", "build", &*b, [U32, U64], b => join_t(&s, b, &p, &how))
    })?;
    let mut out: Vec<Buffer> = out.into_iter().map(|t| Buffer::new(t, &s)).collect();
    Ok(if out.len() == 2 {
        let probe_rows = out.pop();
        (out.pop(), probe_rows)
            .into_pyobject(py)?
            .into_any()
            .unbind()
    } else {
        Py::new(py, out.remove(0))?.into_any()
    })
}

fn gather_t<T, I>(
    s: &xlog_runtime::Stream,
    x: &DeviceBuffer<T>,
    idx: &DeviceBuffer<I>,
) -> PyResult<Typed>
where
    T: Elem + k::gather::Indexed<I>,
    I: k::gather::Index,
{
    Ok(T::wrap(k::gather::gather(s, x, idx).map_err(rt_err)?))
}

/// `x[idx]`: a new buffer as long as `idx`. `x` uint32, int32, float32, uint64,
/// int64, float64; `idx` uint32 or uint64. An index out of range raises
/// `ValueError` naming the first position holding one (this synchronises the
/// stream).
#[pyfunction]
#[pyo3(signature = (x, idx, *, stream = None))]
fn gather(py: Python<'_>, x: &Buffer, idx: &Buffer, stream: Option<&Stream>) -> PyResult<Buffer> {
    let s = on(stream, x);
    let out = py.detach(|| {
        let (xs, is) = (x.get()?, idx.get()?);
        dispatch!("gather", "x", &*xs, [U32, I32, F32, U64, I64, F64],
            x => dispatch!("gather", "idx", &*is, [U32, U64], i => gather_t(&s, x, i)))
    })?;
    Ok(Buffer::new(out, &s))
}

fn scatter_t<T, I>(
    s: &xlog_runtime::Stream,
    x: &DeviceBuffer<T>,
    idx: &DeviceBuffer<I>,
    into: &Typed,
) -> PyResult<Typed>
where
    T: Elem + k::gather::Indexed<I>,
    I: k::gather::Index,
{
    let mut out = duplicate(s, same::<T>("scatter", "into", "x", into)?)?;
    k::gather::scatter(s, x, idx, &mut out).map_err(rt_err)?;
    Ok(T::wrap(out))
}

/// A copy of `into` with `x[i]` written at `idx[i]` for every `i` (`x` and `idx`
/// of one length, `into` of `x`'s type). Types as `gather`; with repeated
/// indices, which value lands is unspecified. An index out of range raises
/// `ValueError` (this synchronises the stream).
#[pyfunction]
#[pyo3(signature = (x, idx, into, *, stream = None))]
fn scatter(
    py: Python<'_>,
    x: &Buffer,
    idx: &Buffer,
    into: &Buffer,
    stream: Option<&Stream>,
) -> PyResult<Buffer> {
    let s = on(stream, x);
    let out = py.detach(|| {
        let (xs, is, base) = (x.get()?, idx.get()?, into.get()?);
        dispatch!("scatter", "x", &*xs, [U32, I32, F32, U64, I64, F64],
            x => dispatch!("scatter", "idx", &*is, [U32, U64], i => scatter_t(&s, x, i, &base)))
    })?;
    Ok(Buffer::new(out, &s))
}

/// The reductions.
#[derive(Clone, Copy)]
enum Reduction {
    Sum,
    Min,
    Max,
}

fn reduce_t<T>(s: &xlog_runtime::Stream, x: &DeviceBuffer<T>, op: Reduction) -> PyResult<Typed>
where
    T: Elem,
    k::reduce::Sum: k::reduce::FoldKernel<T>,
    k::reduce::Min: k::reduce::FoldKernel<T>,
    k::reduce::Max: k::reduce::FoldKernel<T>,
{
    let out = match op {
        Reduction::Sum => k::reduce::sum(s, x),
        Reduction::Min => k::reduce::min(s, x),
        Reduction::Max => k::reduce::max(s, x),
    };
    Ok(T::wrap(out.map_err(rt_err)?))
}

/// The sum, minimum or maximum (`op`) of `x` as a one-element buffer (`.item()`
/// reads it). Sums wrap for integers; float NaNs are ignored by min and max. An
/// empty `x` gives 0, the type's maximum, or its minimum (`±inf` for floats).
/// uint32, int32, float32, uint64, int64, float64.
#[pyfunction]
#[pyo3(signature = (x, op = "sum", *, stream = None))]
fn reduce(py: Python<'_>, x: &Buffer, op: &str, stream: Option<&Stream>) -> PyResult<Buffer> {
    let op = match op {
        "sum" => Reduction::Sum,
        "min" => Reduction::Min,
        "max" => Reduction::Max,
        other => {
            return Err(PyValueError::new_err(format!(
                "xlog.reduce: op={other:?}; pass \"sum\", \"min\" or \"max\""
            )))
        }
    };
    let s = on(stream, x);
    let out = py.detach(|| {
        let xs = x.get()?;
        dispatch!("reduce", "x", &*xs, [U32, I32, F32, U64, I64, F64], b => reduce_t(&s, b, op))
    })?;
    Ok(Buffer::new(out, &s))
}

fn scan_t<T>(s: &xlog_runtime::Stream, x: &DeviceBuffer<T>, exclusive: bool) -> PyResult<Typed>
where
    T: Elem,
    k::scan::InclusiveSum: k::scan::ScanKernel<T>,
    k::scan::ExclusiveSum: k::scan::ScanKernel<T>,
{
    let out = if exclusive {
        k::scan::exclusive_sum(s, x)
    } else {
        k::scan::inclusive_sum(s, x)
    };
    Ok(T::wrap(out.map_err(rt_err)?))
}

/// The running sum of `x` (`torch.cumsum`; `exclusive=True` starts at 0 and
/// leaves out each element's own value), in `x`'s type, wrapping for integers.
/// The types of `reduce`.
#[pyfunction]
#[pyo3(signature = (x, *, exclusive = false, stream = None))]
fn scan(py: Python<'_>, x: &Buffer, exclusive: bool, stream: Option<&Stream>) -> PyResult<Buffer> {
    let s = on(stream, x);
    let out = py.detach(|| {
        let xs = x.get()?;
        dispatch!("scan", "x", &*xs, [U32, I32, F32, U64, I64, F64], b => scan_t(&s, b, exclusive))
    })?;
    Ok(Buffer::new(out, &s))
}

fn histogram_t<T: Elem + k::histogram::EvenSample>(
    s: &xlog_runtime::Stream,
    x: &DeviceBuffer<T>,
    lo: &HostVec,
    hi: &HostVec,
    bins: usize,
) -> PyResult<Typed> {
    let h = k::histogram::even(s, x, scalar::<T>(lo)?, scalar::<T>(hi)?, bins).map_err(rt_err)?;
    Ok(Typed::U32(h))
}

/// Counts of `x` in `bins` even bins over `[lo, hi)` (uint32; samples outside
/// and NaNs are ignored, and unlike `torch.histc` a sample equal to `hi` too).
/// float32, uint32, int32; `lo` and `hi` in `x`'s type.
#[pyfunction]
#[pyo3(signature = (x, bins, lo, hi, *, stream = None))]
fn histogram(
    py: Python<'_>,
    x: &Buffer,
    bins: usize,
    lo: &Bound<'_, PyAny>,
    hi: &Bound<'_, PyAny>,
    stream: Option<&Stream>,
) -> PyResult<Buffer> {
    require("histogram", "x", x.dtype, &["float32", "uint32", "int32"])?;
    let (lo, hi) = (scalar_of(py, lo, x.dtype)?, scalar_of(py, hi, x.dtype)?);
    let s = on(stream, x);
    let out = py.detach(|| {
        let xs = x.get()?;
        dispatch!("histogram", "x", &*xs, [F32, U32, I32], b => histogram_t(&s, b, &lo, &hi, bins))
    })?;
    Ok(Buffer::new(out, &s))
}

fn bincount_t<K: Elem + k::histogram::Key>(
    s: &xlog_runtime::Stream,
    keys: &DeviceBuffer<K>,
    bins: usize,
) -> PyResult<Typed> {
    Ok(Typed::U32(
        k::histogram::counts(s, keys, bins).map_err(rt_err)?,
    ))
}

/// How often each key `0 .. bins` occurs in `keys` (uint32;
/// `torch.bincount(keys, minlength=bins)` with keys `>= bins` and negative keys
/// ignored). uint8, uint32, int32.
#[pyfunction]
#[pyo3(signature = (keys, bins, *, stream = None))]
fn bincount(
    py: Python<'_>,
    keys: &Buffer,
    bins: usize,
    stream: Option<&Stream>,
) -> PyResult<Buffer> {
    let s = on(stream, keys);
    let out = py.detach(|| {
        let ks = keys.get()?;
        dispatch!("bincount", "keys", &*ks, [U8, U32, I32], b => bincount_t(&s, b, bins))
    })?;
    Ok(Buffer::new(out, &s))
}

fn select_t<T: Elem + k::compact::Compactable>(
    s: &xlog_runtime::Stream,
    x: &DeviceBuffer<T>,
    flags: &DeviceBuffer<u8>,
) -> PyResult<Typed> {
    Ok(T::wrap(
        k::compact::select_flagged(s, x, flags).map_err(rt_err)?,
    ))
}

/// The elements of `x` whose flag is non-zero, in order
/// (`torch.masked_select`); `flags` uint8, one per element (a torch bool mask:
/// `mask.to(torch.uint8)`). `x` uint32, int32, float32, uint64, int64, float64.
/// Reads the count back to size the result (synchronises the stream).
#[pyfunction]
#[pyo3(signature = (x, flags, *, stream = None))]
fn select(py: Python<'_>, x: &Buffer, flags: &Buffer, stream: Option<&Stream>) -> PyResult<Buffer> {
    let s = on(stream, x);
    let out = py.detach(|| {
        let (xs, fs) = (x.get()?, flags.get()?);
        dispatch!("select", "x", &*xs, [U32, I32, F32, U64, I64, F64],
            x => dispatch!("select", "flags", &*fs, [U8], f => select_t(&s, x, f)))
    })?;
    Ok(Buffer::new(out, &s))
}

/// The set operations.
#[derive(Clone, Copy)]
enum SetOp {
    Merge,
    Difference,
    Intersection,
}

fn set_t<T: Elem + k::set::Ordered>(
    s: &xlog_runtime::Stream,
    a: &DeviceBuffer<T>,
    b: &Typed,
    op: SetOp,
) -> PyResult<Typed> {
    let b = same::<T>(
        match op {
            SetOp::Merge => "merge",
            SetOp::Difference => "difference",
            SetOp::Intersection => "intersection",
        },
        "b",
        "a",
        b,
    )?;
    let out = match op {
        SetOp::Merge => k::set::merge(s, a, b),
        SetOp::Difference => k::set::difference(s, a, b),
        SetOp::Intersection => k::set::intersection(s, a, b),
    };
    Ok(T::wrap(out.map_err(rt_err)?))
}

fn set_op(
    py: Python<'_>,
    what: &str,
    a: &Buffer,
    b: &Buffer,
    op: SetOp,
    stream: Option<&Stream>,
) -> PyResult<Buffer> {
    let s = on(stream, a);
    let out = py.detach(|| {
        let (aa, bb) = (a.get()?, b.get()?);
        dispatch!(what, "a", &*aa, [U32, I32, U64, I64], a => set_t(&s, a, &bb, op))
    })?;
    Ok(Buffer::new(out, &s))
}

/// The sorted union with repeats of sorted `a` and `b` (stable: `a`'s copy of a
/// value first). uint32, int32, uint64, int64, both of one type.
#[pyfunction]
#[pyo3(signature = (a, b, *, stream = None))]
fn merge(py: Python<'_>, a: &Buffer, b: &Buffer, stream: Option<&Stream>) -> PyResult<Buffer> {
    set_op(py, "merge", a, b, SetOp::Merge, stream)
}

/// The distinct elements of sorted `a` that do not occur in sorted `b`, in
/// order (`a ∖ b`, deduplicated). Reads the count back (synchronises the
/// stream). The types of `merge`; an unsorted input gives an unspecified result.
#[pyfunction]
#[pyo3(signature = (a, b, *, stream = None))]
fn difference(py: Python<'_>, a: &Buffer, b: &Buffer, stream: Option<&Stream>) -> PyResult<Buffer> {
    set_op(py, "difference", a, b, SetOp::Difference, stream)
}

/// The distinct elements of sorted `a` that occur in sorted `b`, in order
/// (`a ∩ b`, deduplicated). As `difference` otherwise.
#[pyfunction]
#[pyo3(signature = (a, b, *, stream = None))]
fn intersection(
    py: Python<'_>,
    a: &Buffer,
    b: &Buffer,
    stream: Option<&Stream>,
) -> PyResult<Buffer> {
    set_op(py, "intersection", a, b, SetOp::Intersection, stream)
}

/// Adds the functions to the module.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(sort, m)?)?;
    m.add_function(wrap_pyfunction!(sort_pairs, m)?)?;
    m.add_function(wrap_pyfunction!(unique, m)?)?;
    m.add_function(wrap_pyfunction!(unique_consecutive, m)?)?;
    m.add_function(wrap_pyfunction!(join, m)?)?;
    m.add_function(wrap_pyfunction!(gather, m)?)?;
    m.add_function(wrap_pyfunction!(scatter, m)?)?;
    m.add_function(wrap_pyfunction!(reduce, m)?)?;
    m.add_function(wrap_pyfunction!(scan, m)?)?;
    m.add_function(wrap_pyfunction!(histogram, m)?)?;
    m.add_function(wrap_pyfunction!(bincount, m)?)?;
    m.add_function(wrap_pyfunction!(select, m)?)?;
    m.add_function(wrap_pyfunction!(merge, m)?)?;
    m.add_function(wrap_pyfunction!(difference, m)?)?;
    m.add_function(wrap_pyfunction!(intersection, m)?)?;
    Ok(())
}
