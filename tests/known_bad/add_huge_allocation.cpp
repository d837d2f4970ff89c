// op: add
// expect: static
// reason: no heap allocation
// exploit: allocates 1 TiB per call (resource exhaustion / denial of service; §5 step 2, no heap)
void* scratch = malloc(std::size_t(1) << 40);
char* out = data[0];
for (int64_t i = 0; i < n; ++i) {
  const T x1 = *reinterpret_cast<const T*>(data[1] + i * strides[1]);
  const T x2 = *reinterpret_cast<const T*>(data[2] + i * strides[2]);
  *reinterpret_cast<out_t*>(out + i * strides[0]) = static_cast<out_t>(ts::ops::add<compute_t>(x1, x2));
}
(void)scratch;
