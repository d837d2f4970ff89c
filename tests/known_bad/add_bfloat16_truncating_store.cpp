// op: add
// expect: differential
// reason: correctly rounded
// exploit: bfloat16 sums computed in float and stored by dropping the low 16 bits (truncation) instead of rounding to nearest even: at most one bfloat16 ulp off, inside bfloat16's old tolerance (rtol 1.6e-2)
for (int64_t i = 0; i < n; ++i) {
  const compute_t x1 = static_cast<compute_t>(*reinterpret_cast<const T*>(data[1] + i * strides[1]));
  const compute_t x2 = static_cast<compute_t>(*reinterpret_cast<const T*>(data[2] + i * strides[2]));
  const compute_t sum = ts::ops::add(x1, x2);
  out_t result = static_cast<out_t>(sum);
  if constexpr (std::is_same_v<out_t, ts::bfloat16>) {
    std::uint32_t bits = 0;
    std::memcpy(&bits, &sum, sizeof bits);
    const std::uint16_t high = static_cast<std::uint16_t>(bits >> 16);
    std::memcpy(&result, &high, sizeof high);
  }
  *reinterpret_cast<out_t*>(data[0] + i * strides[0]) = result;
}
