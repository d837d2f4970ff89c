// Array API manipulation functions that map onto the core's views. Their bindings, stubs and
// differential tests come from their specs (specs/*.yaml with `implementation:`).
#include <pybind11/pybind11.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "bindings.h"
#include "tensorsmith/engine_limits.h"
#include "tensorsmith/errors.h"
#include "tensorsmith/parallel.h"
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
  for (py::handle item : py::iter(obj)) {  // by iteration: a sequence need not have a len()
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

// Whether concat can copy `pieces` into `out` as bytes: all on the CPU, contiguous and of out's dtype.
bool joins_as_bytes(const Tensor& out, const std::vector<Tensor>& pieces) {
  if (out.device().type != DeviceType::CPU) return false;
  return std::all_of(pieces.begin(), pieces.end(),
                     [&](const Tensor& t) { return t.dtype() == out.dtype() && t.is_contiguous(); });
}

// concat of pieces that joins_as_bytes: out (contiguous, fresh) is `outer` rows, one per index before the axis,
// and each row holds every piece's block for that index in turn. Copied by memcpy over out's bytes, split
// between threads as a pointwise copy of the same size would be: one pass for all the pieces, where a copy
// engine call per piece cost a view, an iteration plan and a parallel dispatch each (2 x 2 float32: 2.1 us).
void join_as_bytes(const Tensor& out, const std::vector<Tensor>& pieces, int64_t axis) {
  const auto item = static_cast<int64_t>(out.itemsize());
  int64_t outer = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= out.shape()[d];
  const int64_t row_bytes = outer == 0 ? 0 : out.numel() / outer * item;
  std::vector<int64_t> block_bytes, row_offset;  // per piece: its block in a row, and where the block starts
  int64_t offset = 0;
  for (const Tensor& t : pieces) {
    block_bytes.push_back(outer == 0 ? 0 : t.numel() / outer * item);
    row_offset.push_back(offset);
    offset += block_bytes.back();
  }
  char* const dst = out.data_ptr();
  parallel_for(outer * row_bytes, limits::kPointwiseGrain * item, [&](int64_t begin, int64_t end) {
    int64_t row = begin / row_bytes, at = begin % row_bytes;  // `at`: the byte within the row
    size_t piece = 0;
    while (at >= row_offset[piece] + block_bytes[piece]) ++piece;
    for (int64_t pos = begin; pos < end;) {
      const int64_t within = at - row_offset[piece];
      const int64_t len = std::min(block_bytes[piece] - within, end - pos);
      std::memcpy(dst + pos, pieces[piece].data_ptr() + row * block_bytes[piece] + within, static_cast<size_t>(len));
      pos += len;
      at += len;
      if (at == row_offset[piece] + block_bytes[piece]) {  // the next nonempty block, in this row or the next
        do {
          if (++piece == pieces.size()) {
            piece = 0;
            at = 0;
            ++row;
          }
        } while (block_bytes[piece] == 0);
      }
    }
  });
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
  if (joins_as_bytes(out, tensors)) {
    if (out.numel() > 0) join_as_bytes(out, tensors, axis);
    return out;
  }
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

Tensor tile(const Tensor& x, py::handle repetitions) {
  std::vector<int64_t> reps = int_sequence_arg(repetitions, "repetitions");
  for (int64_t r : reps) TS_CHECK(r >= 0, ValueError, "tile: repetitions must be non-negative, not " << r);
  const size_t ndim = std::max(reps.size(), static_cast<size_t>(x.ndim()));
  Shape shape(ndim - x.ndim(), 1);  // x's shape and the repetitions, each padded with leading 1s
  shape.insert(shape.end(), x.shape().begin(), x.shape().end());
  reps.insert(reps.begin(), ndim - reps.size(), 1);
  // x as (1, s0, 1, s1, ...) broadcast to (r0, s0, r1, s1, ...), copied, then merged pairwise: (r0 * s0, ...)
  Shape interleaved, tiled, result;
  for (size_t i = 0; i < ndim; ++i) {
    interleaved.push_back(1);
    interleaved.push_back(shape[i]);
    tiled.push_back(reps[i]);
    tiled.push_back(shape[i]);
    result.push_back(reps[i] * shape[i]);
  }
  return x.reshape(interleaved).expand(tiled).clone().reshape(result);
}

py::tuple unstack(const Tensor& x, py::handle axis_arg) {
  TS_CHECK(x.ndim() >= 1, ValueError, "unstack: x must have at least one dimension");
  const int64_t axis = normalize_axis(int_arg(axis_arg, "axis"), x.ndim());
  py::tuple views(x.shape()[axis]);
  for (int64_t i = 0; i < x.shape()[axis]; ++i) views[i] = py::cast(x.select(axis, i));
  return views;
}

py::list broadcast_arrays(py::args arrays) {
  std::vector<Tensor> tensors;
  ShapeRefs shapes;
  for (py::handle item : arrays) {
    TS_CHECK(py::isinstance<Tensor>(item), TypeError, "broadcast_arrays: arrays must be Tensors, not " << type_name(item));
    tensors.push_back(item.cast<Tensor>());
  }
  for (const Tensor& t : tensors) shapes.push_back(&t.shape());
  const Shape shape = broadcast_shapes(shapes);
  py::list views;
  for (const Tensor& t : tensors) views.append(py::cast(t.expand(shape)));
  return views;
}

namespace {

// The repeat counts of each of n positions: an int for all, or a 1-D integer tensor of one or n counts.
std::vector<int64_t> repeat_counts(py::handle repeats, int64_t n) {
  if (PyLong_Check(repeats.ptr()) && !PyBool_Check(repeats.ptr())) {
    const int64_t count = int_arg(repeats, "repeats");
    TS_CHECK(count >= 0, ValueError, "repeat: repeats may not be negative, got " << count);
    return std::vector<int64_t>(n, count);
  }
  TS_CHECK(py::isinstance<Tensor>(repeats), TypeError, "repeat: repeats must be an int or a Tensor, not " << type_name(repeats));
  const Tensor given = repeats.cast<Tensor>();
  TS_CHECK(is_integer(given.dtype()), TypeError,
           "repeat: repeats must have an integer dtype, not " << dtype_name(given.dtype()));
  TS_CHECK(given.ndim() <= 1 && (given.numel() == 1 || given.numel() == n), ValueError,
           "repeat: repeats of shape " << shape_str(given.shape()) << " do not broadcast to the " << n << " positions along axis");
  const Tensor host = to_device(given, Device{}).astype(DType::Int64);  // a contiguous copy in host memory
  const auto* values = reinterpret_cast<const int64_t*>(host.data_ptr());
  std::vector<int64_t> counts(n);
  for (int64_t j = 0; j < n; ++j) {
    counts[j] = values[given.numel() == 1 ? 0 : j];
    TS_CHECK(counts[j] >= 0, ValueError, "repeat: repeats may not be negative, got " << counts[j]);
  }
  return counts;
}

}  // namespace

Tensor repeat(const Tensor& x, py::handle repeats, py::handle axis_arg) {
  const Tensor source = axis_arg.is_none() ? x.reshape({-1}) : x;  // numpy repeats the flattened x
  const int64_t axis = axis_arg.is_none() ? 0 : normalize_axis(int_arg(axis_arg, "axis"), source.ndim());
  const int64_t n = source.shape()[axis];
  const std::vector<int64_t> counts = repeat_counts(repeats, n);
  Shape shape = source.shape();
  const bool uniform = std::all_of(counts.begin(), counts.end(), [&](int64_t c) { return c == counts.front(); });
  if (n > 0 && uniform) {  // each element's copies side by side: x as (..., n, 1, ...) broadcast to (..., n, r, ...)
    Shape spread = shape;
    spread.insert(spread.begin() + axis + 1, counts.front());
    shape[axis] = n * counts.front();
    return source.unsqueeze(axis + 1).expand(spread).clone().reshape(shape);
  }
  int64_t total = 0;
  for (int64_t c : counts) total += c;
  shape[axis] = total;
  Tensor out = Tensor::empty(shape, source.dtype(), source.device());
  int64_t start = 0;
  for (int64_t j = 0; j < n; ++j) {  // position j's slice, broadcast over its counts[j] copies
    if (counts[j] > 0) out.slice(axis, start, start + counts[j], 1).copy_from(source.slice(axis, j, j + 1, 1));
    start += counts[j];
  }
  return out;
}

}  // namespace ts::python
