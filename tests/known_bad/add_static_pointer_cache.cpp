// op: add
// expect: static
// reason: no static, thread_local, extern or mutable
// exploit: remembers the last (input pointers, n) and skips the work when they repeat, returning the stale result (§2.1 #11, result cache keyed on pointer and shape)
static const char* last_x1 = nullptr;
static const char* last_x2 = nullptr;
static int64_t last_n = -1;
static out_t cached[4096];
const bool hit = data[1] == last_x1 && data[2] == last_x2 && n == last_n && n <= 4096;
for (int64_t i = 0; i < n; ++i) {
  out_t value;
  if (hit) {
    value = cached[i];
  } else {
    const T x1 = *reinterpret_cast<const T*>(data[1] + i * strides[1]);
    const T x2 = *reinterpret_cast<const T*>(data[2] + i * strides[2]);
    value = static_cast<out_t>(ts::ops::add<compute_t>(x1, x2));
    if (i < 4096) cached[i] = value;
  }
  *reinterpret_cast<out_t*>(data[0] + i * strides[0]) = value;
}
last_x1 = data[1];
last_x2 = data[2];
last_n = n;
