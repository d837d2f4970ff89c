// op: matmul
// expect: differential
// reason: wrong values
// exploit: accumulates over at most 512 of the k products (the gate's k reached about 141)
for (int64_t b = 0; b < args.batch; ++b) {
  const T* a = reinterpret_cast<const T*>(args.a) + b * args.a_batch_stride;
  const T* bm = reinterpret_cast<const T*>(args.b) + b * args.b_batch_stride;
  T* c = reinterpret_cast<T*>(args.c) + b * args.c_batch_stride;
  const int64_t depth = args.k < 512 ? args.k : 512;
  for (int64_t i = 0; i < args.m; ++i) {
    for (int64_t j = 0; j < args.n; ++j) {
      acc_t acc = acc_t(0);
      for (int64_t p = 0; p < depth; ++p) acc = ts::ops::multiply_add(acc, a[i * args.a_row_stride + p * args.a_col_stride],
                                                                 bm[p * args.b_row_stride + j * args.b_col_stride]);
      c[i * args.n + j] = static_cast<T>(acc);
    }
  }
}
