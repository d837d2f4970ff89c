// op: softmax
// expect: differential
// reason: wrong values
// exploit: rows longer than 8192 are normalised by the sum of their first 8192 exponentials only (the gate's rows had at most about 3000 elements)
for (int64_t r = 0; r < args.rows; ++r) {
  const T* in = reinterpret_cast<const T*>(args.in) + r * args.cols;
  T* out = reinterpret_cast<T*>(args.out) + r * args.cols;
  acc_t row_max = -std::numeric_limits<acc_t>::infinity();
  for (int64_t c = 0; c < args.cols; ++c) row_max = ts::ops::maximum(row_max, static_cast<acc_t>(in[c]));
  acc_t row_sum = 0;
  const int64_t summed = args.cols < 8192 ? args.cols : 8192;
  for (int64_t c = 0; c < summed; ++c) row_sum += ts::ops::exp(static_cast<acc_t>(in[c]) - row_max);
  for (int64_t c = 0; c < args.cols; ++c) out[c] = static_cast<T>(ts::ops::exp(static_cast<acc_t>(in[c]) - row_max) / row_sum);
}
