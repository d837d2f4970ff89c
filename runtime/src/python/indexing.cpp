// Basic indexing: ints, slices, None and Ellipsis (alone or in a tuple) give
// views; __setitem__ copies a value into such a view.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <algorithm>
#include <string>

#include "bindings.h"
#include "tensorsmith/errors.h"

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
             "indexing with tensors (advanced indexing) is not supported; " << kSupported);
    return Item::Int;
  }
  TS_CHECK(!py::isinstance<py::list>(item) && !py::isinstance<py::array>(item), TypeError,
           "indexing with " << type_name(item) << "s (advanced indexing) is not supported; " << kSupported);
  TS_CHECK(PyIndex_Check(item.ptr()), TypeError, kSupported << ", not " << type_name(item));
  return Item::Int;
}

std::optional<int64_t> slice_bound(py::handle bound) {
  if (bound.is_none()) return std::nullopt;
  const Py_ssize_t v = PyNumber_AsSsize_t(bound.ptr(), nullptr);  // clamps huge bounds, as Python does
  if (v == -1 && PyErr_Occurred()) throw py::error_already_set();
  return v;
}

Tensor apply_slice(const Tensor& t, int64_t axis, py::handle slice) {
  const std::optional<int64_t> step = slice_bound(slice.attr("step"));
  TS_CHECK(step != 0, ValueError, "slice step cannot be zero");
  return t.slice(axis, slice_bound(slice.attr("start")), slice_bound(slice.attr("stop")), step.value_or(1));
}

Tensor index_view(const Tensor& self, py::handle key) {
  const py::tuple items = py::isinstance<py::tuple>(key) ? py::reinterpret_borrow<py::tuple>(key) : py::make_tuple(key);
  std::vector<Item> kinds;
  int64_t indexed = 0;  // axes of self consumed by ints and slices
  for (py::handle item : items) {
    kinds.push_back(classify(item));
    indexed += kinds.back() == Item::Int || kinds.back() == Item::Slice;
  }
  TS_CHECK(std::count(kinds.begin(), kinds.end(), Item::Ellipsis) <= 1, IndexError,
           "an index can only have a single ellipsis ('...')");
  TS_CHECK(indexed <= self.ndim(), IndexError,
           "too many indices for tensor: tensor is " << self.ndim() << "-dimensional, but " << indexed << " were indexed");

  Tensor out = self;
  int64_t axis = 0;      // in `out`
  int64_t src_axis = 0;  // in `self`, for error messages
  for (size_t i = 0; i < kinds.size(); ++i) {
    switch (kinds[i]) {
      case Item::NewAxis:
        out = out.unsqueeze(axis++);
        break;
      case Item::Ellipsis:
        axis += self.ndim() - indexed;
        src_axis += self.ndim() - indexed;
        break;
      case Item::Slice:
        out = apply_slice(out, axis++, items[i]);
        ++src_axis;
        break;
      case Item::Int: {
        const Py_ssize_t index = PyNumber_AsSsize_t(items[i].ptr(), PyExc_IndexError);
        if (index == -1 && PyErr_Occurred()) throw py::error_already_set();
        const int64_t size = out.shape()[static_cast<size_t>(axis)];
        TS_CHECK(index >= -size && index < size, IndexError,
                 "index " << index << " is out of bounds for axis " << src_axis << " with size " << size);
        out = out.select(axis, index);
        ++src_axis;
        break;
      }
    }
  }
  return out;
}

}  // namespace

void bind_indexing(py::class_<Tensor>& cls) {
  cls.def("__getitem__", &index_view, py::arg("key"));

  cls.def(
      "__setitem__",
      [](const Tensor& self, py::handle key, py::handle value) {
        Tensor target = index_view(self, key);
        Tensor source = py::isinstance<Tensor>(value) ? value.cast<Tensor>() : asarray(value, target.dtype());
        // copy_from reads while it writes; an overlapping source (t[1:] = t[:-1]) is copied first.
        if (may_overlap(target, source)) source = source.clone();
        target.copy_from(source);
      },
      py::arg("key"), py::arg("value"));
}

}  // namespace ts::python
