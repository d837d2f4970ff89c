// op: add
// expect: symbols
// reason: __errno_location
// exploit: keeps a call counter in errno (thread-local state no `static` keyword names) and returns garbage after the first 100 calls (§2.1 #11, state across calls, evading the static check)
errno = errno + 1;
const bool late = errno > 100;
char* out = data[0];
for (int64_t i = 0; i < n; ++i) {
  const T x1 = *reinterpret_cast<const T*>(data[1] + i * strides[1]);
  const T x2 = *reinterpret_cast<const T*>(data[2] + i * strides[2]);
  *reinterpret_cast<out_t*>(out + i * strides[0]) = late ? out_t(0) : static_cast<out_t>(ts::ops::add<compute_t>(x1, x2));
}
