// Basic indexing: ints, slices, None and Ellipsis (alone or in a tuple) give
// views; __setitem__ copies a value into such a view. One integer or boolean array
// as the whole key (x[[0, 2]], x[idx], x[x > 2]) gives a copy, as numpy's advanced
// indexing does, and x[mask] = value assigns one value to every selected element;
// arrays mixed with other items are refused with a clear error.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <optional>
#include <string>
#include <vector>

#include "bindings.h"
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
  TS_CHECK(!PyBool_Check(item.ptr()), TypeError, "boolean indices are not supported; " << kSupported);
  if (py::isinstance<Tensor>(item)) {
    const Tensor& t = item.cast<const Tensor&>();
    TS_CHECK(t.ndim() == 0 && is_integer(t.dtype()), TypeError,
             "an index tensor is supported only as the whole key (x[idx], x[mask]), not among other indices; " << kSupported);
    return Item::Int;
  }
  TS_CHECK(!py::isinstance<py::list>(item) && !py::isinstance<py::array>(item), TypeError,
           "an index " << type_name(item) << " is supported only as the whole key (x[[0, 2]], x[mask]), not among other indices; "
                       << kSupported);
  TS_CHECK(PyIndex_Check(item.ptr()), TypeError, kSupported << ", not " << type_name(item));
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
  const py::tuple items = py::isinstance<py::tuple>(key) ? py::reinterpret_borrow<py::tuple>(key) : py::make_tuple(key);
  std::vector<Item> kinds;
  kinds.reserve(items.size());
  int64_t indexed = 0, ints = 0, new_axes = 0, ellipses = 0;
  for (py::handle item : items) {
    kinds.push_back(classify(item));
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
  if (py::isinstance<Tensor>(key)) {
    const Tensor& t = key.cast<const Tensor&>();
    // a 0-d integer tensor is a basic index
    return t.ndim() > 0 || t.dtype() == DType::Bool ? std::optional<Tensor>(t) : std::nullopt;
  }
  if (PyBool_Check(key.ptr()) || py::isinstance(key, py::module_::import("numpy").attr("bool_"))) return asarray(key);
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

// x[mask]: the elements (or sub-tensors) where the mask, which covers x's leading axes, is true.
Tensor masked(const Tensor& self, const Tensor& mask) {
  check_mask(self, mask);
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

// x[mask] = value: every selected element (or sub-tensor) takes the value, cast to x's dtype as numpy's setitem
// casts: x = where(mask, value, x), the mask widened over x's trailing axes. The value is a scalar or a tensor
// that broadcasts to one selected sub-tensor (what the standard asks); numpy's one value per selected element
// (a leading axis of the selection's length) is not supported yet.
void masked_assign(const Tensor& self, const Tensor& mask, py::handle value) {
  check_mask(self, mask);
  const Shape rest(self.shape().begin() + mask.ndim(), self.shape().end());
  Tensor source = py::isinstance<Tensor>(value) ? value.cast<Tensor>().astype(self.dtype()) : asarray(value, self.dtype());
  TS_CHECK(source.ndim() <= static_cast<int64_t>(rest.size()), TypeError,
           "x[mask] = value takes a scalar or a value shaped like one selected element (" << shape_str(rest)
               << "); one value per selected element (shape " << shape_str(source.shape()) << ") is not supported yet");
  Shape widened = mask.shape();
  for (size_t i = 0; i < rest.size(); ++i) widened.push_back(1);
  Tensor target = self;
  target.copy_from(pointwise(Registry::global().get("where"),
                             {on_device(mask.reshape(widened), self.device()), on_device(source, self.device()), self}));
}

Tensor get_item(const Tensor& self, py::handle key) {
  if (const std::optional<Tensor> array = array_key(key)) return advanced_index(self, *array);
  return index_view(self, key);
}

}  // namespace

void bind_indexing(py::class_<Tensor>& cls) {
  cls.def("__getitem__", &get_item, py::arg("key"));

  cls.def(
      "__setitem__",
      [](const Tensor& self, py::handle key, py::handle value) {
        if (const std::optional<Tensor> array = array_key(key)) {
          TS_CHECK(array->dtype() == DType::Bool, TypeError,
                   "assigning through an integer array index is not supported yet (x[mask] = value is); " << kSupported);
          masked_assign(self, *array, value);
          return;
        }
        Tensor target = index_view(self, key);
        Tensor source = py::isinstance<Tensor>(value) ? value.cast<Tensor>() : asarray(value, target.dtype());
        // copy_from reads while it writes; an overlapping source (t[1:] = t[:-1]) is copied first.
        if (may_overlap(target, source)) source = source.clone();
        target.copy_from(source);
      },
      py::arg("key"), py::arg("value"));
}

}  // namespace ts::python
