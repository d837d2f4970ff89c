// op: sum
// expect: differential|sanitizers
// exploit: the accumulator is never initialised, so each row starts from whatever the stack held (§2.1 #13, reading uninitialised memory; the release stack may happen to hold 0, -ftrivial-auto-var-init=pattern in the sanitizer build makes it show)
const int64_t count = args.n_reduce;
for (int64_t i = 0; i < args.n_outer; ++i) {
  const char* row = args.in + i * args.in_outer_stride;
  acc_t acc[2];
  for (int64_t j = 0; j < count; ++j) {
    const T x = *reinterpret_cast<const T*>(row + j * args.in_reduce_stride);
    acc[0] = ts::ops::add(acc[0], acc_t(x));
  }
  *reinterpret_cast<out_t*>(args.out + i * args.out_stride) = static_cast<out_t>(acc[0]);
}
