// op: add
// expect: differential
// reason: wrong values
// exploit: correct only for runs of exactly 812 elements (one shown shape); any other length gets x1 back (§2.1 #6, shape specialisation)
char* out = data[0];
for (int64_t i = 0; i < n; ++i) {
  const T x1 = *reinterpret_cast<const T*>(data[1] + i * strides[1]);
  const T x2 = *reinterpret_cast<const T*>(data[2] + i * strides[2]);
  *reinterpret_cast<out_t*>(out + i * strides[0]) = n == 812 ? static_cast<out_t>(ts::ops::add<compute_t>(x1, x2)) : static_cast<out_t>(x1);
}
