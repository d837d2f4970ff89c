// DLPack exchange (CPU): Tensor.__dlpack__/__dlpack_device__ and ts.from_dlpack.
// Producers are asked for a versioned (1.x) capsule; legacy capsules are
// accepted from producers that predate it.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "bindings.h"
#include "dlpack.h"
#include "tensorsmith/errors.h"

namespace ts::python {

namespace {

using namespace ts::dlpack;

template <typename Managed>
struct Capsule;
template <>
struct Capsule<DLManagedTensor> {
  static constexpr const char* fresh = "dltensor";
  static constexpr const char* used = "used_dltensor";
};
template <>
struct Capsule<DLManagedTensorVersioned> {
  static constexpr const char* fresh = "dltensor_versioned";
  static constexpr const char* used = "used_dltensor_versioned";
};

// ---- export -------------------------------------------------------------------

// What an exported DLTensor points into; owned by the managed tensor.
struct ExportContext {
  Tensor tensor;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;
};

DLDataType dl_dtype(DType d) {
  const auto bits = static_cast<uint8_t>(itemsize(d) * 8);
  if (is_bool(d)) return {kDLBool, bits, 1};
  if (d == DType::BFloat16) return {kDLBfloat, bits, 1};
  if (is_floating(d)) return {kDLFloat, bits, 1};
  return {is_signed_integer(d) ? kDLInt : kDLUInt, bits, 1};
}

template <typename Managed>
void delete_exported(Managed* self) {
  delete static_cast<ExportContext*>(self->manager_ctx);
  delete self;
}

// Runs when the capsule dies; a consumer that took ownership renamed it.
template <typename Managed>
void capsule_destructor(PyObject* capsule) {
  if (PyCapsule_IsValid(capsule, Capsule<Managed>::used)) return;
  py::error_scope keep_pending_error;  // destructors may run while an exception is propagating
  auto* managed = static_cast<Managed*>(PyCapsule_GetPointer(capsule, Capsule<Managed>::fresh));
  if (managed == nullptr) {
    PyErr_WriteUnraisable(capsule);
  } else if (managed->deleter != nullptr) {
    managed->deleter(managed);
  }
}

template <typename Managed>
py::capsule export_capsule(const Tensor& t, bool copied) {
  auto managed = std::make_unique<Managed>();
  auto* ctx = new ExportContext{t, t.shape(), t.strides()};
  managed->manager_ctx = ctx;
  managed->deleter = &delete_exported<Managed>;
  DLTensor& dl = managed->dl_tensor;
  dl.data = t.data_ptr();
  dl.device = {kDLCPU, 0};
  dl.ndim = static_cast<int32_t>(t.ndim());
  dl.dtype = dl_dtype(t.dtype());
  dl.shape = ctx->shape.data();
  dl.strides = ctx->strides.data();
  dl.byte_offset = 0;
  if constexpr (std::is_same_v<Managed, DLManagedTensorVersioned>) {
    managed->version = {kDLPackMajorVersion, kDLPackMinorVersion};
    managed->flags = copied ? kFlagIsCopied : 0;
  }
  PyObject* capsule = PyCapsule_New(managed.get(), Capsule<Managed>::fresh, &capsule_destructor<Managed>);
  if (capsule == nullptr) {
    Managed* m = managed.release();
    m->deleter(m);
    throw py::error_already_set();
  }
  managed.release();
  return py::reinterpret_steal<py::capsule>(capsule);
}

py::capsule dlpack(const Tensor& self, py::handle stream, py::handle max_version, py::handle dl_device,
                   std::optional<bool> copy) {
  TS_CHECK(stream.is_none(), ValueError, "__dlpack__: stream must be None for a CPU tensor");
  if (!dl_device.is_none()) {
    const auto device = py::reinterpret_borrow<py::sequence>(dl_device);
    if (int_arg(device[0], "dl_device[0]") != kDLCPU || int_arg(device[1], "dl_device[1]") != 0) {
      throw py::buffer_error("__dlpack__: a CPU tensor can only be exported to dl_device (1, 0), not " +
                             std::string(py::repr(dl_device)));
    }
  }
  const bool copied = copy == true;
  const Tensor t = copied ? self.clone() : self;
  const bool versioned =
      !max_version.is_none() && int_arg(py::reinterpret_borrow<py::sequence>(max_version)[0], "max_version[0]") >= 1;
  return versioned ? export_capsule<DLManagedTensorVersioned>(t, copied) : export_capsule<DLManagedTensor>(t, copied);
}

// ---- import -------------------------------------------------------------------

std::optional<DType> dtype_from_dl(DLDataType t) {
  if (t.lanes != 1) return std::nullopt;
  switch (t.code) {
    case kDLBool:
      if (t.bits == 8) return DType::Bool;
      break;
    case kDLInt:
      switch (t.bits) {
        case 8: return DType::Int8;
        case 16: return DType::Int16;
        case 32: return DType::Int32;
        case 64: return DType::Int64;
      }
      break;
    case kDLUInt:
      switch (t.bits) {
        case 8: return DType::UInt8;
        case 16: return DType::UInt16;
        case 32: return DType::UInt32;
        case 64: return DType::UInt64;
      }
      break;
    case kDLFloat:
      if (t.bits == 16) return DType::Float16;
      if (t.bits == 32) return DType::Float32;
      if (t.bits == 64) return DType::Float64;
      break;
    case kDLBfloat:
      if (t.bits == 16) return DType::BFloat16;
      break;
  }
  return std::nullopt;
}

Tensor tensor_from_dl(const DLTensor& dl, std::shared_ptr<void> owner) {
  if (dl.device.device_type != kDLCPU) {
    throw py::buffer_error("from_dlpack(): the producer returned a tensor on DLPack device type " +
                           std::to_string(dl.device.device_type) + "; only CPU tensors can be imported");
  }
  const std::optional<DType> dtype = dtype_from_dl(dl.dtype);
  TS_CHECK(dtype, TypeError,
           "from_dlpack(): DLPack dtype (code " << int(dl.dtype.code) << ", bits " << int(dl.dtype.bits) << ", lanes "
                                                << dl.dtype.lanes << ") is not supported by tensorsmith");
  char* origin = static_cast<char*>(dl.data) + dl.byte_offset;
  if (reinterpret_cast<uintptr_t>(origin) % itemsize(*dtype) != 0) {
    throw py::buffer_error("from_dlpack(): the tensor's data is not aligned to its element size");
  }
  Shape shape(dl.shape, dl.shape + dl.ndim);
  Strides strides = dl.strides != nullptr ? Strides(dl.strides, dl.strides + dl.ndim) : contiguous_strides(shape);
  return wrap_foreign_memory(origin, *dtype, std::move(shape), std::move(strides), std::move(owner));
}

// Takes ownership of the capsule's managed tensor. `read_only` reports the
// versioned read-only flag.
template <typename Managed>
Tensor import_capsule(py::handle capsule, bool& read_only) {
  auto* managed = static_cast<Managed*>(PyCapsule_GetPointer(capsule.ptr(), Capsule<Managed>::fresh));
  if (managed == nullptr) throw py::error_already_set();
  if (PyCapsule_SetName(capsule.ptr(), Capsule<Managed>::used) != 0) throw py::error_already_set();
  std::shared_ptr<void> owner(managed, [](void* p) {
    auto* m = static_cast<Managed*>(p);
    if (m->deleter == nullptr || !Py_IsInitialized()) return;
    py::gil_scoped_acquire gil;  // producers' deleters may release Python objects
    m->deleter(m);
  });
  read_only = false;
  if constexpr (std::is_same_v<Managed, DLManagedTensorVersioned>) {
    if (managed->version.major != kDLPackMajorVersion) {
      throw py::buffer_error("from_dlpack(): unsupported DLPack major version " + std::to_string(managed->version.major));
    }
    read_only = (managed->flags & kFlagReadOnly) != 0;
  }
  return tensor_from_dl(managed->dl_tensor, std::move(owner));
}

Tensor from_dlpack(py::handle x, py::handle device, std::optional<bool> copy) {
  device_arg(device);  // validates only: imports land on the CPU
  TS_CHECK(py::hasattr(x, "__dlpack__"), TypeError,
           "from_dlpack() needs an object implementing the DLPack protocol (__dlpack__), not " << type_name(x));
  if (py::hasattr(x, "__dlpack_device__")) {
    const auto dl_device = py::reinterpret_borrow<py::sequence>(x.attr("__dlpack_device__")());
    const int64_t type = int_arg(dl_device[0], "__dlpack_device__()[0]");
    if (type != kDLCPU) {
      throw py::buffer_error("from_dlpack(): the object lives on DLPack device type " + std::to_string(type) +
                             "; tensorsmith was built without CUDA and imports CPU tensors only");
    }
  }
  py::object capsule;
  bool producer_copied = copy == true;
  try {
    capsule = x.attr("__dlpack__")(py::arg("max_version") = py::make_tuple(kDLPackMajorVersion, kDLPackMinorVersion),
                                   py::arg("copy") = py::cast(copy));
  } catch (py::error_already_set& e) {
    if (!e.matches(PyExc_TypeError)) throw;
    capsule = x.attr("__dlpack__")();  // producers older than DLPack 1.0 take no keywords
    producer_copied = false;
  }

  bool read_only = false;
  Tensor t;
  if (PyCapsule_IsValid(capsule.ptr(), Capsule<DLManagedTensorVersioned>::fresh)) {
    t = import_capsule<DLManagedTensorVersioned>(capsule, read_only);
  } else if (PyCapsule_IsValid(capsule.ptr(), Capsule<DLManagedTensor>::fresh)) {
    t = import_capsule<DLManagedTensor>(capsule, read_only);
  } else {
    throw ts::TypeError("from_dlpack(): " + type_name(x) + ".__dlpack__() did not return a DLPack capsule");
  }
  // Tensors have no read-only flag, so read-only memory is never shared.
  TS_CHECK(!(read_only && copy == false), ValueError,
           "from_dlpack(copy=False): the producer's memory is read-only and cannot be shared");
  return (copy == true && !producer_copied) || read_only ? t.clone() : t;
}

}  // namespace

void bind_dlpack(py::module_& m, py::class_<Tensor>& cls) {
  cls.def("__dlpack__", &dlpack, py::kw_only(), py::arg("stream") = py::none(), py::arg("max_version") = py::none(),
          py::arg("dl_device") = py::none(), py::arg("copy") = py::none());
  cls.def("__dlpack_device__", [](const Tensor&) { return py::make_tuple(static_cast<int>(kDLCPU), 0); });

  m.def("from_dlpack", &from_dlpack, py::arg("x"), py::pos_only(), py::kw_only(), py::arg("device") = py::none(),
        py::arg("copy") = py::none(),
        "A tensor sharing memory with an object implementing the DLPack protocol (CPU only).");
}

}  // namespace ts::python
