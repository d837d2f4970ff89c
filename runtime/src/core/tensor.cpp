// Tensor metadata and views. Copies go through Tensor::copy_from (copy.cpp).
#include "tensorsmith/tensor.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <sstream>
#include <utility>

#include "tensorsmith/errors.h"

namespace ts {

namespace {

// NumPy's error-message spelling of a shape: "(2,3)", "(4,)".
std::string np_shape(const Shape& shape) {
  std::ostringstream os;
  os << "(";
  for (size_t i = 0; i < shape.size(); ++i) os << (i ? "," : "") << shape[i];
  os << (shape.size() == 1 ? ",)" : ")");
  return os.str();
}

int64_t product(const Shape& shape) {
  return std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<int64_t>());
}

void check_ndim(size_t ndim) {
  TS_CHECK(ndim <= kMaxDims, ValueError,
           "maximum supported dimension for a tensor is currently " << kMaxDims << ", found " << ndim);
}

// At most kMaxDims dimensions, non-negative and, as NumPy requires, the bytes of the
// nonzero dimensions fit an int64, so that numel(), byte sizes and offsets cannot overflow.
void check_dims(const Shape& shape, DType dtype) {
  check_ndim(shape.size());
  for (int64_t d : shape) TS_CHECK(d >= 0, ValueError, "negative dimensions are not allowed");
  int64_t nbytes = static_cast<int64_t>(ts::itemsize(dtype));
  for (int64_t d : shape) {
    if (d == 0) continue;
    // An overflow-checked product: a division per dimension was most of this check's cost on every new tensor.
    TS_CHECK(!__builtin_mul_overflow(nbytes, d, &nbytes), ValueError,
             "tensor is too big: shape " << shape_str(shape) << " of " << dtype_name(dtype)
                                         << " needs more bytes than the maximum possible size");
  }
}

// Resolves a single -1 in `shape` so that it holds `numel` elements.
Shape infer_shape(Shape shape, int64_t numel) {
  check_ndim(shape.size());  // first, as numpy: the rest of a huge request is not worth reading
  const Shape requested = shape;
  std::optional<size_t> unknown;
  int64_t known = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      TS_CHECK(!unknown, ValueError, "can only specify one unknown dimension");
      unknown = i;
    } else {
      TS_CHECK(shape[i] >= 0, ValueError, "negative dimensions are not allowed");
      known *= shape[i];
    }
  }
  const bool resolved = !unknown || (known != 0 && numel % known == 0);
  if (unknown && resolved) shape[*unknown] = numel / known;
  TS_CHECK(resolved && product(shape) == numel, ValueError,
           "cannot reshape tensor of size " << numel << " into shape " << np_shape(requested));
  return shape;
}

// NumPy's _attempt_nocopy_reshape (C order): strides for viewing a tensor of
// `old_shape`/`old_strides` as `new_shape` without copying, or nullopt when
// some group of old axes that must merge is not contiguous. Requires numel > 0.
std::optional<Strides> nocopy_strides(const Shape& old_shape, const Strides& old_strides, const Shape& new_shape) {
  Shape od;
  Strides os;
  for (size_t i = 0; i < old_shape.size(); ++i) {
    if (old_shape[i] != 1) {
      od.push_back(old_shape[i]);
      os.push_back(old_strides[i]);
    }
  }
  const size_t on = od.size(), nn = new_shape.size();
  Strides ns(nn, 0);
  size_t oi = 0, oj = 1, ni = 0, nj = 1;
  while (ni < nn && oi < on) {
    // Grow [ni, nj) and [oi, oj) until both ranges hold the same number of elements.
    int64_t np = new_shape[ni], op = od[oi];
    while (np != op) {
      if (np < op) {
        np *= new_shape[nj++];
      } else {
        op *= od[oj++];
      }
    }
    for (size_t ok = oi; ok + 1 < oj; ++ok) {
      if (os[ok] != od[ok + 1] * os[ok + 1]) return std::nullopt;
    }
    ns[nj - 1] = os[oj - 1];
    for (size_t nk = nj - 1; nk > ni; --nk) ns[nk - 1] = ns[nk] * new_shape[nk];
    ni = nj++;
    oi = oj++;
  }
  // Trailing size-1 axes: any stride works; use the one after the last axis.
  const int64_t last = ni >= 1 ? ns[ni - 1] : 1;
  for (size_t nk = ni; nk < nn; ++nk) ns[nk] = last;
  return ns;
}

}  // namespace

Tensor::Tensor(std::shared_ptr<Storage> storage, DType dtype, Shape shape, Strides strides, int64_t offset)
    : storage_(std::move(storage)), dtype_(dtype), shape_(std::move(shape)), strides_(std::move(strides)), offset_(offset) {
  TS_CHECK(shape_.size() == strides_.size(), ValueError,
           "shape " << shape_str(shape_) << " and strides " << shape_str(strides_) << " differ in length");
  check_dims(shape_, dtype_);
}

Tensor Tensor::empty(const Shape& shape, DType dtype, Device device) {
  check_dims(shape, dtype);
  auto storage = Storage::allocate(static_cast<size_t>(product(shape)) * ts::itemsize(dtype), device);
  return Tensor(std::move(storage), dtype, shape, contiguous_strides(shape), 0);
}

int64_t Tensor::numel() const { return product(shape_); }

bool Tensor::is_contiguous() const {
  if (numel() == 0) return true;  // nothing to lay out, as in NumPy
  int64_t expected = 1;
  for (int64_t i = ndim() - 1; i >= 0; --i) {
    if (shape_[i] == 1) continue;
    if (strides_[i] != expected) return false;
    expected *= shape_[i];
  }
  return true;
}

char* Tensor::data_ptr() const {
  return static_cast<char*>(storage_->data()) + offset_ * static_cast<int64_t>(itemsize());
}

// ---- Views -------------------------------------------------------------------

Tensor Tensor::view(Shape shape, Strides strides, int64_t offset) const {
  Tensor out(storage_, dtype_, std::move(shape), std::move(strides), offset);
  out.writeable_ = writeable_;
  return out;
}

Tensor Tensor::as_strided(const Shape& shape, const Strides& strides, int64_t offset) const {
  Tensor out = view(shape, strides, offset);
  if (out.numel() == 0) return out;
  // The lowest and highest element the view can reach must lie in the storage.
  int64_t lo = offset, hi = offset;
  for (size_t i = 0; i < shape.size(); ++i) {
    (strides[i] < 0 ? lo : hi) += strides[i] * (shape[i] - 1);
  }
  TS_CHECK(lo >= 0 && static_cast<size_t>(hi + 1) * itemsize() <= storage_->nbytes(), ValueError,
           "as_strided: shape " << shape_str(shape) << ", strides " << shape_str(strides) << " and offset " << offset
                                << " reach outside a storage of " << storage_->nbytes() << " bytes");
  return out;
}

Tensor Tensor::reshape(Shape shape) const {
  shape = infer_shape(std::move(shape), numel());
  if (is_contiguous()) {
    Strides strides = contiguous_strides(shape);
    return view(std::move(shape), std::move(strides), offset_);
  }
  if (auto strides = nocopy_strides(shape_, strides_, shape)) {
    return view(std::move(shape), std::move(*strides), offset_);
  }
  return clone().reshape(std::move(shape));
}

Tensor Tensor::permute(const std::vector<int64_t>& axes) const {
  TS_CHECK(static_cast<int64_t>(axes.size()) == ndim(), ValueError, "axes don't match tensor");
  Shape shape(axes.size());
  Strides strides(axes.size());
  std::vector<bool> seen(axes.size(), false);
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t a = normalize_axis(axes[i], ndim());
    TS_CHECK(!seen[a], ValueError, "repeated axis in transpose");
    seen[a] = true;
    shape[i] = shape_[a];
    strides[i] = strides_[a];
  }
  return view(std::move(shape), std::move(strides), offset_);
}

Tensor Tensor::transpose(int64_t a, int64_t b) const {
  std::vector<int64_t> axes(ndim());
  std::iota(axes.begin(), axes.end(), 0);
  std::swap(axes[normalize_axis(a, ndim())], axes[normalize_axis(b, ndim())]);
  return permute(axes);
}

Tensor Tensor::matrix_transpose() const {
  TS_CHECK(ndim() >= 2, ValueError, "matrix transpose with ndim < 2 is undefined");
  return transpose(-2, -1);
}

Tensor Tensor::T() const {
  std::vector<int64_t> axes(ndim());
  std::iota(axes.rbegin(), axes.rend(), 0);
  return permute(axes);
}

Tensor Tensor::slice(int64_t axis, std::optional<int64_t> start, std::optional<int64_t> stop, int64_t step) const {
  axis = normalize_axis(axis, ndim());
  TS_CHECK(step != 0, ValueError, "slice step cannot be zero");
  // PySlice_AdjustIndices: clamp into [lower, upper], defaults by direction.
  const int64_t size = shape_[axis];
  const int64_t lower = step > 0 ? 0 : -1, upper = step > 0 ? size : size - 1;
  auto clamp = [&](std::optional<int64_t> i, int64_t dflt) {
    if (!i) return dflt;
    int64_t v = *i < 0 ? *i + size : *i;
    return std::clamp(v, lower, upper);
  };
  const int64_t b = clamp(start, step > 0 ? lower : upper);
  const int64_t e = clamp(stop, step > 0 ? upper : lower);
  int64_t len = 0;
  if (step > 0 && b < e) len = (e - b - 1) / step + 1;
  if (step < 0 && e < b) len = (b - e - 1) / -step + 1;

  Shape shape = shape_;
  Strides strides = strides_;
  shape[axis] = len;
  strides[axis] *= step;
  // An empty slice keeps the old offset so data_ptr() stays inside the storage.
  const int64_t offset = len > 0 ? offset_ + b * strides_[axis] : offset_;
  return view(std::move(shape), std::move(strides), offset);
}

Tensor Tensor::select(int64_t axis, int64_t index) const {
  axis = normalize_axis(axis, ndim());
  const int64_t size = shape_[axis];
  TS_CHECK(index >= -size && index < size, IndexError,
           "index " << index << " is out of bounds for axis " << axis << " with size " << size);
  if (index < 0) index += size;
  Shape shape = shape_;
  Strides strides = strides_;
  shape.erase(shape.begin() + axis);
  strides.erase(strides.begin() + axis);
  return view(std::move(shape), std::move(strides), offset_ + index * strides_[axis]);
}

Tensor Tensor::expand(const Shape& shape) const {
  check_dims(shape, dtype_);
  const int64_t lead = static_cast<int64_t>(shape.size()) - ndim();
  bool ok = lead >= 0;
  Strides strides(shape.size(), 0);  // new leading axes repeat the data
  for (int64_t i = 0; ok && i < ndim(); ++i) {
    const int64_t target = shape[lead + i];
    ok = shape_[i] == target || shape_[i] == 1;
    strides[lead + i] = shape_[i] == target ? strides_[i] : 0;
  }
  TS_CHECK(ok, ValueError, "cannot broadcast a tensor of shape " << np_shape(shape_) << " to shape " << np_shape(shape));
  Tensor out = view(shape, std::move(strides), offset_);
  out.writeable_ = false;  // as numpy's broadcast_to: a write would land on every element sharing the memory
  return out;
}

Tensor Tensor::squeeze(std::optional<std::vector<int64_t>> axes) const {
  std::vector<bool> drop(ndim(), false);
  if (!axes) {
    for (int64_t i = 0; i < ndim(); ++i) drop[i] = shape_[i] == 1;
  }
  for (int64_t a : axes.value_or(std::vector<int64_t>{})) {
    a = normalize_axis(a, ndim());
    TS_CHECK(!drop[a], ValueError, "duplicate value in 'axis'");
    TS_CHECK(shape_[a] == 1, ValueError, "cannot select an axis to squeeze out which has size not equal to one");
    drop[a] = true;
  }
  Shape shape;
  Strides strides;
  for (int64_t i = 0; i < ndim(); ++i) {
    if (drop[i]) continue;
    shape.push_back(shape_[i]);
    strides.push_back(strides_[i]);
  }
  return view(std::move(shape), std::move(strides), offset_);
}

Tensor Tensor::unsqueeze(int64_t axis) const {
  axis = normalize_axis(axis, ndim() + 1);
  Shape shape = shape_;
  Strides strides = strides_;
  // The stride of a size-1 axis is never used; pick the contiguous-looking one.
  const int64_t stride = axis < ndim() ? strides_[axis] * shape_[axis] : 1;
  shape.insert(shape.begin() + axis, 1);
  strides.insert(strides.begin() + axis, stride);
  return view(std::move(shape), std::move(strides), offset_);
}

// ---- Copies ------------------------------------------------------------------

Tensor Tensor::contiguous() const { return is_contiguous() ? *this : clone(); }

Tensor Tensor::clone() const { return astype(dtype_); }

Tensor Tensor::astype(DType dtype) const {
  Tensor out = empty(shape_, dtype, device());
  out.copy_from(*this);
  return out;
}

// ---- Helpers -----------------------------------------------------------------

int64_t normalize_axis(int64_t axis, int64_t ndim) {
  TS_CHECK(axis >= -ndim && axis < ndim, AxisError,
           "axis " << axis << " is out of bounds for tensor of dimension " << ndim);
  return axis < 0 ? axis + ndim : axis;
}

Shape broadcast_shapes(const ShapeRefs& shapes) {
  size_t ndim = 0;
  for (const Shape* s : shapes) ndim = std::max(ndim, s->size());
  Shape out(ndim, 1);
  bool ok = true;
  for (const Shape* shape : shapes) {
    const Shape& s = *shape;
    const size_t lead = ndim - s.size();
    for (size_t i = 0; i < s.size(); ++i) {
      int64_t& o = out[lead + i];
      if (s[i] == 1 || s[i] == o) continue;
      if (o != 1) ok = false;
      o = s[i];
    }
  }
  if (!ok) {
    std::ostringstream os;
    os << "operands could not be broadcast together with shapes";
    for (const Shape* s : shapes) os << " " << np_shape(*s);
    throw ValueError(os.str());
  }
  return out;
}

Shape broadcast_shapes(const Shape& a, const Shape& b) { return broadcast_shapes(ShapeRefs{&a, &b}); }

Strides contiguous_strides(const Shape& shape) {
  Strides strides(shape.size());
  int64_t stride = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = stride;
    stride *= std::max<int64_t>(shape[i], 1);
  }
  return strides;
}

std::string shape_str(const Shape& shape) {
  std::ostringstream os;
  os << "(";
  for (size_t i = 0; i < shape.size(); ++i) os << (i ? ", " : "") << shape[i];
  os << (shape.size() == 1 ? ",)" : ")");
  return os.str();
}

// Byte range [lo, hi) spanned by a tensor's elements.
static std::pair<const char*, const char*> byte_extent(const Tensor& t) {
  const char* lo = t.data_ptr();
  const char* hi = lo + t.itemsize();
  for (size_t i = 0; i < t.shape().size(); ++i) {
    if (t.shape()[i] == 0) return {lo, lo};
    const int64_t span = (t.shape()[i] - 1) * t.strides()[i] * static_cast<int64_t>(t.itemsize());
    (span < 0 ? lo : hi) += span;
  }
  return {lo, hi};
}

bool may_overlap(const Tensor& a, const Tensor& b) {
  if (a.device() != b.device()) return false;  // equal addresses on two devices are different memory
  const auto [a_lo, a_hi] = byte_extent(a);
  const auto [b_lo, b_hi] = byte_extent(b);
  return a_lo < b_hi && b_lo < a_hi;
}

}  // namespace ts
