// op: negative
// expect: differential
// reason: sign of zero
// exploit: negates as 0 - x, which gives +0.0 for x = +0.0 where numpy's negative gives -0.0; the gate never compared the signs of zeros
for (int64_t i = 0; i < n; ++i) {
  const compute_t x = static_cast<compute_t>(*reinterpret_cast<const T*>(data[1] + i * strides[1]));
  *reinterpret_cast<out_t*>(data[0] + i * strides[0]) = static_cast<out_t>(compute_t(0) - x);
}
