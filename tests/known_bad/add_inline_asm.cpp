// op: add
// expect: static
// reason: no inline assembly
// exploit: inline assembly, which neither the static rules nor the symbol check could otherwise see into (e.g. a raw syscall; §5 step 2)
asm("nop");
char* out = data[0];
for (int64_t i = 0; i < n; ++i) {
  const T x1 = *reinterpret_cast<const T*>(data[1] + i * strides[1]);
  const T x2 = *reinterpret_cast<const T*>(data[2] + i * strides[2]);
  *reinterpret_cast<out_t*>(out + i * strides[0]) = static_cast<out_t>(ts::ops::add<compute_t>(x1, x2));
}
