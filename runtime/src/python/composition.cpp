// Array API functions composed of the catalog's generated ops (specs with `implementation:`): clip, diff,
// var, std, count_nonzero, vecdot, tensordot; and layer_norm, gelu and cross_entropy, which ts.nn needs. Each
// runs the engines on whatever device its inputs are on, so CPU and CUDA agree by construction; their
// bindings, stubs and differential tests come from the specs.
#include <pybind11/pybind11.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "bindings.h"
#include "tensorsmith/dispatch.h"
#include "tensorsmith/engine.h"
#include "tensorsmith/errors.h"
#include "tensorsmith/python.h"

namespace ts::python {

namespace {

const OpDef& op(const char* name) { return Registry::global().get(name); }

Tensor apply(const char* name, const std::vector<Tensor>& inputs) { return pointwise(op(name), inputs); }

// The op on x and an operand that is a tensor or a Python scalar (which takes part in promotion as the op's
// weak scalars do); `what` names the operand in errors.
Tensor apply(const char* name, const Tensor& x, py::handle operand, const char* what) {
  return pointwise(op(name), tensor_operands(op(name), {py::cast(x), operand}, {"x", what}));
}

// A Python int or float (not a bool) as a double; TypeError naming `what` otherwise.
double real_arg(py::handle value, const char* what) {
  TS_CHECK((PyLong_Check(value.ptr()) || PyFloat_Check(value.ptr())) && !PyBool_Check(value.ptr()), TypeError,
           what << " must be an int or a float, not " << type_name(value));
  return value.cast<double>();
}

// numpy's var: the mean (kept as an axis of 1), the squared deviations summed, divided by max(N - correction,
// 0). Integers and bool in float64 (the dtype of their mean); float16 and bfloat16 in float32, rounded at the end;
// a complex deviation's square is its squared magnitude, the real part of d * conj(d) (numpy's), so the result
// is real.
Tensor numpy_var(const Tensor& input, py::handle axis, py::handle correction, bool keepdims) {
  const std::optional<std::vector<int64_t>> axes = axes_arg(axis);
  const double ddof = real_arg(correction, "correction");
  const bool half = input.dtype() == DType::Float16 || input.dtype() == DType::BFloat16;
  const Tensor x = half ? input.astype(DType::Float32) : input;
  const Tensor mean = python::reduce(op("mean"), x, axes, true, py::none());  // checks the axes
  int64_t count = 1;  // the elements each mean is of: x's extent where mean keeps a 1
  for (int64_t i = 0; i < x.ndim(); ++i) count *= mean.shape()[i] == 1 ? x.shape()[i] : 1;
  const Tensor deviation = apply("subtract", {x, mean});
  const Tensor squared = is_complex(x.dtype()) ? apply("real", {apply("multiply", {deviation, apply("conj", {deviation})})})
                                                : apply("multiply", {deviation, deviation});
  const Tensor squares = python::reduce(op("sum"), squared, axes, keepdims, py::none());
  const Tensor result =
      apply("divide", squares, py::float_(std::max(static_cast<double>(count) - ddof, 0.0)), "correction");
  return half ? result.astype(input.dtype()) : result;
}

// The axes of a tensordot: an int N (x1's last N with x2's first N) or a pair of sequences of axes.
std::pair<std::vector<int64_t>, std::vector<int64_t>> tensordot_axes(py::handle axes, int64_t ndim1, int64_t ndim2) {
  std::vector<int64_t> first, second;
  if (PyLong_Check(axes.ptr()) && !PyBool_Check(axes.ptr())) {
    const int64_t n = int_arg(axes, "axes");
    TS_CHECK(n >= 0, ValueError, "tensordot: axes must be non-negative, not " << n);
    TS_CHECK(n <= ndim1 && n <= ndim2, ValueError,
             "tensordot: axes=" << n << " exceeds the dimensions of x1 (" << ndim1 << ") or x2 (" << ndim2 << ")");
    for (int64_t i = 0; i < n; ++i) {
      first.push_back(ndim1 - n + i);
      second.push_back(i);
    }
    return {first, second};
  }
  TS_CHECK(PySequence_Check(axes.ptr()) && !py::isinstance<py::str>(axes) && py::len(axes) == 2, TypeError,
           "tensordot: axes must be an int or a pair of sequences of axes, not " << type_name(axes));
  const py::sequence pair = py::reinterpret_borrow<py::sequence>(axes);
  first = int_sequence_arg(pair[0], "axes[0]");
  second = int_sequence_arg(pair[1], "axes[1]");
  TS_CHECK(first.size() == second.size(), ValueError,
           "tensordot: axes name " << first.size() << " axes of x1 and " << second.size() << " of x2");
  return {first, second};
}

// The axes of a tensor not in `taken`, in order.
std::vector<int64_t> free_axes(int64_t ndim, const std::vector<int64_t>& taken) {
  std::vector<int64_t> free;
  for (int64_t a = 0; a < ndim; ++a) {
    if (std::find(taken.begin(), taken.end(), a) == taken.end()) free.push_back(a);
  }
  return free;
}

}  // namespace

Tensor clip(const Tensor& x, py::handle min, py::handle max) {
  Tensor out = x;
  // A Python int bound beyond x's integer dtype is taken at its limit, as numpy 2's clip does (not OverflowError).
  const auto bound = [&](py::handle b) {
    return is_integer(x.dtype()) && PyLong_Check(b.ptr()) && !PyBool_Check(b.ptr()) ? clamp_int(b, x.dtype())
                                                                                     : py::reinterpret_borrow<py::object>(b);
  };
  if (!min.is_none()) out = apply("maximum", out, bound(min), "min");
  if (!max.is_none()) out = apply("minimum", out, bound(max), "max");
  return min.is_none() && max.is_none() ? x.clone() : out;
}

Tensor diff(const Tensor& x, py::handle axis_arg, py::handle n_arg, py::handle prepend, py::handle append) {
  TS_CHECK(x.ndim() >= 1, ValueError, "diff: x must have at least one dimension");
  const int64_t axis = normalize_axis(int_arg(axis_arg, "axis"), x.ndim());
  const int64_t n = int_arg(n_arg, "n");
  TS_CHECK(n >= 0, ValueError, "diff: order n must be non-negative, not " << n);
  Tensor out = x;
  if (!prepend.is_none() || !append.is_none()) {
    py::list parts;
    const py::object x_object = py::cast(x);  // alive while the handles below refer to it
    for (py::handle part : {prepend, py::handle(x_object), append}) {
      if (part.is_none()) continue;
      TS_CHECK(py::isinstance<Tensor>(part), TypeError, "diff: prepend and append must be Tensors, not " << type_name(part));
      parts.append(part);
    }
    out = concat(parts, py::int_(axis));
  }
  if (n == 0) return out.clone();
  const char* difference = out.dtype() == DType::Bool ? "not_equal" : "subtract";  // numpy: bool differences are !=
  for (int64_t i = 0; i < n && out.shape()[axis] > 0; ++i) {  // n beyond the length: empty along axis
    out = apply(difference, {out.slice(axis, 1, std::nullopt, 1), out.slice(axis, std::nullopt, -1, 1)});
  }
  return out;
}

Tensor variance(const Tensor& x, py::handle axis, py::handle correction, py::handle keepdims) {
  return numpy_var(x, axis, correction, keepdims.cast<bool>());
}

Tensor standard_deviation(const Tensor& x, py::handle axis, py::handle correction, py::handle keepdims) {
  return pointwise(op("sqrt"), {numpy_var(x, axis, correction, keepdims.cast<bool>())});
}

Tensor layer_norm(const Tensor& x, py::handle normalized_shape, py::handle weight, py::handle bias, py::handle eps) {
  const std::vector<int64_t> shape = int_sequence_arg(normalized_shape, "normalized_shape");
  const auto trailing = static_cast<int64_t>(shape.size());
  TS_CHECK(trailing <= x.ndim() && std::equal(shape.begin(), shape.end(), x.shape().end() - trailing), ValueError,
           "layer_norm: normalized_shape " << shape_str(Shape(shape.begin(), shape.end()))
                                           << " does not match the trailing dimensions of an input of shape "
                                           << shape_str(x.shape()));
  const double epsilon = real_arg(eps, "layer_norm: eps");
  TS_CHECK(!is_complex(x.dtype()), NotImplementedError,
           "layer_norm: " << dtype_name(x.dtype())
                          << " inputs are not supported (the variance it divides by is of real numbers; "
                             "PyTorch's layer_norm takes no complex input either)");
  // The trailing dimensions as one last axis of rows, standardized in one pass (the spec _standardize; integers
  // and bool in float64, the dtype of their mean); weight and bias after. One op for autograd: its formulas
  // take the backward in one node, through _standardize_grad.
  Shape rows(x.shape().begin(), x.shape().end() - trailing);
  int64_t row_length = 1;
  for (int64_t n : shape) row_length *= n;
  rows.push_back(row_length);
  const bool exact_values = is_integer(x.dtype()) || x.dtype() == DType::Bool;
  const Tensor input = (exact_values ? x.astype(DType::Float64) : x).reshape(rows);
  Tensor y = python::standardize(op("_standardize"), {input}, epsilon).reshape(x.shape());
  if (!weight.is_none()) y = apply("multiply", y, weight, "weight");
  return bias.is_none() ? y : apply("add", y, bias, "bias");
}

Tensor gelu(const Tensor& x, py::handle approximate_arg) {
  const std::string approximate = py::isinstance<py::str>(approximate_arg) ? approximate_arg.cast<std::string>() : "";
  TS_CHECK(approximate == "none" || approximate == "tanh", ValueError,
           "gelu: approximate must be 'none' or 'tanh', not " << py::repr(approximate_arg).cast<std::string>());
  if (approximate == "tanh") {
    // One kernel, one pass (the spec _gelu_tanh); integers and bool in float64, as x * 0.5 takes them below.
    const bool exact_values = is_integer(x.dtype()) || x.dtype() == DType::Bool;
    return apply("_gelu_tanh", {exact_values ? x.astype(DType::Float64) : x});
  }
  const Tensor cdf = apply("add", apply("erf", {apply("multiply", x, py::float_(std::sqrt(0.5)), "1 / sqrt(2)")}),
                           py::float_(1.0), "1");
  return apply("multiply", {apply("multiply", x, py::float_(0.5), "0.5"), cdf});
}

Tensor cross_entropy(const Tensor& logits, const Tensor& target, py::handle ignore_index_arg, py::handle reduction_arg,
                     py::handle label_smoothing_arg) {
  const int64_t ignore_index = int_arg(ignore_index_arg, "ignore_index");
  const std::string reduction = py::isinstance<py::str>(reduction_arg) ? reduction_arg.cast<std::string>() : "";
  TS_CHECK(reduction == "mean" || reduction == "sum" || reduction == "none", ValueError,
           "cross_entropy: reduction must be 'mean', 'sum' or 'none', not "
               << py::repr(reduction_arg).cast<std::string>());
  const double smoothing = real_arg(label_smoothing_arg, "cross_entropy: label_smoothing");
  TS_CHECK(smoothing >= 0.0 && smoothing <= 1.0, ValueError,
           "cross_entropy: label_smoothing must be in [0, 1], not " << smoothing);
  TS_CHECK(logits.ndim() >= 1, ValueError, "cross_entropy: logits need a class axis (at least one dimension)");
  TS_CHECK(!is_complex(logits.dtype()), NotImplementedError,
           "cross_entropy: " << dtype_name(logits.dtype()) << " logits are not supported (PyTorch's take none either)");
  TS_CHECK(is_integer(target.dtype()), TypeError,
           "cross_entropy: target must hold integer class indices, not " << dtype_name(target.dtype()));
  const Shape rows(logits.shape().begin(), logits.shape().end() - 1);
  TS_CHECK(target.shape() == rows, ValueError,
           "cross_entropy: target of shape " << shape_str(target.shape()) << " does not match logits of shape "
                                             << shape_str(logits.shape()) << " (one class index per row, shape "
                                             << shape_str(rows) << ")");
  // Each row's -log p at its target, gathered by position from the rows of log_softmax (no one-hot mask of
  // the logits' size); an ignored row's position is its first class, masked out below.
  const int64_t classes = logits.shape().back();
  TS_CHECK(classes > 0 || target.numel() == 0, ValueError,
           "cross_entropy: logits of shape " << shape_str(logits.shape()) << " have no classes");
  const Tensor targets = on_host(target.astype(DType::Int64));
  const auto* values = reinterpret_cast<const int64_t*>(targets.data_ptr());
  std::vector<int64_t> positions(static_cast<size_t>(targets.numel()));
  for (size_t i = 0; i < positions.size(); ++i) {
    const int64_t t = values[i];
    TS_CHECK(t == ignore_index || (t >= 0 && t < classes), IndexError,
             "cross_entropy: target " << t << " is out of bounds for " << classes
                                      << " classes (and is not ignore_index " << ignore_index << ")");
    positions[i] = static_cast<int64_t>(i) * classes + (t == ignore_index ? 0 : t);
  }
  const Tensor log_p = python::normalize(op("log_softmax"), logits, -1);
  Tensor loss = apply("negative", {gather(log_p.reshape({log_p.numel()}), 0, positions).reshape(rows)});
  if (smoothing > 0.0) {
    const Tensor mean = python::reduce(op("mean"), log_p, std::vector<int64_t>{-1}, false, py::none());
    loss = apply("subtract", {apply("multiply", loss, py::float_(1.0 - smoothing), "1 - label_smoothing"),
                              apply("multiply", mean, py::float_(smoothing), "label_smoothing")});
  }
  const Tensor valid = apply("not_equal", target, py::int_(ignore_index), "ignore_index");
  loss = pointwise(op("where"), tensor_operands(op("where"), {py::cast(valid), py::cast(loss), py::float_(0.0)},
                                                {"condition", "loss", "0"}));
  if (reduction == "none") return loss;
  const Tensor total = python::reduce(op("sum"), loss, std::nullopt, false, py::none());
  if (reduction == "sum") return total;
  const Tensor counted = python::reduce(op("sum"), valid.astype(total.dtype()), std::nullopt, false, py::none());
  return apply("divide", {total, counted});
}

Tensor count_nonzero(const Tensor& x, py::handle axis, py::handle keepdims) {
  const Tensor nonzero = apply("not_equal", x, py::int_(0), "0");
  return python::reduce(op("sum"), nonzero, axes_arg(axis), keepdims.cast<bool>(), py::none());
}

Tensor vecdot(const Tensor& x1, const Tensor& x2, py::handle axis_arg) {
  const int64_t axis = int_arg(axis_arg, "axis");
  TS_CHECK(x1.ndim() >= 1 && x2.ndim() >= 1, ValueError, "vecdot: x1 and x2 must have at least one dimension");
  const Tensor a = moveaxis(x1, py::int_(axis), py::int_(-1));
  const Tensor b = moveaxis(x2, py::int_(axis), py::int_(-1));
  TS_CHECK(a.shape().back() == b.shape().back(), ValueError,
           "vecdot: the vectors along axis " << axis << " have lengths " << a.shape().back() << " and " << b.shape().back());
  // x1's complex conjugate, as numpy's and the Array API's vecdot: <x1, x2> of complex vectors.
  const Tensor products = apply("multiply", {is_complex(a.dtype()) ? apply("conj", {a}) : a, b});
  // Summed in sum's dtype (int64 for small integers, which wrap back to the same bits numpy's own loop
  // gives; bool counts, whose truth is numpy's or), then in the promoted dtype.
  const Tensor sums = python::reduce(op("sum"), products, std::vector<int64_t>{-1}, false, py::none());
  return sums.dtype() == products.dtype() ? sums : sums.astype(products.dtype());
}

Tensor tensordot(const Tensor& x1, const Tensor& x2, py::handle axes) {
  auto [first, second] = tensordot_axes(axes, x1.ndim(), x2.ndim());
  int64_t k = 1;
  for (size_t i = 0; i < first.size(); ++i) {
    first[i] = normalize_axis(first[i], x1.ndim());
    second[i] = normalize_axis(second[i], x2.ndim());
    TS_CHECK(x1.shape()[first[i]] == x2.shape()[second[i]], ValueError,
             "tensordot: shape-mismatch for sum: x1 axis " << first[i] << " has " << x1.shape()[first[i]]
                                                           << " elements, x2 axis " << second[i] << " has " << x2.shape()[second[i]]);
    k *= x1.shape()[first[i]];
  }
  const std::vector<int64_t> free1 = free_axes(x1.ndim(), first), free2 = free_axes(x2.ndim(), second);
  TS_CHECK(free1.size() + first.size() == static_cast<size_t>(x1.ndim()) &&
               free2.size() + second.size() == static_cast<size_t>(x2.ndim()),
           ValueError, "tensordot: an axis is named twice");
  Shape shape;
  int64_t m = 1, n = 1;
  for (int64_t a : free1) {
    shape.push_back(x1.shape()[a]);
    m *= x1.shape()[a];
  }
  for (int64_t a : free2) {
    shape.push_back(x2.shape()[a]);
    n *= x2.shape()[a];
  }
  std::vector<int64_t> order1 = free1, order2 = second;
  order1.insert(order1.end(), first.begin(), first.end());
  order2.insert(order2.end(), free2.begin(), free2.end());
  const Tensor a = x1.permute(order1).reshape({m, k});
  const Tensor b = x2.permute(order2).reshape({k, n});
  return python::contract(op("matmul"), a, b).reshape(shape);
}

}  // namespace ts::python
