// op: sum
// expect: differential
// reason: wrong values
// exploit: accumulates float64 inputs in a float32 accumulator (other dtypes are summed correctly) (§2.1 #12, silent precision downgrade in a reduction)
const int64_t count = args.n_reduce;
for (int64_t i = 0; i < args.n_outer; ++i) {
  const char* row = args.in + i * args.in_outer_stride;
  acc_t acc = acc_t(0);
  float low = 0.0f;
  for (int64_t j = 0; j < count; ++j) {
    const T x = *reinterpret_cast<const T*>(row + j * args.in_reduce_stride);
    if constexpr (std::numeric_limits<T>::is_iec559 && sizeof(T) == 8) {
      low += static_cast<float>(x);
    } else {
      acc = ts::ops::add(acc, acc_t(x));
    }
  }
  if constexpr (std::numeric_limits<T>::is_iec559 && sizeof(T) == 8) acc = acc_t(low);
  *reinterpret_cast<out_t*>(args.out + i * args.out_stride) = static_cast<out_t>(acc);
}
