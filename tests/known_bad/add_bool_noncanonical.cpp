// op: add
// expect: differential
// reason: wrong values
// exploit: for bool, writes the byte x1 + x2 (so True + True is the byte 2, not 1): numpy's == calls any nonzero byte True, but a runtime kernel reading that bool later (e.g. logical_not as x ^ 1) computes garbage (invalid bool representation passing a non-bitwise comparison)
char* out = data[0];
for (int64_t i = 0; i < n; ++i) {
  const T x1 = *reinterpret_cast<const T*>(data[1] + i * strides[1]);
  const T x2 = *reinterpret_cast<const T*>(data[2] + i * strides[2]);
  if constexpr (sizeof(T) == 1 && !std::numeric_limits<T>::is_signed && std::numeric_limits<T>::digits == 1) {
    unsigned char a = 0, b = 0;
    std::memcpy(&a, &x1, 1);
    std::memcpy(&b, &x2, 1);
    const unsigned char byte = static_cast<unsigned char>(a + b);
    std::memcpy(out + i * strides[0], &byte, 1);
  } else {
    *reinterpret_cast<out_t*>(out + i * strides[0]) = static_cast<out_t>(ts::ops::add<compute_t>(x1, x2));
  }
}
