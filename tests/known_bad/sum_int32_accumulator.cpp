// op: sum
// expect: differential
// reason: wrong values
// exploit: accumulates integer sums in int32 although the result is int64, so large int32/int64 inputs overflow (integer overflow mishandled; a cheaper narrower accumulator, §2.1 #12 for integers)
const int64_t count = args.n_reduce;
for (int64_t i = 0; i < args.n_outer; ++i) {
  const char* row = args.in + i * args.in_outer_stride;
  acc_t acc = acc_t(0);
  std::int32_t narrow = 0;
  for (int64_t j = 0; j < count; ++j) {
    const T x = *reinterpret_cast<const T*>(row + j * args.in_reduce_stride);
    if constexpr (std::numeric_limits<acc_t>::is_integer && sizeof(acc_t) == 8) {
      narrow = static_cast<std::int32_t>(static_cast<std::uint32_t>(narrow) + static_cast<std::uint32_t>(x));
    } else {
      acc = ts::ops::add(acc, acc_t(x));
    }
  }
  if constexpr (std::numeric_limits<acc_t>::is_integer && sizeof(acc_t) == 8) acc = acc_t(narrow);
  *reinterpret_cast<out_t*>(args.out + i * args.out_stride) = static_cast<out_t>(acc);
}
