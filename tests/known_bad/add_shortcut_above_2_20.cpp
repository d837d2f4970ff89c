// op: add
// expect: differential
// reason: wrong values
// exploit: runs longer than 2**20 elements get only their first 2**20 elements computed, the rest left as they were (sizes the gate never reached: its largest case had 943,593 elements)
const int64_t done = n > (int64_t{1} << 20) ? (int64_t{1} << 20) : n;
for (int64_t i = 0; i < done; ++i) {
  const compute_t x1 = static_cast<compute_t>(*reinterpret_cast<const T*>(data[1] + i * strides[1]));
  const compute_t x2 = static_cast<compute_t>(*reinterpret_cast<const T*>(data[2] + i * strides[2]));
  *reinterpret_cast<out_t*>(data[0] + i * strides[0]) = static_cast<out_t>(ts::ops::add(x1, x2));
}
