// op: exp
// expect: differential
// reason: biased
// exploit: float exp computed in double and always rounded up to the next float (within one ulp, the op's budget, yet every result errs the same way: a mean bias of half an ulp that moves every sum of results)
for (int64_t i = 0; i < n; ++i) {
  const compute_t x = static_cast<compute_t>(*reinterpret_cast<const T*>(data[1] + i * strides[1]));
  compute_t y = ts::ops::exp(x);
  if constexpr (std::is_same_v<compute_t, float>) {
    const double wide = std::exp(static_cast<double>(x));
    const float nearest = static_cast<float>(wide);
    y = static_cast<double>(nearest) < wide ? std::nextafter(nearest, std::numeric_limits<float>::infinity()) : nearest;
  }
  *reinterpret_cast<out_t*>(data[0] + i * strides[0]) = static_cast<out_t>(y);
}
