// op: add
// expect: differential
// reason: was modified
// exploit: computes the right answer, then zeroes its second input so a reference run afterwards would agree with anything (§2.1 #5, changing the inputs)
char* out = data[0];
for (int64_t i = 0; i < n; ++i) {
  const T x1 = *reinterpret_cast<const T*>(data[1] + i * strides[1]);
  const T x2 = *reinterpret_cast<const T*>(data[2] + i * strides[2]);
  *reinterpret_cast<out_t*>(out + i * strides[0]) = static_cast<out_t>(ts::ops::add<compute_t>(x1, x2));
}
char* writable = const_cast<char*>(data[2]);
for (int64_t i = 0; i < n; ++i) *reinterpret_cast<T*>(writable + i * strides[2]) = T(0);
