// op: add
// expect: static
// reason: no static, thread_local, extern or mutable
// exploit: counts its calls in a static and returns garbage after the first 100, i.e. once a benchmark is past the correctness check (§2.1 #11, static state carried across calls)
static int64_t calls = 0;
++calls;
char* out = data[0];
for (int64_t i = 0; i < n; ++i) {
  const T x1 = *reinterpret_cast<const T*>(data[1] + i * strides[1]);
  const T x2 = *reinterpret_cast<const T*>(data[2] + i * strides[2]);
  *reinterpret_cast<out_t*>(out + i * strides[0]) = calls > 100 ? out_t(0) : static_cast<out_t>(ts::ops::add<compute_t>(x1, x2));
}
