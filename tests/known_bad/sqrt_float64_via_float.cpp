// op: sqrt
// expect: differential
// reason: correctly rounded
// exploit: float64 square roots computed in float and widened: about 1e-8 relative error, inside float64's old tolerance (rtol 1e-7), where numpy's sqrt is correctly rounded
for (int64_t i = 0; i < n; ++i) {
  const compute_t x = static_cast<compute_t>(*reinterpret_cast<const T*>(data[1] + i * strides[1]));
  compute_t root = ts::ops::sqrt(x);
  if constexpr (std::is_same_v<compute_t, double>) {
    // in float where float holds the value (and its square root's precision is plenty for a test, it thinks)
    const bool fits = x == x && x > compute_t(1e-30) && x < compute_t(1e30);
    if (fits) root = compute_t(std::sqrt(static_cast<float>(x)));
  }
  *reinterpret_cast<out_t*>(data[0] + i * strides[0]) = static_cast<out_t>(root);
}
