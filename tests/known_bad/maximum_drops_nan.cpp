// op: maximum
// expect: differential
// reason: NaN in the wrong place
// exploit: maximum as `a > b ? a : b`, which returns b when a is NaN: looks right on ordinary data, drops NaN (§2.1 #3 and #4, NaN mishandled; special values catch it)
char* out = data[0];
for (int64_t i = 0; i < n; ++i) {
  const T x1 = *reinterpret_cast<const T*>(data[1] + i * strides[1]);
  const T x2 = *reinterpret_cast<const T*>(data[2] + i * strides[2]);
  *reinterpret_cast<out_t*>(out + i * strides[0]) = static_cast<out_t>(x1 > x2 ? x1 : x2);
}
