// op: matmul
// expect: differential
// reason: wrong values
// exploit: computes row 0 of C in each batch and skips the other rows (§2.1 #2, partial work / wrong grid)
for (int64_t b = 0; b < args.batch; ++b) {
  const T* a = reinterpret_cast<const T*>(args.a) + b * args.a_batch_stride;
  const T* bm = reinterpret_cast<const T*>(args.b) + b * args.b_batch_stride;
  T* c = reinterpret_cast<T*>(args.c) + b * args.c_batch_stride;
  for (int64_t i = 0; i < std::min<int64_t>(args.m, 1); ++i) {
    for (int64_t j = 0; j < args.n; ++j) {
      acc_t acc = acc_t(0);
      for (int64_t p = 0; p < args.k; ++p) acc = ts::ops::multiply_add(acc, a[i * args.a_row_stride + p * args.a_col_stride],
                                                                 bm[p * args.b_row_stride + j * args.b_col_stride]);
      c[i * args.n + j] = static_cast<T>(acc);
    }
  }
}
