// op: add
// expect: symbols
// reason: tmpfile
// exploit: writes its inputs to a file through std::tmpfile and std::fputc, names the static rules do not list (file I/O evading the static check; §2.1 #7 binary check)
auto* sink = std::tmpfile();
char* out = data[0];
for (int64_t i = 0; i < n; ++i) {
  const T x1 = *reinterpret_cast<const T*>(data[1] + i * strides[1]);
  const T x2 = *reinterpret_cast<const T*>(data[2] + i * strides[2]);
  if (sink != nullptr) std::fputc(static_cast<int>(i & 0x7f), sink);
  *reinterpret_cast<out_t*>(out + i * strides[0]) = static_cast<out_t>(ts::ops::add<compute_t>(x1, x2));
}
