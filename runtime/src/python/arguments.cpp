// Conversion of Python arguments shared by the hand-written and the generated
// bindings: pointwise operands (NEP 50 weak scalars), axes and shapes.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <array>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "bindings.h"
#include "tensorsmith/autograd.h"
#include "tensorsmith/engine.h"
#include "tensorsmith/errors.h"
#include "tensorsmith/python.h"

namespace ts::python {

std::string type_name(py::handle obj) { return py::str(py::type::handle_of(obj).attr("__name__")); }

static bool is_int(py::handle obj) { return !PyBool_Check(obj.ptr()) && PyIndex_Check(obj.ptr()); }

int64_t int_arg(py::handle obj, const char* what) {
  TS_CHECK(is_int(obj), TypeError, what << " must be an int, not " << type_name(obj));
  const Py_ssize_t value = PyNumber_AsSsize_t(obj.ptr(), PyExc_OverflowError);
  if (value == -1 && PyErr_Occurred()) throw py::error_already_set();
  return value;
}

std::vector<int64_t> int_sequence_arg(py::handle obj, const char* what) {
  if (is_int(obj)) return {int_arg(obj, what)};
  TS_CHECK(PySequence_Check(obj.ptr()) && !py::isinstance<py::str>(obj), TypeError,
           what << " must be an int or a sequence of ints, not " << type_name(obj));
  std::vector<int64_t> values;
  for (py::handle item : py::reinterpret_borrow<py::sequence>(obj)) {
    TS_CHECK(is_int(item), TypeError, what << " must be an int or a sequence of ints, but it contains a " << type_name(item));
    values.push_back(int_arg(item, what));
  }
  return values;
}

std::vector<int64_t> ints_from_arguments(PyObject* const* items, Py_ssize_t count, const char* what) {
  TS_CHECK(count > 0, TypeError, what << " is required");
  if (count == 1) return int_sequence_arg(items[0], what);
  std::vector<int64_t> values;
  for (Py_ssize_t i = 0; i < count; ++i) values.push_back(int_arg(items[i], what));
  return values;
}

std::optional<std::vector<int64_t>> axes_arg(py::handle axis) {
  if (axis.is_none()) return std::nullopt;
  return int_sequence_arg(axis, "axis");
}

void require_default_numpy_keywords(py::handle dtype, py::handle out) {
  TS_CHECK(dtype.is_none(), TypeError, "dtype= is not supported by this reduction (sum and prod take it); cast with astype() first");
  TS_CHECK(out.is_none(), TypeError, "out= is not supported by tensorsmith reductions yet");
}

void refuse_inplace_on_grad(py::handle target, const char* what) {
  TS_CHECK(!(autograd::might_record() && autograd::requires_grad(target)), RuntimeError,
           what << ": a tensor that requires grad cannot be written in place while grad mode is on (its gradient "
                   "would be wrong); update it under ts.no_grad(), or compute a new tensor");
}

py::object pointwise_into(const OpDef& op, const std::vector<Tensor>& inputs, py::handle out) {
  int64_t elements = 0;
  for (const Tensor& t : inputs) elements += t.numel();
  if (out.is_none()) return tensor_object(without_gil_if_large(elements, [&] { return pointwise(op, inputs); }));
  py::handle target = out;
  if (py::isinstance<py::tuple>(out)) {  // numpy also takes out=(array,) for a one-output ufunc
    TS_CHECK(py::len(out) == 1, ValueError,
             op.name << ": out must be a Tensor or a tuple of one, got a tuple of " << py::len(out));
    target = py::reinterpret_borrow<py::tuple>(out)[0];
  }
  const Tensor* out_pointer = exact_tensor(target.ptr());  // Tensor is final: no subclass to look for
  TS_CHECK(out_pointer != nullptr, TypeError, op.name << ": out must be a tensorsmith Tensor, not " << type_name(target));
  const Tensor& out_tensor = *out_pointer;
  // numpy's check and words; a broadcast view is the one kind of read-only tensor.
  TS_CHECK(out_tensor.writeable(), ValueError,
           op.name << ": out is a broadcast view (a stride-0 axis) or a view of one: output array is read-only");
  refuse_inplace_on_grad(target, op.name.c_str());
  out_tensor.storage()->bump_version();
  without_gil_if_large(elements + out_tensor.numel(), [&] { return pointwise(op, inputs, out_tensor); });
  return py::reinterpret_borrow<py::object>(target);
}

py::object store_into(py::object self, const Tensor& result) {
  TS_CHECK(py::isinstance<Tensor>(self), TypeError, "in-place operator: the left operand must be a Tensor, not " << type_name(self));
  Tensor target = self.cast<Tensor>();  // shares self's storage
  TS_CHECK(result.shape() == target.shape(), ValueError,
           "in-place operator: the result's shape " << shape_str(result.shape()) << " is not the left operand's "
                                                    << shape_str(target.shape()));
  TS_CHECK(same_kind_castable(result.dtype(), target.dtype()), TypeError,
           "in-place operator: cannot cast the result from " << dtype_name(result.dtype()) << " to "
                                                             << dtype_name(target.dtype()) << " with casting rule 'same_kind'");
  TS_CHECK(target.writeable(), ValueError, "in-place operator: the left operand is a broadcast view: it is read-only");
  refuse_inplace_on_grad(self, "in-place operator");
  target.copy_from(result);
  return self;
}

std::optional<int64_t> axis_arg(py::handle axis) {
  if (axis.is_none()) return std::nullopt;
  return int_arg(axis, "axis");
}

namespace {

// Kinds ordered as NEP 50 compares them: a weak scalar adopts the tensors'
// dtype only when that dtype's kind is at least the scalar's.
enum class Kind { Bool = 0, Integer = 1, Floating = 2, Complex = 3 };

Kind kind_of(DType d) {
  if (is_complex(d)) return Kind::Complex;
  return is_bool(d) ? Kind::Bool : is_floating(d) ? Kind::Floating : Kind::Integer;
}

// Python bool/int/float, but not numpy scalars (np.float64 subclasses float),
// which are strongly typed.
std::optional<Kind> weak_scalar_kind(py::handle obj) {
  PyObject* p = obj.ptr();
  if (PyBool_Check(p)) return Kind::Bool;
  if (!PyLong_Check(p) && !PyFloat_Check(p) && !PyComplex_Check(p)) return std::nullopt;
  if (!PyLong_CheckExact(p) && !PyFloat_CheckExact(p) && !PyComplex_CheckExact(p) &&
      py::isinstance(obj, py::module_::import("numpy").attr("generic"))) {
    return std::nullopt;
  }
  if (PyComplex_Check(p)) return Kind::Complex;
  return PyLong_Check(p) ? Kind::Integer : Kind::Floating;
}

bool is_array_like(py::handle obj) {
  return py::isinstance<py::array>(obj) || py::isinstance<py::list>(obj) || py::isinstance<py::tuple>(obj) ||
         py::hasattr(obj, "__array__") || py::hasattr(obj, "__array_interface__") || PyObject_CheckBuffer(obj.ptr()) ||
         py::isinstance(obj, py::module_::import("numpy").attr("generic"));
}

// The 0-d tensor a weak scalar operand is written into: this thread's previous one of `dtype` when nothing
// else holds its memory any more (an operand lives only as long as its op call), else a new one. `t * 2.0`
// in a loop then allocates nothing for the 2.0.
Tensor scalar_operand(DType dtype) {
  thread_local std::array<Tensor, kNumDTypes> reusable;
  Tensor& kept = reusable[static_cast<size_t>(dtype)];
  if (!kept.defined() || kept.storage().use_count() != 1) kept = Tensor::empty({}, dtype);
  return kept;
}

// A 0-d tensor of `dtype` holding a Python scalar of `kind` (kind <= dtype's kind).
Tensor weak_scalar_tensor(py::handle obj, Kind kind, DType dtype) {
  Tensor t = scalar_operand(dtype);
  with_element_type(dtype, [&](auto zero) {
    using T = decltype(zero);
    T* out = reinterpret_cast<T*>(t.data_ptr());
    if (kind == Kind::Bool) {
      *out = static_cast<T>(obj.ptr() == Py_True);
    } else if (kind == Kind::Complex) {
      if constexpr (is_complex_v<T>) {
        const Py_complex v = PyComplex_AsCComplex(obj.ptr());
        if (v.real == -1.0 && PyErr_Occurred()) throw py::error_already_set();
        *out = T(complex128(v.real, v.imag));
      }
    } else if constexpr (is_floating_v<T> || is_complex_v<T>) {
      const double v = PyFloat_AsDouble(obj.ptr());  // ints too; OverflowError beyond the double range
      if (v == -1.0 && PyErr_Occurred()) throw py::error_already_set();
      *out = static_cast<T>(v);
    } else if constexpr (!std::is_same_v<T, bool>) {
      const std::optional<T> v = int_as<T>(obj);
      if (!v) throw std::overflow_error("Python integer " + std::string(py::str(obj)) + " out of bounds for " + dtype_name(dtype));
      *out = *v;
    }
  });
  return t;
}

bool int_fits(py::handle obj, DType dtype) {
  bool fits = false;
  with_element_type(dtype, [&](auto zero) {
    using T = decltype(zero);
    if constexpr (!is_complex_v<T>) fits = int_as<T>(obj).has_value();  // a complex dtype holds no Python int here
  });
  return fits;
}

// Whether a Python int is below zero (it may be far beyond int64).
bool is_negative(py::handle obj) {
  const int below = PyObject_RichCompareBool(obj.ptr(), py::int_(0).ptr(), Py_LT);
  if (below < 0) throw py::error_already_set();
  return below != 0;
}

constexpr double kInfinity = std::numeric_limits<double>::infinity();

Tensor float64_scalar(double value) {
  Tensor t = Tensor::empty({}, DType::Float64);
  *reinterpret_cast<double*>(t.data_ptr()) = value;
  return t;
}

// A Python int that does not fit the integer dtype promotion gave it. numpy raises OverflowError
// (as weak_scalar_tensor does), except where the result does not depend on that dtype holding it:
// - comparisons answer by value. Compared with an integer dtype, the int compares as the infinity of
//   its sign does with every value of it (exactly, in float64): uint64 < 2**64 is True, int8 == 1000
//   False. Compared with a float (1.5 < 2**70) it is converted as a float; compared with a bool
//   (a bool tensor, or a Python bool, which NEP 50 leaves strong) numpy raises;
// - true division divides by its value as a float64 (int64 / 2**64 is 2**-64);
// - logical ops take its truth value through int64 (beyond int64 numpy raises too).
Tensor out_of_range_int(const OpDef& op, py::handle obj, DType dtype, Kind compared_with) {
  switch (op.promotion) {
    case Promotion::Comparison:
      if (compared_with == Kind::Integer) return float64_scalar(is_negative(obj) ? -kInfinity : kInfinity);
      if (compared_with == Kind::Floating) return weak_scalar_tensor(obj, Kind::Integer, DType::Float64);
      break;
    case Promotion::BinaryFloat:
      return weak_scalar_tensor(obj, Kind::Integer, DType::Float64);
    case Promotion::Logical:
      return weak_scalar_tensor(obj, Kind::Integer, DType::Int64);
    default:
      break;
  }
  return weak_scalar_tensor(obj, Kind::Integer, dtype);  // OverflowError, as numpy
}

// Two Python ints compared, one beyond int64 (numpy compares them as Python objects): the sign of
// their difference compares with 0 as they compare with each other, in all six comparisons.
std::vector<Tensor> python_int_comparison(py::handle a, py::handle b) {
  const py::object difference = py::reinterpret_borrow<py::object>(a) - py::reinterpret_borrow<py::object>(b);
  const int64_t sign = is_negative(difference) ? -1 : difference.equal(py::int_(0)) ? 0 : 1;
  Tensor left = Tensor::empty({}, DType::Int64), right = Tensor::empty({}, DType::Int64);
  *reinterpret_cast<int64_t*>(left.data_ptr()) = sign;
  *reinterpret_cast<int64_t*>(right.data_ptr()) = 0;
  return {left, right};
}

bool beyond_int64(py::handle obj) { return !int_fits(obj, DType::Int64); }

// A Python scalar condition as numpy reads it: its truth value (2**70 and NaN are true).
Tensor truth_tensor(py::handle obj) {
  const int truth = PyObject_IsTrue(obj.ptr());
  if (truth < 0) throw py::error_already_set();
  Tensor t = Tensor::empty({}, DType::Bool);
  *reinterpret_cast<bool*>(t.data_ptr()) = truth != 0;
  return t;
}

// What weak operand i is promoted against: the tensors' kind, else the highest kind among the other
// Python scalars (an int among ints only is compared as int64).
Kind compared_kind(std::optional<DType> strong, const SmallVector<std::optional<Kind>, kMaxOperands>& weak, size_t i) {
  if (strong) return kind_of(*strong);
  std::optional<Kind> highest;
  for (size_t k = 0; k < weak.size(); ++k) {
    if (k != i && weak[k] && (!highest || *weak[k] > *highest)) highest = weak[k];
  }
  return highest.value_or(Kind::Integer);
}

DType default_dtype(Kind kind) {
  switch (kind) {
    case Kind::Bool: return DType::Bool;
    case Kind::Integer: return DType::Int64;
    case Kind::Floating: return DType::Float64;
    case Kind::Complex: return DType::Complex128;
  }
  return DType::Float64;  // unreachable: the switch covers every kind
}

// The dtype of a Python scalar of `kind` beside tensors of promoted dtype `strong` (NEP 50): theirs when their
// kind is at least the scalar's; a complex scalar beside real floats takes their precision (float32 + 1j is
// complex64, float16 + 1j too, as numpy); otherwise the kind's default.
DType weak_scalar_dtype(std::optional<DType> strong, Kind kind) {
  if (strong && kind_of(*strong) >= kind) return *strong;
  if (strong && kind == Kind::Complex && kind_of(*strong) == Kind::Floating) {
    return complex_dtype(promote_types(*strong, DType::Float32));
  }
  return default_dtype(kind);
}

}  // namespace

bool is_operand(py::handle obj) {
  return py::isinstance<Tensor>(obj) || weak_scalar_kind(obj) || is_array_like(obj);
}

// `t` on `device`: itself when already there, else a copy.
Tensor on_device(const Tensor& t, Device device) {
  if (t.device() == device) return t;
  Tensor moved = Tensor::empty(t.shape(), t.dtype(), device);
  moved.copy_from(t);
  return moved;
}

Tensor on_host(const Tensor& t) { return to_device(t, Device{}).contiguous(); }

std::vector<Tensor> tensor_operands(const OpDef& op, std::initializer_list<py::handle> arg_list,
                                    std::initializer_list<const char*> name_list) {
  const py::handle* args = arg_list.begin();
  const char* const* names = name_list.begin();
  std::vector<Tensor> operands(arg_list.size());
  SmallVector<std::optional<Kind>, kMaxOperands> weak(arg_list.size());
  std::optional<DType> strong;  // promoted dtype of the non-scalar operands
  bool all_tensors = true;
  for (size_t i = 0; i < arg_list.size(); ++i) {
    if (const Tensor* t = exact_tensor(args[i].ptr())) {
      operands[i] = *t;  // the common case first: a tensor is neither weak nor in need of a type lookup
    } else {
      weak[i] = weak_scalar_kind(args[i]);
      all_tensors = false;
    }
  }
  if (all_tensors) return operands;  // nothing to convert, and no scalar to place on the tensors' device
  if (op.promotion == Promotion::Comparison && arg_list.size() == 2 && weak[0] == Kind::Integer &&
      weak[1] == Kind::Integer && (beyond_int64(args[0]) || beyond_int64(args[1]))) {
    return python_int_comparison(args[0], args[1]);
  }
  for (size_t i = 0; i < arg_list.size(); ++i) {
    if (weak[i]) continue;
    if (!operands[i].defined()) {  // not an exact Tensor (those were taken above): a subclass or an array-like
      if (py::isinstance<Tensor>(args[i])) {
        operands[i] = args[i].cast<Tensor>();
      } else {
        TS_CHECK(is_array_like(args[i]), TypeError,
                 "argument '" << names[i] << "' must be a tensor, an array-like or a Python scalar, not "
                              << type_name(args[i]));
        operands[i] = asarray(args[i]);
      }
    }
    if (op.promotes(i)) strong = strong ? promote_types(*strong, operands[i].dtype()) : operands[i].dtype();
  }
  for (size_t i = 0; i < arg_list.size(); ++i) {
    if (!weak[i]) continue;
    if (!op.promotes(i)) {
      operands[i] = truth_tensor(args[i]);
      continue;
    }
    const DType dtype = weak_scalar_dtype(strong, *weak[i]);
    if (*weak[i] == Kind::Integer && is_integer(dtype) && !int_fits(args[i], dtype)) {
      operands[i] = out_of_range_int(op, args[i], dtype, compared_kind(strong, weak, i));
    } else {
      operands[i] = weak_scalar_tensor(args[i], *weak[i], dtype);
    }
  }
  // A Python scalar goes where the tensors are (x + 1 on a CUDA tensor): as a 0-d CPU tensor the engine
  // would refuse the mix of devices.
  std::optional<Device> device;
  for (size_t i = 0; i < operands.size() && !device; ++i) {
    if (!weak[i] && operands[i].device().type != DeviceType::CPU) device = operands[i].device();
  }
  for (size_t i = 0; device && i < operands.size(); ++i) {
    if (weak[i]) operands[i] = on_device(operands[i], *device);
  }
  return operands;
}

py::object clamp_int(py::handle value, DType dtype) {
  if (int_fits(value, dtype)) return py::reinterpret_borrow<py::object>(value);
  py::object limit;
  with_element_type(dtype, [&](auto zero) {
    using T = decltype(zero);
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      limit = py::int_(is_negative(value) ? std::numeric_limits<T>::min() : std::numeric_limits<T>::max());
    }
  });
  return limit;
}

}  // namespace ts::python
