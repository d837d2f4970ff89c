// Zero-copy exchange with numpy: tensors as numpy views (numpy(), __array__,
// the buffer protocol) and numpy arrays as tensors (used by asarray).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <vector>

#include "bindings.h"
#include "tensorsmith/errors.h"

namespace ts::python {

static std::vector<py::ssize_t> byte_strides(const Tensor& t) {
  std::vector<py::ssize_t> strides;
  for (int64_t s : t.strides()) strides.push_back(static_cast<py::ssize_t>(s * static_cast<int64_t>(t.itemsize())));
  return strides;
}

py::array numpy_view(const Tensor& t, py::handle owner) {
  TS_CHECK(t.device().type == DeviceType::CPU, TypeError,
           "cannot convert a tensor on " << device_str(t.device())
                                         << " to a numpy array: numpy reads host memory; call .cpu() first");
  std::vector<py::ssize_t> shape(t.shape().begin(), t.shape().end());
  py::array view(numpy_dtype(t.dtype()), shape, byte_strides(t), t.data_ptr(), owner);
  if (!t.writeable()) view.attr("flags").attr("writeable") = false;  // numpy must refuse the writes we refuse
  return view;
}

py::array numpy_view(const Tensor& t) { return numpy_view(t, py::cast(t)); }

py::array host_numpy(const Tensor& t) { return numpy_view(to_device(t, Device{})); }

constexpr bool kLittleEndian = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__;

std::optional<Tensor> share_numpy_array(const py::array& arr) {
  const DType dtype = dtype_from_numpy(arr.dtype());
  const auto item = static_cast<int64_t>(itemsize(dtype));
  char* data = static_cast<char*>(const_cast<void*>(arr.data()));
  // Kernels assume aligned, native-endian elements at whole-element strides; read-only memory
  // is copied, so a tensor made from it can be written as any new tensor can.
  const char order = arr.dtype().byteorder();  // '=' native, '|' no order (one byte), '<' or '>' explicit
  const bool native = order == '=' || order == '|' || order == (kLittleEndian ? '<' : '>');
  if (!native || !arr.writeable() ||
      reinterpret_cast<uintptr_t>(data) % static_cast<uintptr_t>(item) != 0) {
    return std::nullopt;
  }
  Shape shape;
  Strides strides;
  for (py::ssize_t i = 0; i < arr.ndim(); ++i) {
    if (arr.strides(i) % item != 0) return std::nullopt;
    shape.push_back(arr.shape(i));
    strides.push_back(arr.strides(i) / item);
  }
  return wrap_foreign_memory(data, dtype, std::move(shape), std::move(strides),
                             keep_alive(py::reinterpret_borrow<py::object>(arr)));
}

static const char* buffer_format(DType d) {
  switch (d) {
    case DType::Bool: return "?";
    case DType::Int8: return "b";
    case DType::Int16: return "h";
    case DType::Int32: return "i";
    case DType::Int64: return "q";
    case DType::UInt8: return "B";
    case DType::UInt16: return "H";
    case DType::UInt32: return "I";
    case DType::UInt64: return "Q";
    case DType::Float32: return "f";
    case DType::Float64: return "d";
    case DType::Float16: return "e";
    case DType::Complex64: return "Zf";
    case DType::Complex128: return "Zd";
    case DType::BFloat16: break;  // no PEP 3118 code: numpy reads it through __array__
  }
  throw py::buffer_error(std::string("a ") + dtype_name(d) + " tensor has no buffer-protocol format; use numpy.asarray(t)");
}

void bind_numpy_protocols(py::class_<Tensor>& cls) {
  cls.def("numpy", [](py::object self) { return numpy_view(self.cast<const Tensor&>(), self); },
          "A numpy array sharing this tensor's memory.");

  cls.def("__array__",
          [](py::object self, py::object dtype, py::object copy) {
            py::array view = numpy_view(self.cast<const Tensor&>(), self);
            // numpy applies dtype/copy with its own rules (copy=False + cast raises ValueError).
            return py::module_::import("numpy").attr("asarray")(view, py::arg("dtype") = dtype,
                                                                 py::arg("copy") = copy);
          },
          py::arg("dtype") = py::none(), py::arg("copy") = py::none());

  cls.def_buffer([](const Tensor& t) {
    TS_CHECK(t.device().type == DeviceType::CPU, TypeError,
             "a tensor on " << device_str(t.device()) << " has no host buffer; call .cpu() first");
    std::vector<py::ssize_t> shape(t.shape().begin(), t.shape().end());
    return py::buffer_info(t.data_ptr(), static_cast<py::ssize_t>(t.itemsize()), buffer_format(t.dtype()),
                           t.ndim(), shape, byte_strides(t), /*readonly=*/!t.writeable());
  });

  // ndarray binary operators defer to the tensor's reflected operators
  // (ndarray + tensor -> tensor), as they do for torch tensors.
  cls.attr("__array_priority__") = 1000;
}

}  // namespace ts::python
