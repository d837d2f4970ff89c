// op: add
// expect: differential
// reason: wrong values
// exploit: computes the sum only when the output memory it was handed holds one byte repeated (the gate's old canaries 0xA5/0x5A); elsewhere (production memory) it writes zeros: a body that can tell a gate run by its fill
char* out = data[0];
unsigned char first[sizeof(out_t)];
std::memcpy(first, out, sizeof(out_t));
bool repeated = n > 0;
for (size_t k = 1; k < sizeof(out_t); ++k) repeated = repeated && first[k] == first[0];
for (int64_t i = 0; i < n; ++i) {
  const compute_t x1 = static_cast<compute_t>(*reinterpret_cast<const T*>(data[1] + i * strides[1]));
  const compute_t x2 = static_cast<compute_t>(*reinterpret_cast<const T*>(data[2] + i * strides[2]));
  *reinterpret_cast<out_t*>(out + i * strides[0]) = repeated ? static_cast<out_t>(ts::ops::add(x1, x2)) : out_t(0);
}
