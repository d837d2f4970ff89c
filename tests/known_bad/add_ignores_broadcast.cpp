// op: add
// expect: differential
// reason: wrong values
// exploit: treats a stride-0 (broadcast) input as contiguous, so a broadcast operand is read as if it had n elements (wrong broadcasting; §2.1 #6)
char* out = data[0];
const int64_t s1 = strides[1] == 0 ? int64_t(sizeof(T)) : strides[1];
const int64_t s2 = strides[2] == 0 ? int64_t(sizeof(T)) : strides[2];
for (int64_t i = 0; i < n; ++i) {
  const T x1 = *reinterpret_cast<const T*>(data[1] + i * s1);
  const T x2 = *reinterpret_cast<const T*>(data[2] + i * s2);
  *reinterpret_cast<out_t*>(out + i * strides[0]) = static_cast<out_t>(ts::ops::add<compute_t>(x1, x2));
}
