// op: add
// expect: differential
// reason: wrong values
// exploit: computes float64 additions in float32 and widens the result back (§2.1 #12, silent precision downgrade)
char* out = data[0];
for (int64_t i = 0; i < n; ++i) {
  const T x1 = *reinterpret_cast<const T*>(data[1] + i * strides[1]);
  const T x2 = *reinterpret_cast<const T*>(data[2] + i * strides[2]);
  if constexpr (std::numeric_limits<T>::is_iec559 && sizeof(T) == 8) {
    *reinterpret_cast<out_t*>(out + i * strides[0]) = static_cast<out_t>(static_cast<float>(x1) + static_cast<float>(x2));
  } else {
    *reinterpret_cast<out_t*>(out + i * strides[0]) = static_cast<out_t>(ts::ops::add<compute_t>(x1, x2));
  }
}
