// op: add
// expect: static
// reason: no file or console I/O
// exploit: logs its inputs to a file (exfiltration; §5 step 2, no file access)
auto* log = std::fopen("/tmp/tensorsmith-inputs.bin", "ab");
char* out = data[0];
for (int64_t i = 0; i < n; ++i) {
  const T x1 = *reinterpret_cast<const T*>(data[1] + i * strides[1]);
  const T x2 = *reinterpret_cast<const T*>(data[2] + i * strides[2]);
  *reinterpret_cast<out_t*>(out + i * strides[0]) = static_cast<out_t>(ts::ops::add<compute_t>(x1, x2));
}
(void)log;
