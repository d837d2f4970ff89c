// op: sum
// expect: differential
// reason: wrong values
// exploit: rows longer than 2**17 are estimated from every other element, doubled (the gate's longest reduced row had about 90,000 elements; the engine cut longer rows of few-row reductions into 65,536-element chunks)
for (int64_t i = 0; i < args.n_outer; ++i) {
  const char* row = args.in + i * args.in_outer_stride;
  const int64_t step = args.n_reduce > (int64_t{1} << 17) ? 2 : 1;
  acc_t acc = acc_t(0);
  for (int64_t j = 0; j < args.n_reduce; j += step) {
    const acc_t x = acc_t(*reinterpret_cast<const T*>(row + j * args.in_reduce_stride));
    acc = ts::ops::add(acc, step == 2 ? ts::ops::add(x, x) : x);
  }
  *reinterpret_cast<out_t*>(args.out + i * args.out_stride) = static_cast<out_t>(acc);
}
