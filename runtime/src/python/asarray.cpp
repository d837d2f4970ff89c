// ts.asarray (Array API): tensors as they are, everything else through
// numpy.asarray and then shared zero-copy with the resulting array.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

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

// A Python bool, int or float as numpy's asarray makes it with no dtype (or that very dtype): a 0-d tensor
// made here, without numpy.asarray and the sharing of its array (3 us, most of a small op's time). Other
// scalars, dtypes and copy=False take numpy's path, which decides their conversions and errors.
static std::optional<Tensor> python_scalar(py::handle obj, std::optional<DType> dtype, std::optional<bool> copy) {
  if (copy == false) return std::nullopt;  // numpy refuses: a scalar's array is always a copy
  PyObject* p = obj.ptr();
  const auto made = [&](DType type, auto value) -> std::optional<Tensor> {
    if (dtype && *dtype != type) return std::nullopt;
    Tensor out = Tensor::empty({}, type);
    *reinterpret_cast<decltype(value)*>(out.data_ptr()) = value;
    return out;
  };
  if (PyBool_Check(p)) return made(DType::Bool, static_cast<bool>(p == Py_True));
  if (PyFloat_CheckExact(p)) return made(DType::Float64, PyFloat_AS_DOUBLE(p));
  if (PyLong_CheckExact(p)) {
    int overflow = 0;
    const long long value = PyLong_AsLongLongAndOverflow(p, &overflow);
    if (overflow != 0) return std::nullopt;  // beyond int64: numpy's uint64 or its OverflowError
    return made(DType::Int64, static_cast<int64_t>(value));
  }
  return std::nullopt;
}

Tensor asarray(py::handle obj, std::optional<DType> dtype, std::optional<bool> copy) {
  if (py::isinstance<Tensor>(obj)) return tensor_asarray(obj.cast<const Tensor&>(), dtype, copy);
  if (std::optional<Tensor> scalar = python_scalar(obj, dtype, copy)) return *scalar;

  py::module_ np = py::module_::import("numpy");
  // numpy implements the Array API copy semantics for everything it accepts
  // (copy=False raises ValueError when a copy cannot be avoided).
  py::array arr = np.attr("asarray")(obj, py::arg("dtype") = dtype ? py::object(numpy_dtype(*dtype)) : py::none(),
                                     py::arg("copy") = py::cast(copy));
  if (std::optional<Tensor> shared = share_numpy_array(arr)) return *shared;

  TS_CHECK(copy != false, ValueError,
           "asarray(copy=False): the array's memory cannot be shared (it is read-only, unaligned or not in "
           "native byte order)");
  py::dtype native = arr.dtype().attr("newbyteorder")("=");
  py::array fresh = np.attr("array")(arr, py::arg("dtype") = native, py::arg("order") = "C", py::arg("copy") = true);
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
