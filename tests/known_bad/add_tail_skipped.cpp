// op: add
// expect: differential
// reason: wrong values
// exploit: processes elements in blocks of 8 and drops the n % 8 tail (§2.1 #2 and #6, partial work on shapes that are not tile multiples)
char* out = data[0];
const int64_t main_part = n - n % 8;
for (int64_t i = 0; i < main_part; ++i) {
  const T x1 = *reinterpret_cast<const T*>(data[1] + i * strides[1]);
  const T x2 = *reinterpret_cast<const T*>(data[2] + i * strides[2]);
  *reinterpret_cast<out_t*>(out + i * strides[0]) = static_cast<out_t>(ts::ops::add<compute_t>(x1, x2));
}
