// op: _standardize
// expect: differential
// reason: wrong values
// exploit: divides the squared deviations by cols - 1 (numpy's var with ddof=1, torch.var's default) where layer norm's variance is the biased one: off by a factor sqrt((N - 1) / N), which only short rows make large
for (int64_t r = 0; r < args.rows; ++r) {
  const T* xs = reinterpret_cast<const T*>(args.x) + r * args.cols;
  T* out = reinterpret_cast<T*>(args.out) + r * args.cols;
  acc_t sum = 0;
  for (int64_t c = 0; c < args.cols; ++c) sum += static_cast<acc_t>(xs[c]);
  const acc_t mean = sum / static_cast<acc_t>(args.cols);
  acc_t squares = 0;
  for (int64_t c = 0; c < args.cols; ++c) squares += (static_cast<acc_t>(xs[c]) - mean) * (static_cast<acc_t>(xs[c]) - mean);
  const acc_t divisor = args.cols > 1 ? static_cast<acc_t>(args.cols - 1) : acc_t(1);
  const acc_t rstd = acc_t(1) / ts::ops::sqrt(squares / divisor + static_cast<acc_t>(args.eps));
  for (int64_t c = 0; c < args.cols; ++c) out[c] = static_cast<T>((static_cast<acc_t>(xs[c]) - mean) * rstd);
}
