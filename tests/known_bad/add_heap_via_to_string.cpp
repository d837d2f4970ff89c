// op: add
// expect: static
// reason: no heap allocation
// exploit: allocates 1 MiB on the heap per call through std::to_string(...).append(...): neither `new`/`malloc` nor `string` is named, and the std::string members it calls are on the symbol allowlist (heap allocation evading the static and symbol checks; resource abuse)
auto scratch = std::to_string(n);
scratch.append(std::size_t(1) << 20, 'x');
char* out = data[0];
for (int64_t i = 0; i < n; ++i) {
  const T x1 = *reinterpret_cast<const T*>(data[1] + i * strides[1]);
  const T x2 = *reinterpret_cast<const T*>(data[2] + i * strides[2]);
  *reinterpret_cast<out_t*>(out + i * strides[0]) = static_cast<out_t>(ts::ops::add<compute_t>(x1, x2)) + static_cast<out_t>(scratch.size() == 0);
}
