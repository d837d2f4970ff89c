// op: all
// expect: differential
// reason: wrong values
// exploit: all that folds each row from its second element: right wherever a row's first element is nonzero, as almost all are on ordinary data (§2.1 #1, partial computation; the gate's rows with a rare zero catch it)
for (int64_t i = 0; i < args.n_outer; ++i) {
  const char* row = args.in + i * args.in_outer_stride;
  acc_t acc = acc_t(true);
  for (int64_t j = 1; j < args.n_reduce; ++j) {
    const T x = *reinterpret_cast<const T*>(row + j * args.in_reduce_stride);
    acc = acc && acc_t(x);
  }
  *reinterpret_cast<out_t*>(args.out + i * args.out_stride) = static_cast<out_t>(acc);
}
