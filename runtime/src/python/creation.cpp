// Array API creation functions: new tensors filled with a value (or left uninitialised). Their
// bindings, stubs and differential tests come from their specs (specs/*.yaml with `implementation:`).
#include <pybind11/pybind11.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "bindings.h"
#include "tensorsmith/dispatch.h"
#include "tensorsmith/engine.h"
#include "tensorsmith/errors.h"
#include "tensorsmith/python.h"

namespace ts::python {

namespace {

bool is_python_scalar(py::handle obj) {
  return PyBool_Check(obj.ptr()) || PyLong_Check(obj.ptr()) || PyFloat_Check(obj.ptr()) || PyComplex_Check(obj.ptr());
}

std::optional<DType> optional_dtype_arg(py::handle obj) {
  if (obj.is_none()) return std::nullopt;
  return dtype_arg(obj);
}

// A Python bool, int, float or complex, else a TypeError naming the argument.
void check_scalar(py::handle value, const char* what) {
  TS_CHECK(is_python_scalar(value), TypeError, what << " must be a Python bool, int, float or complex, not " << type_name(value));
}

// A Python bool, int or float (arange's and linspace's bounds), else a TypeError naming the argument.
void check_real_scalar(py::handle value, const char* what) {
  TS_CHECK(is_python_scalar(value) && !PyComplex_Check(value.ptr()), TypeError,
           what << " must be a Python bool, int or float, not " << type_name(value));
}

// The Python int 0 or 1 (zeros, ones), else nothing: exact in every dtype, so a fill may cast it from int64
// rather than convert it through numpy's asarray (4.7 us of a small zeros' 5).
std::optional<int64_t> zero_or_one(py::handle value) {
  if (!PyLong_CheckExact(value.ptr())) return std::nullopt;  // not bool, not an int subclass
  int overflow = 0;
  const long v = PyLong_AsLongAndOverflow(value.ptr(), &overflow);
  return overflow == 0 && (v == 0 || v == 1) ? std::optional<int64_t>(v) : std::nullopt;
}

Tensor int64_scalar(int64_t value) {
  Tensor t = Tensor::empty({}, DType::Int64);
  *reinterpret_cast<int64_t*>(t.data_ptr()) = value;
  return t;
}

// A tensor of `shape` on `device` holding `value` everywhere: numpy's full, whose value converts as
// np.asarray(value, dtype) does (its default dtype: bool, int64, float64 or complex128 from the value's type).
// A small CPU result is filled here: its first element set, then copied forward in doubling pieces (zeros: all
// bytes 0, which is zero in every dtype). The copy engine's set-up (a broadcast view and its axes) was most of a
// small fill's time: ts.zeros(4) 0.48 us before, numpy 0.12. Larger ones take the engine, on every thread.
constexpr int64_t kDirectFillBytes = int64_t{64} << 10;

Tensor filled(const Shape& shape, py::handle value, std::optional<DType> dtype, Device device) {
  check_scalar(value, "fill_value");
  const std::optional<int64_t> exact = dtype ? zero_or_one(value) : std::nullopt;
  const std::optional<Tensor> converted = exact ? std::nullopt : std::optional<Tensor>(asarray(value, dtype));
  const auto scalar = [&] { return exact ? int64_scalar(*exact) : *converted; };  // 0-d, on the host
  Tensor out = Tensor::empty(shape, exact ? *dtype : converted->dtype(), device);
  const size_t item = out.itemsize(), bytes = static_cast<size_t>(out.numel()) * item;
  if (device.type != DeviceType::CPU || bytes > static_cast<size_t>(kDirectFillBytes)) {
    out.copy_from(scalar());  // broadcast, onto any device
    return out;
  }
  char* data = out.data_ptr();
  if (exact == 0) {
    std::memset(data, 0, bytes);
    return out;
  }
  if (bytes == 0) return out;
  const Tensor given = scalar();
  const Tensor first = given.dtype() == out.dtype() ? given : given.astype(out.dtype());
  std::memcpy(data, first.data_ptr(), item);
  for (size_t done = item; done < bytes; done *= 2) std::memcpy(data + done, data, std::min(done, bytes - done));
  return out;
}

// start, start + 1, ... as a 1-D int64 host tensor of n elements.
Tensor host_iota(int64_t n, int64_t start = 0) {
  Tensor t = Tensor::empty({n}, DType::Int64);
  auto* values = reinterpret_cast<int64_t*>(t.data_ptr());
  for (int64_t i = 0; i < n; ++i) values[i] = static_cast<int64_t>(static_cast<uint64_t>(start) + static_cast<uint64_t>(i));
  return t;
}

// `value` rounded to `dtype` and back, as numpy stores a fill's first elements before it reads them.
double through(double value, DType dtype) {
  Tensor t = Tensor::empty({}, DType::Float64);
  *reinterpret_cast<double*>(t.data_ptr()) = value;
  return *reinterpret_cast<const double*>(t.astype(dtype).astype(DType::Float64).data_ptr());
}

int64_t length_arg(double ratio) {
  TS_CHECK(!std::isnan(ratio), ValueError, "arange: the length (stop - start) / step is NaN");
  TS_CHECK(ratio < 9.2e18, ValueError, "arange: maximum allowed size exceeded");
  return ratio > 0 ? static_cast<int64_t>(std::ceil(ratio)) : 0;
}

// x where the mask `keep(column - row)` holds for the last two axes, else 0: tril and triu by composition of
// the generated ops (a comparison of two index vectors, then where), on x's device.
Tensor triangle(const Tensor& x, int64_t k, const char* comparison, const char* name) {
  TS_CHECK(x.ndim() >= 2, ValueError, name << ": x must have at least 2 dimensions, not " << x.ndim());
  const int64_t rows = x.shape()[x.ndim() - 2], cols = x.shape()[x.ndim() - 1];
  Registry& ops = Registry::global();
  const Tensor row_limit = on_device(host_iota(rows, k), x.device()).unsqueeze(1);  // j <=/>= i + k
  const Tensor column = on_device(host_iota(cols), x.device()).unsqueeze(0);
  const Tensor keep = pointwise(ops.get(comparison), {column, row_limit});
  return pointwise(ops.get("where"), {keep, x, filled({}, py::int_(0), x.dtype(), x.device())});
}

}  // namespace

Tensor empty(py::handle shape, py::handle dtype, py::handle device) {
  return Tensor::empty(int_sequence_arg(shape, "shape"), optional_dtype_arg(dtype).value_or(DType::Float64),
                       device_arg(device));
}

Tensor zero_filled(const Shape& shape, DType dtype, Device device) { return filled(shape, py::int_(0), dtype, device); }

Tensor zeros(py::handle shape, py::handle dtype, py::handle device) {
  return filled(int_sequence_arg(shape, "shape"), py::int_(0), optional_dtype_arg(dtype).value_or(DType::Float64),
                device_arg(device));
}

Tensor ones(py::handle shape, py::handle dtype, py::handle device) {
  return filled(int_sequence_arg(shape, "shape"), py::int_(1), optional_dtype_arg(dtype).value_or(DType::Float64),
                device_arg(device));
}

Tensor full(py::handle shape, py::handle fill_value, py::handle dtype, py::handle device) {
  return filled(int_sequence_arg(shape, "shape"), fill_value, optional_dtype_arg(dtype), device_arg(device));
}

// The *_like functions: x's shape, and x's dtype and device unless given.
Tensor empty_like(const Tensor& x, py::handle dtype, py::handle device) {
  return Tensor::empty(x.shape(), optional_dtype_arg(dtype).value_or(x.dtype()),
                       device.is_none() ? x.device() : device_arg(device));
}

Tensor zeros_like(const Tensor& x, py::handle dtype, py::handle device) {
  return filled(x.shape(), py::int_(0), optional_dtype_arg(dtype).value_or(x.dtype()),
                device.is_none() ? x.device() : device_arg(device));
}

Tensor ones_like(const Tensor& x, py::handle dtype, py::handle device) {
  return filled(x.shape(), py::int_(1), optional_dtype_arg(dtype).value_or(x.dtype()),
                device.is_none() ? x.device() : device_arg(device));
}

Tensor full_like(const Tensor& x, py::handle fill_value, py::handle dtype, py::handle device) {
  return filled(x.shape(), fill_value, optional_dtype_arg(dtype).value_or(x.dtype()),
                device.is_none() ? x.device() : device_arg(device));
}

// numpy's arange: the length is ceil((stop - start) / step) in Python's arithmetic; the first two values are
// start and start + step stored in the dtype (an integer dtype takes int() of each and refuses one out of its
// range with numpy's OverflowError), and element i >= 2 is first + i * (second - first), computed as numpy's
// fill for the dtype computes it (int64 wrapping, double, or float for float32 and the 16-bit floats).
Tensor arange(py::handle start, py::handle stop, py::handle step, py::handle dtype, py::handle device) {
  const py::object zero = py::int_(0);
  const py::object first = stop.is_none() ? zero : py::reinterpret_borrow<py::object>(start);
  const py::object last = py::reinterpret_borrow<py::object>(stop.is_none() ? start : stop);
  const py::object by = py::reinterpret_borrow<py::object>(step);
  check_real_scalar(first, "arange: start");
  check_real_scalar(last, "arange: stop");
  check_real_scalar(by, "arange: step");
  TS_CHECK(!by.equal(zero), ValueError, "arange: step must not be 0");
  const bool any_float = PyFloat_Check(first.ptr()) || PyFloat_Check(last.ptr()) || PyFloat_Check(by.ptr());
  const DType type = optional_dtype_arg(dtype).value_or(any_float ? DType::Float64 : DType::Int64);
  const py::object ratio = py::reinterpret_steal<py::object>(PyNumber_TrueDivide((last - first).ptr(), by.ptr()));
  if (!ratio) throw py::error_already_set();
  const int64_t n = length_arg(ratio.cast<double>());
  const py::object second = first + by;
  Tensor values;
  if (is_floating(type)) {
    const DType compute = type == DType::Float64 ? DType::Float64 : DType::Float32;
    const double v0 = through(first.cast<double>(), type), v1 = through(second.cast<double>(), type);
    values = Tensor::empty({n}, compute);
    if (compute == DType::Float64) {
      auto* out = reinterpret_cast<double*>(values.data_ptr());
      for (int64_t i = 0; i < n; ++i) out[i] = i == 0 ? v0 : i == 1 ? v1 : v0 + static_cast<double>(i) * (v1 - v0);
    } else {
      const float f0 = static_cast<float>(v0), f1 = static_cast<float>(v1), delta = f1 - f0;
      auto* out = reinterpret_cast<float*>(values.data_ptr());
      for (int64_t i = 0; i < n; ++i) out[i] = i == 0 ? f0 : i == 1 ? f1 : f0 + static_cast<float>(i) * delta;
    }
  } else {
    TS_CHECK(type != DType::Bool || n <= 2, ValueError, "arange: a bool range holds at most 2 elements (False, True), as numpy's");
    const auto stored = [&](const py::object& v) {  // int(v) in the dtype, as numpy's setitem stores it
      return *reinterpret_cast<const int64_t*>(asarray(py::int_(v), type).astype(DType::Int64).data_ptr());
    };
    const uint64_t v0 = n > 0 ? static_cast<uint64_t>(stored(first)) : 0;  // an empty range stores nothing
    const uint64_t v1 = n > 1 ? static_cast<uint64_t>(stored(second)) : v0;
    values = Tensor::empty({n}, DType::Int64);
    auto* out = reinterpret_cast<int64_t*>(values.data_ptr());
    for (int64_t i = 0; i < n; ++i) out[i] = static_cast<int64_t>(v0 + static_cast<uint64_t>(i) * (v1 - v0));
  }
  return on_device(values.dtype() == type ? values : values.astype(type), device_arg(device));
}

// numpy's linspace: in float64, element i is i * step + start with step = (stop - start) / div (div: num - 1
// with the endpoint, else num), or (i / div) * delta where step underflows to 0; the endpoint is stop
// exactly; integer dtypes take the floor; then converted to the dtype.
Tensor linspace(py::handle start, py::handle stop, py::handle num, py::handle dtype, py::handle device, py::handle endpoint) {
  check_real_scalar(start, "linspace: start");
  check_real_scalar(stop, "linspace: stop");
  const int64_t n = int_arg(num, "linspace: num");
  TS_CHECK(n >= 0, ValueError, "linspace: num must be non-negative, not " << n);
  TS_CHECK(PyBool_Check(endpoint.ptr()), TypeError, "linspace: endpoint must be True or False, not " << type_name(endpoint));
  const bool with_end = endpoint.ptr() == Py_True;
  const DType type = optional_dtype_arg(dtype).value_or(DType::Float64);
  const double a = start.cast<double>(), b = stop.cast<double>(), delta = b - a;
  const int64_t div = with_end ? n - 1 : n;
  const double step = div > 0 ? delta / static_cast<double>(div) : std::numeric_limits<double>::quiet_NaN();
  Tensor values = Tensor::empty({n}, DType::Float64);
  auto* out = reinterpret_cast<double*>(values.data_ptr());
  for (int64_t i = 0; i < n; ++i) {
    const double x = static_cast<double>(i);
    const double scaled = div <= 0 ? x * delta : step == 0 ? (x / static_cast<double>(div)) * delta : x * step;
    out[i] = scaled + a;
  }
  if (with_end && n > 1) out[n - 1] = b;
  if (!is_floating(type) && type != DType::Bool) {
    for (int64_t i = 0; i < n; ++i) out[i] = std::floor(out[i]);
  }
  return on_device(type == DType::Float64 ? values : values.astype(type), device_arg(device));
}

// The identity-like matrix: 1 where column - row == k, by composition (equal of two index vectors).
Tensor eye(py::handle n_rows, py::handle n_cols, py::handle k, py::handle dtype, py::handle device) {
  const int64_t rows = int_arg(n_rows, "eye: n_rows");
  const int64_t cols = n_cols.is_none() ? rows : int_arg(n_cols, "eye: n_cols");
  TS_CHECK(rows >= 0 && cols >= 0, ValueError, "eye: negative dimensions are not allowed (" << rows << ", " << cols << ")");
  const Device target = device_arg(device);
  const Tensor diagonal = on_device(host_iota(rows, int_arg(k, "eye: k")), target).unsqueeze(1);
  const Tensor column = on_device(host_iota(cols), target).unsqueeze(0);
  return pointwise(Registry::global().get("equal"), {column, diagonal}).astype(optional_dtype_arg(dtype).value_or(DType::Float64));
}

Tensor tril(const Tensor& x, py::handle k) { return triangle(x, int_arg(k, "tril: k"), "less_equal", "tril"); }
Tensor triu(const Tensor& x, py::handle k) { return triangle(x, int_arg(k, "triu: k"), "greater_equal", "triu"); }

py::list meshgrid(py::args arrays, py::handle indexing) {
  const std::string order = py::isinstance<py::str>(indexing) ? indexing.cast<std::string>() : "";
  TS_CHECK(order == "xy" || order == "ij", ValueError,
           "meshgrid: indexing must be 'xy' or 'ij', not " << py::repr(indexing).cast<std::string>());
  std::vector<Tensor> vectors;
  for (py::handle item : arrays) {
    TS_CHECK(py::isinstance<Tensor>(item), TypeError, "meshgrid: arrays must be Tensors, not " << type_name(item));
    vectors.push_back(item.cast<Tensor>().reshape({-1}));  // numpy flattens each
  }
  const size_t n = vectors.size();
  // Array i runs along axis i; Cartesian ('xy') indexing swaps the first two axes.
  std::vector<size_t> axis_of(n);
  for (size_t i = 0; i < n; ++i) axis_of[i] = (order == "xy" && n >= 2 && i < 2) ? 1 - i : i;
  Shape shape(n);
  for (size_t i = 0; i < n; ++i) shape[axis_of[i]] = vectors[i].shape()[0];
  py::list grids;
  for (size_t i = 0; i < n; ++i) {
    Shape along(n, 1);
    along[axis_of[i]] = shape[axis_of[i]];
    grids.append(py::cast(vectors[i].reshape(along).expand(shape).clone()));
  }
  return grids;
}

}  // namespace ts::python
