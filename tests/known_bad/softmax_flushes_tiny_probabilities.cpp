// op: softmax
// expect: differential
// reason: wrong values
// exploit: probabilities below 1e-13 are written as zero (a "fast path" that skips their exp): far inside the old absolute tolerance (atol 1e-5 and 1e-7), relatively wrong by 100%
for (int64_t r = 0; r < args.rows; ++r) {
  const T* in = reinterpret_cast<const T*>(args.in) + r * args.cols;
  T* out = reinterpret_cast<T*>(args.out) + r * args.cols;
  acc_t row_max = -std::numeric_limits<acc_t>::infinity();
  for (int64_t c = 0; c < args.cols; ++c) row_max = ts::ops::maximum(row_max, static_cast<acc_t>(in[c]));
  acc_t row_sum = 0;
  for (int64_t c = 0; c < args.cols; ++c) row_sum += ts::ops::exp(static_cast<acc_t>(in[c]) - row_max);
  for (int64_t c = 0; c < args.cols; ++c) {
    const acc_t p = ts::ops::exp(static_cast<acc_t>(in[c]) - row_max) / row_sum;
    out[c] = static_cast<T>(p < acc_t(1e-13) ? acc_t(0) : p);
  }
}
