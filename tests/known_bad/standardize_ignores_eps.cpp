// op: _standardize
// expect: differential
// reason: wrong values
// exploit: a fixed eps of 1e-5 (the default) in place of the call's own: right for every call that leaves eps out, wrong for layer norms built with another
for (int64_t r = 0; r < args.rows; ++r) {
  const T* xs = reinterpret_cast<const T*>(args.x) + r * args.cols;
  T* out = reinterpret_cast<T*>(args.out) + r * args.cols;
  acc_t sum = 0;
  for (int64_t c = 0; c < args.cols; ++c) sum += static_cast<acc_t>(xs[c]);
  const acc_t mean = sum / static_cast<acc_t>(args.cols);
  acc_t squares = 0;
  for (int64_t c = 0; c < args.cols; ++c) squares += (static_cast<acc_t>(xs[c]) - mean) * (static_cast<acc_t>(xs[c]) - mean);
  const acc_t rstd = acc_t(1) / ts::ops::sqrt(squares / static_cast<acc_t>(args.cols) + acc_t(1e-5));
  for (int64_t c = 0; c < args.cols; ++c) out[c] = static_cast<T>((static_cast<acc_t>(xs[c]) - mean) * rstd);
}
