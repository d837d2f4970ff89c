// Array API manipulation functions that map onto the core's views. Their bindings, stubs and
// differential tests come from their specs (specs/*.yaml with `implementation:`).
#include <pybind11/pybind11.h>

#include <algorithm>
#include <vector>

#include "bindings.h"
#include "tensorsmith/errors.h"
#include "tensorsmith/python.h"

namespace ts::python {

namespace {

std::optional<bool> optional_bool_arg(py::handle obj, const char* what) {
  if (obj.is_none()) return std::nullopt;
  TS_CHECK(PyBool_Check(obj.ptr()), TypeError, what << " must be True, False or None, not " << type_name(obj));
  return obj.ptr() == Py_True;
}

// A non-empty sequence of tensorsmith Tensors on one device.
std::vector<Tensor> tensor_list_arg(py::handle obj, const char* op) {
  TS_CHECK(PySequence_Check(obj.ptr()) && !py::isinstance<py::str>(obj), TypeError,
           op << ": arrays must be a sequence of Tensors, not " << type_name(obj));
  std::vector<Tensor> tensors;
  for (py::handle item : py::reinterpret_borrow<py::sequence>(obj)) {
    TS_CHECK(py::isinstance<Tensor>(item), TypeError, op << ": arrays must hold Tensors, but it holds a " << type_name(item));
    tensors.push_back(item.cast<Tensor>());
  }
  TS_CHECK(!tensors.empty(), ValueError, op << ": need at least one array");
  for (const Tensor& t : tensors) {
    TS_CHECK(t.device() == tensors[0].device(), ValueError,
             op << ": arrays on different devices (" << device_str(tensors[0].device()) << " and " << device_str(t.device()) << ")");
  }
  return tensors;
}

// The axes an int or a sequence of ints names, each normalised and at most once.
std::vector<int64_t> distinct_axes(py::handle obj, int64_t ndim, const char* what) {
  std::vector<int64_t> axes = int_sequence_arg(obj, what);
  for (size_t i = 0; i < axes.size(); ++i) {
    axes[i] = normalize_axis(axes[i], ndim);
    for (size_t j = 0; j < i; ++j) TS_CHECK(axes[j] != axes[i], ValueError, what << ": repeated axis " << axes[i]);
  }
  return axes;
}

}  // namespace

Tensor broadcast_to(const Tensor& x, py::handle shape) { return x.expand(int_sequence_arg(shape, "shape")); }

Tensor reshape(const Tensor& x, py::handle shape, py::handle copy_arg) {
  const Shape target = int_sequence_arg(shape, "shape");
  const std::optional<bool> copy = optional_bool_arg(copy_arg, "copy");
  Tensor out = x.reshape(target);
  const bool copied = out.storage() != x.storage();
  TS_CHECK(!(copied && copy == false), ValueError,
           "reshape(copy=False): this tensor of shape " << shape_str(x.shape()) << " cannot be viewed as shape "
                                                         << shape_str(target) << " (its strides require a copy)");
  return copy == true && !copied ? out.clone() : out;
}

Tensor permute_dims(const Tensor& x, py::handle axes) { return x.permute(int_sequence_arg(axes, "axes")); }

Tensor matrix_transpose(const Tensor& x) { return x.matrix_transpose(); }

Tensor expand_dims(const Tensor& x, py::handle axis) { return x.unsqueeze(int_arg(axis, "axis")); }

Tensor squeeze(const Tensor& x, py::handle axis) { return x.squeeze(int_sequence_arg(axis, "axis")); }

Tensor concat(py::handle arrays, py::handle axis_arg) {
  std::vector<Tensor> tensors = tensor_list_arg(arrays, "concat");
  if (axis_arg.is_none()) {  // flattened, in order
    for (Tensor& t : tensors) t = t.reshape({-1});
  }
  const int64_t ndim = tensors[0].ndim();
  TS_CHECK(ndim > 0, ValueError, "concat: zero-dimensional arrays cannot be concatenated");
  const int64_t axis = axis_arg.is_none() ? 0 : normalize_axis(int_arg(axis_arg, "axis"), ndim);
  Shape shape = tensors[0].shape();
  DType dtype = tensors[0].dtype();
  shape[axis] = 0;
  for (const Tensor& t : tensors) {
    TS_CHECK(t.ndim() == ndim, ValueError, "concat: all arrays need " << ndim << " dimensions, one has " << t.ndim());
    for (int64_t d = 0; d < ndim; ++d) {
      TS_CHECK(d == axis || t.shape()[d] == tensors[0].shape()[d], ValueError,
               "concat: shapes " << shape_str(tensors[0].shape()) << " and " << shape_str(t.shape()) << " differ outside axis " << axis);
    }
    shape[axis] += t.shape()[axis];
    dtype = promote_types(dtype, t.dtype());  // numpy's result_type of all of them
  }
  Tensor out = Tensor::empty(shape, dtype, tensors[0].device());
  int64_t start = 0;
  for (const Tensor& t : tensors) {
    out.slice(axis, start, start + t.shape()[axis], 1).copy_from(t);
    start += t.shape()[axis];
  }
  return out;
}

Tensor stack(py::handle arrays, py::handle axis_arg) {
  const std::vector<Tensor> tensors = tensor_list_arg(arrays, "stack");
  for (const Tensor& t : tensors) {
    TS_CHECK(t.shape() == tensors[0].shape(), ValueError,
             "stack: all arrays need the same shape, got " << shape_str(tensors[0].shape()) << " and " << shape_str(t.shape()));
  }
  const int64_t axis = normalize_axis(int_arg(axis_arg, "axis"), tensors[0].ndim() + 1);
  py::list expanded;
  for (const Tensor& t : tensors) expanded.append(py::cast(t.unsqueeze(axis)));
  return concat(expanded, py::int_(axis));
}

Tensor flip(const Tensor& x, py::handle axis) {
  std::vector<int64_t> axes;
  if (axis.is_none()) {
    for (int64_t d = 0; d < x.ndim(); ++d) axes.push_back(d);
  } else {
    axes = distinct_axes(axis, x.ndim(), "axis");
  }
  Tensor out = x;
  for (int64_t d : axes) out = out.slice(d, std::nullopt, std::nullopt, -1);  // a view, as numpy's
  return out;
}

Tensor moveaxis(const Tensor& x, py::handle source, py::handle destination) {
  const std::vector<int64_t> from = distinct_axes(source, x.ndim(), "source");
  const std::vector<int64_t> to = distinct_axes(destination, x.ndim(), "destination");
  TS_CHECK(from.size() == to.size(), ValueError,
           "moveaxis: source and destination must name as many axes (" << from.size() << " and " << to.size() << ")");
  // numpy's order: the axes not moved keep their order and fill the places not named by destination
  std::vector<int64_t> order(static_cast<size_t>(x.ndim()), -1), rest;
  for (int64_t d = 0; d < x.ndim(); ++d) {
    if (std::find(from.begin(), from.end(), d) == from.end()) rest.push_back(d);
  }
  for (size_t i = 0; i < from.size(); ++i) order[static_cast<size_t>(to[i])] = from[i];
  size_t next = 0;
  for (int64_t& slot : order) {
    if (slot < 0) slot = rest[next++];
  }
  return x.permute(order);
}

Tensor roll(const Tensor& x, py::handle shift_arg, py::handle axis_arg) {
  if (axis_arg.is_none()) {  // over the flattened tensor, then back to x's shape
    return roll(x.reshape({-1}), shift_arg, py::int_(0)).reshape(x.shape());
  }
  const std::vector<int64_t> axes = int_sequence_arg(axis_arg, "axis");
  std::vector<int64_t> shifts = int_sequence_arg(shift_arg, "shift");
  if (shifts.size() == 1 && axes.size() > 1) shifts.assign(axes.size(), shifts[0]);  // one shift for every axis
  TS_CHECK(shifts.size() == axes.size(), ValueError,
           "roll: shift and axis must have the same length (" << shifts.size() << " and " << axes.size() << ")");
  Tensor out = x.clone();
  for (size_t i = 0; i < axes.size(); ++i) {  // numpy adds the shifts of an axis named twice
    const int64_t axis = normalize_axis(axes[i], x.ndim());
    const int64_t n = out.shape()[axis];
    if (n == 0) continue;
    const int64_t k = ((shifts[i] % n) + n) % n;
    if (k == 0) continue;
    const Tensor before = out.clone();
    out.slice(axis, k, std::nullopt, 1).copy_from(before.slice(axis, std::nullopt, n - k, 1));
    out.slice(axis, std::nullopt, k, 1).copy_from(before.slice(axis, n - k, std::nullopt, 1));
  }
  return out;
}

}  // namespace ts::python
