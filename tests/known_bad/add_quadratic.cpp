// op: add
// expect: differential
// reason: time
// exploit: on runs longer than 2**20 elements (the gate's old largest call had 943,593), recomputes every earlier element again for each element: quadratic time, hours on a few million elements
const bool again = n > (int64_t{1} << 20);
for (int64_t i = 0; i < n; ++i) {
  for (int64_t j = again ? 0 : i; j <= i; ++j) {
    const compute_t x1 = static_cast<compute_t>(*reinterpret_cast<const T*>(data[1] + j * strides[1]));
    const compute_t x2 = static_cast<compute_t>(*reinterpret_cast<const T*>(data[2] + j * strides[2]));
    *reinterpret_cast<out_t*>(data[0] + j * strides[0]) = static_cast<out_t>(ts::ops::add(x1, x2));
  }
}
