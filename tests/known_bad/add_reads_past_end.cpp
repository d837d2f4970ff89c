// op: add
// expect: differential|sanitizers
// reason: no-access page
// exploit: software-pipelined loop that loads element i + 1 while storing element i, so its last load reads one element past each input (§2.1 #13, out-of-bounds read that happens to pass)
if (n > 0) {
  char* out = data[0];
  T x1 = *reinterpret_cast<const T*>(data[1]);
  T x2 = *reinterpret_cast<const T*>(data[2]);
  for (int64_t i = 0; i < n; ++i) {
    // off by one: on the last iteration this reads element n of both inputs
    const T next1 = *reinterpret_cast<const T*>(data[1] + (i + 1) * strides[1]);
    const T next2 = *reinterpret_cast<const T*>(data[2] + (i + 1) * strides[2]);
    *reinterpret_cast<out_t*>(out + i * strides[0]) = static_cast<out_t>(ts::ops::add<compute_t>(x1, x2));
    x1 = next1;
    x2 = next2;
  }
}
