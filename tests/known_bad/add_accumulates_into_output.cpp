// op: add
// expect: differential
// reason: wrong values
// exploit: accumulates into the output as if it started at zero, i.e. reads the uninitialised output (§2.1 #1 and #13, reading uninitialised memory; the canary fill shows it)
char* out = data[0];
for (int64_t i = 0; i < n; ++i) {
  out_t* o = reinterpret_cast<out_t*>(out + i * strides[0]);
  const T x1 = *reinterpret_cast<const T*>(data[1] + i * strides[1]);
  const T x2 = *reinterpret_cast<const T*>(data[2] + i * strides[2]);
  *o = static_cast<out_t>(ts::ops::add<compute_t>(T(*o), ts::ops::add<compute_t>(x1, x2)));
}
