// DLPack exchange (CPU, and CUDA where built with it): Tensor.__dlpack__ /
// __dlpack_device__ and ts.from_dlpack. Producers are asked for a versioned
// (1.x) capsule; legacy capsules are accepted from producers that predate it.
// CUDA streams follow the Array API: the consumer names its stream and the
// producer orders its pending work before anything queued there later.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "bindings.h"
#include "dlpack.h"
#include "tensorsmith/errors.h"
#ifdef TS_WITH_CUDA
#include <cuda_runtime_api.h>

#include "tensorsmith/cuda/device.h"
#include "tensorsmith/cuda/runtime.h"
#endif

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

DLDevice dl_device_of(Device d) {
  return d.type == DeviceType::CPU ? DLDevice{kDLCPU, 0} : DLDevice{kDLCUDA, d.index};
}

#ifdef TS_WITH_CUDA
// `second` waits for what `first` holds now (nothing to do when they are one stream).
void order_after(int device, cudaStream_t first, cudaStream_t second, const char* what) {
  if (first == second) return;
  cuda::DeviceGuard guard(device);
  cudaEvent_t ready;
  TS_CUDA_CHECK(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming), what);
  const cudaError_t recorded = cudaEventRecord(ready, first);
  const cudaError_t waited = recorded == cudaSuccess ? cudaStreamWaitEvent(second, ready, 0) : recorded;
  (void)cudaEventDestroy(ready);  // released once the wait is satisfied
  TS_CUDA_CHECK(waited, what);
}

// The Array API's stream argument for CUDA: None or 1 the legacy default
// stream, 2 the per-thread default stream, -1 no ordering, anything else a
// cudaStream_t. Work queued on the consumer's stream from now on runs after
// what this device's stream holds now. Returns the consumer's stream (nullopt
// for -1), which the export keeps for when the consumer lets go.
std::optional<cudaStream_t> order_for_consumer(int device, py::handle stream) {
  const int64_t s = stream.is_none() ? 1 : int_arg(stream, "stream");
  TS_CHECK(s != 0, ValueError,
           "__dlpack__: stream=0 is ambiguous for CUDA; pass 1 (legacy default stream), 2 (per-thread default "
           "stream), -1 (no synchronisation) or a cudaStream_t");
  if (s == -1) return std::nullopt;
  cudaStream_t consumer = s == 1   ? cudaStreamLegacy
                          : s == 2 ? cudaStreamPerThread
                                   : reinterpret_cast<cudaStream_t>(static_cast<uintptr_t>(s));
  order_after(device, cuda::current_stream(device), consumer, "__dlpack__ (ordering the consumer's stream)");
  return consumer;
}

// The consumer let go of an exported tensor: its stream may still hold work that reads it. Once the
// storage goes back to the pool our stream may reuse the block, so our stream first waits for the
// consumer's (or, where it asked for no ordering, for the whole device). A deleter cannot throw.
void release_after_consumer(int device, std::optional<cudaStream_t> consumer) noexcept {
  try {
    if (consumer) {
      order_after(device, *consumer, cuda::current_stream(device), "DLPack deleter (ordering our stream)");
    } else {
      cuda::DeviceGuard guard(device);
      (void)cudaDeviceSynchronize();
    }
  } catch (...) {  // a device that failed already said so where it failed
  }
}

// We let go of an imported tensor: kernels we queued may still read it, so our stream finishes them
// before the producer's deleter frees the memory.
void before_foreign_release(int device) noexcept {
  try {
    cuda::DeviceGuard guard(device);
    (void)cudaStreamSynchronize(cuda::current_stream(device));
  } catch (...) {
  }
}
#endif

// What an exported DLTensor points into; owned by the managed tensor.
struct ExportContext {
  Tensor tensor;
  Shape shape;  // what the DLTensor's shape and strides point into
  Strides strides;
#ifdef TS_WITH_CUDA
  std::optional<cudaStream_t> consumer;  // the stream the consumer named (CUDA tensors)
#endif
};

DLDataType dl_dtype(DType d) {
  const auto bits = static_cast<uint8_t>(itemsize(d) * 8);
  if (is_bool(d)) return {kDLBool, bits, 1};
  if (d == DType::BFloat16) return {kDLBfloat, bits, 1};
  if (is_floating(d)) return {kDLFloat, bits, 1};
  if (is_complex(d)) return {kDLComplex, bits, 1};  // bits of the whole element: 64 for complex64
  return {is_signed_integer(d) ? kDLInt : kDLUInt, bits, 1};
}

template <typename Managed>
void delete_exported(Managed* self) {
  auto* ctx = static_cast<ExportContext*>(self->manager_ctx);
#ifdef TS_WITH_CUDA
  if (ctx->tensor.device().type == DeviceType::CUDA) release_after_consumer(ctx->tensor.device().index, ctx->consumer);
#endif
  delete ctx;
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
py::capsule export_capsule(const Tensor& t, bool copied, ExportContext* ctx) {
  auto managed = std::make_unique<Managed>();
  managed->manager_ctx = ctx;
  managed->deleter = &delete_exported<Managed>;
  DLTensor& dl = managed->dl_tensor;
  dl.data = t.data_ptr();
  dl.device = dl_device_of(t.device());
  dl.ndim = static_cast<int32_t>(t.ndim());
  dl.dtype = dl_dtype(t.dtype());
  dl.shape = ctx->shape.data();
  dl.strides = ctx->strides.data();
  dl.byte_offset = 0;
  if constexpr (std::is_same_v<Managed, DLManagedTensorVersioned>) {
    managed->version = {kDLPackMajorVersion, kDLPackMinorVersion};
    managed->flags = (copied ? kFlagIsCopied : 0) | (t.writeable() ? 0 : kFlagReadOnly);
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
  Tensor t = self;
  bool copied = false;
  if (!dl_device.is_none()) {
    const auto device = py::reinterpret_borrow<py::sequence>(dl_device);
    const int64_t type = int_arg(device[0], "dl_device[0]"), index = int_arg(device[1], "dl_device[1]");
    const DLDevice ours = dl_device_of(self.device());
    if (type != ours.device_type || index != ours.device_id) {
      // The one other device a tensor can be exported to is the host, as a copy.
      if (type != kDLCPU || index != 0 || copy == false) {
        throw py::buffer_error("__dlpack__: a tensor on " + device_str(self.device()) +
                               " can only be exported to dl_device (" + std::to_string(ours.device_type) + ", " +
                               std::to_string(ours.device_id) + ")" +
                               (copy == false || ours.device_type == kDLCPU ? "" : " or, copied, (1, 0)") +
                               ", not " + std::string(py::repr(dl_device)));
      }
      t = to_device(self, Device{});
      copied = true;
    }
  }
  if (copy == true && !copied) {
    t = self.clone();
    copied = true;
  }
  auto ctx = std::make_unique<ExportContext>(ExportContext{t, t.shape(), t.strides()});
  if (t.device().type == DeviceType::CPU) {
    TS_CHECK(stream.is_none(), ValueError, "__dlpack__: stream must be None for a CPU tensor");
  } else {
#ifdef TS_WITH_CUDA
    ctx->consumer = order_for_consumer(t.device().index, stream);
#endif
  }
  const bool versioned =
      !max_version.is_none() && int_arg(py::reinterpret_borrow<py::sequence>(max_version)[0], "max_version[0]") >= 1;
  if (!versioned && !t.writeable()) {  // as numpy: a pre-1.0 capsule cannot say "read-only"
    throw py::buffer_error("__dlpack__: cannot export a read-only tensor (a broadcast view) in a DLPack 0.x capsule, "
                           "which cannot mark it read-only; the consumer must ask for DLPack 1.0 (max_version), or "
                           "pass copy=True");
  }
  return versioned ? export_capsule<DLManagedTensorVersioned>(t, copied, ctx.release())
                   : export_capsule<DLManagedTensor>(t, copied, ctx.release());
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
    case kDLComplex:
      if (t.bits == 64) return DType::Complex64;
      if (t.bits == 128) return DType::Complex128;
      break;
  }
  return std::nullopt;
}

// The tensorsmith device of a DLPack device, or a BufferError saying why it cannot be imported.
Device device_from_dl(int64_t type, int64_t index) {
  if (type == kDLCPU) return Device{};
  if (type != kDLCUDA) {
    throw py::buffer_error("from_dlpack(): DLPack device type " + std::to_string(type) +
                           " is not supported; tensorsmith imports CPU (1) and CUDA (2) tensors");
  }
#ifdef TS_WITH_CUDA
  if (index < 0 || index >= cuda::device_count()) {
    throw py::buffer_error("from_dlpack(): the tensor lives on CUDA device " + std::to_string(index) + ", but " +
                           (cuda::is_available() ? std::to_string(cuda::device_count()) + " CUDA device(s) are available"
                                                 : "no CUDA device/driver is available (" + cuda::unavailable_reason() + ")"));
  }
  return Device{DeviceType::CUDA, static_cast<int>(index)};
#else
  throw py::buffer_error("from_dlpack(): the tensor lives on a CUDA device (DLPack device type 2, index " +
                         std::to_string(index) + "); tensorsmith was built without CUDA and imports CPU tensors only");
#endif
}

Tensor tensor_from_dl(const DLTensor& dl, std::shared_ptr<void> owner) {
  const Device device = device_from_dl(dl.device.device_type, dl.device.device_id);
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
  return wrap_foreign_memory(origin, *dtype, std::move(shape), std::move(strides), std::move(owner), device);
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
#ifdef TS_WITH_CUDA
    if (m->dl_tensor.device.device_type == kDLCUDA) before_foreign_release(m->dl_tensor.device.device_id);
#endif
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
  const std::optional<Device> target = device.is_none() ? std::nullopt : std::optional<Device>(device_arg(device));
  TS_CHECK(py::hasattr(x, "__dlpack__"), TypeError,
           "from_dlpack() needs an object implementing the DLPack protocol (__dlpack__), not " << type_name(x));
  Device source{};
  if (py::hasattr(x, "__dlpack_device__")) {
    const auto dl_device = py::reinterpret_borrow<py::sequence>(x.attr("__dlpack_device__")());
    source = device_from_dl(int_arg(dl_device[0], "__dlpack_device__()[0]"), int_arg(dl_device[1], "__dlpack_device__()[1]"));
  }
  // A CUDA producer orders its work before what we queue on our stream later.
  py::object stream = py::none();
#ifdef TS_WITH_CUDA
  if (source.type == DeviceType::CUDA) {
    stream = py::int_(reinterpret_cast<uintptr_t>(cuda::current_stream(source.index)));
  }
#endif
  const bool moving = target && *target != source;
  TS_CHECK(!(moving && copy == false), ValueError,
           "from_dlpack(copy=False): moving data from " << device_str(source) << " to " << device_str(*target)
                                                        << " requires a copy");
  py::object capsule;
  const std::optional<bool> producer_copy = moving ? std::nullopt : copy;  // the move is the copy
  bool producer_copied = producer_copy == true;
  try {
    capsule = x.attr("__dlpack__")(py::arg("stream") = stream,
                                   py::arg("max_version") = py::make_tuple(kDLPackMajorVersion, kDLPackMinorVersion),
                                   py::arg("copy") = py::cast(producer_copy));
  } catch (py::error_already_set& e) {
    if (!e.matches(PyExc_TypeError)) throw;
    // Producers older than DLPack 1.0 take stream alone.
    capsule = source.type == DeviceType::CPU ? x.attr("__dlpack__")() : x.attr("__dlpack__")(py::arg("stream") = stream);
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
  // Read-only memory is copied: the tensor is then writeable, as any new tensor is.
  TS_CHECK(!(read_only && copy == false), ValueError,
           "from_dlpack(copy=False): the producer's memory is read-only and cannot be shared");
  if (moving) return to_device(t, *target);
  return (copy == true && !producer_copied) || read_only ? t.clone() : t;
}

}  // namespace

void bind_dlpack(py::module_& m, py::class_<Tensor>& cls) {
  cls.def("__dlpack__", &dlpack, py::kw_only(), py::arg("stream") = py::none(), py::arg("max_version") = py::none(),
          py::arg("dl_device") = py::none(), py::arg("copy") = py::none());
  cls.def("__dlpack_device__", [](const Tensor& t) {
    const DLDevice d = dl_device_of(t.device());
    return py::make_tuple(static_cast<int>(d.device_type), d.device_id);
  });

  m.def("from_dlpack", &from_dlpack, py::arg("x"), py::pos_only(), py::kw_only(), py::arg("device") = py::none(),
        py::arg("copy") = py::none(),
        "A tensor sharing memory with an object implementing the DLPack protocol (CPU, or CUDA where built\n"
        "with it); device= copies it to another device.");
}

}  // namespace ts::python
