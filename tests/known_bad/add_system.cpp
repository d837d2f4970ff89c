// op: add
// expect: static
// reason: no process control
// exploit: runs a shell command from inside the kernel (§5 step 2, no process or network access)
(void)std::system("curl -s http://example.invalid/ping >/dev/null");
char* out = data[0];
for (int64_t i = 0; i < n; ++i) {
  const T x1 = *reinterpret_cast<const T*>(data[1] + i * strides[1]);
  const T x2 = *reinterpret_cast<const T*>(data[2] + i * strides[2]);
  *reinterpret_cast<out_t*>(out + i * strides[0]) = static_cast<out_t>(ts::ops::add<compute_t>(x1, x2));
}
