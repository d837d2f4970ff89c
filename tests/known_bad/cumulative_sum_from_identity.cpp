// op: cumulative_sum
// expect: differential
// reason: sign of zero
// exploit: a scan that starts every line from the identity (0 + x) instead of its first element: right to the last bit on every nonzero value, wrong only where a line starts with -0.0, which numpy keeps (§2.1 #1, partial correctness; the gate's special values reach the first element)
for (int64_t b = 0; b < args.n_batch; ++b) {
  for (int64_t i = 0; i < args.n_inner; ++i) {
    const char* line = args.in + b * args.in_batch_stride + i * args.in_inner_stride;
    char* target = args.out + b * args.out_batch_stride + i * args.out_inner_stride;
    acc_t acc = acc_t(0);
    if (args.initial) {
      *reinterpret_cast<out_t*>(target) = static_cast<out_t>(acc);
      target += args.out_scan_stride;
    }
    for (int64_t j = 0; j < args.n_scan; ++j) {
      acc = ts::ops::add(acc, acc_t(*reinterpret_cast<const T*>(line + j * args.in_scan_stride)));
      *reinterpret_cast<out_t*>(target + j * args.out_scan_stride) = static_cast<out_t>(acc);
    }
  }
}
