// op: _standardize_grad
// expect: differential
// reason: wrong values
// exploit: leaves out the n mean(g n) term (the part of the gradient that runs along the standardized row itself), so the result is rstd (g - mean(g)): right wherever g is orthogonal to n, which random rows never are
for (int64_t r = 0; r < args.rows; ++r) {
  const T* xs = reinterpret_cast<const T*>(args.x) + r * args.cols;
  const T* gs = reinterpret_cast<const T*>(args.g) + r * args.cols;
  T* out = reinterpret_cast<T*>(args.out) + r * args.cols;
  acc_t sum = 0, g_sum = 0;
  for (int64_t c = 0; c < args.cols; ++c) {
    sum += static_cast<acc_t>(xs[c]);
    g_sum += static_cast<acc_t>(gs[c]);
  }
  const acc_t mean = sum / static_cast<acc_t>(args.cols), g_mean = g_sum / static_cast<acc_t>(args.cols);
  acc_t squares = 0;
  for (int64_t c = 0; c < args.cols; ++c) squares += (static_cast<acc_t>(xs[c]) - mean) * (static_cast<acc_t>(xs[c]) - mean);
  const acc_t rstd = acc_t(1) / ts::ops::sqrt(squares / static_cast<acc_t>(args.cols) + static_cast<acc_t>(args.eps));
  for (int64_t c = 0; c < args.cols; ++c) out[c] = static_cast<T>(rstd * (static_cast<acc_t>(gs[c]) - g_mean));
}
