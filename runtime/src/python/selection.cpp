// Array API functions whose result size or layout depends on the data (specs with `implementation:`):
// take, take_along_axis, nonzero and the unique_* family. They gather whole elements by position, so they
// are byte copies in host memory; tensors on a CUDA device are brought to the host for the gather and the
// results sent back (the data-dependent sizes need a device-to-host copy anyway; a device gather kernel is
// the faster answer). The comparisons they need (nonzero, unique's runs) are the catalog's generated ops,
// run on the tensor's own device.
#include <pybind11/pybind11.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "bindings.h"
#include "tensorsmith/dispatch.h"
#include "tensorsmith/engine.h"
#include "tensorsmith/errors.h"
#include "tensorsmith/parallel.h"
#include "tensorsmith/python.h"

namespace ts::python {

namespace {

const OpDef& op(const char* name) { return Registry::global().get(name); }

// The integer tensor's values as int64, read in host memory; TypeError for any other dtype.
std::vector<int64_t> int64_values(const Tensor& indices, const char* function) {
  TS_CHECK(is_integer(indices.dtype()), TypeError,
           function << ": indices must have an integer dtype, not " << dtype_name(indices.dtype()));
  const Tensor host = to_device(indices, Device{}).astype(DType::Int64);
  const auto* data = reinterpret_cast<const int64_t*>(host.data_ptr());
  return std::vector<int64_t>(data, data + host.numel());
}

// numpy's rule for an index into an axis of `size`: negative counts from the end; IndexError outside.
int64_t wrapped(int64_t index, int64_t size, int64_t axis) {
  TS_CHECK(index >= -size && index < size, IndexError,
           "index " << index << " is out of bounds for axis " << axis << " with size " << size);
  return index < 0 ? index + size : index;
}

// Bytes a thread copies at least: below, splitting costs more than it saves (kPointwiseGrain's 32768 float32).
constexpr int64_t kGatherGrainBytes = int64_t{1} << 17;

// x (contiguous, in host memory) with its `axis` replaced by the slices at `positions`, in order. The slices are
// copied over the engines' pool: one thread copying took 1.5 ms for 2048 rows of 8 KiB (numpy 0.9).
Tensor gather_slices(const Tensor& x, int64_t axis, const std::vector<int64_t>& positions) {
  Shape shape = x.shape();
  const int64_t n = shape[axis];
  shape[axis] = static_cast<int64_t>(positions.size());
  Tensor out = Tensor::empty(shape, x.dtype());
  int64_t outer = 1, inner = static_cast<int64_t>(x.itemsize());
  for (int64_t i = 0; i < axis; ++i) outer *= x.shape()[i];
  for (int64_t i = axis + 1; i < x.ndim(); ++i) inner *= x.shape()[i];
  const char* from = x.data_ptr();
  char* to = out.data_ptr();
  const auto m = static_cast<int64_t>(positions.size());
  const int64_t grain = std::max<int64_t>(1, kGatherGrainBytes / std::max<int64_t>(inner, 1));  // inner: 0 in an empty x
  parallel_for(outer * m, grain, [&](int64_t begin, int64_t end) {
    int64_t o = begin / m, k = begin % m;  // slice `begin` is position k of outer index o
    for (int64_t slice = begin; slice < end; ++slice) {
      const char* source = from + (o * n + positions[static_cast<size_t>(k)]) * inner;
      std::memcpy(to + slice * inner, source, static_cast<size_t>(inner));
      if (++k == m) {
        k = 0;
        ++o;
      }
    }
  });
  return out;
}

Tensor int64_tensor(const std::vector<int64_t>& values, Shape shape) {
  Tensor out = Tensor::empty(shape, DType::Int64);
  if (!values.empty()) std::memcpy(out.data_ptr(), values.data(), values.size() * sizeof(int64_t));
  return out;
}

// The truth value of every element of x (nonzero; NaN is true, -0.0 false), in host memory.
std::vector<bool> truth_values(const Tensor& x) {
  const OpDef& not_equal = op("not_equal");
  const Tensor mask = on_host(pointwise(not_equal, tensor_operands(not_equal, {py::cast(x), py::int_(0)}, {"x", "0"})));
  std::vector<bool> truth(static_cast<size_t>(mask.numel()));
  const auto* bytes = reinterpret_cast<const uint8_t*>(mask.data_ptr());
  for (int64_t i = 0; i < mask.numel(); ++i) truth[static_cast<size_t>(i)] = bytes[i] != 0;
  return truth;
}

}  // namespace

Tensor gather(const Tensor& x, int64_t axis, const std::vector<int64_t>& positions) {
  return to_device(gather_slices(on_host(x), axis, positions), x.device());
}

std::vector<int64_t> true_positions(const Tensor& x) {
  const std::vector<bool> truth = truth_values(x);
  std::vector<int64_t> positions;
  for (size_t i = 0; i < truth.size(); ++i) {
    if (truth[i]) positions.push_back(static_cast<int64_t>(i));
  }
  return positions;
}

Tensor take(const Tensor& x, const Tensor& indices, py::handle axis_arg) {
  const Tensor source = axis_arg.is_none() ? x.reshape({-1}) : x;  // numpy takes from the flattened x
  const int64_t axis = axis_arg.is_none() ? 0 : normalize_axis(int_arg(axis_arg, "axis"), source.ndim());
  const int64_t n = source.shape()[axis];
  std::vector<int64_t> positions = int64_values(indices, "take");
  TS_CHECK(n > 0 || positions.empty(), IndexError, "cannot do a non-empty take from an empty axes.");
  for (int64_t& p : positions) p = wrapped(p, n, axis);
  Shape shape(source.shape().begin(), source.shape().begin() + axis);
  shape.insert(shape.end(), indices.shape().begin(), indices.shape().end());
  shape.insert(shape.end(), source.shape().begin() + axis + 1, source.shape().end());
  return gather(source, axis, positions).reshape(shape);
}

Tensor take_along_axis(const Tensor& x, const Tensor& indices, py::handle axis_arg) {
  const int64_t axis = normalize_axis(int_arg(axis_arg, "axis"), x.ndim());
  TS_CHECK(indices.ndim() == x.ndim(), ValueError, "`indices` and `arr` must have the same number of dimensions");
  // Every axis but `axis` broadcasts; the result has indices' extent along it.
  Shape x_frame = x.shape(), i_frame = indices.shape();
  x_frame[axis] = i_frame[axis] = 1;
  Shape x_shape = broadcast_shapes(x_frame, i_frame), i_shape = x_shape;
  x_shape[axis] = x.shape()[axis];
  i_shape[axis] = indices.shape()[axis];
  std::vector<int64_t> perm;
  for (int64_t i = 0; i < x.ndim(); ++i) {
    if (i != axis) perm.push_back(i);
  }
  perm.push_back(axis);
  const Tensor rows = on_host(x.expand(x_shape).permute(perm));  // (..., n) contiguous
  const std::vector<int64_t> positions = int64_values(indices.expand(i_shape).permute(perm).contiguous(), "take_along_axis");
  const int64_t n = x_shape[axis], m = i_shape[axis];
  Shape moved = rows.shape();
  moved.back() = m;
  Tensor out = Tensor::empty(moved, x.dtype());
  const auto item = static_cast<int64_t>(x.itemsize());
  const int64_t count = m == 0 ? 0 : out.numel() / m;
  for (int64_t r = 0; r < count; ++r) {
    for (int64_t k = 0; k < m; ++k) {
      const int64_t p = wrapped(positions[static_cast<size_t>(r * m + k)], n, axis);
      std::memcpy(out.data_ptr() + (r * m + k) * item, rows.data_ptr() + (r * n + p) * item, static_cast<size_t>(item));
    }
  }
  std::vector<int64_t> inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inverse[perm[i]] = static_cast<int64_t>(i);
  return to_device(out.permute(inverse), x.device());
}

py::tuple nonzero(const Tensor& x) {
  TS_CHECK(x.ndim() > 0, ValueError,
           "Calling nonzero on 0d arrays is not allowed. Use np.atleast_1d(scalar).nonzero() instead.");
  const std::vector<bool> truth = truth_values(x);
  std::vector<std::vector<int64_t>> coordinates(static_cast<size_t>(x.ndim()));
  std::vector<int64_t> at(static_cast<size_t>(x.ndim()), 0);  // the multi-index of element i (row-major)
  for (size_t i = 0; i < truth.size(); ++i) {
    if (truth[i]) {
      for (size_t d = 0; d < at.size(); ++d) coordinates[d].push_back(at[d]);
    }
    for (int64_t d = x.ndim() - 1; d >= 0; --d) {
      if (++at[static_cast<size_t>(d)] < x.shape()[d]) break;
      at[static_cast<size_t>(d)] = 0;
    }
  }
  py::tuple result(x.ndim());
  for (size_t d = 0; d < coordinates.size(); ++d) {
    const auto count = static_cast<int64_t>(coordinates[d].size());
    result[d] = py::cast(to_device(int64_tensor(coordinates[d], {count}), x.device()));
  }
  return result;
}

Tensor searchsorted(const Tensor& x1, const Tensor& x2, py::handle side_arg, py::handle sorter) {
  const std::string side = py::isinstance<py::str>(side_arg) ? side_arg.cast<std::string>() : "";
  TS_CHECK(side == "left" || side == "right", ValueError,
           "search side must be 'left' or 'right' (got " << py::repr(side_arg).cast<std::string>() << ")");
  TS_CHECK(x1.ndim() == 1, ValueError, "searchsorted: x1 must be 1-D, not of shape " << shape_str(x1.shape()));
  const Tensor sorted = sorter.is_none() ? x1 : take(x1, sorter.cast<Tensor>(), py::int_(0));
  // One stable sort of x2's and x1's elements together (in the dtype they promote to, NaN last): x2's first for
  // side='left', so each lands before the x1 elements equal to it, x1's first for 'right'. The x1 elements ahead
  // of an x2 element in that order are its insertion point.
  const bool left = side == "left";
  const Tensor flat2 = x2.reshape({-1});
  const auto m = static_cast<size_t>(flat2.numel());
  const Tensor joined = concat(left ? py::make_tuple(flat2, sorted) : py::make_tuple(sorted, flat2), py::int_(0));
  const std::vector<int64_t> order = int64_values(python::sort(op("argsort"), joined, 0, false, true), "searchsorted");
  const auto first_x2 = static_cast<int64_t>(left ? 0 : sorted.numel());
  std::vector<int64_t> positions(m);
  int64_t x1_before = 0;
  for (const int64_t source : order) {
    if (source >= first_x2 && source < first_x2 + static_cast<int64_t>(m)) {
      positions[static_cast<size_t>(source - first_x2)] = x1_before;
    } else {
      ++x1_before;
    }
  }
  return to_device(int64_tensor(positions, x2.shape()), x2.device());
}

namespace {

// The runs of equal elements of x's flattened values in stable sorted order: NaNs are each their own run
// (they compare unequal, as the standard asks), -0.0 and +0.0 one.
struct Runs {
  Tensor sorted;                // the flattened x, sorted (in host memory, where the runs are gathered)
  std::vector<int64_t> order;   // sorted[i] = flat[order[i]]
  std::vector<int64_t> starts;  // the sorted position where each run starts
};

// The runs of an integer (or bool) tensor whose values span a short range, by a stable counting sort in host
// memory: one pass counts each value, one places each position, the same order as the stable comparison sort
// in linear time. nullopt where the range is too wide for a table of counts.
template <typename T>
std::optional<Runs> counted_runs(const Tensor& flat) {
  const T* data = reinterpret_cast<const T*>(flat.data_ptr());
  const int64_t n = flat.numel();
  if (n == 0) return std::nullopt;
  T low = data[0], high = data[0];
  for (int64_t i = 1; i < n; ++i) {
    low = data[i] < low ? data[i] : low;
    high = data[i] > high ? data[i] : high;
  }
  // Offsets from `low` as unsigned differences: exact whenever the span is short, for every integer type.
  const auto offset = [low](T v) { return static_cast<uint64_t>(v) - static_cast<uint64_t>(low); };
  const uint64_t span = offset(high);
  if (span >= 4 * static_cast<uint64_t>(n) + 65536) return std::nullopt;
  std::vector<int64_t> next(span + 1, 0);  // each value's count, then the next sorted position it takes
  for (int64_t i = 0; i < n; ++i) ++next[offset(data[i])];
  Runs runs;
  runs.sorted = Tensor::empty({n}, flat.dtype());
  T* sorted = reinterpret_cast<T*>(runs.sorted.data_ptr());
  int64_t position = 0;
  for (uint64_t v = 0; v <= span; ++v) {
    const int64_t count = next[v];
    if (count == 0) continue;
    runs.starts.push_back(position);
    std::fill(sorted + position, sorted + position + count, static_cast<T>(static_cast<uint64_t>(low) + v));
    next[v] = position;
    position += count;
  }
  runs.order.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) runs.order[static_cast<size_t>(next[offset(data[i])]++)] = i;
  return runs;
}

std::optional<Runs> integer_runs(const Tensor& flat) {
  return with_element_type(flat.dtype(), [&flat](auto tag) -> std::optional<Runs> {
    using T = decltype(tag);
    if constexpr (std::is_integral_v<T>) return counted_runs<T>(flat);  // bool too
    return std::nullopt;
  });
}

Runs runs_of(const Tensor& x) {
  const Tensor flat = x.reshape({-1});
  if (is_integer(x.dtype()) || x.dtype() == DType::Bool) {
    if (std::optional<Runs> counted = integer_runs(on_host(flat))) return std::move(*counted);
  }
  Runs runs;
  const Tensor order = python::sort(op("argsort"), flat, 0, false, true);
  runs.order = int64_values(order, "unique");
  runs.sorted = gather_slices(on_host(flat), 0, runs.order);
  const int64_t n = flat.numel();
  if (n == 0) return runs;
  runs.starts.push_back(0);
  if (n > 1) {
    const Tensor later = runs.sorted.slice(0, 1, std::nullopt, 1), earlier = runs.sorted.slice(0, 0, n - 1, 1);
    const Tensor differs = pointwise(op("not_equal"), {later, earlier});
    const auto* bytes = reinterpret_cast<const uint8_t*>(differs.data_ptr());
    for (int64_t i = 1; i < n; ++i) {
      if (bytes[i - 1] != 0) runs.starts.push_back(i);
    }
  }
  return runs;
}

Tensor run_values(const Runs& runs, Device device) {
  return to_device(gather_slices(runs.sorted, 0, runs.starts), device);
}

Tensor run_counts(const Runs& runs, Device device) {
  std::vector<int64_t> counts;
  const auto n = static_cast<int64_t>(runs.order.size());
  for (size_t r = 0; r < runs.starts.size(); ++r) counts.push_back((r + 1 < runs.starts.size() ? runs.starts[r + 1] : n) - runs.starts[r]);
  return to_device(int64_tensor(counts, {static_cast<int64_t>(counts.size())}), device);
}

// For each element of x (in x's shape), the index of its run.
Tensor run_inverse(const Runs& runs, const Tensor& x) {
  std::vector<int64_t> inverse(runs.order.size());
  size_t run = 0;
  for (size_t i = 0; i < runs.order.size(); ++i) {
    if (run + 1 < runs.starts.size() && static_cast<int64_t>(i) == runs.starts[run + 1]) ++run;
    inverse[static_cast<size_t>(runs.order[i])] = static_cast<int64_t>(run);
  }
  return to_device(int64_tensor(inverse, x.shape()), x.device());
}

// The first position in the flattened x of each run (the stable sort keeps the first occurrence first).
Tensor run_firsts(const Runs& runs, Device device) {
  std::vector<int64_t> firsts;
  for (const int64_t start : runs.starts) firsts.push_back(runs.order[static_cast<size_t>(start)]);
  return to_device(int64_tensor(firsts, {static_cast<int64_t>(firsts.size())}), device);
}

// The standard's named tuple types (the same names and fields as numpy's), made once each: results of two
// calls are instances of one type.
py::object named_tuple_type(const char* name, const char* fields) {
  return py::module_::import("collections").attr("namedtuple")(name, fields);
}

// Kept for the interpreter's life (never destroyed after it has finalized).
const py::object& unique_counts_type() {
  static const auto* type = new py::object(named_tuple_type("UniqueCountsResult", "values counts"));
  return *type;
}

const py::object& unique_inverse_type() {
  static const auto* type = new py::object(named_tuple_type("UniqueInverseResult", "values inverse_indices"));
  return *type;
}

const py::object& unique_all_type() {
  static const auto* type = new py::object(named_tuple_type("UniqueAllResult", "values indices inverse_indices counts"));
  return *type;
}

}  // namespace

Tensor unique_values(const Tensor& x) { return run_values(runs_of(x), x.device()); }

py::object unique_counts(const Tensor& x) {
  const Runs runs = runs_of(x);
  return unique_counts_type()(run_values(runs, x.device()), run_counts(runs, x.device()));
}

py::object unique_inverse(const Tensor& x) {
  const Runs runs = runs_of(x);
  return unique_inverse_type()(run_values(runs, x.device()), run_inverse(runs, x));
}

py::object unique_all(const Tensor& x) {
  const Runs runs = runs_of(x);
  return unique_all_type()(run_values(runs, x.device()), run_firsts(runs, x.device()), run_inverse(runs, x),
                           run_counts(runs, x.device()));
}

}  // namespace ts::python
