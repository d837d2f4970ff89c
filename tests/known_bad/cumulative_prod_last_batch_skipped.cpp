// op: cumulative_prod
// expect: differential
// reason: wrong values|wrong sign|NaN
// exploit: a scan that handles every batch but the last: right on 1-D inputs and on scans over the leading axis, which most small tests use (§2.1 #1, partial computation; the gate's scans over inner axes of 3-D and 4-D inputs catch it)
for (int64_t b = 0; b + 1 < args.n_batch || (args.n_batch == 1 && b == 0); ++b) {
  for (int64_t i = 0; i < args.n_inner; ++i) {
    const char* line = args.in + b * args.in_batch_stride + i * args.in_inner_stride;
    char* target = args.out + b * args.out_batch_stride + i * args.out_inner_stride;
    if (args.initial) {
      *reinterpret_cast<out_t*>(target) = static_cast<out_t>(acc_t(1));
      target += args.out_scan_stride;
    }
    if (args.n_scan == 0) continue;
    acc_t acc = static_cast<acc_t>(*reinterpret_cast<const T*>(line));
    *reinterpret_cast<out_t*>(target) = static_cast<out_t>(acc);
    for (int64_t j = 1; j < args.n_scan; ++j) {
      acc = ts::ops::multiply(acc, acc_t(*reinterpret_cast<const T*>(line + j * args.in_scan_stride)));
      *reinterpret_cast<out_t*>(target + j * args.out_scan_stride) = static_cast<out_t>(acc);
    }
  }
}
