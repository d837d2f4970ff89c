// op: add
// expect: differential
// reason: crashed with SIG
// exploit: writes one terabyte past the output (a wild store); the sandboxed process must die and be reported, not take the harness down
char* out = data[0];
for (int64_t i = 0; i < n; ++i) {
  const T x1 = *reinterpret_cast<const T*>(data[1] + i * strides[1]);
  const T x2 = *reinterpret_cast<const T*>(data[2] + i * strides[2]);
  *reinterpret_cast<out_t*>(out + i * strides[0] + (int64_t(1) << 40)) = static_cast<out_t>(ts::ops::add<compute_t>(x1, x2));
}
