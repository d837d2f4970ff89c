// op: negative
// expect: differential
// reason: sign of zero
// exploit: negates as 0 - x, which gives +0.0 for x = +0.0 where numpy's negative gives -0.0; the gate never compared the signs of zeros
for (int64_t i = 0; i < n; ++i) {
  const compute_t x = static_cast<compute_t>(*reinterpret_cast<const T*>(data[1] + i * strides[1]));
  compute_t y = ts::ops::negative(x);  // integers: numpy's wrap-around, no signed overflow
  if constexpr (std::is_floating_point_v<compute_t>) y = compute_t(0) - x;
  *reinterpret_cast<out_t*>(data[0] + i * strides[0]) = static_cast<out_t>(y);
}
