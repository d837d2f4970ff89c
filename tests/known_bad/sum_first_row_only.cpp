// op: sum
// expect: differential
// reason: wrong values
// exploit: reduces only the first output row; the other outputs keep whatever the allocation held (§2.1 #2, partial work)
const int64_t count = args.n_reduce;
for (int64_t i = 0; i < std::min<int64_t>(args.n_outer, 1); ++i) {
  const char* row = args.in + i * args.in_outer_stride;
  acc_t acc = acc_t(0);
  for (int64_t j = 0; j < count; ++j) {
    const T x = *reinterpret_cast<const T*>(row + j * args.in_reduce_stride);
    acc = ts::ops::add(acc, acc_t(x));
  }
  *reinterpret_cast<out_t*>(args.out + i * args.out_stride) = static_cast<out_t>(acc);
}
