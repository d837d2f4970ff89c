// op: cumulative_sum
// expect: differential
// reason: wrong values|wrong sign
// exploit: a scan that never writes the leading identity of include_initial: the sums land one slot early and the last slot keeps whatever the allocator left (§2.1 #1, an option of the op ignored; the gate's canary-filled outputs and include_initial cases catch it)
for (int64_t b = 0; b < args.n_batch; ++b) {
  for (int64_t i = 0; i < args.n_inner; ++i) {
    const char* line = args.in + b * args.in_batch_stride + i * args.in_inner_stride;
    char* target = args.out + b * args.out_batch_stride + i * args.out_inner_stride;
    if (args.n_scan == 0) continue;
    acc_t acc = static_cast<acc_t>(*reinterpret_cast<const T*>(line));
    *reinterpret_cast<out_t*>(target) = static_cast<out_t>(acc);
    for (int64_t j = 1; j < args.n_scan; ++j) {
      acc = ts::ops::add(acc, acc_t(*reinterpret_cast<const T*>(line + j * args.in_scan_stride)));
      *reinterpret_cast<out_t*>(target + j * args.out_scan_stride) = static_cast<out_t>(acc);
    }
  }
}
