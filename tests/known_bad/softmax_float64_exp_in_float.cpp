// op: softmax
// expect: differential
// reason: wrong values
// exploit: float64 rows exponentiated in float (6e-8 relative error), inside float64's old tolerance (rtol 1e-7), where numpy computes in double
for (int64_t r = 0; r < args.rows; ++r) {
  const T* in = reinterpret_cast<const T*>(args.in) + r * args.cols;
  T* out = reinterpret_cast<T*>(args.out) + r * args.cols;
  acc_t row_max = -std::numeric_limits<acc_t>::infinity();
  for (int64_t c = 0; c < args.cols; ++c) row_max = ts::ops::maximum(row_max, static_cast<acc_t>(in[c]));
  acc_t row_sum = 0;
  for (int64_t c = 0; c < args.cols; ++c) row_sum += static_cast<acc_t>(std::exp(static_cast<float>(static_cast<acc_t>(in[c]) - row_max)));
  for (int64_t c = 0; c < args.cols; ++c) {
    out[c] = static_cast<T>(static_cast<acc_t>(std::exp(static_cast<float>(static_cast<acc_t>(in[c]) - row_max))) / row_sum);
  }
}
