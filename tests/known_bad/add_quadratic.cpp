// op: add
// expect: differential
// reason: timed out
// exploit: recomputes every earlier element again for each element (quadratic time): unnoticeable on the gate's old sizes, hours on a few million elements
for (int64_t i = 0; i < n; ++i) {
  for (int64_t j = 0; j <= i; ++j) {
    const compute_t x1 = static_cast<compute_t>(*reinterpret_cast<const T*>(data[1] + j * strides[1]));
    const compute_t x2 = static_cast<compute_t>(*reinterpret_cast<const T*>(data[2] + j * strides[2]));
    *reinterpret_cast<out_t*>(data[0] + j * strides[0]) = static_cast<out_t>(ts::ops::add(x1, x2));
  }
}
