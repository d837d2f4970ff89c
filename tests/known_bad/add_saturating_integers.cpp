// op: add
// expect: differential
// reason: wrong values
// exploit: integer addition that saturates at the type's limits instead of wrapping as numpy does (integer overflow mishandled; integer-limit values catch it)
char* out = data[0];
for (int64_t i = 0; i < n; ++i) {
  const T x1 = *reinterpret_cast<const T*>(data[1] + i * strides[1]);
  const T x2 = *reinterpret_cast<const T*>(data[2] + i * strides[2]);
  T r;
  if constexpr (std::numeric_limits<T>::is_integer && !std::numeric_limits<T>::is_signed && sizeof(T) > 1) {
    r = x1 > std::numeric_limits<T>::max() - x2 ? std::numeric_limits<T>::max() : T(x1 + x2);
  } else if constexpr (std::numeric_limits<T>::is_integer && std::numeric_limits<T>::is_signed) {
    if (x2 > 0 && x1 > std::numeric_limits<T>::max() - x2) {
      r = std::numeric_limits<T>::max();
    } else if (x2 < 0 && x1 < std::numeric_limits<T>::min() - x2) {
      r = std::numeric_limits<T>::min();
    } else {
      r = T(x1 + x2);
    }
  } else {
    r = T(ts::ops::add<compute_t>(x1, x2));
  }
  *reinterpret_cast<out_t*>(out + i * strides[0]) = static_cast<out_t>(r);
}
