// Basic indexing: ints, slices, None and Ellipsis (alone or in a tuple) give
// views; __setitem__ copies a value into such a view. Integer and boolean arrays,
// as the whole key (x[[0, 2]], x[idx], x[x > 2]) or among other items (x[:, [0, 2]],
// x[i, j], x[0, mask]), are numpy's advanced indexing: reading gives a copy, and
// assigning writes a value broadcast to the selection's shape.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "bindings.h"
#include "tensorsmith/autograd.h"
#include "tensorsmith/dispatch.h"
#include "tensorsmith/engine.h"
#include "tensorsmith/errors.h"
#include "tensorsmith/python.h"

namespace ts::python {

namespace {

constexpr const char* kSupported = "only integers, slices (`:`), ellipsis (`...`) and None are valid indices";

enum class Item { Int, Slice, NewAxis, Ellipsis };

Item classify(py::handle item) {
  if (item.is_none()) return Item::NewAxis;
  if (item.ptr() == Py_Ellipsis) return Item::Ellipsis;
  if (PySlice_Check(item.ptr())) return Item::Slice;
  if (PyLong_CheckExact(item.ptr())) return Item::Int;  // before pybind11's type lookup, which cost x[0] a third
  TS_CHECK(!PyBool_Check(item.ptr()), TypeError, "boolean indices are not supported; " << kSupported);
  if (py::isinstance<Tensor>(item)) {
    const Tensor& t = item.cast<const Tensor&>();
    TS_CHECK(t.ndim() == 0 && is_integer(t.dtype()), TypeError,
             "a 0-d " << dtype_name(t.dtype()) << " tensor is not an index; " << kSupported);
    return Item::Int;
  }
  TS_CHECK(PyIndex_Check(item.ptr()), TypeError,
           kSupported << ", integer or boolean arrays (numpy's advanced indexing), not " << type_name(item));
  return Item::Int;
}

// The shape, strides and offset of the view being built, axis by axis.
struct ViewLayout {
  Shape shape;
  Strides strides;
  int64_t offset;
};

// A slice of the axis of `size` and `stride` (Python's clamping rules) appended to `out`.
void add_slice(ViewLayout& out, py::handle slice, int64_t size, int64_t stride) {
  Py_ssize_t start = 0, stop = 0, step = 0;
  if (PySlice_Unpack(slice.ptr(), &start, &stop, &step) < 0) throw py::error_already_set();  // step 0: ValueError
  const Py_ssize_t len = PySlice_AdjustIndices(static_cast<Py_ssize_t>(size), &start, &stop, step);
  out.shape.push_back(len);
  out.strides.push_back(stride * step);
  if (len > 0) out.offset += start * stride;  // an empty slice keeps the offset inside the storage
}

int64_t int_index(py::handle item, int64_t size, int64_t src_axis) {
  const Py_ssize_t index = PyNumber_AsSsize_t(item.ptr(), PyExc_IndexError);
  if (index == -1 && PyErr_Occurred()) throw py::error_already_set();
  TS_CHECK(index >= -size && index < size, IndexError,
           "index " << index << " is out of bounds for axis " << src_axis << " with size " << size);
  return index < 0 ? index + size : index;
}

// One pass over the key, building the view's layout directly (linear in the key's length: a
// view per item copied the shape each time, quadratic in the number of dims).
Tensor index_view(const Tensor& self, py::handle key) {
  // The key's items in place: a lone item is not wrapped in a new tuple (t[1:3] in a loop).
  PyObject* const lone = key.ptr();
  const bool tuple = PyTuple_Check(lone);
  PyObject* const* const items = tuple ? &PyTuple_GET_ITEM(lone, 0) : &lone;
  const size_t count = tuple ? static_cast<size_t>(PyTuple_GET_SIZE(lone)) : 1;
  SmallVector<Item, kInlineDims> kinds;
  int64_t indexed = 0, ints = 0, new_axes = 0, ellipses = 0;
  for (size_t i = 0; i < count; ++i) {
    kinds.push_back(classify(items[i]));
    indexed += kinds.back() == Item::Int || kinds.back() == Item::Slice;
    ints += kinds.back() == Item::Int;
    new_axes += kinds.back() == Item::NewAxis;
    ellipses += kinds.back() == Item::Ellipsis;
  }
  TS_CHECK(ellipses <= 1, IndexError, "an index can only have a single ellipsis ('...')");
  TS_CHECK(indexed <= self.ndim(), IndexError,
           "too many indices for tensor: tensor is " << self.ndim() << "-dimensional, but " << indexed << " were indexed");
  const int64_t result_ndim = self.ndim() - ints + new_axes;
  TS_CHECK(result_ndim <= static_cast<int64_t>(kMaxDims), IndexError,
           "number of dimensions must be within [0, " << kMaxDims << "], indexing result would have " << result_ndim);

  const Shape& shape = self.shape();
  const Strides& strides = self.strides();
  ViewLayout out{{}, {}, self.offset()};
  size_t axis = 0;  // the next axis of self
  const auto keep_axes = [&](size_t count) {
    for (size_t end = axis + count; axis < end; ++axis) {
      out.shape.push_back(shape[axis]);
      out.strides.push_back(strides[axis]);
    }
  };
  for (size_t i = 0; i < kinds.size(); ++i) {
    switch (kinds[i]) {
      case Item::NewAxis:
        out.shape.push_back(1);
        // Never used to step; the contiguous-looking stride, as Tensor::unsqueeze picks.
        out.strides.push_back(axis < shape.size() ? strides[axis] * shape[axis] : 1);
        break;
      case Item::Ellipsis:
        keep_axes(static_cast<size_t>(self.ndim() - indexed));
        break;
      case Item::Slice:
        add_slice(out, items[i], shape[axis], strides[axis]);
        ++axis;
        break;
      case Item::Int:
        out.offset += int_index(items[i], shape[axis], static_cast<int64_t>(axis)) * strides[axis];
        ++axis;
        break;
    }
  }
  keep_axes(shape.size() - axis);
  return self.as_strided(out.shape, out.strides, out.offset);
}

// The key as an index array, where it is one: a tensor of one or more dimensions, a list, a numpy array, or a
// boolean scalar (True or a 0-d bool tensor: a 0-d mask, which numpy reads as a new axis of length 1 or 0).
std::optional<Tensor> array_key(py::handle key) {
  // The basic keys first, at no cost (x[1:3] in a loop: looking numpy's bool_ up took most of its time).
  PyObject* k = key.ptr();
  if (PySlice_Check(k) || PyTuple_Check(k) || PyLong_CheckExact(k) || k == Py_None || k == Py_Ellipsis) return std::nullopt;
  if (py::isinstance<Tensor>(key)) {
    const Tensor& t = key.cast<const Tensor&>();
    // a 0-d integer tensor is a basic index
    return t.ndim() > 0 || t.dtype() == DType::Bool ? std::optional<Tensor>(t) : std::nullopt;
  }
  static const auto* numpy_bool = new py::object(py::module_::import("numpy").attr("bool_"));  // never destroyed
  if (PyBool_Check(k) || py::isinstance(key, *numpy_bool)) return asarray(key);
  if (py::isinstance<py::array>(key) && py::len(key.attr("shape")) == 0 && key.cast<py::array>().dtype().kind() == 'b') {
    return asarray(key);
  }
  if (!py::isinstance<py::list>(key) && !(py::isinstance<py::array>(key) && py::len(key.attr("shape")) > 0)) return std::nullopt;
  Tensor t = asarray(key);
  if (t.numel() == 0 && !is_integer(t.dtype()) && t.dtype() != DType::Bool) t = t.astype(DType::Int64);  // x[[]]
  return t;
}

// numpy's IndexErrors for a mask that does not cover x's leading axes.
void check_mask(const Tensor& self, const Tensor& mask) {
  TS_CHECK(mask.ndim() <= self.ndim(), IndexError,
           "too many indices for tensor: tensor is " << self.ndim() << "-dimensional, but " << mask.ndim() << " were indexed");
  for (int64_t d = 0; d < mask.ndim(); ++d) {
    TS_CHECK(mask.shape()[d] == self.shape()[d], IndexError,
             "boolean index did not match indexed array along axis " << d << "; size of axis is " << self.shape()[d]
                                                                     << " but size of corresponding boolean axis is "
                                                                     << mask.shape()[d]);
  }
}

// Copies the rows of `from` whose `keep` byte is nonzero (`count` of them) to `to`, in order. Every row is
// stored and the output position advances by the keep byte: no branch to mispredict on a random mask. The
// copy ends with the last kept row, so no store lands past `to`'s `count` rows.
template <size_t RowBytes>
void compact_rows(char* to, const char* from, const uint8_t* keep, int64_t rows, int64_t count) {
  int64_t kept = 0;
  for (int64_t i = 0; i < rows && kept < count; ++i) {
    std::memcpy(to + kept * RowBytes, from + i * RowBytes, RowBytes);
    kept += keep[i] != 0;
  }
}

// x[mask] of a CPU tensor: x's rows over the mask's axes, copied in one pass where the mask is true.
// Contiguous operands are read in place, without flattening views, and the result is made at its size: small
// operands feel every view made.
Tensor masked_on_host(const Tensor& self, const Tensor& mask) {
  const Tensor keep_bytes = mask.contiguous();  // bool: one byte an element, in the mask's row-major order
  const auto* keep = reinterpret_cast<const uint8_t*>(keep_bytes.data_ptr());
  const int64_t rows = keep_bytes.numel();
  int64_t count = 0;
  for (int64_t i = 0; i < rows; ++i) count += keep[i] != 0;
  Shape out_shape{count};
  int64_t row_elements = 1;
  for (int64_t d = mask.ndim(); d < self.ndim(); ++d) {
    out_shape.push_back(self.shape()[d]);
    row_elements *= self.shape()[d];
  }
  const Tensor x = self.contiguous();  // rows: the mask's elements, in the same order
  Tensor out = Tensor::empty(out_shape, self.dtype());
  const size_t row_bytes = static_cast<size_t>(row_elements) * self.itemsize();
  char* to = out.data_ptr();
  const char* from = x.data_ptr();
  switch (row_bytes) {
    case 1: compact_rows<1>(to, from, keep, rows, count); break;
    case 2: compact_rows<2>(to, from, keep, rows, count); break;
    case 4: compact_rows<4>(to, from, keep, rows, count); break;
    case 8: compact_rows<8>(to, from, keep, rows, count); break;
    case 16: compact_rows<16>(to, from, keep, rows, count); break;
    default:  // wide rows: a branch per row costs little beside the copy
      for (int64_t i = 0, kept = 0; i < rows; ++i) {
        if (keep[i] != 0) std::memcpy(to + kept++ * row_bytes, from + i * row_bytes, row_bytes);
      }
  }
  return out;
}

// x[mask]: the elements (or sub-tensors) where the mask, which covers x's leading axes, is true.
Tensor masked(const Tensor& self, const Tensor& mask) {
  check_mask(self, mask);
  if (self.device().type == DeviceType::CPU && mask.device().type == DeviceType::CPU) return masked_on_host(self, mask);
  Shape flat{1};
  for (int64_t d = 0; d < mask.ndim(); ++d) flat[0] *= mask.shape()[d];
  flat.insert(flat.end(), self.shape().begin() + mask.ndim(), self.shape().end());
  return gather(self.reshape(flat), 0, true_positions(mask));
}

Tensor advanced_index(const Tensor& self, const Tensor& key) {
  if (key.dtype() == DType::Bool) return masked(self, key);
  TS_CHECK(is_integer(key.dtype()), IndexError,
           "arrays used as indices must be of integer (or boolean) type, not " << dtype_name(key.dtype()));
  TS_CHECK(self.ndim() > 0, IndexError, "too many indices for tensor: tensor is 0-dimensional, but 1 were indexed");
  return take(self, key, py::int_(0));
}

// x[mask] = value where value broadcasts to one selected element (or sub-tensor): every selected one takes it,
// cast to x's dtype as numpy's setitem casts: x = where(mask, value, x), the mask widened over x's trailing
// axes. (One value per selected element goes through advanced_set.)
void masked_assign(const Tensor& self, const Tensor& mask, const Tensor& value) {
  check_mask(self, mask);
  Shape widened = mask.shape();
  for (int64_t d = mask.ndim(); d < self.ndim(); ++d) widened.push_back(1);
  Tensor target = self;
  target.copy_from(pointwise(Registry::global().get("where"), {on_device(mask.reshape(widened), self.device()),
                                                                 on_device(value.astype(self.dtype()), self.device()), self}));
}

// An item of a tuple key that is an index array: a tensor, list or numpy array of one or more dimensions.
bool is_index_array(py::handle item) {
  PyObject* const k = item.ptr();
  // The basic items first, before pybind11's type lookups (x[1, :, 3] in a loop: half its time).
  if (PyLong_CheckExact(k) || PySlice_Check(k) || k == Py_None || k == Py_Ellipsis) return false;
  if (py::isinstance<Tensor>(item)) return item.cast<const Tensor&>().ndim() > 0;
  return py::isinstance<py::list>(item) || (py::isinstance<py::array>(item) && py::len(item.attr("shape")) > 0);
}

bool has_index_array(py::handle key) {
  if (!PyTuple_Check(key.ptr())) return false;
  for (py::handle item : py::reinterpret_borrow<py::tuple>(key)) {
    if (is_index_array(item)) return true;
  }
  return false;
}

// One advanced index of a key: int64 positions on the host, and the axis of self it indexes.
struct IndexArray {
  Tensor positions;
  int64_t axis;
};

// The index array an item of a key stands for (is_index_array), as a tensor; [] is an empty int64 one.
Tensor index_array(py::handle item) {
  Tensor index = asarray(item);
  if (index.numel() == 0 && !is_integer(index.dtype()) && index.dtype() != DType::Bool) return index.astype(DType::Int64);
  TS_CHECK(is_integer(index.dtype()) || index.dtype() == DType::Bool, IndexError,
           "arrays used as indices must be of integer (or boolean) type, not " << dtype_name(index.dtype()));
  return index;
}

// A boolean mask over self's axes from `axis` on, as numpy reads it: its nonzero() positions, one index
// array per axis it covers.
void add_mask(std::vector<IndexArray>& arrays, const Tensor& self, const Tensor& mask, int64_t axis) {
  for (int64_t d = 0; d < mask.ndim(); ++d) {
    TS_CHECK(mask.shape()[d] == self.shape()[axis + d], IndexError,
             "boolean index did not match indexed array along axis " << axis + d << "; size of axis is "
                 << self.shape()[axis + d] << " but size of corresponding boolean axis is " << mask.shape()[d]);
  }
  const std::vector<int64_t> flat = true_positions(mask);
  int64_t inner = 1;
  for (int64_t d = mask.ndim() - 1; d >= 0; --d) {
    Tensor positions = Tensor::empty({static_cast<int64_t>(flat.size())}, DType::Int64);
    auto* along = reinterpret_cast<int64_t*>(positions.data_ptr());
    for (size_t i = 0; i < flat.size(); ++i) along[i] = flat[i] / inner % mask.shape()[d];
    arrays.push_back({positions, axis + d});
    inner *= mask.shape()[d];
  }
  std::reverse(arrays.end() - mask.ndim(), arrays.end());
}

// Where the elements a key with index arrays selects sit in the indexed tensor's storage (element offsets, in
// the selection's row-major order), and the selection's shape: what x[key] reads and x[key] = v writes.
struct Selection {
  Shape shape;
  std::vector<int64_t> offsets;
};

// The element offsets of every position of `view`'s axes `axes` (row-major over them), from `view`'s offset.
std::vector<int64_t> axis_offsets(const Tensor& view, const std::vector<int64_t>& axes) {
  std::vector<int64_t> offsets{0};
  for (const int64_t axis : axes) {
    std::vector<int64_t> next;
    next.reserve(offsets.size() * static_cast<size_t>(view.shape()[axis]));
    for (const int64_t base : offsets) {
      for (int64_t i = 0; i < view.shape()[axis]; ++i) next.push_back(base + i * view.strides()[axis]);
    }
    offsets = std::move(next);
  }
  return offsets;
}

// numpy's advanced indexing (x[[0, 2]], x[:, [0, 2]], x[i, j], x[0, idx], x[..., mask]). A boolean array
// stands for its nonzero() positions; every integer in the key is an index array too, and all of them
// broadcast together. Their broadcast shape takes the indexed axes' place when those sit next to each other
// in the key, else it comes first (numpy's rule: x[0, :, [1, 2]] has the shape (2, n)). Slices, None and the
// ellipsis index as basic items do.
Selection advanced_selection(const Tensor& self, const py::tuple& items) {
  std::vector<std::optional<Tensor>> arrays_in_key;  // per item: its index array, if it is one
  int64_t indexed = 0;
  for (py::handle item : items) {
    arrays_in_key.push_back(is_index_array(item) ? std::optional<Tensor>(index_array(item)) : std::nullopt);
    const std::optional<Tensor>& array = arrays_in_key.back();
    if (array) indexed += array->dtype() == DType::Bool ? array->ndim() : 1;
    else if (!item.is_none() && item.ptr() != Py_Ellipsis) indexed += 1;
  }
  TS_CHECK(indexed <= self.ndim(), IndexError,
           "too many indices for tensor: tensor is " << self.ndim() << "-dimensional, but " << indexed << " were indexed");

  py::list basic;                  // the key with every advanced item replaced by `:` for each axis it covers
  std::vector<IndexArray> arrays;  // in key order
  std::vector<int64_t> view_axes;  // where each array's axis lands in the basic view
  const py::object whole = py::slice(py::none(), py::none(), py::none());
  int64_t axis = 0, view_axis = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    const py::handle item = items[i];
    const size_t before = arrays.size();
    if (arrays_in_key[i] && arrays_in_key[i]->dtype() == DType::Bool) {
      add_mask(arrays, self, *arrays_in_key[i], axis);
    } else if (arrays_in_key[i]) {
      arrays.push_back({to_device(*arrays_in_key[i], Device{}).astype(DType::Int64), axis});
    } else if (!item.is_none() && item.ptr() != Py_Ellipsis && !PySlice_Check(item.ptr())) {
      classify(item);  // TypeError for what is no index; an integer is a 0-d index array here, as numpy has it
      const Tensor position = Tensor::empty({}, DType::Int64);
      *reinterpret_cast<int64_t*>(position.data_ptr()) = int_index(item, self.shape()[axis], axis);
      arrays.push_back({position, axis});
    } else {
      basic.append(item);
      const int64_t kept = item.ptr() == Py_Ellipsis ? self.ndim() - indexed : 1;
      axis += item.is_none() ? 0 : kept;
      view_axis += kept;
      continue;
    }
    for (size_t a = before; a < arrays.size(); ++a) {
      basic.append(whole);
      view_axes.push_back(view_axis++);
      ++axis;
    }
  }
  const Tensor view = index_view(self, py::tuple(basic));

  // The arrays' broadcast shape, and for each of its positions the offset the arrays' positions (checked and
  // wrapped) select in the view.
  ShapeRefs shapes;
  for (const IndexArray& a : arrays) shapes.push_back(&a.positions.shape());
  const Shape broadcast = broadcast_shapes(shapes);
  int64_t count = 1;
  for (const int64_t extent : broadcast) count *= extent;
  std::vector<int64_t> selected(static_cast<size_t>(count), 0);
  for (size_t j = 0; j < arrays.size(); ++j) {
    const int64_t size = self.shape()[arrays[j].axis];
    const int64_t stride = view.strides()[view_axes[j]];
    const Tensor expanded = arrays[j].positions.expand(broadcast).contiguous();
    const auto* values = reinterpret_cast<const int64_t*>(expanded.data_ptr());
    for (int64_t i = 0; i < count; ++i) {
      const int64_t v = values[i];
      TS_CHECK(v >= -size && v < size, IndexError,
               "index " << v << " is out of bounds for axis " << arrays[j].axis << " with size " << size);
      selected[static_cast<size_t>(i)] += (v < 0 ? v + size : v) * stride;
    }
  }

  // The view's other axes keep their order, around the broadcast shape: before it those that precede the
  // indexed axes when these are adjacent, after it the rest.
  bool adjacent = true;
  for (size_t j = 1; j < view_axes.size(); ++j) adjacent &= view_axes[j] == view_axes[j - 1] + 1;
  std::vector<int64_t> before, after;
  for (int64_t d = 0; d < view.ndim(); ++d) {
    if (std::find(view_axes.begin(), view_axes.end(), d) != view_axes.end()) continue;
    (adjacent && d < view_axes.front() ? before : after).push_back(d);
  }
  Selection selection;
  for (const int64_t d : before) selection.shape.push_back(view.shape()[d]);
  selection.shape.insert(selection.shape.end(), broadcast.begin(), broadcast.end());
  for (const int64_t d : after) selection.shape.push_back(view.shape()[d]);
  const std::vector<int64_t> leading = axis_offsets(view, before), trailing = axis_offsets(view, after);
  selection.offsets.reserve(leading.size() * selected.size() * trailing.size());
  for (const int64_t lead : leading) {
    for (const int64_t pick : selected) {
      for (const int64_t trail : trailing) selection.offsets.push_back(view.offset() + lead + pick + trail);
    }
  }
  return selection;
}

// Copies `Size`-byte elements: to[i] = from[offsets[i]] (gathering) or to[offsets[i]] = from[i] (scattering;
// the last of repeated offsets wins, as in numpy).
template <size_t Size>
void move_elements(char* to, const char* from, const std::vector<int64_t>& offsets, bool gathering) {
  for (size_t i = 0; i < offsets.size(); ++i) {
    const auto at = static_cast<size_t>(offsets[i]) * Size;
    std::memcpy(to + (gathering ? i * Size : at), from + (gathering ? at : i * Size), Size);
  }
}

void move_elements(char* to, const char* from, const std::vector<int64_t>& offsets, size_t itemsize, bool gathering) {
  switch (itemsize) {
    case 1: return move_elements<1>(to, from, offsets, gathering);
    case 2: return move_elements<2>(to, from, offsets, gathering);
    case 4: return move_elements<4>(to, from, offsets, gathering);
    case 8: return move_elements<8>(to, from, offsets, gathering);
    case 16: return move_elements<16>(to, from, offsets, gathering);
    default: TS_CHECK(false, TypeError, "no element copy for items of " << itemsize << " bytes");
  }
}

// Whether numpy's broadcasting takes `from` to `to` (to's shape unchanged).
bool broadcasts_to(const Shape& from, const Shape& to) {
  if (from.size() > to.size()) return false;
  for (size_t i = 1; i <= from.size(); ++i) {
    if (from[from.size() - i] != 1 && from[from.size() - i] != to[to.size() - i]) return false;
  }
  return true;
}

// The storage's first element (offsets count from it).
char* storage_base(const Tensor& t) { return static_cast<char*>(t.storage()->data()); }

// x[key] for a key with index arrays among other items: a copy. A CUDA tensor is read through a host copy
// (the selection's size depends on the data).
Tensor advanced_get(const Tensor& self, const py::tuple& items) {
  const Tensor source = self.device().type == DeviceType::CPU ? self : on_host(self);
  const Selection selection = advanced_selection(source, items);
  Tensor out = Tensor::empty(selection.shape, self.dtype());
  move_elements(out.data_ptr(), storage_base(source), selection.offsets, self.itemsize(), true);
  return to_device(out, self.device());
}

// x[key] = value for a key with index arrays: value, cast to x's dtype as numpy's setitem casts, broadcast to
// the selection's shape and written element by element (a CUDA tensor through a host copy, copied back).
void advanced_set(const Tensor& self, const py::tuple& items, const Tensor& value) {
  TS_CHECK(self.writeable(), ValueError, "assignment destination is read-only");
  Tensor target = self.device().type == DeviceType::CPU ? self : on_host(self);
  const Selection selection = advanced_selection(target, items);
  Tensor source = on_host(value);
  if (source.dtype() != self.dtype()) source = source.astype(self.dtype());
  TS_CHECK(broadcasts_to(source.shape(), selection.shape), ValueError,
           "shape mismatch: value array of shape " << shape_str(source.shape())
               << " could not be broadcast to indexing result of shape " << shape_str(selection.shape));
  source = source.expand(selection.shape).contiguous();
  if (may_overlap(source, target)) source = source.clone();
  move_elements(storage_base(target), source.data_ptr(), selection.offsets, self.itemsize(), false);
  if (self.device().type != DeviceType::CPU) {
    Tensor destination = self;
    destination.copy_from(target);
  }
}

}  // namespace

Tensor get_item(const Tensor& self, py::handle key) {
  if (const std::optional<Tensor> array = array_key(key)) return advanced_index(self, *array);
  if (has_index_array(key)) return advanced_get(self, key.cast<py::tuple>());
  return index_view(self, key);
}

namespace {

void set_item(py::handle self_object, py::handle key, py::handle value_object) {
  refuse_inplace_on_grad(self_object, "__setitem__");
  TS_CHECK(!(autograd::might_record() && autograd::requires_grad(value_object)), RuntimeError,
           "__setitem__: assigning a tensor that requires grad into another would drop its gradient; build the "
           "result out of place (ts.where, ts.concat), or assign under ts.no_grad()");
  const Tensor& self = self_object.cast<const Tensor&>();
  self.storage()->bump_version();
  const std::optional<Tensor> array = array_key(key);
  if (!array && !has_index_array(key)) {
    Tensor target = index_view(self, key);
    Tensor source = py::isinstance<Tensor>(value_object) ? value_object.cast<Tensor>() : asarray(value_object, target.dtype());
    // copy_from reads while it writes; an overlapping source (t[1:] = t[:-1]) is copied first.
    if (may_overlap(target, source)) source = source.clone();
    target.copy_from(source);
    return;
  }
  const Tensor value = py::isinstance<Tensor>(value_object) ? value_object.cast<Tensor>() : asarray(value_object, self.dtype());
  if (array && array->dtype() == DType::Bool && (array->ndim() == 0 || value.ndim() <= self.ndim() - array->ndim())) {
    masked_assign(self, *array, value);  // one value for every selected element: on the tensor's device
    return;
  }
  advanced_set(self, array ? py::make_tuple(key) : key.cast<py::tuple>(), value);
}

}  // namespace

void bind_indexing(py::class_<Tensor>& cls) {
  static const autograd::OpInfo getitem{"__getitem__", "runtime/src/python/indexing.cpp", autograd::Kind::Formulas,
                                        {"x", "key"}, {0}, {0, 1}, -1, false};
  autograd::register_op(getitem);
  cls.def(
      "__getitem__",
      [](const Tensor& self, py::handle key) { return autograd::recorded(getitem, get_item, self, key); },
      py::arg("key"));
  fast_getitem(cls);

  cls.def("__setitem__", &set_item, py::arg("key"), py::arg("value"));
}

void bind_scatter_view(py::module_& m) {
  // The gradient of x[key] for a basic key as a recorded op (its own gradient is grad[key]), for double
  // backward; a first backward scatters into x's gradient in the engine instead.
  static const autograd::OpInfo scatter{"_scatter_view", "runtime/src/python/indexing.cpp", autograd::Kind::Formulas,
                                        {"value", "key", "shape"}, {0}, {1}, -1, false};
  autograd::register_op(scatter);
  m.def(
      "_scatter_view",
      [](const Tensor& value, py::handle key, py::handle shape) {
        const auto forward = [](const Tensor& v, py::handle k, py::handle s) {
          Tensor out = zero_filled(int_sequence_arg(s, "shape"), v.dtype(), v.device());
          index_view(out, k).copy_from(v);
          return out;
        };
        return autograd::recorded(scatter, forward, value, key, shape);
      },
      py::arg("value"), py::arg("key"), py::arg("shape"), "Zeros of `shape` holding `value` at the basic index `key`.");
}

}  // namespace ts::python
