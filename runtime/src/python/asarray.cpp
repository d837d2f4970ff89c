// ts.asarray (Array API): tensors as they are, everything else through
// numpy.asarray and then shared zero-copy with the resulting array.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "bindings.h"
#include "tensorsmith/errors.h"

namespace ts::python {

static Tensor tensor_asarray(const Tensor& t, std::optional<DType> dtype, std::optional<bool> copy) {
  const bool cast = dtype && *dtype != t.dtype();
  TS_CHECK(!(cast && copy == false), ValueError,
           "asarray(copy=False): casting a " << dtype_name(t.dtype()) << " tensor to " << dtype_name(*dtype)
                                             << " requires a copy");
  if (cast) return t.astype(*dtype);
  return copy == true ? t.clone() : t;
}

namespace {

template <typename T>
Tensor scalar_tensor(DType type, T value) {
  Tensor out = Tensor::empty({}, type);
  *reinterpret_cast<T*>(out.data_ptr()) = value;
  return out;
}

// A Python int (or bool) as a 0-d tensor of an integer dtype that holds it (numpy's OverflowError otherwise:
// not here).
std::optional<Tensor> integer_scalar(DType type, py::handle obj) {
  return with_element_type(type, [&](auto tag) -> std::optional<Tensor> {
    using T = decltype(tag);
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      if (const std::optional<T> v = int_as<T>(obj)) return scalar_tensor(type, *v);
    }
    return std::nullopt;
  });
}

// A double as a float32 or float64 0-d tensor (rounded to nearest, as numpy's cast; a finite value beyond
// float32's range is left to numpy, which warns of the overflow).
std::optional<Tensor> floating_scalar(DType type, double v) {
  if (type == DType::Float64) return scalar_tensor(type, v);
  if (type == DType::Float32 && !(std::isfinite(v) && std::fabs(v) > static_cast<double>(FLT_MAX))) {
    return scalar_tensor(type, static_cast<float>(v));
  }
  return std::nullopt;
}

}  // namespace

// A Python bool, int or float as numpy's asarray makes it, with no dtype or one that takes its value as numpy
// converts it: a 0-d tensor made here, without numpy.asarray and the sharing of its array (3 us, most of a
// small op's or an element assignment's time). Other scalars and dtypes, values a dtype cannot hold (numpy's
// OverflowError or warning) and copy=False take numpy's path, which decides their conversions and errors.
static std::optional<Tensor> python_scalar(py::handle obj, std::optional<DType> dtype, std::optional<bool> copy) {
  if (copy == false) return std::nullopt;  // numpy refuses: a scalar's array is always a copy
  PyObject* p = obj.ptr();
  if (PyBool_Check(p)) {
    const bool v = p == Py_True;
    const DType type = dtype.value_or(DType::Bool);
    if (type == DType::Bool) return scalar_tensor(type, v);
    return is_integer(type) ? integer_scalar(type, obj) : floating_scalar(type, v ? 1.0 : 0.0);
  }
  if (PyFloat_CheckExact(p)) return floating_scalar(dtype.value_or(DType::Float64), PyFloat_AS_DOUBLE(p));
  if (PyLong_CheckExact(p)) {
    const DType type = dtype.value_or(DType::Int64);  // beyond int64 with no dtype: numpy's uint64 or object array
    if (is_integer(type)) return integer_scalar(type, obj);
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(p, &overflow);
    if (overflow != 0) return std::nullopt;
    // An int that a double holds exactly (numpy converts larger ones through int64 to float32: rounded once)
    constexpr long long kExact = 1LL << 53;
    if (v >= -kExact && v <= kExact) return floating_scalar(type, static_cast<double>(v));
  }
  return std::nullopt;
}

Tensor asarray(py::handle obj, std::optional<DType> dtype, std::optional<bool> copy) {
  if (py::isinstance<Tensor>(obj)) return tensor_asarray(obj.cast<const Tensor&>(), dtype, copy);
  if (std::optional<Tensor> scalar = python_scalar(obj, dtype, copy)) return *scalar;

  // numpy implements the Array API copy semantics for everything it accepts
  // (copy=False raises ValueError when a copy cannot be avoided). Its asarray is looked up once (never
  // released: it may outlive the interpreter's teardown order) and called without keywords where none is set.
  static const py::object& numpy_asarray = *new py::object(py::module_::import("numpy").attr("asarray"));
  const py::object dtype_arg = dtype ? py::object(numpy_dtype(*dtype)) : py::none();
  py::array arr = !dtype && !copy ? numpy_asarray(obj)
                                  : numpy_asarray(obj, py::arg("dtype") = dtype_arg, py::arg("copy") = py::cast(copy));
  if (std::optional<Tensor> shared = share_numpy_array(arr)) return *shared;

  TS_CHECK(copy != false, ValueError,
           "asarray(copy=False): the array's memory cannot be shared (it is read-only, unaligned or not in "
           "native byte order)");
  py::dtype native = arr.dtype().attr("newbyteorder")("=");
  py::array fresh = py::module_::import("numpy").attr("array")(arr, py::arg("dtype") = native, py::arg("order") = "C",
                                                                py::arg("copy") = true);
  return *share_numpy_array(fresh);  // a fresh C-contiguous native array is always shareable
}

void bind_asarray(py::module_& m) {
  m.def(
      "asarray",
      [](py::handle obj, py::handle dtype, py::handle device, std::optional<bool> copy) {
        const std::optional<DType> dt = dtype.is_none() ? std::nullopt : std::optional<DType>(dtype_arg(dtype));
        // No device: a tensor stays where it is, anything else lands on the CPU.
        if (device.is_none()) return asarray(obj, dt, copy);
        const Device target = device_arg(device);
        const Device source = py::isinstance<Tensor>(obj) ? obj.cast<const Tensor&>().device() : Device{};
        if (source == target) return asarray(obj, dt, copy);
        TS_CHECK(copy != false, ValueError,
                 "asarray(copy=False): moving data from " << device_str(source) << " to " << device_str(target)
                                                          << " requires a copy");
        return to_device(asarray(obj, dt, std::nullopt), target);  // the move is the copy
      },
      py::arg("obj"), py::pos_only(), py::kw_only(), py::arg("dtype") = py::none(), py::arg("device") = py::none(),
      py::arg("copy") = py::none(),
      "Convert a tensor, numpy array, buffer, nested sequence or Python scalar to a tensor.\n\n"
      "Shares memory with the input when dtype, layout and device allow, unless copy=True; copy=False\n"
      "raises ValueError when a copy is needed. device='cuda' / 'cuda:1' copies the data to that GPU.");
}

}  // namespace ts::python
