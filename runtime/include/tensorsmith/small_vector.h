// SmallVector: a vector of a trivially copyable type that keeps up to N
// elements inline and moves to the heap beyond that. Shapes and strides are
// SmallVectors, so the views and temporaries a small op makes allocate nothing
// for them (a 4-element add made 40 heap allocations, most for shapes).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <iterator>
#include <new>
#include <type_traits>
#include <vector>

namespace ts {

template <typename T, size_t N>
class SmallVector {
  static_assert(std::is_trivially_copyable_v<T>, "SmallVector copies its elements as bytes");

 public:
  using value_type = T;
  using size_type = size_t;
  using difference_type = std::ptrdiff_t;
  using reference = T&;
  using const_reference = const T&;
  using pointer = T*;
  using const_pointer = const T*;
  using iterator = T*;
  using const_iterator = const T*;
  using reverse_iterator = std::reverse_iterator<iterator>;
  using const_reverse_iterator = std::reverse_iterator<const_iterator>;

  SmallVector() = default;
  explicit SmallVector(size_t n, const T& value = T()) { assign(n, value); }
  SmallVector(std::initializer_list<T> values) { assign(values.begin(), values.end()); }
  template <typename It, typename = typename std::iterator_traits<It>::iterator_category>
  SmallVector(It first, It last) {
    assign(first, last);
  }
  // From the std::vectors the argument parsers produce.
  SmallVector(const std::vector<T>& values) { assign(values.begin(), values.end()); }  // NOLINT: implicit
  SmallVector(const SmallVector& other) { assign(other.begin(), other.end()); }
  SmallVector(SmallVector&& other) noexcept { take(other); }
  SmallVector& operator=(const SmallVector& other) {
    if (this != &other) assign(other.begin(), other.end());
    return *this;
  }
  SmallVector& operator=(SmallVector&& other) noexcept {
    if (this != &other) {
      release();
      take(other);
    }
    return *this;
  }
  ~SmallVector() { release(); }

  template <typename It, typename = typename std::iterator_traits<It>::iterator_category>
  void assign(It first, It last) {
    const auto n = static_cast<size_t>(std::distance(first, last));
    size_ = 0;
    reserve(n);
    std::copy(first, last, data_);
    size_ = n;
  }
  void assign(size_t n, const T& value) {
    size_ = 0;
    reserve(n);
    std::fill_n(data_, n, value);
    size_ = n;
  }

  T* data() { return data_; }
  const T* data() const { return data_; }
  size_t size() const { return size_; }
  size_t capacity() const { return capacity_; }
  bool empty() const { return size_ == 0; }
  T& operator[](size_t i) { return data_[i]; }
  const T& operator[](size_t i) const { return data_[i]; }
  T& front() { return data_[0]; }
  const T& front() const { return data_[0]; }
  T& back() { return data_[size_ - 1]; }
  const T& back() const { return data_[size_ - 1]; }

  iterator begin() { return data_; }
  iterator end() { return data_ + size_; }
  const_iterator begin() const { return data_; }
  const_iterator end() const { return data_ + size_; }
  const_iterator cbegin() const { return data_; }
  const_iterator cend() const { return data_ + size_; }
  reverse_iterator rbegin() { return reverse_iterator(end()); }
  reverse_iterator rend() { return reverse_iterator(begin()); }
  const_reverse_iterator rbegin() const { return const_reverse_iterator(end()); }
  const_reverse_iterator rend() const { return const_reverse_iterator(begin()); }

  void reserve(size_t n) {
    if (n <= capacity_) return;
    const size_t capacity = std::max(n, 2 * capacity_);
    T* heap = static_cast<T*>(std::malloc(capacity * sizeof(T)));
    if (heap == nullptr) throw std::bad_alloc();
    if (size_ > 0) std::memcpy(heap, data_, size_ * sizeof(T));
    release();
    data_ = heap;
    capacity_ = capacity;
  }
  void resize(size_t n, const T& value = T()) {
    reserve(n);
    if (n > size_) std::fill(data_ + size_, data_ + n, value);
    size_ = n;
  }
  void clear() { size_ = 0; }
  void push_back(const T& value) {
    if (size_ == capacity_) {
      const T copy = value;  // `value` may be one of ours, which reserve() moves
      reserve(size_ + 1);
      data_[size_++] = copy;
    } else {
      data_[size_++] = value;
    }
  }
  void pop_back() { --size_; }
  iterator insert(const_iterator pos, const T& value) {
    const auto at = static_cast<size_t>(pos - data_);
    const T copy = value;
    reserve(size_ + 1);
    std::memmove(data_ + at + 1, data_ + at, (size_ - at) * sizeof(T));
    data_[at] = copy;
    ++size_;
    return data_ + at;
  }
  template <typename It, typename = typename std::iterator_traits<It>::iterator_category>
  iterator insert(const_iterator pos, It first, It last) {
    const auto at = static_cast<size_t>(pos - data_);
    const SmallVector values(first, last);  // the range may be ours, which reserve() moves
    reserve(size_ + values.size());
    std::memmove(data_ + at + values.size(), data_ + at, (size_ - at) * sizeof(T));
    std::copy(values.begin(), values.end(), data_ + at);
    size_ += values.size();
    return data_ + at;
  }
  iterator erase(const_iterator pos) { return erase(pos, pos + 1); }
  iterator erase(const_iterator first, const_iterator last) {
    const auto at = static_cast<size_t>(first - data_);
    const auto count = static_cast<size_t>(last - first);
    std::memmove(data_ + at, data_ + at + count, (size_ - at - count) * sizeof(T));
    size_ -= count;
    return data_ + at;
  }

  friend bool operator==(const SmallVector& a, const SmallVector& b) {
    return a.size_ == b.size_ && std::equal(a.begin(), a.end(), b.begin());
  }
  friend bool operator!=(const SmallVector& a, const SmallVector& b) { return !(a == b); }

 private:
  bool on_heap() const { return data_ != inline_; }
  void release() {
    if (on_heap()) std::free(data_);
    data_ = inline_;
    capacity_ = N;
  }
  // Takes other's elements (its heap block, or a copy of its inline ones) and leaves it empty.
  void take(SmallVector& other) {
    if (other.on_heap()) {
      data_ = other.data_;
      capacity_ = other.capacity_;
      other.data_ = other.inline_;
      other.capacity_ = N;
    } else {
      std::memcpy(inline_, other.inline_, other.size_ * sizeof(T));
    }
    size_ = other.size_;
    other.size_ = 0;
  }

  T* data_ = inline_;
  size_t size_ = 0;
  size_t capacity_ = N;
  T inline_[N];
};

}  // namespace ts
