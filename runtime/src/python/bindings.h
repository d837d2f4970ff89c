// Internal interface between the hand-written binding files of tensorsmith._C.
// The generated bindings only see tensorsmith/python.h.
#pragma once

#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include "tensorsmith/complex.h"
#include "tensorsmith/device.h"
#include "tensorsmith/dtype.h"
#include "tensorsmith/tensor.h"
#include "tensorsmith/tensor_caster.h"

namespace ts::python {

namespace py = pybind11;

// ---- module setup, in the order module.cpp calls them ----------------------
void register_exceptions(py::module_& m);
void bind_dtypes(py::module_& m);
void bind_devices(py::module_& m);
py::class_<Tensor> bind_tensor_class(py::module_& m);
void bind_indexing(py::class_<Tensor>& cls);
void bind_numpy_protocols(py::class_<Tensor>& cls);
void bind_dlpack(py::module_& m, py::class_<Tensor>& cls);
void bind_asarray(py::module_& m);
void bind_cuda(py::module_& m);  // the ts.cuda submodule and ts.build_info (every build)
void bind_autograd(py::module_& m, py::class_<Tensor>& cls);  // requires_grad, grad, backward, ... (autograd.cpp)
void bind_engine_settings(py::module_& m);  // get_num_threads, set_num_threads (engines.cpp)

// ---- construction (construction.cpp) ------------------------------------------------
// Every bound class is final and made through one of these, so that no Python code can get an
// instance whose C++ object was never constructed (pybind11 allows Cls.__new__(Cls) otherwise).
// A class only the runtime creates: Cls(...) and Cls.__new__(Cls) raise TypeError, saying `how` to get one.
void forbid_construction(py::handle cls, const char* how);
// A class whose __new__ is `factory(cls, ...)`, which returns a complete instance; __init__ adds nothing.
void construct_in_new(py::handle cls, const py::cpp_function& factory);

// ---- dtypes (dtypes.cpp) ------------------------------------------------------
// A DType, a numpy dtype, a numpy scalar type or a dtype name; TypeError otherwise.
DType dtype_arg(py::handle obj);
// The Python object of a dtype: the same one every time (ts.float32).
py::object dtype_object(DType d);
// TypeError naming the numpy dtype when tensorsmith has no equivalent.
DType dtype_from_numpy(const py::dtype& dt);
py::dtype numpy_dtype(DType dtype);
// f(T{}) for T the C++ type of a dtype's elements (bool, int8_t, ..., float16, complex128).
template <typename F>
decltype(auto) with_element_type(DType dtype, F&& f) {
  switch (dtype) {
    case DType::Bool: return f(bool{});
    case DType::Int8: return f(int8_t{});
    case DType::Int16: return f(int16_t{});
    case DType::Int32: return f(int32_t{});
    case DType::Int64: return f(int64_t{});
    case DType::UInt8: return f(uint8_t{});
    case DType::UInt16: return f(uint16_t{});
    case DType::UInt32: return f(uint32_t{});
    case DType::UInt64: return f(uint64_t{});
    case DType::Float32: return f(float{});
    case DType::Float64: return f(double{});
    case DType::Float16: return f(float16{});
    case DType::BFloat16: return f(bfloat16{});
    case DType::Complex64: return f(complex64{});
    case DType::Complex128: return f(complex128{});
  }
  throw std::logic_error("with_element_type: a DType outside the enumeration");
}

// The value of a Python int as T, or nullopt when it does not fit.
template <typename T>
std::optional<T> int_as(py::handle obj) {
  int overflow = 0;
  const long long v = PyLong_AsLongLongAndOverflow(obj.ptr(), &overflow);
  if (v == -1 && PyErr_Occurred()) throw py::error_already_set();
  if (overflow == 0) {
    using Limits = std::numeric_limits<T>;
    const bool fits = std::is_signed_v<T> ? v >= static_cast<long long>(Limits::min()) && v <= static_cast<long long>(Limits::max())
                                          : v >= 0 && static_cast<unsigned long long>(v) <= Limits::max();
    return fits ? std::optional<T>(static_cast<T>(v)) : std::nullopt;
  }
  if (overflow < 0 || !std::is_same_v<T, uint64_t>) return std::nullopt;
  const unsigned long long u = PyLong_AsUnsignedLongLong(obj.ptr());
  if (u == static_cast<unsigned long long>(-1) && PyErr_Occurred()) {
    PyErr_Clear();  // beyond uint64 too
    return std::nullopt;
  }
  return static_cast<T>(u);
}

// ---- devices (devices.cpp) ---------------------------------------------------
// None (CPU), a Device or a device string; ValueError for a device this build
// or this machine lacks ("built without CUDA" / "no CUDA device/driver available").
Device device_arg(py::handle obj);
// The tensor on `device`: itself when it is there already, else a contiguous copy.
Tensor to_device(const Tensor& t, Device device);

// ---- numpy interop (numpy_interop.cpp) ----------------------------------------
// A numpy array viewing the tensor's memory; `owner` (a Python object holding
// the tensor) becomes the array's base and keeps the memory alive. TypeError
// for a tensor on a CUDA device (numpy reads host memory only).
py::array numpy_view(const Tensor& t, py::handle owner);
py::array numpy_view(const Tensor& t);
// A numpy view of the tensor's values on the host: a view for a CPU tensor, a
// copy to the host for a CUDA one (for item, tolist, repr).
py::array host_numpy(const Tensor& t);
// A tensor sharing the array's memory (the array is kept alive by the storage),
// or nullopt when the array's layout cannot be shared (unaligned, byte strides
// that are not a multiple of the itemsize, read-only, non-native byte order).
std::optional<Tensor> share_numpy_array(const py::array& arr);

// ---- foreign memory (foreign_memory.cpp) ------------------------------------------
// Keeps a Python object alive from C++ (a Storage owner). Releasing it takes
// the GIL, since the last tensor may die on a thread that does not hold it.
std::shared_ptr<void> keep_alive(py::object obj);
// A tensor on `device` over memory kept alive by `owner`; `origin` is element
// [0, ..., 0] and strides are in elements.
Tensor wrap_foreign_memory(char* origin, DType dtype, Shape shape, Strides strides, std::shared_ptr<void> owner,
                           Device device = Device{});

// ---- asarray (asarray.cpp) ------------------------------------------------------
// Array API asarray on the CPU; `copy` is None/True/False with Array API semantics.
Tensor asarray(py::handle obj, std::optional<DType> dtype = std::nullopt, std::optional<bool> copy = std::nullopt);

// ---- autograd (autograd.cpp, arguments.cpp) ------------------------------------------
// RuntimeError when `target` (an in-place write's destination) requires grad and grad mode is on.
void refuse_inplace_on_grad(py::handle target, const char* what);

// ---- argument conversion (arguments.cpp, with the python.h helpers) ------------
// An int (operator.index; bools are rejected) / an int or a sequence of ints.
// `what` names the argument in the TypeError.
int64_t int_arg(py::handle obj, const char* what);
std::vector<int64_t> int_sequence_arg(py::handle obj, const char* what);
// Ints given as a call's arguments, as reshape(2, 3) and reshape((2, 3)) take them: one int or sequence of
// ints, or several ints; none is a TypeError.
std::vector<int64_t> ints_from_arguments(PyObject* const* items, Py_ssize_t count, const char* what);
// A Python int taken at the nearer limit of the integer dtype where it does not fit it (numpy 2's clip
// bounds); a value that fits as it is.
py::object clamp_int(py::handle value, DType dtype);
// The type name of obj, for error messages.
std::string type_name(py::handle obj);
// `t` on `device`: itself when already there, else a copy.
Tensor on_device(const Tensor& t, Device device);
// t's values in host memory, contiguous (itself where it is both already).
Tensor on_host(const Tensor& t);

// ---- the GIL (engines.cpp) ------------------------------------------------------------
// Elements of input from which an engine runs without the GIL: below, releasing and taking it back would
// cost more than another thread could gain (numpy releases it from 500 elements, for its loops only).
constexpr int64_t kReleaseGilElements = 4096;
// Releases the GIL for its lifetime. Taking it back while another Python thread holds it would put this thread
// to sleep until that thread releases it, and a sleeping thread takes long to wake (tens of microseconds on a
// VM's idle CPU: as long as a 16K-element op); so where another thread runs engines too, the GIL is taken back
// once that thread has released it for its next engine (polling for up to kGilHandOverSpin first).
class GilReleased {
 public:
  GilReleased();
  ~GilReleased();
  GilReleased(const GilReleased&) = delete;
  GilReleased& operator=(const GilReleased&) = delete;

 private:
  PyThreadState* state_;
  uint64_t release_;  // this release's number among every thread's releases
  bool others_;       // another thread released the GIL for an engine since this thread's previous release
};
// run(), without the GIL when `elements` reach kReleaseGilElements. run() must touch no Python object.
template <typename Run>
auto without_gil_if_large(int64_t elements, Run run) {
  if (elements < kReleaseGilElements) return run();
  GilReleased released;
  return run();
}

// ---- tensor objects (tensor_objects.cpp; tensor_object is declared in tensorsmith/tensor_caster.h) ---
// The Tensor inside `obj` when obj is a Tensor itself (not a subclass), else null; no pybind11 type lookup.
const Tensor* exact_tensor(PyObject* obj);
// Makes tensor_object's objects unregistered and the Tensor type's tp_dealloc free them directly, where pybind11
// lays the class out as tensor_object assumes (checked; returns whether it does); once, right after the class is
// created.
bool install_tensor_objects(py::handle cls);

// ---- operands (arguments.cpp) -----------------------------------------------------------
// Whether the ops take `obj` as an operand: a tensor, a Python or numpy scalar, or an array-like.
bool is_operand(py::handle obj);

// ---- creation (creation.cpp) ------------------------------------------------------------
// A new tensor of zeros.
Tensor zero_filled(const Shape& shape, DType dtype, Device device);

// ---- indexing (indexing.cpp) ------------------------------------------------------------
// self[key] as __getitem__ computes it (a view for basic keys, a gather for index arrays and masks).
Tensor get_item(const Tensor& self, py::handle key);
// _C._scatter_view: zeros holding a value at a basic index (the recorded gradient of x[key]).
void bind_scatter_view(py::module_& m);

// ---- fast calls (fast_calls.cpp; the pointwise ones are declared in tensorsmith/python.h) ---------
// A C-level Tensor.__getitem__ in front of pybind11's, for keys of any kind while nothing records gradients.
void fast_getitem(py::handle cls);
void fast_views(py::handle cls);  // t.T and t.mT
void fast_reshape(py::handle cls);  // t.reshape(*shape)
void fast_copies(py::module_& m, py::handle cls);  // t.copy(), t.astype(dtype), and m._fast_astype for ts.astype
// Every module function and Tensor method pybind11 binds with one overload and a keyword-able argument (all but
// the fast entries above and dunder methods) gets an entry that places keyword arguments itself (pybind11 makes
// a string of each argument's name on every call).
void fast_keywords(py::module_& m, py::handle cls);
// The Tensor type's operator slots (binary, unary, comparisons) run the fast entries of its operators straight
// from the slot; called once every operator is bound (setting a dunder afterwards resets its slot, as Python does).
void fast_operator_slots(py::handle cls);

}  // namespace ts::python
